"""decision_repairs: covering index for supersede's tool range (SQLite only)

Every new repair reads the line pairs of the 20 newest active repairs of
its tool (``outcomes.supersede``): ``tool_id = ?``, active, not rejected,
same project, newest first. Through ``ix_decision_repairs_tool_id_ts``
that is 20 row lookups and a sort of the ``(ts, id)`` tail; this index
holds every column the read filters, orders and returns, so SQLite
answers it from the index alone, in index order. PostgreSQL keeps the
plain index: a btree entry there is limited to about 2.7 kB, which two
long lines with a long tool id and project could exceed, and its read is
one round trip either way.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "ix_decision_repairs_tool_lines"
COLUMNS = ["tool_id", "ts", "id", "status", "rejected", "project", "preference", "anti_pattern"]


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.create_index(INDEX, "decision_repairs", COLUMNS)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index(INDEX, table_name="decision_repairs")
