"""What the operator sees: repairs with their outcome counts, one repair's history.

Used by ``memos-feedback repairs list|show`` and the Prometheus collector.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from sqlalchemy import select

from ..store import Store
from ..store.models import DecisionRepairModel
from ..store.reads import repair_row
from ..types import DecisionRepairRow
from .estimate import OutcomeCounts, counts_for
from .ledger import HistoryEntry, history
from .states import ACTIVE

__all__ = ["history_lines", "list_line", "list_with_outcomes", "with_counts"]

M = DecisionRepairModel


def list_with_outcomes(
    store: Store,
    *,
    status: str | None,
    context_hash: str | None,
    limit: int,
    project: str | None = None,
    user: str | None = None,
    global_only: bool = False,
) -> list[tuple[DecisionRepairRow, OutcomeCounts]]:
    """Newest repairs first, each with its counts; optionally only those of one status, context,
    ``project`` (stored with exactly that project) or, ``global_only``, those stored with none,
    and of one ``user``."""
    stmt = select(M).order_by(M.ts.desc(), M.id.desc()).limit(limit)
    if context_hash is not None:
        stmt = stmt.where(M.context_hash == context_hash)
    if global_only:
        stmt = stmt.where(M.project.is_(None))
    elif project is not None:
        stmt = stmt.where(M.project == project)
    if user is not None:
        stmt = stmt.where(M.user_id == user)
    if status == ACTIVE:
        stmt = stmt.where(M.status.is_(None), M.rejected.is_(False))
    elif status is not None:
        stmt = stmt.where(M.status == status)
    with store.session(action="listing repairs") as s:
        rows = [repair_row(m) for m in s.scalars(stmt)]
        counts = counts_for(s, (r.id for r in rows), served=True)
    return [(r, counts[r.id]) for r in rows]


def list_line(row: DecisionRepairRow, counts: OutcomeCounts) -> str:
    verdict = "validated" if row.validated else "rejected" if row.rejected else "new"
    status = row.status + ("!" if row.review_flagged_at is not None else "")
    return (
        f"{row.id}  {row.context_hash}  {row.trigger:<16} {row.severity:<4} {row.confidence:.2f} "
        f"{verdict:<9} {status:<11} served={counts.served:<4} held={counts.held:<4} "
        f"recurred={counts.recurred:<4} {row.preference}"
    )


def with_counts(row: DecisionRepairRow, counts: OutcomeCounts) -> dict[str, Any]:
    data = asdict(row)
    data.update(
        served=counts.served,
        held=counts.held,
        recurred=counts.recurred,
        contradicted=counts.contradicted,
    )
    return data


def history_lines(store: Store, repair_id: str) -> tuple[list[HistoryEntry], list[str]]:
    entries = history(store, repair_id)
    lines = [f"{e.ts}  {e.event:<12} session={e.session_id}" for e in entries]
    return entries, lines
