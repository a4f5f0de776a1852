"""decision_repairs_fts: a group of repairs indexed by one statement (SQLite only)

The worker commits a claimed batch of repairs in one transaction, a
savepoint per job. SQLite's FTS5 (3.40, the version Python ships with
here) writes its pending terms out as a new index segment at every
savepoint and at the end of every statement that runs in a statement
journal — and an ``INSERT`` whose trigger writes the FTS table is one. So
each repair of a batch wrote a segment of its own, with the segment's
fixed cost and the merges that many small segments bring.

This revision lets a writer defer the index rows of the repairs it
inserts to one statement before its commit: it names each new repair in
``decision_repairs_fts_pending`` before inserting it, the insert trigger
skips the repairs named there, and the writer then indexes them all
(``INSERT INTO decision_repairs_fts … SELECT``) and empties the table,
in the same transaction. Nothing else changes: every other writer (and a
writer that defers nothing) is indexed by the trigger as before, the
FTS table keeps its name, columns and rows, and the table of pending ids
is empty outside a writer's transaction.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "decision_repairs"
FTS = "decision_repairs_fts"
PENDING = "decision_repairs_fts_pending"

# The document of a repair in the FTS table (as in 0005's triggers).
_DOC = "coalesce(NEW.source_text, NEW.preference || ' ' || NEW.anti_pattern)"
_INSERT = f"INSERT INTO {FTS} (repair_id, doc) VALUES (NEW.id, {_DOC}); END"


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute(f"CREATE TABLE {PENDING} (repair_id VARCHAR(64) NOT NULL PRIMARY KEY) WITHOUT ROWID")
    op.execute(f"DROP TRIGGER {FTS}_ai")
    op.execute(
        f"CREATE TRIGGER {FTS}_ai AFTER INSERT ON {TABLE} "
        f"WHEN NOT EXISTS (SELECT 1 FROM {PENDING} WHERE repair_id = NEW.id) BEGIN {_INSERT}"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    # Empty outside a writer's transaction; indexed here all the same, so
    # no repair can lose its index row to the downgrade.
    op.execute(
        f"INSERT INTO {FTS} (repair_id, doc) "
        f"SELECT r.id, coalesce(r.source_text, r.preference || ' ' || r.anti_pattern) "
        f"FROM {PENDING} p JOIN {TABLE} r ON r.id = p.repair_id ORDER BY r.rowid"
    )
    op.execute(f"DROP TRIGGER {FTS}_ai")
    op.execute(f"CREATE TRIGGER {FTS}_ai AFTER INSERT ON {TABLE} BEGIN {_INSERT}")
    op.execute(f"DROP TABLE {PENDING}")
