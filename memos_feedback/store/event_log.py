"""``FeedStore``: the durable event log (table ``feedback_events``).

Writes come two ways:

* **In the transaction of the change.** Events that report a state change
  (``STATE_KINDS``: a repair written, attached or reviewed, a job retried,
  buried, discarded, requeued or purged) are inserted by ``write_in``
  inside the very transaction that makes the change, so the log never
  shows a repair that rolled back and never misses one that committed.
* **Batched.** The others (``repair.triggered``, ``feedback.classified``,
  ``repair.skipped``, ``repair.job.failed``) are only buffered in memory by
  the bus listener (``buffer``) — cheap on the emitting thread — and go
  out with the next write: the next state-change transaction or the
  background flush (every ``events_flush_ms``). A crash can lose them;
  they report nothing that the database holds.

Order: ``seq`` is commit order. Every write takes the log's lock before
it allocates a ``seq`` and keeps it until commit: on PostgreSQL a
transaction-scoped advisory lock (a plain sequence would hand out 11
before 10 commits, and a follower past 11 would skip 10 for ever); on
SQLite the database's single write lock (``BEGIN IMMEDIATE``) does it
already. Buffered events are taken from the buffer only under that lock,
so an event buffered before a change is logged before it. A follower can
therefore read ``seq > last`` and miss nothing. The lock is taken as the
last step of a transaction, so it is held only for the insert and the
commit.

On PostgreSQL every write also sends ``NOTIFY memos_feedback_events``
(delivered at commit) to wake followers; the table is the data.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Connection, Table, bindparam, delete, event, func, insert, select, text
from sqlalchemy.orm import Session

from .._checks import check_int
from .._failpoints import failpoint
from .._loop import wake_loop
from ..config import FeedbackConfig
from ..errors import InvalidInputError, MemosFeedbackError
from ..events import EVENT_KINDS, FeedbackEvent, event_to_dict
from ..limits import clean_text
from ..text.logs import library_logger
from ..text.secrets import stored_text
from ..types import now_ms
from . import Store
from .engine import Prepared
from .models import FeedbackEventModel
from .wake import NOTIFY_CHANNEL, Waker

__all__ = ["STATE_KINDS", "EventRecord", "FeedStore", "record_to_dict"]

logger = library_logger("memos_feedback.feed")

STATE_KINDS: frozenset[str] = frozenset(
    {
        "repair.persisted",
        "repair.attached",
        "repair.reviewed",
        "repair.deleted",
        "repair.job.retrying",
        "repair.job.dead",
        "repair.job.discarded",
        "repair.job.requeued",
        "repair.job.purged",
    }
)
# Two 32-bit keys: a key space apart from the single-bigint context locks.
# The NOTIFY rides with the lock (one round trip): it is only delivered at
# commit, and one for a write that ends up inserting nothing just wakes a
# follower that finds nothing new.
_LOCK_PG = text(f"SELECT pg_advisory_xact_lock(28006, 13), pg_notify('{NOTIFY_CHANNEL}', '')")
_TABLE = cast(Table, FeedbackEventModel.__table__)
_INSERT = insert(_TABLE)
# The columns ``_row`` fills; on a Core connection (the worker's repair
# write) the rows go through the driver's executemany (``Prepared.many``).
_ROW_KEYS = ("ts", "kind", "context_hash", "repair_id", "job_id", "payload")
_RUN_INSERT = Prepared(_INSERT, column_keys=_ROW_KEYS)
# Payload strings are capped: an exception text can be megabytes.
_VALUE_CAP = 4000
_READ_CAP = 10_000
# Buffered events beyond this wake the flusher early.
_WAKE_AT = 256


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One committed event. ``payload`` holds the event's own fields."""

    seq: int
    ts: int
    kind: str
    context_hash: str | None
    repair_id: str | None
    job_id: str | None
    payload: dict[str, Any]


def record_to_dict(r: EventRecord) -> dict[str, Any]:
    """JSON-ready: ``seq``, ``ts``, ``kind`` then the payload fields."""
    return {"seq": r.seq, "ts": r.ts, "kind": r.kind, **r.payload}


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return stored_text(value, _VALUE_CAP)
    if isinstance(value, (tuple, list)):
        return [_clean(v) for v in value]
    return value


def _row(e: FeedbackEvent) -> dict[str, Any]:
    data = event_to_dict(e)
    del data["kind"], data["at"]
    payload = {k: _clean(v) for k, v in data.items()}

    def ident(name: str) -> str | None:
        v = payload.get(name)
        return clean_text(v, 64) if isinstance(v, str) else None

    return {
        "ts": e.at,
        "kind": e.kind,
        "context_hash": ident("context_hash"),
        "repair_id": ident("repair_id"),
        "job_id": ident("job_id"),
        "payload": payload,
    }


