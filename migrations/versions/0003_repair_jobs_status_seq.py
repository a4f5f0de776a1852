"""repair_jobs: index (status, seq) so a claim walks pending jobs in queue order

Without it, SQLite sorts every due pending job (and checks each one's
context) to find the first: a claim cost grew with the queue's depth.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_repair_jobs_status_seq", "repair_jobs", ["status", "seq"])


def downgrade() -> None:
    op.drop_index("ix_repair_jobs_status_seq", table_name="repair_jobs")
