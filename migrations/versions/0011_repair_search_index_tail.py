"""decision_repairs_fts_pending: repairs may wait there past their transaction (SQLite only)

Revision 0010 let a writer defer the search-index rows of the repairs it
inserts to one statement before its own commit. From this revision a
repair may stay named in ``decision_repairs_fts_pending`` after its
transaction commits: a store's background thread indexes it about a
second later, and the search reads the text of the repairs named there
(the tail) until then. The triggers that keep the FTS table in step with
``decision_repairs`` learn about such a repair:

* an update of its text leaves the index alone (the repair is not in it
  yet; whoever indexes it reads the new text), where it used to add a
  second index row;
* deleting it drops its name from the pending table too.

Downgrade indexes every repair still named there first, so none loses
its index row to a revision that expects the table empty between
transactions.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "decision_repairs"
FTS = "decision_repairs_fts"
PENDING = "decision_repairs_fts_pending"

_DOC = "coalesce(NEW.source_text, NEW.preference || ' ' || NEW.anti_pattern)"
_REINDEX = (
    f"DELETE FROM {FTS} WHERE repair_id = OLD.id; "
    f"INSERT INTO {FTS} (repair_id, doc) VALUES (NEW.id, {_DOC}); END"
)
_UPDATED = f"AFTER UPDATE OF preference, anti_pattern, source_text ON {TABLE}"


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute(f"DROP TRIGGER {FTS}_au")
    op.execute(
        f"CREATE TRIGGER {FTS}_au {_UPDATED} "
        f"WHEN NOT EXISTS (SELECT 1 FROM {PENDING} WHERE repair_id = OLD.id) BEGIN {_REINDEX}"
    )
    op.execute(f"DROP TRIGGER {FTS}_ad")
    op.execute(
        f"CREATE TRIGGER {FTS}_ad AFTER DELETE ON {TABLE} BEGIN "
        f"DELETE FROM {FTS} WHERE repair_id = OLD.id; "
        f"DELETE FROM {PENDING} WHERE repair_id = OLD.id; END"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute(
        f"INSERT INTO {FTS} (repair_id, doc) "
        f"SELECT r.id, coalesce(r.source_text, r.preference || ' ' || r.anti_pattern) "
        f"FROM {PENDING} p CROSS JOIN {TABLE} r ON r.id = p.repair_id ORDER BY r.rowid"
    )
    op.execute(f"DELETE FROM {PENDING}")
    op.execute(f"DROP TRIGGER {FTS}_au")
    op.execute(f"CREATE TRIGGER {FTS}_au {_UPDATED} BEGIN {_REINDEX}")
    op.execute(f"DROP TRIGGER {FTS}_ad")
    op.execute(
        f"CREATE TRIGGER {FTS}_ad AFTER DELETE ON {TABLE} BEGIN DELETE FROM {FTS} WHERE repair_id = OLD.id; END"
    )
