"""policies: GIN index on source_episode_ids (PostgreSQL only)

A repair attaches to every active policy whose source episodes overlap its
evidence. On PostgreSQL that lookup is ``source_episode_ids ?| ARRAY[...]``,
which a GIN index over the JSONB array answers without reading every
policy. SQLite has no such index; there the lookup scans ``json_each``.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "ix_policies_source_episode_ids"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.create_index(INDEX, "policies", ["source_episode_ids"], postgresql_using="gin")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_index(INDEX, table_name="policies")
