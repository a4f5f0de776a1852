"""feedback_events.seq never goes back on SQLite (AUTOINCREMENT)

An ``INTEGER PRIMARY KEY`` without ``AUTOINCREMENT`` takes the next value
after the largest one *present*: once pruning deleted every row (all of
them old), the next event got seq 1 again, and a follower past the old
numbers (``tail --since``, ``follow()``, ``Last-Event-ID``) skipped every
new event. With ``AUTOINCREMENT`` SQLite keeps the high-water mark in
``sqlite_sequence`` and never reuses a number. The table is copied into
its new definition with its rows, so the mark starts at their largest seq.
PostgreSQL's sequence never went back: nothing changes there.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "feedback_events"
COLUMNS = "seq, ts, kind, context_hash, repair_id, job_id, payload"
# Written out: SQLAlchemy renders AUTOINCREMENT only as an unnamed column
# constraint, and the primary key keeps its conventional name.
_DEFINITION = """CREATE TABLE {name} (
    seq INTEGER NOT NULL {key},
    ts BIGINT NOT NULL,
    kind VARCHAR(64) NOT NULL,
    context_hash VARCHAR(64),
    repair_id VARCHAR(64),
    job_id VARCHAR(64),
    payload JSON NOT NULL{table_key}
)"""


def _recreate(autoincrement: bool) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    new = f"_new_{TABLE}"
    if autoincrement:
        key, table_key = "CONSTRAINT pk_feedback_events PRIMARY KEY AUTOINCREMENT", ""
    else:
        key, table_key = "", ",\n    CONSTRAINT pk_feedback_events PRIMARY KEY (seq)"
    op.execute(_DEFINITION.format(name=new, key=key, table_key=table_key))
    # The copy keeps every seq, and sets the high-water mark to the largest.
    op.execute(f"INSERT INTO {new} ({COLUMNS}) SELECT {COLUMNS} FROM {TABLE}")
    op.execute(f"DROP TABLE {TABLE}")
    op.execute(f"ALTER TABLE {new} RENAME TO {TABLE}")


def upgrade() -> None:
    _recreate(True)


def downgrade() -> None:
    _recreate(False)
