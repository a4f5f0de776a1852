"""Recall's SQLite search index, written behind the repairs it indexes.

Indexing a repair in the FTS5 table (trigram tokenizer) is the costliest
part of writing it on SQLite: the trigger's insert tokenizes the text,
and the commit writes a new index segment, about ten pages, plus the
merges that many small segments bring. So a writer may leave a repair's
index row for later (migrations 0010 and 0011):

* ``defer_search_index`` names the repair in ``decision_repairs_fts_pending``
  before inserting it; the insert trigger skips repairs named there.
* ``index_deferred`` indexes every repair named there, in the order they
  were written, in one statement, and empties the table — one segment for
  all of them.
* Until then the search reads the named repairs' text directly
  (``TAIL_SQL``: the *tail*, a few rows), so a repair is found by text
  from the moment it commits, indexed or not.

Who indexes: the worker's group commit before it commits (its own group
and any tail), and a store whose writes defer (a writable SQLite file,
``Store.defers_search_index``) from its background thread about once a
second and when it closes. A process that stops first leaves its tail in
the table: the next store on the file indexes it. SQLite only; on
PostgreSQL the repair table's own trigram index is the search index.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Connection

from .engine import Prepared
from .models import SQLITE_FTS_TABLE

__all__ = [
    "PENDING_TABLE",
    "TAIL_SQL",
    "defer_search_index",
    "has_deferred",
    "index_deferred",
]

PENDING_TABLE = f"{SQLITE_FTS_TABLE}_pending"
# A repair's document in the FTS table (the triggers of migration 0005).
_DOC = "coalesce(r.source_text, r.preference || ' ' || r.anti_pattern)"
# The waiting repairs, read by primary key. CROSS JOIN: SQLite then loops
# over the few names, never over every repair probing the names (the plan
# it picks for a plain JOIN, having no statistics on either table).
_WAITING = f"{PENDING_TABLE} AS p CROSS JOIN decision_repairs AS r ON r.id = p.repair_id"
# The repairs written but not yet indexed, as the FTS table's (repair_id, doc).
TAIL_SQL = f"SELECT r.id AS repair_id, {_DOC} AS doc FROM {_WAITING}"

# Through Prepared: traced, and errors raised as SQLAlchemy's.
_DEFER = Prepared(text(f"INSERT INTO {PENDING_TABLE} (repair_id) VALUES (:repair_id)"))
_INDEX = Prepared(
    text(
        f"INSERT INTO {SQLITE_FTS_TABLE} (repair_id, doc) "
        f"SELECT r.id, {_DOC} FROM {_WAITING} ORDER BY r.rowid"
    )
)
_CLEAR = Prepared(text(f"DELETE FROM {PENDING_TABLE}"))
_ANY = Prepared(text(f"SELECT 1 FROM {PENDING_TABLE} LIMIT 1"))


def defer_search_index(conn: Connection, repair_id: str) -> None:
    """Before inserting repair ``repair_id`` (SQLite): leave its index row to ``index_deferred``."""
    _DEFER.rowcount(conn, {"repair_id": repair_id})


def index_deferred(conn: Connection) -> int:
    """Index every repair ``defer_search_index`` named (this transaction's and earlier ones'); how many.

    A name whose repair is gone (deleted since) is dropped.
    """
    indexed = _INDEX.rowcount(conn, {})
    _CLEAR.rowcount(conn, {})
    return indexed


def has_deferred(conn: Connection) -> bool:
    """True when some repair waits for ``index_deferred`` (a read: no write lock needed to ask)."""
    return _ANY.first(conn, {}) is not None
