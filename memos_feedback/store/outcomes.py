"""The outcome tables' statements: servings, settlements, counts per repair, retirement.

``outcomes`` keeps the state machine and the arithmetic; it hands plain
values here and gets plain values back. Writes are idempotent so that a
replay after a crash changes nothing: a serving's id is its primary key
and a settlement is unique on its serving (``INSERT ... ON CONFLICT DO
NOTHING``, in each dialect's spelling).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple, cast

from sqlalchemy import ColumnElement, Select, func, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from ..types import DecisionRepairRow, Scope
from .engine import Prepared
from .handles import Executor
from .models import DecisionRepairModel, RepairOutcomeModel, RepairServedModel
from .reads import dialect_of, in_list, list_param, repair_row

__all__ = [
    "CONTRADICTED",
    "HELD",
    "RECURRED",
    "OutcomeTally",
    "Served",
    "SettledRecord",
    "get_repair",
    "insert_served",
    "insert_settlement",
    "kind_counts",
    "lock_repair",
    "newest_repairs",
    "open_served",
    "outcome_tallies",
    "served_of",
    "served_tallies",
    "set_final_status",
    "settled_of",
    "status_counts",
]

# The values of ``repair_outcomes.kind``: the statements that count them say
# them, so they live with the table (``outcomes.states`` re-exports them).
HELD: Final = "held"
RECURRED: Final = "recurred"
CONTRADICTED: Final = "contradicted"

M = DecisionRepairModel
S = RepairServedModel
OM = RepairOutcomeModel


class OutcomeTally(NamedTuple):
    """One (repair, outcome kind): how many, and the newest's time."""

    repair_id: str
    kind: str
    n: int
    newest: int


@dataclass(frozen=True, slots=True)
class Served:
    """One serving, a row of ``repair_served`` (``outcomes.states`` re-exports it)."""

    id: str
    repair_id: str
    session_id: str
    tool_id: str | None
    context: str | None
    ts: int


class SettledRecord(NamedTuple):
    """A row of ``repair_outcomes`` as history shows it."""

    ts: int
    session_id: str
    kind: str


def _insert(session: Session, table: Any, values: dict[str, Any], key: str) -> bool:
    """Insert one row unless ``key`` already holds its value; True when inserted."""
    dialect = postgresql if dialect_of(session) == "postgresql" else sqlite
    stmt = dialect.insert(table).values(**values).on_conflict_do_nothing(index_elements=[key])
    # RETURNING, not rowcount: the PostgreSQL driver reports -1 for this statement.
    return session.execute(stmt.returning(table.c[key])).first() is not None


def insert_served(session: Session, values: dict[str, Any]) -> bool:
    """One serving, unless its id is written already; True when inserted."""
    return _insert(session, S.__table__, values, "id")


def insert_settlement(session: Session, values: dict[str, Any]) -> bool:
    """One settlement, unless its serving is settled already; True when inserted."""
    return _insert(session, OM.__table__, values, "served_id")


def _tallies_statement(postgresql_dialect: bool) -> Select[Any]:
    ids = in_list(cast(ColumnElement[Any], OM.repair_id), "ids", postgresql_dialect)
    stmt = select(OM.repair_id, OM.kind, func.count(), func.max(OM.ts)).where(ids)
    return cast(Select[Any], stmt.group_by(OM.repair_id, OM.kind))


def _served_statement(postgresql_dialect: bool) -> Select[Any]:
    ids = in_list(cast(ColumnElement[Any], S.repair_id), "ids", postgresql_dialect)
    return cast(Select[Any], select(S.repair_id, func.count()).where(ids).group_by(S.repair_id))


# Built once per dialect (index: is it PostgreSQL?) with the id list as one
# parameter: an expanding IN is a new statement (and, on PostgreSQL, a new
# prepared statement) for every list length, and recall runs this per call.
# Recall's per-call read runs on SQLite's driver cursor (``Prepared``).
_TALLIES = (Prepared(_tallies_statement(False)), Prepared(_tallies_statement(True)))
_SERVED = (_served_statement(False), _served_statement(True))


