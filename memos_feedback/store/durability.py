"""Telling a database outage from a bad trigger; noticing a SQLite file that went away.

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

``SqliteFile``: a SQLite file deleted (or replaced) under an open store
keeps taking writes — on the unlinked inode, which nobody can open again —
while a new connection would create an empty database at the same path:
futures said "persisted" and nothing was there after reopening. So once
the file exists it is opened ``mode=rw`` (never created again), every
new connection and every write transaction checks that the path still
names the file first opened (device and inode), and a mismatch fails
loudly (``SQLITE_CANTOPEN``, an outage: nothing buffered is dropped for
it). A deletion between that check and the commit still goes unnoticed
for that one write.
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from ..errors import MemosFeedbackError
from ..types import now_ms

if TYPE_CHECKING:
    from . import Store

__all__ = ["PROBE_TABLE", "SqliteFile", "is_outage", "probe_write"]

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

# SQLite's SQLITE_CANTOPEN: what a vanished or replaced file is reported as.
_CANTOPEN = 14

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
        # Only what it was raised *from*: an error merely handled nearby
        # (``__context__``) says nothing about this one.
        current = current.__cause__
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


class SqliteFile:
    """The file behind a SQLite engine, and whether its path still names it (module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._name = str(path)
        self._uri = f"file:{urllib.parse.quote(str(path.absolute()))}"
        # (st_dev, st_ino) of the file first opened; None until then.
        self.identity: tuple[int, int] | None = None

    def connect(self, timeout: float) -> sqlite3.Connection:
        """A new connection: may create the file only while none was opened yet."""
        if self.identity is None:
            conn = sqlite3.connect(self.path, timeout=timeout, check_same_thread=False)
        else:
            conn = sqlite3.connect(f"{self._uri}?mode=rw", uri=True, timeout=timeout, check_same_thread=False)
        try:
            self.opened()
        except BaseException:
            conn.close()
            raise
        return conn

    def opened(self) -> None:
        """Right after a connection opened the path: remember the file, or check it is the same."""
        now = self._identity()
        if self.identity is None:
            self.identity = now
        elif now != self.identity:
            raise self._gone("was replaced by another file")

    def check(self) -> None:
        """Raise ``sqlite3.OperationalError`` unless the path still names the file first opened."""
        if self.identity is not None and self._identity() != self.identity:
            raise self._gone("was replaced by another file")

    def _identity(self) -> tuple[int, int]:
        try:
            st = os.stat(self._name)
        except FileNotFoundError:
            raise self._gone("was deleted") from None
        return st.st_dev, st.st_ino

    def _gone(self, what: str) -> sqlite3.OperationalError:
        error = sqlite3.OperationalError(
            f"the database file {self.path} {what} while the store had it open: "
            "writes would go where nobody can read them (close and reopen the store)"
        )
        error.sqlite_errorcode = _CANTOPEN
        return error
