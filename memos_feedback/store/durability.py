"""Telling a database outage from a bad trigger.

The enqueuer drops a trigger only when the trigger itself is the cause:
the database refused it several times while other writes succeed. Two
things tell the cases apart:

* ``is_outage``: the error says the database cannot write at all — the
  disk is full, an I/O error, a read-only or vanished file, no memory,
  a dropped connection (SQLite result codes, PostgreSQL SQLSTATE classes).
  Such a refusal is never the trigger's fault, whatever else succeeds;
* ``probe_write``: a write of one trivial row commits. An empty
  transaction is no proof: it commits on a full disk, because it writes
  nothing (so 20 of 20 bursts recorded during a full disk used to be
  dropped as poison).
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from ..errors import MemosFeedbackError
from ..types import now_ms

if TYPE_CHECKING:
    from . import Store

__all__ = ["PROBE_TABLE", "is_outage", "probe_write"]

PROBE_TABLE = "store_probe"

# SQLite primary result codes of a database that cannot write, whatever
# is written: NOMEM, READONLY, IOERR, CORRUPT, FULL, CANTOPEN, NOTADB.
_SQLITE_OUTAGE = {7, 8, 10, 11, 13, 14, 26}
# PostgreSQL SQLSTATE classes: 53 insufficient resources (53100 disk_full),
# 58 system error (58030 io_error), 57 operator intervention (shutdown),
# 08 connection exception, XX internal error; and 25006, a read-only
# transaction (a standby, default_transaction_read_only).
_PG_OUTAGE_CLASSES = ("53", "58", "57", "08", "XX")
_PG_OUTAGE_STATES = {"25006"}

_PROBE = text(
    f"INSERT INTO {PROBE_TABLE} (id, ts) VALUES (1, :ts) ON CONFLICT (id) DO UPDATE SET ts = excluded.ts"
)


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error it was raised from) says the database cannot write."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, DBAPIError):
            if current.connection_invalidated:
                return True
            if _driver_outage(current.orig):
                return True
        elif _driver_outage(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def _driver_outage(orig: BaseException | None) -> bool:
    if isinstance(orig, sqlite3.Error):
        code = getattr(orig, "sqlite_errorcode", None)
        return isinstance(code, int) and (code & 0xFF) in _SQLITE_OUTAGE
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if not isinstance(state, str):
        return False
    return state in _PG_OUTAGE_STATES or state[:2] in _PG_OUTAGE_CLASSES


def probe_write(store: Store) -> bool:
    """Whether a write of one trivial row commits now (the probe table's one row, its time changed)."""
    try:
        with store.connection(write=True, action="probing the database with a write") as conn:
            conn.execute(_PROBE, {"ts": now_ms()})
    except MemosFeedbackError:
        return False
    return True