def _record(row: Any) -> EventRecord:
    payload = row.payload if isinstance(row.payload, dict) else {}
    return EventRecord(
        seq=int(row.seq),
        ts=int(row.ts),
        kind=row.kind,
        context_hash=row.context_hash,
        repair_id=row.repair_id,
        job_id=row.job_id,
        payload=payload,
    )


# Buffered rows a transaction took, by session: handed back on rollback,
# forgotten on commit. Two class-level listeners instead of one per write:
# listening on a session instance costs about 0.1 ms, more than the insert.
_TAKEN = "memos_feedback_events_taken"


def _forget(session: Session) -> None:
    session.info.pop(_TAKEN, None)


def _hand_back(session: Session) -> None:
    for feed, rows in reversed(session.info.pop(_TAKEN, [])):
        feed._put_back(rows)


event.listen(Session, "after_commit", _forget)
event.listen(Session, "after_rollback", _hand_back)


def _rowcount(result: Any) -> int:
    return int(getattr(result, "rowcount", 0) or 0)


def _check_kinds(kinds: Iterable[str] | None) -> tuple[str, ...] | None:
    if kinds is None:
        return None
    out = tuple(kinds)
    unknown = [k for k in out if k not in EVENT_KINDS]
    if unknown:
        raise InvalidInputError(f"unknown event kind(s) {unknown}; known: {sorted(EVENT_KINDS)}")
    return out


