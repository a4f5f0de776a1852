"""decision_repairs: recall columns, a ts index and a text-search index

Recall (``memos_feedback.recall``) needs, per repair: its ``category``, the
``project`` it belongs to (NULL = global), ``source_text`` (the capped text a
repair is searched by: its two lines, tool, context, the user's words and an
excerpt of the failing trace) and an optional sentence embedding
(``embedding`` float32 blob, ``embedding_model`` naming the model that made
it). Every new column is nullable, so existing rows migrate as they are;
``memos-feedback repairs embed`` backfills text and embeddings later.

Text search is the database's own:

* SQLite: a standalone FTS5 table ``decision_repairs_fts`` with the trigram
  tokenizer (substring matching, works for Chinese), kept in sync by three
  triggers; rows that exist already are copied in.
* PostgreSQL: the ``pg_trgm`` extension and a GIN trigram index on
  ``source_text`` (serves ``ILIKE '%term%'``).

``ix_decision_repairs_ts`` lets "newest repairs" read an index instead of
sorting the table; ``(project, ts)`` and ``(tool_id, ts)`` serve recall's
candidate queries.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "decision_repairs"
FTS = "decision_repairs_fts"
TRGM_INDEX = "ix_decision_repairs_source_text_trgm"
COLUMNS = ("category", "project", "source_text", "embedding", "embedding_model")

# The document of a repair in the FTS table (same expression in every trigger).
_DOC = "coalesce(NEW.source_text, NEW.preference || ' ' || NEW.anti_pattern)"


def upgrade() -> None:
    with op.batch_alter_table(TABLE) as batch:
        batch.add_column(sa.Column("category", sa.String(32), nullable=True))
        batch.add_column(sa.Column("project", sa.String(255), nullable=True))
        batch.add_column(sa.Column("source_text", sa.Text(), nullable=True))
        batch.add_column(sa.Column("embedding", sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column("embedding_model", sa.String(255), nullable=True))
    op.create_index("ix_decision_repairs_ts", TABLE, ["ts"])
    op.create_index("ix_decision_repairs_project_ts", TABLE, ["project", "ts"])
    op.create_index("ix_decision_repairs_tool_id_ts", TABLE, ["tool_id", "ts"])
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        _sqlite_fts_up()
    elif dialect == "postgresql":
        # pg_trgm is a trusted extension (PostgreSQL >= 13): a database owner may create it.
        op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        op.create_index(
            TRGM_INDEX,
            TABLE,
            ["source_text"],
            postgresql_using="gin",
            postgresql_ops={"source_text": "gin_trgm_ops"},
        )


def _sqlite_fts_up() -> None:
    op.execute(f"CREATE VIRTUAL TABLE {FTS} USING fts5(repair_id UNINDEXED, doc, tokenize='trigram')")
    op.execute(
        f"INSERT INTO {FTS} (repair_id, doc) "
        f"SELECT id, coalesce(source_text, preference || ' ' || anti_pattern) FROM {TABLE}"
    )
    op.execute(
        f"CREATE TRIGGER {FTS}_ai AFTER INSERT ON {TABLE} BEGIN "
        f"INSERT INTO {FTS} (repair_id, doc) VALUES (NEW.id, {_DOC}); END"
    )
    op.execute(
        f"CREATE TRIGGER {FTS}_au AFTER UPDATE OF preference, anti_pattern, source_text ON {TABLE} BEGIN "
        f"DELETE FROM {FTS} WHERE repair_id = OLD.id; "
        f"INSERT INTO {FTS} (repair_id, doc) VALUES (NEW.id, {_DOC}); END"
    )
    op.execute(
        f"CREATE TRIGGER {FTS}_ad AFTER DELETE ON {TABLE} BEGIN "
        f"DELETE FROM {FTS} WHERE repair_id = OLD.id; END"
    )


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for suffix in ("ai", "au", "ad"):
            op.execute(f"DROP TRIGGER IF EXISTS {FTS}_{suffix}")
        op.execute(f"DROP TABLE IF EXISTS {FTS}")
    elif dialect == "postgresql":
        # The extension stays: other schemas may use it, and it holds no data.
        op.drop_index(TRGM_INDEX, table_name=TABLE)
    op.drop_index("ix_decision_repairs_tool_id_ts", table_name=TABLE)
    op.drop_index("ix_decision_repairs_project_ts", table_name=TABLE)
    op.drop_index("ix_decision_repairs_ts", table_name=TABLE)
    with op.batch_alter_table(TABLE) as batch:
        for name in reversed(COLUMNS):
            batch.drop_column(name)
