"""Rewrite what older versions stored with secrets in it (``memos-feedback db redact``).

Versions before the redaction at every writer kept credentials verbatim in
job payloads, event-log rows, repair contexts and served contexts. This
walks each of those tables in primary-key order, ``batch`` rows per
transaction, and rewrites a row only when ``redact_secrets`` changes one
of its texts. So the walk is:

* resumable: each batch commits on its own; a run that stops part-way
  leaves the rows it did rewritten, and the next run finds nothing left
  to do in them (``after`` starts a table's walk past a key);
* idempotent: redaction of redacted text changes nothing, so a second
  run rewrites no row;
* bounded: one batch of rows in memory at a time.

An UPDATE leaves the old text in free pages (SQLite) or dead row
versions (PostgreSQL) until they are reused. ``vacuum=True`` then rewrites
the storage: ``VACUUM`` and a WAL checkpoint on SQLite, ``VACUUM FULL`` of
the rewritten tables on PostgreSQL (it locks each table while it runs).

The host's own ``traces`` rows are only rewritten when asked
(``traces=True``): they are the host's data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Table, select, update

from ..text.secrets import redact_value
from .models import (
    DecisionRepairModel,
    FeedbackEventModel,
    RepairJobModel,
    RepairServedModel,
    TraceModel,
)

if TYPE_CHECKING:
    from . import Store

__all__ = ["REDACTED_TABLES", "RedactReport", "redact_tables"]

DEFAULT_BATCH = 500

# table -> (its key column, the columns whose text is redacted)
_COLUMNS: dict[str, tuple[str, tuple[str, ...]]] = {
    "decision_repairs": ("id", ("context", "preference", "anti_pattern", "source_text")),
    "repair_jobs": ("seq", ("payload", "last_error")),
    "feedback_events": ("seq", ("payload",)),
    "repair_served": ("id", ("context",)),
    "traces": ("id", ("user_text", "agent_text", "reflection")),
}
_TABLES: dict[str, Any] = {
    "decision_repairs": DecisionRepairModel,
    "repair_jobs": RepairJobModel,
    "feedback_events": FeedbackEventModel,
    "repair_served": RepairServedModel,
    "traces": TraceModel,
}
REDACTED_TABLES = tuple(_COLUMNS)


@dataclass
class RedactReport:
    """Per table: rows read and rows rewritten."""

    scanned: dict[str, int]
    rewritten: dict[str, int]


def redact_tables(
    store: Store,
    *,
    traces: bool = False,
    batch: int = DEFAULT_BATCH,
    progress: Callable[[str, int, int], None] | None = None,
    vacuum: bool = False,
) -> RedactReport:
    """Redact every stored text of the library's tables (and ``traces`` if asked)."""
    report = RedactReport({}, {})
    for name in REDACTED_TABLES:
        if name == "traces" and not traces:
            continue
        scanned = rewritten = 0
        for n, changed in _walk(store, name, batch):
            scanned += n
            rewritten += changed
            if progress is not None:
                progress(name, scanned, rewritten)
        report.scanned[name], report.rewritten[name] = scanned, rewritten
    if vacuum:
        _vacuum(store, [name for name, n in report.rewritten.items() if n])
    return report


def _vacuum(store: Store, tables: list[str]) -> None:
    # VACUUM cannot run inside a transaction, and the store's connections
    # open one themselves: the driver's own connection, in autocommit.
    raw = store.engine.raw_connection()
    try:
        dbapi: Any = raw.driver_connection
        if store.dialect == "sqlite":
            if dbapi.in_transaction:
                dbapi.commit()
            level, dbapi.isolation_level = dbapi.isolation_level, None
            try:
                dbapi.execute("VACUUM")
                dbapi.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                dbapi.isolation_level = level
        else:
            dbapi.rollback()
            mode, dbapi.autocommit = dbapi.autocommit, True
            try:
                for name in tables:
                    dbapi.execute(f'VACUUM FULL "{name}"')
            finally:
                dbapi.autocommit = mode
    finally:
        raw.close()


def _walk(store: Store, name: str, batch: int) -> Iterator[tuple[int, int]]:
    key_name, columns = _COLUMNS[name]
    table: Table = _TABLES[name].__table__
    key = table.c[key_name]
    after: Any = None
    while True:
        with store.session(write=True, action=f"redacting {name}") as s:
            stmt = select(key, *(table.c[c] for c in columns)).order_by(key).limit(batch)
            if after is not None:
                stmt = stmt.where(key > after)
            rows = s.execute(stmt).all()
            changed = 0
            for row in rows:
                values = {c: row[i + 1] for i, c in enumerate(columns)}
                redacted = {c: redact_value(v) for c, v in values.items() if v is not None}
                diff = {c: v for c, v in redacted.items() if v != values[c]}
                if diff:
                    s.execute(update(table).where(key == row[0]).values(**diff))
                    changed += 1
        if not rows:
            return
        after = rows[-1][0]
        yield len(rows), changed
        if len(rows) < batch:
            return