class FeedStore:
    """Writes, reads, follows and prunes ``feedback_events``. Thread-safe."""

    def __init__(self, store: Store, config: FeedbackConfig | None = None) -> None:
        self.store = store
        self.config = config or FeedbackConfig()
        self._pending: deque[dict[str, Any]] = deque()
        self._take_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pruned_at = 0.0

    # -- writing ------------------------------------------------------------

    def buffer(self, e: FeedbackEvent) -> None:
        """Bus listener (``bus.on_any``): keep an event for the next write.

        State-change kinds are skipped: their emitters log them in the
        change's own transaction (``write_in``).
        """
        if e.kind in STATE_KINDS:
            return
        self._pending.append(_row(e))
        if len(self._pending) >= _WAKE_AT:
            self._wake.set()

    def write_in(
        self, session: Session | Connection, events: Sequence[FeedbackEvent] = ()
    ) -> list[dict[str, Any]]:
        """Insert everything buffered, then ``events``, in the transaction of ``session``.

        Call it as the last statement of the transaction: on PostgreSQL it
        takes the log's lock, which is held until commit. In an ORM session
        the buffered rows taken are handed back by itself on a rollback; on
        a Core connection (the worker's repair write) they are returned, and
        a caller whose transaction fails passes them to ``hand_back``.
        """
        dialect = session.get_bind().dialect if isinstance(session, Session) else session.dialect
        if dialect.name == "postgresql":
            session.execute(_LOCK_PG)
        taken = self._take()
        rows = taken + [_row(e) for e in events]
        if not rows:
            return []
        if taken and isinstance(session, Session):
            # A rollback must not lose what other threads buffered (see _settled).
            session.info.setdefault(_TAKEN, []).append((self, taken))
            taken = []
        if isinstance(session, Connection):
            _RUN_INSERT.many(session, rows)
        else:
            session.execute(_INSERT, rows)
        if events:
            failpoint("events.before_commit")
        return taken

    def hand_back(self, rows: list[dict[str, Any]]) -> None:
        """Buffered rows a failed Core transaction took (``write_in``'s result): keep them."""
        if rows:
            self._put_back(rows)

    def _take(self) -> list[dict[str, Any]]:
        with self._take_lock:
            rows = list(self._pending)
            self._pending.clear()
        return rows

    def _put_back(self, rows: list[dict[str, Any]]) -> None:
        with self._take_lock:
            self._pending.extendleft(reversed(rows))

    def flush(self) -> None:
        """Write whatever is buffered now, in a transaction of its own."""
        if not self._pending:
            return
        with self.store.session(write=True, action="writing events") as s:
            self.write_in(s)

    def log(self, events: Sequence[FeedbackEvent]) -> None:
        """Write ``events`` now, in a transaction of their own."""
        with self.store.session(write=True, action="writing events") as s:
            self.write_in(s, events)

    # -- background flush and pruning ------------------------------------------

    def start(self) -> None:
        """Start the thread that flushes buffered events and prunes the log."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="memos-feedback-events", daemon=True)
            self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread after a last flush (bounded by ``timeout`` seconds)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        try:
            self.flush()
        except MemosFeedbackError as exc:
            logger.warning("could not write %d buffered event(s): %s", len(self._pending), exc)

    def _run(self) -> None:
        if self._stop.is_set():  # closed before the thread ran: close() writes what is left
            return
        every = self.config.events_flush_ms / 1000
        wake_loop(self._flush_and_prune, wake=self._wake, period=every, closing=self._stop)

    def _flush_and_prune(self) -> bool:
        """One round of the thread: write the buffer, prune when due.

        Errors are logged and retried at the next wake-up; the period
        already spaces the tries, so a round always counts as done.
        """
        try:
            self.flush()
            if time.monotonic() - self._pruned_at >= self.config.events_prune_every_ms / 1000:
                self._pruned_at = time.monotonic()
                self.prune()
        except MemosFeedbackError as exc:
            logger.warning("event log write failed, will retry: %s", exc)
        except Exception:  # the flusher must outlive any bug
            logger.exception("unexpected error in the event log thread")
        return True

    def prune(self, now: int | None = None) -> int:
        """Delete events older than ``events_max_age_ms`` and beyond the newest ``events_max_count``."""
        now = now_ms() if now is None else now
        cutoff = now - self.config.events_max_age_ms
        with self.store.session(write=True, action="pruning events") as s:
            # By age: everything before the first event young enough to keep.
            # ``ts`` follows ``seq`` closely but not exactly (a batched event
            # is written up to events_flush_ms late), so an old event just
            # after a young one waits for a later prune; in exchange the scan
            # walks the primary key over exactly the rows it deletes, and no
            # index on ts slows every commit.
            first_young = s.scalar(
                select(_TABLE.c.seq).where(_TABLE.c.ts >= cutoff).order_by(_TABLE.c.seq).limit(1)
            )
            old = _TABLE.c.seq < first_young if first_young is not None else _TABLE.c.seq.is_not(None)
            gone = _rowcount(s.execute(delete(_TABLE).where(old)))
            keep_from = s.scalar(
                select(_TABLE.c.seq)
                .order_by(_TABLE.c.seq.desc())
                .offset(self.config.events_max_count - 1)
                .limit(1)
            )
            if keep_from is not None:
                gone += _rowcount(s.execute(delete(_TABLE).where(_TABLE.c.seq < keep_from)))
        if gone:
            logger.info("pruned %d event(s) from the log", gone)
        return int(gone)

    # -- reading and following -----------------------------------------------

    def last_seq(self) -> int:
        """The newest committed ``seq`` (0 for an empty log)."""
        with self.store.session(action="reading the event log") as s:
            return int(s.scalar(select(func.coalesce(func.max(_TABLE.c.seq), 0))) or 0)

    def newest(self, n: int) -> list[EventRecord]:
        """The newest ``n`` committed events, oldest first."""
        stmt = select(_TABLE).order_by(_TABLE.c.seq.desc()).limit(max(0, min(n, _READ_CAP)))
        with self.store.session(action="reading the event log") as s:
            return [_record(r) for r in reversed(list(s.execute(stmt)))]

    def read(
        self, after_seq: int = 0, kinds: Iterable[str] | None = None, limit: int = 500
    ) -> list[EventRecord]:
        """Committed events with ``seq > after_seq``, oldest first, at most ``limit``."""
        check_int("after_seq", after_seq, lo=0)
        check_int("limit", limit, lo=1, hi=_READ_CAP)
        wanted = _check_kinds(kinds)
        stmt = select(_TABLE).where(_TABLE.c.seq > bindparam("after")).order_by(_TABLE.c.seq).limit(limit)
        if wanted is not None:
            stmt = stmt.where(_TABLE.c.kind.in_(wanted))
        with self.store.session(action="reading the event log") as s:
            return [_record(r) for r in s.execute(stmt, {"after": after_seq})]

    def follow(
        self,
        after_seq: int | None = None,
        kinds: Iterable[str] | None = None,
        *,
        stop: threading.Event | None = None,
        poll: float = 0.2,
        idle_timeout: float | None = None,
    ) -> Iterator[EventRecord]:
        """Yield events as they commit, like ``tail -f``.

        ``after_seq`` None starts at the newest event (only new ones come);
        0 replays the whole log. Ends when ``stop`` is set, or after
        ``idle_timeout`` seconds without an event. On PostgreSQL a LISTEN
        connection wakes the follower at each commit; ``poll`` seconds is
        the longest it sleeps otherwise.
        """
        wanted = _check_kinds(kinds)
        stop = stop or threading.Event()
        with Waker(self.store) as waker:
            # The waker listens before the first read: a commit after it wakes us.
            last = self.last_seq() if after_seq is None else after_seq
            quiet_since = time.monotonic()
            while not stop.is_set():
                rows = self.read(last, wanted, limit=500)
                for r in rows:
                    last = r.seq
                    yield r
                if rows:
                    quiet_since = time.monotonic()
                    if len(rows) == 500:
                        continue
                elif idle_timeout is not None and time.monotonic() - quiet_since >= idle_timeout:
                    return
                waker.wait(poll, stop)
