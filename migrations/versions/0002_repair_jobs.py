"""durable repair queue: repair_jobs

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "repair_jobs",
        sa.Column("seq", SEQ, nullable=False, autoincrement=True),
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("context_hash", sa.String(64), nullable=False),
        sa.Column("trigger", sa.String(32), nullable=False),
        sa.Column("payload", JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.BigInteger(), nullable=False),
        sa.Column("lease_until", sa.BigInteger(), nullable=True),
        sa.Column("lease_owner", sa.String(128), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("outcome", sa.String(64), nullable=True),
        sa.Column("repair_id", sa.String(64), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_repair_jobs")),
        sa.UniqueConstraint("id", name=op.f("uq_repair_jobs_id")),
    )
    op.create_index("ix_repair_jobs_status_next_attempt_at", "repair_jobs", ["status", "next_attempt_at"])
    op.create_index("ix_repair_jobs_context_hash_status", "repair_jobs", ["context_hash", "status"])


def downgrade() -> None:
    op.drop_index("ix_repair_jobs_context_hash_status", table_name="repair_jobs")
    op.drop_index("ix_repair_jobs_status_next_attempt_at", table_name="repair_jobs")
    op.drop_table("repair_jobs")
