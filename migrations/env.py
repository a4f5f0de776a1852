"""Alembic environment for memos-feedback.

The library runs migrations itself (``open_store`` / ``memos-feedback db
upgrade``) and hands a live connection in ``config.attributes``; the
``alembic`` command line works too, with ``sqlalchemy.url`` from
``alembic.ini`` or ``MEMOS_FEEDBACK_DB_URL``.
"""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection
from sqlalchemy.pool import NullPool

from memos_feedback.store.models import Base, exists_on, is_search_shadow_table

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    return os.environ.get("MEMOS_FEEDBACK_DB_URL") or config.get_main_option("sqlalchemy.url") or ""


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things; batch mode copies the table.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        # Indexes made for one dialect only (a GIN index) are not expected
        # elsewhere; recall's SQLite FTS5 tables are not models.
        include_object=lambda obj, name, type_, reflected, compare_to: (
            not (type_ == "table" and is_search_shadow_table(name))
            and (reflected or exists_on(obj, connection.dialect.name))
        ),
    )


def run_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(_url(), poolclass=NullPool)
    with engine.connect() as conn:
        _configure(conn)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
