"""decision_repairs: partial indexes of validated repairs by context and by tool

Recall reads the validated repairs of the caller's exact (tool, context)
and of its tool as sources of their own, so a validated repair stays a
candidate however many newer unvalidated ones its situation has
(``recall.candidates``). Validated repairs are few: an index of those
rows alone keeps that read a short walk and costs an unvalidated write
nothing.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEXES = {
    "ix_decision_repairs_validated_context": ["context_hash", "ts"],
    "ix_decision_repairs_validated_tool": ["tool_id", "ts"],
}


def upgrade() -> None:
    for name, columns in INDEXES.items():
        op.create_index(
            name,
            "decision_repairs",
            columns,
            sqlite_where=sa.text("validated = 1"),
            postgresql_where=sa.text("validated"),
        )


def downgrade() -> None:
    for name in INDEXES:
        op.drop_index(name, table_name="decision_repairs")
