"""Engines, URLs and error translation for the store.

SQLite gets WAL (readers never block the writer), a busy timeout, and
explicit ``BEGIN`` handling: pysqlite's own transaction emulation cannot
issue ``BEGIN IMMEDIATE``, which write transactions need so that two
processes never both read-then-write the same rows.

The busy timeout is a budget for a whole write, not per wait: the store
passes each write's remaining time (after it queued on the process-local
write lock) down to the begin hook, which lowers the connection's
``busy_timeout`` to it, so lock, checkout and SQLite's busy handler
together never exceed it.

A read-only engine (``read_only=True``) never creates, migrates or
changes a database: no folder is made, a missing SQLite file is an error,
the file is opened with ``mode=ro`` and left in whatever journal mode it
has; PostgreSQL sessions default to read-only transactions.

On PostgreSQL a store also keeps a small second pool for recall's reads
(``create_recall_engine``): autocommit, and every statement planned once
per connection (``plan_cache_mode = force_generic_plan``), settings that
suit those statements and no others (``Store.reading``).
"""

from __future__ import annotations

import operator
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Dialect, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, DisconnectionError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.orm import Session
from sqlalchemy.pool import StaticPool
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ClauseElement
from sqlalchemy.sql.expression import Executable

from ..config import DB_URL_ENV, default_db_url
from ..errors import StoreBusyError, StoreError
from ..text.logs import library_logger
from .durability import SqliteFile

__all__ = [
    "DB_URL_ENV",
    "MAX_BUSY_TIMEOUT_MS",
    "PING_AFTER_IDLE_S",
    "RECALL_PLAN_CACHE_MODE",
    "SQLITE_BUSY_TIMEOUT_MS",
    "Prepared",
    "create_recall_engine",
    "create_store_engine",
    "default_url",
    "translate_errors",
]

# Re-exported: the default lives in config so a light caller (the hooks) needs no store.
default_url = default_db_url

logger = library_logger("memos_feedback.store")

SQLITE_BUSY_TIMEOUT_MS = 30_000
# SQLite takes the busy timeout as a C int; a day is more than anyone means.
MAX_BUSY_TIMEOUT_MS = 86_400_000

# Execution option that asks the SQLite begin hook for BEGIN IMMEDIATE. Its
# value is True or, from the store, the write's remaining budget in ms.
WRITE_OPTION = "memos_feedback_write"
# Where a pooled SQLite connection remembers its current busy_timeout.
_BUSY_INFO = "memos_feedback_busy_ms"
# SQLite files are memory-mapped up to this size (PRAGMA mmap_size).
_MMAP_BYTES = 256 * 1024 * 1024
# Lowering busy_timeout costs a statement; skip it for differences this small.
_BUSY_SLACK_MS = 20

# PostgreSQL SQLSTATEs that mean "try again": serialization failure,
# deadlock, lock not available, connection trouble.
_PG_TRANSIENT = {"40001", "40P01", "55P03", "57P01", "08000", "08003", "08006"}


def no_database_message(path: str) -> str:
    return f"no database at {path} (run `memos-feedback db upgrade` to create one)"


