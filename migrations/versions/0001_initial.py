"""initial schema: traces, policies, decision_repairs

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "traces",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("session_id", sa.String(255), nullable=False),
        sa.Column("episode_id", sa.String(255), nullable=True),
        sa.Column("ts", sa.BigInteger(), nullable=False),
        sa.Column("user_text", sa.Text(), nullable=False),
        sa.Column("agent_text", sa.Text(), nullable=False),
        sa.Column("reflection", sa.Text(), nullable=True),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("tool_calls", JSON, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_traces")),
    )
    op.create_index(op.f("ix_traces_episode_id"), "traces", ["episode_id"])
    op.create_index("ix_traces_session_id_ts", "traces", ["session_id", "ts"])

    op.create_table(
        "policies",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("boundary", sa.Text(), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("source_episode_ids", JSON, nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_policies")),
    )
    op.create_index(op.f("ix_policies_status"), "policies", ["status"])

    op.create_table(
        "decision_repairs",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("ts", sa.BigInteger(), nullable=False),
        sa.Column("context_hash", sa.String(64), nullable=False),
        sa.Column("tool_id", sa.Text(), nullable=True),
        sa.Column("context", sa.Text(), nullable=True),
        sa.Column("trigger", sa.String(32), nullable=False),
        sa.Column("session_id", sa.String(255), nullable=True),
        sa.Column("preference", sa.Text(), nullable=False),
        sa.Column("anti_pattern", sa.Text(), nullable=False),
        sa.Column("severity", sa.String(8), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("high_value_trace_ids", JSON, nullable=False),
        sa.Column("low_value_trace_ids", JSON, nullable=False),
        sa.Column("validated", sa.Boolean(), nullable=False),
        sa.Column("rejected", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_decision_repairs")),
    )
    op.create_index("ix_decision_repairs_context_hash_ts", "decision_repairs", ["context_hash", "ts"])


def downgrade() -> None:
    op.drop_index("ix_decision_repairs_context_hash_ts", table_name="decision_repairs")
    op.drop_table("decision_repairs")
    op.drop_index(op.f("ix_policies_status"), table_name="policies")
    op.drop_table("policies")
    op.drop_index("ix_traces_session_id_ts", table_name="traces")
    op.drop_index(op.f("ix_traces_episode_id"), table_name="traces")
    op.drop_table("traces")
