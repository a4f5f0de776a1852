"""store_probe: the one row a write probe rewrites

Before dropping a trigger the database keeps refusing, the enqueuer checks
that the database takes writes at all by rewriting this table's single row
(``store/durability.py``). An empty transaction proved nothing: it commits
on a full disk, since it writes nothing.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "store_probe"


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("id", sa.Integer(), nullable=False, autoincrement=False),
        sa.Column("ts", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_store_probe")),
    )


def downgrade() -> None:
    op.drop_table(TABLE)
