"""What the operator sees: repairs with their outcome counts, one repair's history.

Used by ``memos-feedback repairs list|show`` and the Prometheus collector.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..store import Store
from ..store.outcomes import newest_repairs
from ..types import DecisionRepairRow
from .estimate import OutcomeCounts, counts_for
from .ledger import HistoryEntry, history
from .states import ACTIVE

__all__ = ["history_lines", "list_line", "list_with_outcomes", "with_counts"]


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
    with store.session(action="listing repairs") as s:
        rows = newest_repairs(
            s,
            limit=limit,
            status=None if status == ACTIVE else status,
            active_only=status == ACTIVE,
            context_hash=context_hash,
            project=project,
            user=user,
            global_only=global_only,
        )
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
