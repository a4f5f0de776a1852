"""outcomes: served rows, outcome rows, repair status

``repair_served`` holds one row per repair shown to a session for a (tool,
context); ``repair_outcomes`` one row per settled serving (``held``,
``recurred``, ``contradicted``), unique on ``served_id`` so a settlement
replayed after a crash is written once. ``decision_repairs`` gains
``status`` (NULL = active, ``stale``, ``superseded``), ``superseded_by``
and ``review_flagged_at``; every new column is nullable, so existing rows
migrate as they are and SQLite adds them without copying the table (which
would drop recall's FTS triggers).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "decision_repairs"


def upgrade() -> None:
    with op.batch_alter_table(TABLE) as batch:
        batch.add_column(sa.Column("status", sa.String(16), nullable=True))
        batch.add_column(sa.Column("superseded_by", sa.String(64), nullable=True))
        batch.add_column(sa.Column("review_flagged_at", sa.BigInteger(), nullable=True))
    op.create_table(
        "repair_served",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("repair_id", sa.String(64), nullable=False),
        sa.Column("session_id", sa.String(255), nullable=False),
        sa.Column("tool_id", sa.Text(), nullable=True),
        sa.Column("context", sa.Text(), nullable=True),
        sa.Column("ts", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_repair_served")),
    )
    op.create_index("ix_repair_served_repair_id", "repair_served", ["repair_id"])
    op.create_index("ix_repair_served_ts", "repair_served", ["ts"])
    op.create_table(
        "repair_outcomes",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("served_id", sa.String(64), nullable=False),
        sa.Column("repair_id", sa.String(64), nullable=False),
        sa.Column("session_id", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("ts", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_repair_outcomes")),
        sa.UniqueConstraint("served_id", name=op.f("uq_repair_outcomes_served_id")),
    )
    op.create_index("ix_repair_outcomes_repair_id_kind", "repair_outcomes", ["repair_id", "kind"])


def downgrade() -> None:
    op.drop_index("ix_repair_outcomes_repair_id_kind", table_name="repair_outcomes")
    op.drop_table("repair_outcomes")
    op.drop_index("ix_repair_served_ts", table_name="repair_served")
    op.drop_index("ix_repair_served_repair_id", table_name="repair_served")
    op.drop_table("repair_served")
    # Plain ALTER TABLE ... DROP COLUMN (SQLite >= 3.35): batch mode would
    # copy the table on SQLite and lose recall's FTS triggers with it.
    for name in ("review_flagged_at", "superseded_by", "status"):
        op.drop_column(TABLE, name)
