"""Running the Alembic migrations that ship inside the package."""

from __future__ import annotations

import functools
import importlib.resources
import re
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from ..errors import SchemaError, StoreError
from .engine import WRITE_OPTION, translate_errors

if TYPE_CHECKING:
    from alembic.config import Config

# Alembic is imported by the functions that run it, not here: opening a
# store whose schema is already at head (every hook event, every process
# but the first) reads the revision with one statement and never loads it.

__all__ = [
    "at_head",
    "current_revision",
    "downgrade",
    "head_revision",
    "is_known",
    "migrations_dir",
    "shipped_head",
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
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()).replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(_config()).get_current_head()
    if head is None:  # pragma: no cover - the package always ships revisions
        raise StoreError("no migrations found")
    return head


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with translate_errors("reading schema revision"), engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def is_known(revision: str) -> bool:
    """Whether this code's migrations contain ``revision``."""
    from alembic.script import ScriptDirectory
    from alembic.util.exc import CommandError

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
    from alembic.runtime.migration import MigrationContext

    rev = MigrationContext.configure(conn).get_current_revision()
    if rev is not None and not is_known(rev):
        raise SchemaError(unknown_revision_message(rev))


_REVISION_LINE = re.compile(r"^(down_revision|revision)\s*(?::[^=]*)?=\s*(?:[\"']([^\"']+)[\"']|None)", re.M)


@functools.cache
def shipped_head() -> str | None:
    """The head revision read from the migration files' ``revision`` lines, without Alembic.

    The one revision no other names as its ``down_revision``; None when
    that is not exactly one (then the caller asks Alembic). Agrees with
    ``head_revision`` (a test holds it to it).
    """
    revisions: set[str] = set()
    parents: set[str] = set()
    try:
        files = sorted((migrations_dir() / "versions").glob("*.py"))
        for path in files:
            found = dict((m.group(1), m.group(2)) for m in _REVISION_LINE.finditer(path.read_text("utf-8")))
            if found.get("revision"):
                revisions.add(found["revision"])
            if found.get("down_revision"):
                parents.add(found["down_revision"])
    except (OSError, StoreError, UnicodeDecodeError):
        return None
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def at_head(engine: Engine) -> bool:
    """Whether the database's revision is the head: one plain read of ``alembic_version``.

    False on any doubt (no such table, no file, another revision, an error
    reading it): the caller then runs the migrations, which decide.
    """
    head = shipped_head()
    if head is None:
        return False
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    except DBAPIError:
        return False
    return rows == [head]


def upgrade(engine: Engine, target: str = "head") -> None:
    """Migrate to ``target``; refuse a database whose revision we do not know.

    To ``head`` on a database already there: one read, no Alembic.
    """
    if target == "head" and at_head(engine):
        return
    from alembic import command

    _run(engine, lambda cfg: command.upgrade(cfg, target))


def downgrade(engine: Engine, target: str) -> None:
    from alembic import command

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