def create_store_engine(
    url: str, *, busy_timeout_ms: int = SQLITE_BUSY_TIMEOUT_MS, read_only: bool = False
) -> Engine:
    """An engine for ``url``; see the module docstring for ``read_only``."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise StoreError(f"not a database URL: {url!r}") from exc
    try:
        if parsed.get_backend_name() == "sqlite":
            return _sqlite_engine(url, busy_timeout_ms, read_only)
        return _server_engine(parsed, busy_timeout_ms, read_only, pool_size=5, max_overflow=5)
    except NoSuchModuleError as exc:
        raise StoreError(f"no driver for {parsed.drivername!r}; is the right extra installed?") from exc
    except ImportError as exc:
        raise StoreError(f"database driver missing for {parsed.drivername!r}: {exc}") from exc


# PostgreSQL's plan_cache_mode for recall's reads (``create_recall_engine``).
RECALL_PLAN_CACHE_MODE = "force_generic_plan"


def create_recall_engine(
    url: str, *, busy_timeout_ms: int = SQLITE_BUSY_TIMEOUT_MS, read_only: bool = False
) -> Engine | None:
    """PostgreSQL: the pool of recall's reads (``Store.reading``); None for any other database.

    Autocommit: recall's read is a few statements that need no snapshot in
    common (under READ COMMITTED each statement reads its own anyway), and
    a transaction's ``BEGIN`` and ``COMMIT`` are two round trips of about
    six. Generic plans: psycopg prepares a statement it has run five
    times, and PostgreSQL then kept planning recall's trigram counts and
    candidate statement afresh for every set of values (~1-2 ms each),
    guessing a custom plan cheaper; each of them has one good plan
    whatever the values (``store/search/postgresql.py``). Set for the pool's
    connections, it reaches no other statement of the store — the queue's
    claim, for one, needs the custom plan a skewed ``status`` gets.
    At most five connections, made when first needed.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        return None
    return _server_engine(
        parsed,
        busy_timeout_ms,
        read_only,
        pool_size=1,
        max_overflow=4,
        isolation_level="AUTOCOMMIT",
        options=(f"-c plan_cache_mode={RECALL_PLAN_CACHE_MODE}",),
    )


def _server_engine(
    parsed: Any,
    busy_timeout_ms: int,
    read_only: bool,
    *,
    pool_size: int,
    max_overflow: int,
    options: Sequence[str] = (),
    **kwargs: Any,
) -> Engine:
    settings = list(options)
    if read_only and parsed.get_backend_name() == "postgresql":
        # Every transaction of every pooled connection is READ ONLY.
        settings.append("-c default_transaction_read_only=on")
    engine = create_engine(
        parsed,
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_timeout=busy_timeout_ms / 1000,
        connect_args={"options": " ".join(settings)} if settings else {},
        **kwargs,
    )
    _ping_when_idle(engine)
    return engine


# A pooled server connection idle this long is pinged before it is handed out.
PING_AFTER_IDLE_S = 1.0
_IDLE_SINCE = "memos_feedback_idle_since"


def _ping_when_idle(engine: Engine) -> None:
    """Check a pooled connection before use only when it sat idle (``PING_AFTER_IDLE_S``).

    SQLAlchemy's ``pool_pre_ping`` pings at every checkout: a round trip
    before every transaction, when most checkouts take a connection put
    back a moment ago (an agent's steps, the worker's jobs). A connection
    that sat idle — where a server restart or an idle timeout would have
    dropped it — is still pinged first, and a dead one replaced before
    anyone sees it. One dropped within the last second fails its next
    statement once (``StoreError``); SQLAlchemy then discards the pool's
    connections and the call after it reconnects.
    """

    @event.listens_for(engine, "checkin")
    def _checkin(dbapi_conn: Any, record: Any) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checkout(dbapi_conn: Any, record: Any, proxy: Any) -> None:
        since = record.info.get(_IDLE_SINCE)
        if since is None or time.monotonic() - since < PING_AFTER_IDLE_S:
            return  # just connected, or back in the pool a moment ago
        dialect = engine.dialect
        try:
            dialect.do_ping(dbapi_conn)
        except dialect.loaded_dbapi.Error as exc:
            if not dialect.is_disconnect(exc, dbapi_conn, None):
                raise
            # The pool discards this connection and checks out another (or a new one).
            raise DisconnectionError("the connection was dropped while it sat in the pool") from exc


