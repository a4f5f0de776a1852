"""Waking followers of the event log when something commits.

PostgreSQL: a dedicated autocommit connection LISTENs on
``memos_feedback_events``; every event write sends a NOTIFY that is
delivered at commit, so a follower wakes at once instead of polling. The
notification carries nothing: the follower reads the table, which is the
data (a missed notification only costs one poll interval).

SQLite (or a PostgreSQL driver other than psycopg 3): plain polling.
"""

from __future__ import annotations

import contextlib
import threading
from types import TracebackType
from typing import Any

from ..text.logs import library_logger
from . import Store

__all__ = ["NOTIFY_CHANNEL", "Waker"]

logger = library_logger("memos_feedback.feed")

NOTIFY_CHANNEL = "memos_feedback_events"
# On PostgreSQL a notification wakes the follower; this only bounds a miss.
_PG_POLL = 1.0


class Waker:
    """``wait(poll, stop)`` returns early when an event write commits (PostgreSQL)."""

    def __init__(self, store: Store) -> None:
        self._conn: Any = None
        if store.dialect != "postgresql":
            return
        try:
            raw = store.engine.raw_connection()
            raw.detach()  # its LISTEN state must never go back to the pool
            conn: Any = raw.driver_connection
            if conn is None or not hasattr(conn, "notifies"):
                raw.close()
                return
            conn.autocommit = True
            conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
            self._conn = conn
        except Exception as exc:  # polling still works
            logger.warning("cannot LISTEN for events, polling instead: %s", exc)
            self._conn = None

    def wait(self, poll: float, stop: threading.Event) -> None:
        if self._conn is None:
            stop.wait(poll)
            return
        try:
            # Woken by a NOTIFY, or after the timeout; a stop is noticed within it.
            for _ in self._conn.notifies(timeout=min(_PG_POLL, max(poll, 0.05) * 5), stop_after=1):
                pass
        except Exception as exc:
            logger.warning("LISTEN connection failed, polling instead: %s", exc)
            self.close()

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            # An already broken connection has nothing left to release.
            with contextlib.suppress(Exception):
                conn.close()

    def __enter__(self) -> Waker:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
