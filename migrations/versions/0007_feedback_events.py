"""feedback_events: the durable event log (memos_feedback.feed)

One row per event announced on the bus: ``seq`` (commit order, see
``memos_feedback.feed.log``), ``ts`` (epoch ms), ``kind``, the ids a reader
filters by (``context_hash``, ``repair_id``, ``job_id``) and the event's
whole ``payload`` as JSON. No secondary index: every one would cost each
repair's commit a page write; followers and pruning use the primary key.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007"
# 0006 is being written on another branch; the merge relinks this to it.
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "feedback_events"


def upgrade() -> None:
    op.create_table(
        TABLE,
        # INTEGER on SQLite: only an INTEGER PRIMARY KEY auto-increments there.
        sa.Column("seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False, autoincrement=True),
        sa.Column("ts", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("context_hash", sa.String(64), nullable=True),
        sa.Column("repair_id", sa.String(64), nullable=True),
        sa.Column("job_id", sa.String(64), nullable=True),
        sa.Column("payload", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_feedback_events")),
    )


def downgrade() -> None:
    op.drop_table(TABLE)
