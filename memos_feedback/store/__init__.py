"""The store: one database holding traces, policies and decision repairs.

``open_store(url)`` returns a migrated ``Store``; its repositories
(``traces``, ``policies``, ``repairs``) and its statement modules
(``outcomes``, ``supersede``, ``reads``, ``jobs``, recall's ``search``
package, ...) hold all of the library's SQL: no other package imports
SQLAlchemy (an import contract in ``pyproject.toml``); they call named
functions here and hold the handles named in ``handles``.
``open_store(url, read_only=True)`` is for readers (the command line's
list/show commands): it never creates, migrates or changes the database,
and refuses one that is not at head.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from types import TracebackType

from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session

from .._checks import check_int
from ..errors import InvalidInputError, SchemaError, StoreBusyError, StoreError
from ..text.logs import library_logger
from ..types import DecisionRepairRow, PolicyRow, ToolCall, TraceRow
from . import checkpoint, migrate
from .checkpoint import WalCheckpointer
from .checks import check_text
from .engine import (
    MAX_BUSY_TIMEOUT_MS,
    RECALL_PLAN_CACHE_MODE,
    SQLITE_BUSY_TIMEOUT_MS,
    WRITE_OPTION,
    create_recall_engine,
    create_store_engine,
    default_url,
    sqlite_file_path,
    translate_errors,
)
from .repositories import PolicyRepository, RepairRepository, TraceRepository
from .search_index import has_deferred, index_deferred

__all__ = [
    "DecisionRepairRow",
    "PolicyRow",
    "Store",
    "ToolCall",
    "TraceRow",
    "create_store_engine",
    "default_url",
    "migrate",
    "open_store",
]

logger = library_logger("memos_feedback.store")


def _busy_timeout(value: object) -> int:
    return check_int("busy_timeout_ms", value, lo=0, hi=MAX_BUSY_TIMEOUT_MS)


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{name} must be True or False, got {value!r:.80}")
    return value


class Store:
    """A migrated database and its repositories. Thread-safe; close when done.

    ``busy_timeout_ms`` bounds every write in total: waiting for this
    process's other writers, for a pooled connection and for another
    process's lock together; past it the write raises ``StoreBusyError``.

    ``defer_search_index`` (a writable SQLite file whose schema is at head,
    as ``open_store`` makes it): repairs written through the store enter
    recall's search index from its background thread, about a second
    later, and are searched as the index's tail until then
    (``store/search_index.py``). ``defers_search_index`` says whether it is on.

    ``recall_engine`` (PostgreSQL, made by ``open_store``): the pool of
    ``reading``; the store disposes of it at ``close``.
    """

    def __init__(
        self,
        engine: Engine,
        url: str,
        *,
        busy_timeout_ms: int = SQLITE_BUSY_TIMEOUT_MS,
        read_only: bool = False,
        defer_search_index: bool = False,
        recall_engine: Engine | None = None,
    ) -> None:
        if not isinstance(engine, Engine):
            raise InvalidInputError(f"engine must be a SQLAlchemy Engine, got {type(engine).__name__}")
        if recall_engine is not None and not isinstance(recall_engine, Engine):
            raise InvalidInputError(
                f"recall_engine must be a SQLAlchemy Engine or None, got {type(recall_engine).__name__}"
            )
        self.engine = engine
        self._recall_engine = recall_engine
        self.url = check_text("url", url, empty=False)
        self.busy_timeout_ms = _busy_timeout(busy_timeout_ms)
        self.read_only = _flag("read_only", read_only)
        self.traces = TraceRepository(self)
        self.policies = PolicyRepository(self)
        self.repairs = RepairRepository(self)
        # SQLite has one writer at a time. Threads of this process queue on
        # a Python lock instead of SQLite's busy handler, whose sleeps (up
        # to 100 ms each) would put a long tail on every contended write.
        # The wait is bounded by the busy timeout (see ``session``).
        sqlite = engine.dialect.name == "sqlite"
        self._write_lock: threading.RLock | None = threading.RLock() if sqlite else None
        path = sqlite_file_path(engine)
        writable_file = path is not None and not read_only
        # Only where a background thread indexes what is deferred.
        self.defers_search_index = writable_file and _flag("defer_search_index", defer_search_index)
        # SQLite file: writes are one at a time (the lock above), so one
        # connection is kept checked out for them (``_writer``) instead of a
        # pool checkout, a new ``Connection`` and a pool return (a reset)
        # per write: about half of an empty write transaction's cost. Used
        # only by the thread holding the write lock, and only when no write
        # of that thread is already using it (the lock is reentrant); else
        # the write takes a pooled connection of its own.
        self._keep_writer = writable_file
        self._writer: Connection | None = None
        self._writer_in_use = False
        # Last: the thread calls back into the store. A reader must not
        # write the file, and a checkpoint does.
        before = self._index_deferred if self.defers_search_index else None
        self._checkpointer = (
            None if path is None or read_only else WalCheckpointer(path, checkpoint.INTERVAL_S, before=before)
        )

    @property
    def recall_engine(self) -> Engine | None:
        """The pool of ``reading`` (PostgreSQL stores from ``open_store``), else None.

        For instrumentation: recall's statements run here, not on ``engine``.
        """
        return self._recall_engine

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

    @property
    def one_writer(self) -> bool:
        """Whether writes take turns in this process (SQLite): a writer gains by batching its commits."""
        return self._write_lock is not None

    @property
    def one_connection(self) -> bool:
        """Whether every thread shares one connection (in-memory SQLite): not usable from two at once."""
        return self.engine.dialect.name == "sqlite" and sqlite_file_path(self.engine) is None

    @contextmanager
    def session(
        self, *, write: bool = False, action: str = "database access", session: Session | None = None
    ) -> Iterator[Session]:
        """A session inside one transaction, committed on success.

        ``write=True`` takes SQLite's write lock up front (BEGIN IMMEDIATE)
        so a read-then-write cannot fail half-way on a lock upgrade. When
        ``session`` is given, work joins that transaction instead.
        """
        with translate_errors(action):
            if session is not None:
                yield session
                return
            # The session begins and commits the transaction itself, so
            # whatever it still holds unflushed is flushed before the commit.
            with (
                self._transaction(write, action, begin=False) as conn,
                Session(bind=conn, expire_on_commit=False) as s,
                s.begin(),
            ):
                yield s

    @contextmanager
    def connection(
        self,
        *,
        write: bool = False,
        action: str = "database access",
        session: Session | None = None,
    ) -> Iterator[Connection]:
        """A Core connection inside one transaction, committed on success.

        The same locking as ``session`` without the ORM: the worker's hot
        statements (claim, grouped reads, the repair write) run here, where
        a prebuilt statement is one compiled-cache lookup and no unit of
        work is set up or flushed. When ``session`` is given, work joins
        that session's transaction (its connection) instead.
        """
        with translate_errors(action):
            if session is not None:
                yield session.connection()
                return
            with self._transaction(write, action, begin=True) as conn:
                yield conn

    @contextmanager
    def reading(self, *, action: str = "database access") -> Iterator[Connection]:
        """A connection for recall's read: a few statements, each with one plan for all values.

        On PostgreSQL, a connection of the recall pool (``create_recall_engine``):
        autocommit, so each statement reads its own snapshot, as it would
        in a READ COMMITTED transaction, without the transaction's two
        round trips; its statements get generic plans. A store made
        without that pool reads in a transaction with the plan setting
        ``SET LOCAL`` (ending with it). SQLite: ``connection()``, one snapshot.
        """
        if self._recall_engine is None:
            with self.connection(action=action) as conn:
                if conn.dialect.name == "postgresql":
                    conn.exec_driver_sql(f"SET LOCAL plan_cache_mode = {RECALL_PLAN_CACHE_MODE}")
                yield conn
            return
        with translate_errors(action), self._recall_engine.connect() as conn:
            yield conn

    @contextmanager
    def _transaction(self, write: bool, action: str, *, begin: bool) -> Iterator[Connection]:
        """A connection for one transaction (begun here when ``begin``, else by the caller).

        Begun here, it commits when the block ends without error.
        """
        if not write:
            with self.engine.connect() as conn, conn.begin() if begin else nullcontext():
                yield conn
            return
        if self.read_only:
            raise StoreError(f"{action} failed: the store was opened read-only")
        # One budget for the whole write: the lock below, the pool
        # checkout and SQLite's busy handler all draw on it.
        budget = self.busy_timeout_ms / 1000
        deadline = time.monotonic() + budget
        lock = self._write_lock
        if lock is not None and not lock.acquire(timeout=budget):
            raise StoreBusyError(
                f"{action} failed: database is locked (another writer held it past the "
                f"{budget:g} s busy timeout)"
            )
        try:
            kept = lock is not None and self._keep_writer and not self._writer_in_use
            with self._kept_writer() if kept else self.engine.connect() as conn:
                # Remaining budget in ms (at least 1, so a write that just
                # got the lock still tries once) for the begin hook.
                remaining = max(1, int((deadline - time.monotonic()) * 1000))
                conn.execution_options(**{WRITE_OPTION: remaining if lock is not None else True})
                with conn.begin() if begin else nullcontext():
                    yield conn
        finally:
            if lock is not None:
                lock.release()

    @contextmanager
    def _kept_writer(self) -> Iterator[Connection]:
        """The kept write connection (made on first use); the caller holds the write lock.

        After a write that raised, the connection is closed (returned to
        the pool, which resets it) and the next write makes a new one: a
        ``Connection`` object that saw a failed begin or commit keeps no
        state into the next transaction. Likewise if a transaction was
        left open.
        """
        conn = self._writer
        if conn is None:
            conn = self._writer = self.engine.connect()
        self._writer_in_use = True
        ok = False
        try:
            yield conn
            ok = True
        finally:
            self._writer_in_use = False
            if not (ok and self._keep_writer and _idle(conn)):
                self._drop_writer()

    def _drop_writer(self) -> None:
        conn, self._writer = self._writer, None
        if conn is not None:
            try:
                conn.close()
            except Exception as exc:  # closing a broken connection: nothing to keep
                logger.debug("closing the kept write connection failed: %s", exc)

    def _index_deferred(self) -> None:
        """The background thread's turn: index the repairs whose index rows were deferred.

        A read first, so an empty tail (the usual case) takes no write lock.
        Fails soft: the tail stays searchable, and the next turn tries again.
        """
        try:
            with self.connection(action="reading the search index's tail") as conn:
                if not has_deferred(conn):
                    return
            with self.connection(write=True, action="indexing deferred repairs") as conn:
                index_deferred(conn)
        except StoreError as exc:
            logger.debug("indexing deferred repairs of %s skipped: %s", self, exc)

    def revision(self) -> str | None:
        """The database's Alembic revision."""
        return migrate.current_revision(self.engine)

    def close(self) -> None:
        self._keep_writer = False
        lock = self._write_lock
        # A write in progress closes the kept connection itself when it ends.
        if lock is not None and lock.acquire(timeout=self.busy_timeout_ms / 1000):
            try:
                if not self._writer_in_use:
                    self._drop_writer()
            finally:
                lock.release()
        if self._checkpointer is not None:
            self._checkpointer.close()
            self._checkpointer = None
        if self._recall_engine is not None:
            self._recall_engine.dispose()
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.engine.url.render_as_string(hide_password=True)!r})"


