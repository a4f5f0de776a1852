"""Running the Alembic migrations that ship inside the package."""

from __future__ import annotations

import importlib.resources
import zlib
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from ..errors import SchemaError, StoreError
from .engine import WRITE_OPTION, translate_errors

__all__ = [
    "current_revision",
    "downgrade",
    "head_revision",
    "is_known",
    "migrations_dir",
    "unknown_revision_message",
    "upgrade",
]

# Serializes concurrent first-time migrations on one PostgreSQL database.
_PG_MIGRATION_LOCK = zlib.crc32(b"memos_feedback.migrate")


def migrations_dir() -> Path:
    """The Alembic script folder: packaged copy first, then the checkout's."""
    packaged = importlib.resources.files("memos_feedback") / "migrations"
    if packaged.is_dir() and (packaged / "env.py").is_file():
        return Path(str(packaged))
    # Editable installs and source checkouts keep it at the repository root.
    checkout = Path(__file__).resolve().parents[2] / "migrations"
    if (checkout / "env.py").is_file():
        return checkout
    raise StoreError("cannot find the memos_feedback migrations (broken installation?)")


def _config(connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()).replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    head = ScriptDirectory.from_config(_config()).get_current_head()
    if head is None:  # pragma: no cover - the package always ships revisions
        raise StoreError("no migrations found")
    return head


def current_revision(engine: Engine) -> str | None:
    with translate_errors("reading schema revision"), engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def is_known(revision: str) -> bool:
    """Whether this code's migrations contain ``revision``."""
    script = ScriptDirectory.from_config(_config())
    try:
        return script.get_revision(revision) is not None
    except CommandError:
        return False


def unknown_revision_message(revision: str) -> str:
    return (
        f"database schema revision {revision!r} is unknown to memos-feedback "
        f"(head is {head_revision()!r}); it was probably written by a newer version"
    )


def _check_known(conn: Connection) -> None:
    rev = MigrationContext.configure(conn).get_current_revision()
    if rev is not None and not is_known(rev):
        raise SchemaError(unknown_revision_message(rev))


def upgrade(engine: Engine, target: str = "head") -> None:
    """Migrate to ``target``; refuse a database whose revision we do not know."""
    _run(engine, lambda cfg: command.upgrade(cfg, target))


def downgrade(engine: Engine, target: str) -> None:
    _run(engine, lambda cfg: command.downgrade(cfg, target))


def _run(engine: Engine, action: object) -> None:
    assert callable(action)
    with translate_errors("migrating the database"), engine.connect() as conn:
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
            _check_known(conn)
            action(_config(conn))
