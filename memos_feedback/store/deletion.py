"""Deleting repairs for good: the rows, their servings and outcomes, and their block lines.

Everything runs in the caller's write transaction, so a deleted repair and
the lines it put in policy blocks leave together or not at all: no prompt
can read a line whose repair is gone, and no repair is gone while its line
stays. A purge walks its match in batches of ``BATCH`` rows (each id list
bounded), all in that one transaction.

The search index follows by itself: the delete trigger of migration 0011
drops a repair's FTS row and its pending-index entry (SQLite); PostgreSQL's
index is on the table itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, func, select
from sqlalchemy.orm import Session

from .models import DecisionRepairModel, RepairOutcomeModel, RepairServedModel
from .reads import dialect_of, in_list, list_param

__all__ = ["BATCH", "DeletedRepair", "delete_repair_rows", "purge_batch", "purge_count"]

BATCH = 500

_REPAIRS = cast(Table, DecisionRepairModel.__table__)
_SERVED = cast(Table, RepairServedModel.__table__)
_OUTCOMES = cast(Table, RepairOutcomeModel.__table__)
_COLUMNS = (_REPAIRS.c.id, _REPAIRS.c.preference, _REPAIRS.c.anti_pattern)


@dataclass(frozen=True, slots=True)
class DeletedRepair:
    """What a deleted repair leaves to clean: its id and the two lines it may have in blocks."""

    id: str
    preference: str
    anti_pattern: str


def _lines(pg: bool) -> Any:
    """The named repairs, locked (PostgreSQL; SQLite's write transaction already excludes)."""
    stmt = select(*_COLUMNS).where(in_list(_REPAIRS.c.id, "ids", pg)).order_by(_REPAIRS.c.id)
    return stmt.with_for_update() if pg else stmt


def _matching(project: bool) -> Any:
    """Repairs older than ``:before`` (of ``:project`` when filtered), oldest first, a batch."""
    stmt = select(*_COLUMNS).where(_REPAIRS.c.ts < bindparam("before"))
    if project:
        stmt = stmt.where(_REPAIRS.c.project == bindparam("project"))
    return stmt.order_by(_REPAIRS.c.ts, _REPAIRS.c.id).limit(bindparam("limit"))


_LINES = {pg: _lines(pg) for pg in (False, True)}
_MATCHING = {p: _matching(p) for p in (False, True)}
_DELETES = {
    pg: tuple(
        delete(table).where(in_list(column, "ids", pg))
        for table, column in (
            (_SERVED, _SERVED.c.repair_id),
            (_OUTCOMES, _OUTCOMES.c.repair_id),
            (_REPAIRS, _REPAIRS.c.id),
        )
    )
    for pg in (False, True)
}


def delete_repair_rows(s: Session, ids: Sequence[str]) -> list[DeletedRepair]:
    """Inside ``s``: delete those of ``ids`` (at most ``BATCH``) that exist, with their servings
    and outcomes; return the deleted ones, by id. Their block lines are the caller's to detach.
    """
    if not ids:
        return []
    if len(ids) > BATCH:
        raise ValueError(f"at most {BATCH} ids per call, got {len(ids)}")
    pg = dialect_of(s) == "postgresql"
    param = {"ids": list_param(sorted(set(ids)), pg)}
    found = [DeletedRepair(r[0], r[1], r[2]) for r in s.execute(_LINES[pg], param)]
    if found:
        gone = {"ids": list_param([d.id for d in found], pg)}
        for stmt in _DELETES[pg]:
            s.execute(stmt, gone)
    return found


def purge_batch(s: Session, *, before: int, project: str | None) -> list[DeletedRepair]:
    """Inside ``s``: delete the next ``BATCH`` repairs older than ``before`` (of ``project``)."""
    params: dict[str, Any] = {"before": before, "limit": BATCH}
    if project is not None:
        params["project"] = project
    ids = [r[0] for r in s.execute(_MATCHING[project is not None], params)]
    return delete_repair_rows(s, ids)


def purge_count(s: Session, *, before: int, project: str | None) -> int:
    """How many repairs ``purge_batch`` would walk through."""
    stmt = select(func.count()).select_from(_REPAIRS).where(_REPAIRS.c.ts < before)
    if project is not None:
        stmt = stmt.where(_REPAIRS.c.project == project)
    return int(s.execute(stmt).scalar_one())
