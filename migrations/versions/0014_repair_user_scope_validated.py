"""decision_repairs: a user (tenant) scope beside the project; validated repairs indexed by context

``user_id`` (NULL: every user's) is tested like ``project`` by recall's
eligibility and by supersede, so the SQLite covering index of
supersede's tool range (0009) is rebuilt with it.

Recall reads the validated repairs of the caller's exact (tool, context)
as a source of its own, so a validated repair stays a candidate however
many newer unvalidated ones its situation has
(``recall.candidates``). Validated repairs are few: an index of those
rows alone keeps that read a short walk and costs an unvalidated write
nothing.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEXES = {"ix_decision_repairs_validated_context": ["context_hash", "ts"]}


TOOL_LINES = "ix_decision_repairs_tool_lines"
_LINES = ["tool_id", "ts", "id", "status", "rejected", "project", "preference", "anti_pattern"]
_LINES_WITH_USER = [*_LINES[:6], "user_id", *_LINES[6:]]


def upgrade() -> None:
    op.add_column("decision_repairs", sa.Column("user_id", sa.String(255), nullable=True))
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index(TOOL_LINES, table_name="decision_repairs")
        op.create_index(TOOL_LINES, "decision_repairs", _LINES_WITH_USER)
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
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index(TOOL_LINES, table_name="decision_repairs")
        op.create_index(TOOL_LINES, "decision_repairs", _LINES)
    # Plain ALTER TABLE ... DROP COLUMN (SQLite >= 3.35), as 0008: batch mode
    # would copy the table on SQLite and lose recall's FTS triggers with it.
    op.drop_column("decision_repairs", "user_id")