def _sqlite_engine(url: str, busy_timeout_ms: int, read_only: bool) -> Engine:
    parsed = make_url(url)
    database = parsed.database or ""
    memory = database in ("", ":memory:") or parsed.query.get("mode") == "memory"
    kwargs: dict[str, Any] = {"connect_args": {"check_same_thread": False}}
    file: SqliteFile | None = None
    if memory:
        # One shared connection, or every checkout would see an empty database.
        kwargs["poolclass"] = StaticPool
    else:
        path = Path(database).expanduser()
        if read_only:
            if not path.is_file():
                raise StoreError(no_database_message(str(path)))
            # mode=ro: SQLite itself refuses writes, and a file we may not
            # write (chmod 444, read-only folder) opens at all.
            uri = f"file:{urllib.parse.quote(str(path.absolute()))}?mode=ro"

            def creator() -> sqlite3.Connection:
                try:
                    return _connect_ro(uri, busy_timeout_ms)
                except sqlite3.OperationalError:
                    # A WAL file in a folder we cannot write: SQLite cannot
                    # make the -shm file it reads through. With no -wal file
                    # beside it, the database file holds every commit, so
                    # reading it as immutable is exact (nobody who could
                    # write it is writing: they would need that -wal file).
                    if Path(f"{path}-wal").exists() or os.access(path.parent, os.W_OK):
                        raise
                    return _connect_ro(uri + "&immutable=1", busy_timeout_ms)

            kwargs["creator"] = creator
        else:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the folder for {path}: {exc.strerror or exc}") from exc
            # Created by the first connection only; a deleted or replaced
            # file fails loudly afterwards (store/durability.py).
            file = SqliteFile(path)
            kwargs["creator"] = lambda: file.connect(busy_timeout_ms / 1000)
        # Pool checkout counts against the same budget as the lock.
        kwargs["pool_timeout"] = busy_timeout_ms / 1000
    engine = create_engine(url, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, record: Any) -> None:
        dbapi_conn.isolation_level = None  # we emit BEGIN ourselves
        cur = dbapi_conn.cursor()
        if not memory and not read_only:
            # Switching to WAL must not wait in the busy handler: each try
            # gets busy_timeout=0 and _enable_wal bounds the whole loop.
            cur.execute("PRAGMA busy_timeout=0")
            _enable_wal(cur, busy_timeout_ms)
            cur.execute("PRAGMA synchronous=NORMAL")
            # Checkpoints run in the store's background thread (checkpoint.py).
            cur.execute("PRAGMA wal_autocheckpoint=0")
        if not memory:
            # Reads straight from the OS page cache instead of through each
            # connection's 2 MB page cache and a read() per page: recall's
            # candidate rows and index pages are scattered over the file.
            cur.execute(f"PRAGMA mmap_size={_MMAP_BYTES}")
        cur.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        record.info[_BUSY_INFO] = int(busy_timeout_ms)
        if read_only:
            cur.execute("PRAGMA query_only=ON")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(WRITE_OPTION, False)
        # An int is the store's remaining budget for this write (ms, >= 1);
        # anything else gets the full timeout back (a pooled connection may
        # still carry a lowered one from an earlier write).
        budget = write if isinstance(write, int) and not isinstance(write, bool) else busy_timeout_ms
        if write and file is not None:
            # Writes only: a stat call (~1-10 us) is noise beside a commit,
            # not beside a read; and a read of the old file loses nothing.
            _check_file(file)
        _set_busy_timeout(conn, budget)
        _begin(conn, "BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def _connect_ro(uri: str, busy_timeout_ms: int) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout_ms / 1000, check_same_thread=False)
    try:
        # Opening is lazy: touch the schema so a file SQLite cannot read fails here.
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
    except BaseException:
        conn.close()
        raise
    return conn


def _begin(conn: Connection, statement: str) -> None:
    """Run BEGIN on the DBAPI connection itself, a failure raised as SQLAlchemy's.

    Every transaction starts here; going through ``exec_driver_sql`` costs
    more than the BEGIN (statement events, a result object). The error is
    wrapped as a statement's would be, so ``translate_errors`` still tells
    "database is locked" (retry) from anything else.
    """
    try:
        conn.connection.driver_connection.execute(statement)  # type: ignore[union-attr]
    except sqlite3.Error as exc:
        raise DBAPIError.instance(statement, None, exc, sqlite3.Error) from exc


def _check_file(file: SqliteFile) -> None:
    """The path still names the file the engine opened, or a ``DBAPIError`` (a stat call)."""
    try:
        file.check()
    except sqlite3.Error as exc:
        raise DBAPIError.instance("BEGIN", None, exc, sqlite3.Error) from exc


def _set_busy_timeout(conn: Connection, ms: int) -> None:
    """Give the connection ``ms`` of busy timeout, unless it (nearly) has it."""
    info = conn.connection.info
    if abs(info.get(_BUSY_INFO, -_BUSY_SLACK_MS * 2) - ms) > _BUSY_SLACK_MS:
        conn.exec_driver_sql(f"PRAGMA busy_timeout={int(ms)}")
        info[_BUSY_INFO] = ms


def sqlite_file_path(engine: Engine) -> str | None:
    """The file behind a SQLite engine, or None for memory or another backend."""
    if engine.dialect.name != "sqlite":
        return None
    database = engine.url.database or ""
    if database in ("", ":memory:") or engine.url.query.get("mode") == "memory":
        return None
    return str(Path(database).expanduser())


def _enable_wal(cur: Any, budget_ms: int) -> None:
    """``PRAGMA journal_mode=WAL``, retried for up to ``budget_ms`` while the file is locked.

    Switching a fresh file to WAL needs an exclusive lock, and SQLite may
    answer "database is locked" at once, without calling the busy handler,
    when another process is switching or migrating the same file. The
    caller sets busy_timeout=0, so each try returns at once and the waits
    counted here are the whole time spent (counted, not read from a clock:
    tests freeze clocks).
    """
    waited, delay = 0.0, 0.005
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except Exception as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or waited >= budget_ms / 1000:
                raise
            time.sleep(delay)
            waited += delay
            delay = min(delay * 2, 0.1)


def is_transient(exc: BaseException) -> bool:
    """True for database errors worth retrying (busy, locked, deadlock)."""
    if isinstance(exc, (StoreBusyError, PoolTimeoutError)):
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


class _Compiled:
    """A statement compiled once for SQLite: its text, parameter order and converters."""

    __slots__ = ("_fixed", "_names", "_pick", "_process", "results", "sql")

    def __init__(self, statement: Executable, dialect: Dialect, column_keys: Sequence[str] | None) -> None:
        element = cast(ClauseElement, statement)
        compiled = cast(
            SQLCompiler, element.compile(dialect=dialect, column_keys=list(column_keys or ()) or None)
        )
        self.sql = compiled.string
        processors: Mapping[str, Any] = compiled._bind_processors
        names = list(compiled.positiontup or ())
        # Values written into the statement (a literal compared with a
        # column): sent unless the caller names them. A parameter without
        # one must come from the caller (KeyError otherwise, never NULL).
        self._fixed: dict[str, Any] = {}
        for name in names:
            bind = compiled.binds[name]
            if not bind.required and bind.callable is None:
                self._fixed[name] = bind.value
        # The values in the order of the ? marks, picked in C.
        self._pick = operator.itemgetter(*names) if len(names) > 1 else None
        self._names = names
        # (position, converter) of the parameters SQLAlchemy would convert.
        self._process = [(i, processors[n]) for i, n in enumerate(names) if processors.get(n) is not None]
        # (position, converter) of the result columns that have one: usually
        # one or two of a row's columns, so the others are never visited.
        processors_of = [r[3]._cached_result_processor(dialect, None) for r in compiled._result_columns or ()]
        results = [(i, f) for i, f in enumerate(processors_of) if f is not None]
        self.results: list[tuple[int, Any]] | None = results or None

    def parameters(self, params: Mapping[str, Any]) -> tuple[Any, ...]:
        merged = {**self._fixed, **params} if self._fixed else params
        if self._pick is not None:
            values: tuple[Any, ...] = self._pick(merged)
        else:
            values = tuple(merged[n] for n in self._names)
        if not self._process:
            return values
        out = list(values)
        for i, process in self._process:
            if out[i] is not None:
                out[i] = process(out[i])
        return tuple(out)


_REQUIRED = object()


class Prepared:
    """A prebuilt Core statement that SQLite runs on the driver's cursor.

    SQLAlchemy's per-statement machinery (cache lookup, parameter
    construction, events, a result object) costs ~40 us per statement,
    more than most of the worker's statements take inside SQLite. On
    SQLite the statement is compiled once, with the bind and result
    processors SQLAlchemy would apply (JSON, booleans, floats), and then
    runs on the DBAPI connection in the caller's transaction; a driver
    error is raised as SQLAlchemy's ``DBAPIError``, so ``translate_errors``
    still tells "locked" from the rest. Of the statement events only
    ``before_cursor_execute`` fires on that path (with no execution
    context, its return value unused), and only when someone listens.
    Other backends run the statement through ``Connection.execute``
    unchanged. Rows are tuples (SQLite) or ``Row``s: read them by position.
    """

    __slots__ = ("_column_keys", "_convert", "_sqlite", "statement")

    def __init__(
        self, statement: Executable, column_keys: Sequence[str] | None = None, *, convert: bool = True
    ) -> None:
        # column_keys: for an INSERT, the columns the parameters will name.
        # convert=False: SQLite rows come back as the driver returns them
        # (JSON as text), for a caller that decodes what it uses itself.
        self.statement = statement
        self._column_keys = tuple(column_keys or ())
        self._convert = convert
        self._sqlite: _Compiled | None = None

    def _compiled(self, conn: Connection) -> _Compiled:
        compiled = self._sqlite
        if compiled is None:
            compiled = self._sqlite = _Compiled(self.statement, conn.dialect, self._column_keys)
            if not self._convert:
                compiled.results = None
        if not conn.in_transaction():
            conn.begin()  # as Connection.execute would (autobegin): never outside a transaction
        return compiled

    def _cursor(self, conn: Connection, params: Mapping[str, Any]) -> tuple[sqlite3.Cursor, _Compiled]:
        compiled = self._compiled(conn)
        return self._run(conn, compiled, compiled.parameters(params), many=False), compiled

    def many(self, conn: Connection, params: Sequence[Mapping[str, Any]]) -> None:
        """Run a statement that returns no rows once per parameter set (``executemany``)."""
        if not params:
            return
        if conn.dialect.name != "sqlite":
            conn.execute(self.statement, list(params))
            return
        compiled = self._compiled(conn)
        self._run(conn, compiled, [compiled.parameters(p) for p in params], many=True)

    @staticmethod
    def _run(conn: Connection, compiled: _Compiled, args: Any, *, many: bool) -> sqlite3.Cursor:
        """``args`` on the driver's cursor of ``conn`` (``executemany`` when ``many``)."""
        raw = conn.connection.driver_connection
        try:
            cursor: sqlite3.Cursor = raw.cursor()  # type: ignore[union-attr]
            before = conn.dispatch.before_cursor_execute
            if before:
                # A listener (a tracer; benchmarks.floor records statements so)
                # hears the statement as SQLAlchemy would tell it, but with no
                # execution context (None) and its return value unused.
                before(conn, cursor, compiled.sql, args, None, many)
            if many:
                return cursor.executemany(compiled.sql, args)
            return cursor.execute(compiled.sql, args)
        except sqlite3.Error as exc:
            raise DBAPIError.instance(compiled.sql, args, exc, sqlite3.Error) from exc

    def all(self, conn: Connection | Session, params: Mapping[str, Any]) -> Sequence[Sequence[Any]]:
        """Every row of the statement's result, in ``conn``'s transaction.

        An ORM session (a caller that reads through one) runs it as usual.
        """
        if isinstance(conn, Session) or conn.dialect.name != "sqlite":
            return conn.execute(self.statement, params).all()
        cursor, compiled = self._cursor(conn, params)
        try:
            rows = cursor.fetchall()
        except sqlite3.Error as exc:
            raise DBAPIError.instance(compiled.sql, None, exc, sqlite3.Error) from exc
        convert = compiled.results
        if convert is None:
            return rows
        converted: list[Sequence[Any]] = []
        for row in rows:
            values = list(row)
            for i, f in convert:
                if values[i] is not None:
                    values[i] = f(values[i])
            converted.append(tuple(values))
        return converted

    def first(self, conn: Connection, params: Mapping[str, Any]) -> Sequence[Any] | None:
        """The first row, or None (the statement is expected to return at most a few)."""
        rows = self.all(conn, params)
        return rows[0] if rows else None

    def rowcount(self, conn: Connection, params: Mapping[str, Any]) -> int:
        """Run a statement that returns no rows; how many rows it changed."""
        if conn.dialect.name != "sqlite":
            return int(conn.execute(self.statement, params).rowcount)
        cursor, _ = self._cursor(conn, params)
        return int(cursor.rowcount)