def _idle(conn: Connection) -> bool:
    """Valid and outside any transaction, SQLAlchemy's or the driver's own."""
    if conn.invalidated or conn.closed or conn.in_transaction():
        return False
    raw = conn.connection.driver_connection
    return raw is not None and not getattr(raw, "in_transaction", True)


def open_store(
    url: str | None = None,
    *,
    migrate_to_head: bool = True,
    read_only: bool = False,
    busy_timeout_ms: int = SQLITE_BUSY_TIMEOUT_MS,
) -> Store:
    """Open (and by default migrate to head) the database at ``url``.

    ``url`` defaults to ``MEMOS_FEEDBACK_DB_URL``, else a SQLite file in
    the user data directory. Raises ``SchemaError`` for a database whose
    revision this code does not know, ``StoreError`` for anything else.

    ``read_only=True`` never creates, migrates or changes the database: a
    missing SQLite file is a ``StoreError``, and a database that is not at
    the head revision a ``SchemaError`` saying to upgrade (with
    ``migrate_to_head=False`` any revision is accepted, for tools that
    only inspect it). ``busy_timeout_ms`` bounds each write in total.
    """
    resolved = default_url() if url is None else url
    if not isinstance(resolved, str) or not resolved.strip():
        raise InvalidInputError(f"url must be a non-empty str, got {resolved!r:.80}")
    check_text("url", resolved)
    migrate_to_head = _flag("migrate_to_head", migrate_to_head)
    read_only = _flag("read_only", read_only)
    busy_timeout_ms = _busy_timeout(busy_timeout_ms)
    engine = create_store_engine(resolved, busy_timeout_ms=busy_timeout_ms, read_only=read_only)
    try:
        if migrate_to_head and read_only:
            _require_head(engine)
        elif migrate_to_head:
            migrate.upgrade(engine)
        recall = create_recall_engine(resolved, busy_timeout_ms=busy_timeout_ms, read_only=read_only)
    except BaseException:
        engine.dispose()
        raise
    logger.debug("opened store %s", engine.url.render_as_string(hide_password=True))
    # Just migrated to head: the schema has migration 0011's triggers.
    at_head = migrate_to_head and not read_only
    return Store(
        engine,
        resolved,
        busy_timeout_ms=busy_timeout_ms,
        read_only=read_only,
        defer_search_index=at_head,
        recall_engine=recall,
    )


def _require_head(engine: Engine) -> None:
    """A reader's check: the schema is the one this code reads, or say what to do."""
    if migrate.at_head(engine):
        return
    current = migrate.current_revision(engine)
    head = migrate.head_revision()
    if current == head:
        return
    if current is None:
        raise SchemaError(
            "the database has no memos-feedback schema (run `memos-feedback db upgrade` to create it)"
        )
    if not migrate.is_known(current):
        raise SchemaError(migrate.unknown_revision_message(current))
    raise SchemaError(
        f"the database is at schema revision {current!r}, this code reads {head!r} "
        "(run `memos-feedback db upgrade`)"
    )
