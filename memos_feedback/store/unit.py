"""``RepairUnit``: one write transaction of repairs and what it owes until it ends.

Writing a repair commits several things together: the context's lock,
the repair row (its recall index row possibly left for later), the job's
bookkeeping and the event-log rows that report it. The event log's
writer takes rows other threads buffered and inserts them in this
transaction, so when the transaction (or one repair's savepoint) rolls
back those rows must go back to the buffer, or they are lost. The unit
keeps that account for its transaction: a caller opens one
(``repair_unit``), writes repairs in it, and the unit indexes what it
deferred before the commit and hands event rows back on a rollback
itself.

The unit adds no statement of its own: each method runs only the
statement its step needs (none where the backend needs none), so a
template repair stays at its few statements and one round trip each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from .jobs import context_lock_key
from .search_index import defer_search_index, index_deferred

if TYPE_CHECKING:
    from ..events import FeedbackEvent
    from . import Store

__all__ = ["EventWriter", "Finalizer", "RepairUnit", "repair_unit", "savepoint"]


# The caller's bookkeeping (the queue marks the job done), run in the
# unit's transaction after the repair row is written; raising aborts the
# repair (its savepoint, or the whole transaction).
Finalizer = Callable[[Connection, str], None]


class EventWriter(Protocol):
    """Logs events inside a transaction (``memos_feedback.store.event_log.FeedStore``)."""

    def write_in(
        self, session: Session | Connection, events: Sequence[FeedbackEvent] = ()
    ) -> list[dict[str, Any]]: ...

    def hand_back(self, rows: list[dict[str, Any]]) -> None: ...


_LOCK_CONTEXT_PG = text("SELECT pg_advisory_xact_lock(:k)")
_SAVEPOINT = "SAVEPOINT memos_feedback_job"
_ROLLBACK_TO = "ROLLBACK TO SAVEPOINT memos_feedback_job"
_RELEASE = "RELEASE SAVEPOINT memos_feedback_job"


@contextmanager
def savepoint(conn: Connection) -> Iterator[None]:
    """A SQLite savepoint on the DBAPI connection: undone alone when the block raises.

    Not ``Connection.begin_nested()``: that costs ~160 us a job here, the
    raw statements ~4 us. SQLite only (the group commit's backend).
    """
    raw = conn.connection.driver_connection
    assert raw is not None
    raw.execute(_SAVEPOINT)
    try:
        yield
    except BaseException:
        raw.execute(_ROLLBACK_TO)
        raw.execute(_RELEASE)
        raise
    raw.execute(_RELEASE)


class RepairUnit:
    """The transaction-scoped part of writing repairs, for one transaction on ``conn``.

    ``defer_index`` (SQLite; ignored elsewhere): repairs written here leave
    their search-index row to ``index_deferred`` (store/search_index.py).
    ``repair_unit`` runs that before its commit when the unit is a group's;
    otherwise the store's background thread (or the caller) does.
    """

    __slots__ = ("_deferred", "_defers", "_events", "_taken", "conn")

    def __init__(
        self, conn: Connection, events: EventWriter | None = None, *, defer_index: bool = False
    ) -> None:
        self.conn = conn
        self._events = events
        self._defers = defer_index and conn.dialect.name == "sqlite"
        # Buffered event-log rows the writes took: back to the buffer if the
        # transaction does not commit.
        self._taken: list[dict[str, Any]] = []
        # Repairs written here and left out of the search index.
        self._deferred = 0

    def lock(self, context_hash: str) -> None:
        """Serialize the writes of one context until this transaction ends."""
        # SQLite needs nothing more: the write transaction began IMMEDIATE and
        # holds the database's only write lock until commit.
        if self.conn.dialect.name == "postgresql":
            self.conn.execute(_LOCK_CONTEXT_PG, {"k": context_lock_key(context_hash)})

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """One repair of a group (SQLite): undone alone when the block raises, with what it owed.

        The event rows its log write took go back to the buffer at once,
        and what it deferred no longer needs indexing.
        """
        taken, deferred = len(self._taken), self._deferred
        raw = self.conn.connection.driver_connection
        assert raw is not None
        raw.execute(_SAVEPOINT)
        try:
            yield
        except BaseException:
            raw.execute(_ROLLBACK_TO)
            raw.execute(_RELEASE)
            self._deferred = deferred
            self._hand_back(taken)
            raise
        raw.execute(_RELEASE)

    def defer_index(self, repair_id: str) -> None:
        """Before inserting repair ``repair_id``: leave its search-index row for later (when deferring)."""
        # Before the insert: its trigger then skips the repair.
        if self._defers:
            defer_search_index(self.conn, repair_id)
            self._deferred += 1

    def finalize(self, finalizer: Finalizer | None, repair_id: str) -> None:
        """The caller's bookkeeping for repair ``repair_id``, in this transaction."""
        if finalizer is not None:
            finalizer(self.conn, repair_id)

    def log(self, events: Sequence[FeedbackEvent]) -> None:
        """Log ``events`` (and whatever is buffered) in this transaction: the write's last statements.

        On PostgreSQL the log's lock is held from here until commit.
        """
        if self._events is not None:
            self._taken.extend(self._events.write_in(self.conn, events))

    def index_deferred(self) -> None:
        """Index the repairs this unit deferred (and any earlier tail), once, before the commit."""
        if self._deferred:
            index_deferred(self.conn)
            self._deferred = 0

    def rolled_back(self) -> None:
        """The transaction failed: the buffered rows it took go back to the buffer."""
        self._hand_back(0)

    def taken(self) -> list[dict[str, Any]]:
        """The buffered event rows taken so far (for a caller that ends the transaction itself)."""
        return list(self._taken)

    def _hand_back(self, start: int) -> None:
        rows = self._taken[start:]
        del self._taken[start:]
        if rows and self._events is not None:
            self._events.hand_back(rows)


@contextmanager
def repair_unit(
    store: Store,
    events: EventWriter | None = None,
    *,
    group: bool = False,
    action: str = "persisting a repair",
) -> Iterator[RepairUnit]:
    """A write transaction as a ``RepairUnit``: committed when the block ends, rolled back if it raises.

    ``group``: several repairs commit here (the worker's group commit,
    SQLite); their search-index rows are written in one statement before
    the commit (one FTS5 segment for the group). Otherwise a repair is
    indexed by its insert trigger, or by the store's background thread
    when the store defers (``Store.defers_search_index``).
    """
    unit: RepairUnit | None = None
    try:
        with store.connection(write=True, action=action) as conn:
            unit = RepairUnit(conn, events, defer_index=group or store.defers_search_index)
            yield unit
            if group:
                unit.index_deferred()
    except BaseException:
        if unit is not None:
            unit.rolled_back()
        raise
