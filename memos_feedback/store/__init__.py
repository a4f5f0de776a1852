"""The store: one database holding traces, policies and decision repairs.

``open_store(url)`` returns a migrated ``Store``; its repositories
(``traces``, ``policies``, ``repairs``) are the only way the rest of the
library touches the database.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from types import TracebackType

from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from ..errors import InvalidInputError
from . import migrate
from .checkpoint import WalCheckpointer
from .engine import WRITE_OPTION, create_store_engine, default_url, sqlite_file_path, translate_errors
from .repositories import PolicyRepository, RepairRepository, TraceRepository
from .rows import DecisionRepairRow, PolicyRow, ToolCall, TraceRow

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

logger = logging.getLogger("memos_feedback.store")


class Store:
    """A migrated database and its repositories. Thread-safe; close when done."""

    def __init__(self, engine: Engine, url: str) -> None:
        self.engine = engine
        self.url = url
        self.traces = TraceRepository(self)
        self.policies = PolicyRepository(self)
        self.repairs = RepairRepository(self)
        # SQLite has one writer at a time. Threads of this process queue on
        # a Python lock instead of SQLite's busy handler, whose sleeps (up
        # to 100 ms each) would put a long tail on every contended write.
        self._write_lock: AbstractContextManager[object] = (
            threading.RLock() if engine.dialect.name == "sqlite" else nullcontext()
        )
        path = sqlite_file_path(engine)
        self._checkpointer = WalCheckpointer(path) if path is not None else None

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

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
            if not write:
                with (
                    self.engine.connect() as conn,
                    Session(bind=conn, expire_on_commit=False) as s,
                    s.begin(),
                ):
                    yield s
                return
            with self._write_lock, self.engine.connect() as conn:
                conn.execution_options(**{WRITE_OPTION: True})
                with Session(bind=conn, expire_on_commit=False) as s, s.begin():
                    yield s

    def revision(self) -> str | None:
        """The database's Alembic revision."""
        return migrate.current_revision(self.engine)

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.close()
            self._checkpointer = None
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.engine.url.render_as_string(hide_password=True)!r})"


def open_store(url: str | None = None, *, migrate_to_head: bool = True) -> Store:
    """Open (and by default migrate to head) the database at ``url``.

    ``url`` defaults to ``MEMOS_FEEDBACK_DB_URL``, else a SQLite file in
    the user data directory. Raises ``SchemaError`` for a database whose
    revision this code does not know, ``StoreError`` for anything else.
    """
    resolved = default_url() if url is None else url
    if not isinstance(resolved, str) or not resolved.strip():
        raise InvalidInputError(f"url must be a non-empty str, got {resolved!r}")
    engine = create_store_engine(resolved)
    try:
        if migrate_to_head:
            migrate.upgrade(engine)
    except BaseException:
        engine.dispose()
        raise
    logger.debug("opened store %s", engine.url.render_as_string(hide_password=True))
    return Store(engine, resolved)