def outcome_tallies(ex: Executor, repair_ids: Sequence[str]) -> list[OutcomeTally]:
    """Every (repair, kind) of ``repair_ids`` that has outcomes (one grouped, indexed query)."""
    pg = dialect_of(ex) == "postgresql"
    rows = _TALLIES[pg].all(ex, {"ids": list_param(repair_ids, pg)})
    return [OutcomeTally(r, k, int(n), int(t)) for r, k, n, t in rows]


def served_tallies(ex: Executor, repair_ids: Sequence[str]) -> dict[str, int]:
    """How many times each of ``repair_ids`` was served (those never served are left out)."""
    pg = dialect_of(ex) == "postgresql"
    return {r: int(n) for r, n in ex.execute(_SERVED[pg], {"ids": list_param(repair_ids, pg)})}


def lock_repair(session: Session, repair_id: str) -> DecisionRepairModel | None:
    """The repair's row, locked for the rest of the transaction (PostgreSQL; SQLite's write lock is whole)."""
    return session.get(M, repair_id, with_for_update=True)


def get_repair(session: Session, repair_id: str) -> DecisionRepairModel | None:
    return session.get(M, repair_id)


def set_final_status(
    session: Session, model: DecisionRepairModel, status: str, superseded_by: str | None
) -> None:
    """Set a repair's final status, flushed so the policy clean-up that follows sees it."""
    model.status = status
    model.superseded_by = superseded_by
    session.flush()


def open_served(ex: Executor, since: int) -> list[Served]:
    """Servings written at or after ``since`` that no outcome settled yet, oldest first."""
    stmt = (
        select(S.id, S.repair_id, S.session_id, S.tool_id, S.context, S.ts)
        .outerjoin(OM, OM.served_id == S.id)
        .where(S.ts >= since, OM.id.is_(None))
        .order_by(S.ts, S.id)
    )
    return [Served(*r) for r in ex.execute(stmt)]


def served_of(ex: Executor, repair_id: str) -> list[Served]:
    """Every serving of one repair (no order)."""
    stmt = select(S.id, S.repair_id, S.session_id, S.tool_id, S.context, S.ts).where(S.repair_id == repair_id)
    return [Served(*r) for r in ex.execute(stmt)]


def settled_of(ex: Executor, repair_id: str) -> list[SettledRecord]:
    """Every outcome of one repair (no order)."""
    stmt = select(OM.ts, OM.session_id, OM.kind).where(OM.repair_id == repair_id)
    return [SettledRecord(*r) for r in ex.execute(stmt)]


def status_counts(ex: Executor) -> dict[str, int]:
    """Repairs per status ("active": none set), rejected ones excluded; statuses with none left out."""
    status = func.coalesce(M.status, "active")
    stmt = select(status, func.count()).where(M.rejected.is_(False)).group_by(status)
    return {str(k): int(n) for k, n in ex.execute(stmt)}


def kind_counts(ex: Executor) -> dict[str, int]:
    """Settled servings per outcome kind."""
    stmt = select(OM.kind, func.count()).group_by(OM.kind)
    return {str(k): int(n) for k, n in ex.execute(stmt)}


def newest_repairs(
    session: Session,
    *,
    limit: int,
    status: str | None = None,
    active_only: bool = False,
    context_hash: str | None = None,
    project: str | None = None,
    user: str | None = None,
    global_only: bool = False,
    visible_to: Scope | None = None,
) -> list[DecisionRepairRow]:
    """Newest repairs first: optionally of one ``status`` (``active_only``: none set and not
    rejected), context, ``project`` (exactly) or, ``global_only``, none, and of one ``user``;
    ``visible_to``: those a read of that scope may show (``Scope.sees``)."""
    stmt = select(M).order_by(M.ts.desc(), M.id.desc()).limit(limit)
    if visible_to is not None:
        for column, value in ((M.project, visible_to.project), (M.user_id, visible_to.user)):
            stmt = stmt.where(column.is_(None) if value is None else or_(column.is_(None), column == value))
    if context_hash is not None:
        stmt = stmt.where(M.context_hash == context_hash)
    if global_only:
        stmt = stmt.where(M.project.is_(None))
    elif project is not None:
        stmt = stmt.where(M.project == project)
    if user is not None:
        stmt = stmt.where(M.user_id == user)
    if active_only:
        stmt = stmt.where(M.status.is_(None), M.rejected.is_(False))
    elif status is not None:
        stmt = stmt.where(M.status == status)
    return [repair_row(m) for m in session.scalars(stmt)]
