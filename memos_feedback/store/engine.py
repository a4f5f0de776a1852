"""Engines, URLs and error translation for the store.

SQLite gets WAL (readers never block the writer), a busy timeout, and
explicit ``BEGIN`` handling: pysqlite's own transaction emulation cannot
issue ``BEGIN IMMEDIATE``, which write transactions need so that two
processes never both read-then-write the same rows.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from ..errors import StoreBusyError, StoreError

__all__ = ["DB_URL_ENV", "SQLITE_BUSY_TIMEOUT_MS", "create_store_engine", "default_url", "translate_errors"]

logger = logging.getLogger("memos_feedback.store")

DB_URL_ENV = "MEMOS_FEEDBACK_DB_URL"
SQLITE_BUSY_TIMEOUT_MS = 30_000

# Execution option that asks the SQLite begin hook for BEGIN IMMEDIATE.
WRITE_OPTION = "memos_feedback_write"

# PostgreSQL SQLSTATEs that mean "try again": serialization failure,
# deadlock, lock not available, connection trouble.
_PG_TRANSIENT = {"40001", "40P01", "55P03", "57P01", "08000", "08003", "08006"}


def default_url() -> str:
    """``MEMOS_FEEDBACK_DB_URL`` if set, else a SQLite file in the user data dir."""
    env = os.environ.get(DB_URL_ENV)
    if env:
        return env
    data_dir = Path(platformdirs.user_data_dir("memos-feedback", appauthor=False))
    return f"sqlite:///{data_dir / 'memos_feedback.db'}"


def create_store_engine(url: str) -> Engine:
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise StoreError(f"not a database URL: {url!r}") from exc
    try:
        if parsed.get_backend_name() == "sqlite":
            return _sqlite_engine(url)
        return create_engine(parsed, pool_pre_ping=True, pool_size=5, max_overflow=5)
    except NoSuchModuleError as exc:
        raise StoreError(f"no driver for {parsed.drivername!r}; is the right extra installed?") from exc
    except ImportError as exc:
        raise StoreError(f"database driver missing for {parsed.drivername!r}: {exc}") from exc


def _sqlite_engine(url: str) -> Engine:
    parsed = make_url(url)
    database = parsed.database or ""
    memory = database in ("", ":memory:") or parsed.query.get("mode") == "memory"
    kwargs: dict[str, Any] = {"connect_args": {"check_same_thread": False}}
    if memory:
        # One shared connection, or every checkout would see an empty database.
        kwargs["poolclass"] = StaticPool
    else:
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        kwargs["connect_args"]["timeout"] = SQLITE_BUSY_TIMEOUT_MS / 1000
    engine = create_engine(url, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we emit BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        if not memory:
            _enable_wal(cur)
            cur.execute("PRAGMA synchronous=NORMAL")
            # Checkpoints run in the store's background thread (checkpoint.py).
            cur.execute("PRAGMA wal_autocheckpoint=0")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def sqlite_file_path(engine: Engine) -> str | None:
    """The file behind a SQLite engine, or None for memory or another backend."""
    if engine.dialect.name != "sqlite":
        return None
    database = engine.url.database or ""
    if database in ("", ":memory:") or engine.url.query.get("mode") == "memory":
        return None
    return str(Path(database).expanduser())


def _enable_wal(cur: Any) -> None:
    """``PRAGMA journal_mode=WAL``, retried while another connection holds the lock.

    Switching a fresh file to WAL needs an exclusive lock, and SQLite may
    answer "database is locked" at once, without calling the busy handler,
    when another process is switching or migrating the same file.
    """
    waited, delay = 0.0, 0.005  # counted, not read from a clock (tests freeze clocks)
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except Exception as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or waited >= SQLITE_BUSY_TIMEOUT_MS / 1000:
                raise
            time.sleep(delay)
            waited += delay
            delay = min(delay * 2, 0.1)


def is_transient(exc: BaseException) -> bool:
    """True for database errors worth retrying (busy, locked, deadlock)."""
    if isinstance(exc, StoreBusyError):
        return True
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return True
        orig = exc.orig
        code = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
        if code in _PG_TRANSIENT:
            return True
        text = str(orig).lower()
        return "database is locked" in text or "database is busy" in text or "deadlock" in text
    return False


@contextmanager
def translate_errors(action: str) -> Iterator[None]:
    """Re-raise SQLAlchemy errors as the library's own ``StoreError``."""
    try:
        yield
    except SQLAlchemyError as exc:
        detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        message = f"{action} failed: {detail[0] if detail else type(exc).__name__}"
        if is_transient(exc):
            raise StoreBusyError(message) from exc
        raise StoreError(message) from exc
