"""Database access for outcomes: servings, settlements, retirement, history.

Writes are idempotent so that a replay after a crash changes nothing: a
serving's id is its primary key and a settlement is unique on its serving
(``INSERT ... ON CONFLICT DO NOTHING`` on both backends).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._failpoints import failpoint
from ..errors import InvalidInputError, MemosFeedbackError
from ..events import FeedbackEvent, RepairOutcome, RepairReviewFlagged, RepairStale
from ..store import Store
from ..store.checks import check_text
from ..store.handles import Session
from ..store.models import DecisionRepairModel
from ..store.outcomes import (
    insert_served,
    insert_settlement,
    kind_counts,
    lock_repair,
    open_served,
    served_of,
    set_final_status,
    settled_of,
)
from ..store.outcomes import status_counts as _status_counts
from ..text.logs import library_logger
from ..types import new_id, now_ms
from .estimate import counts_for
from .states import HELD, RECURRED, STALE, STATUSES, Served, Settlement, served_context

__all__ = [
    "HistoryEntry",
    "held_ratio",
    "history",
    "open_servings",
    "record_served",
    "retire",
    "status_counts",
    "storable",
    "write_batch",
]

logger = library_logger("memos_feedback.outcomes")

# repair_served.session_id is VARCHAR(255).
_SESSION_MAX = 255


def write_batch(
    store: Store, served: Sequence[Served], settled: Sequence[Settlement], stale_after: int
) -> list[FeedbackEvent]:
    """Commit servings and settlements, retiring repairs that stopped applying.

    One transaction: a settlement, the retirement it causes and the policy
    blocks it cleans commit together or not at all. Returns the events to
    emit (only after the commit: nothing is announced that could roll back).
    """
    events: list[FeedbackEvent] = []
    with store.session(write=True, action="recording repair outcomes") as s:
        for v in served:
            insert_served(
                s,
                {
                    "id": v.id,
                    "repair_id": v.repair_id,
                    "session_id": v.session_id,
                    "tool_id": v.tool_id,
                    "context": v.context,  # redacted by its column (store.models.RedactedText)
                    "ts": v.ts,
                },
            )
        recurred: set[str] = set()
        for t in settled:
            values = {
                "id": new_id("ro_"),
                "served_id": t.served_id,
                "repair_id": t.repair_id,
                "session_id": t.session_id,
                "kind": t.kind,
                "ts": t.ts,
            }
            if not insert_settlement(s, values):
                continue  # settled before (a replay): once is enough
            events.append(RepairOutcome(repair_id=t.repair_id, session_id=t.session_id, outcome=t.kind))
            if t.kind == RECURRED:
                recurred.add(t.repair_id)
        for repair_id in sorted(recurred):  # sorted: one lock order for every writer
            event = _check_stale(s, store, repair_id, stale_after)
            if event is not None:
                events.append(event)
        if settled:
            failpoint("outcomes.before_commit")
    if settled:
        failpoint("outcomes.after_commit")
    return events


def storable(session_id: str, tool_id: str | None, context: str | None) -> bool:
    """Whether both backends can store a serving with these keys.

    Checked before a serving is tracked: a value the database refuses
    (a session id over 255 characters, a NUL) would otherwise be retried
    by the writer for ever and hold back every outcome behind it.
    """
    try:
        check_text("session_id", session_id, empty=False, max_len=_SESSION_MAX)
        for name, value in (("tool_id", tool_id), ("context", context)):
            if value is not None:
                check_text(name, value)
    except InvalidInputError:
        return False
    return True


def record_served(
    store: Store, items: Sequence[Any], session_id: str, tool_id: str | None, context: str | None, ts: int
) -> None:
    """Write one serving per guidance item (``guidance_for(..., session_id=...)``).

    Bookkeeping must not fail a read: a refused or failed write is logged
    and the guidance is still returned.
    """
    context = served_context(context)
    if not storable(session_id, tool_id, context):
        logger.warning("guidance served to an unstorable session id or context: not recorded")
        return
    served = [Served(new_id("sv_"), i.repair_id, session_id, tool_id, context, ts) for i in items]
    try:
        write_batch(store, served, (), 0)
    except MemosFeedbackError as exc:
        logger.warning("could not record %d served item(s): %s", len(served), exc)


def _check_stale(s: Session, store: Store, repair_id: str, stale_after: int) -> FeedbackEvent | None:
    model = lock_repair(s, repair_id)
    if model is None or model.status is not None or model.rejected:
        return None
    counts = counts_for(s, [repair_id])[repair_id]
    if counts.held > 0 or counts.recurred < stale_after:
        return None
    if model.validated:
        # A person vouched for it: never retired by statistics, shown for review.
        if model.review_flagged_at is not None:
            return None
        model.review_flagged_at = now_ms()
        return RepairReviewFlagged(repair_id=repair_id, recurrences=counts.recurred)
    policies = retire(s, store, model, STALE)
    return RepairStale(repair_id=repair_id, recurrences=counts.recurred, policy_ids=policies)


def retire(
    s: Session, store: Store, model: DecisionRepairModel, status: str, superseded_by: str | None = None
) -> tuple[str, ...]:
    """Inside ``s``: set a final status and take the repair's lines out of every policy block."""
    assert status in STATUSES and status != "active"
    set_final_status(s, model, status, superseded_by)
    return store.repairs.detach(s, model.preference, model.anti_pattern)


def open_servings(store: Store, since: int) -> list[Served]:
    """Servings written at or after ``since`` that no outcome settled yet, oldest first."""
    with store.session(action="reading open servings") as s:
        return open_served(s, since)


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    ts: int
    session_id: str
    event: str  # "served" or an outcome kind
    tool_id: str | None = None


def history(store: Store, repair_id: str) -> list[HistoryEntry]:
    """Every serving and outcome of a repair, oldest first."""
    with store.session(action="reading a repair's outcomes") as s:
        served = [HistoryEntry(r.ts, r.session_id, "served", r.tool_id) for r in served_of(s, repair_id)]
        outcomes = [HistoryEntry(r.ts, r.session_id, r.kind) for r in settled_of(s, repair_id)]
    return sorted(served + outcomes, key=lambda e: (e.ts, e.event != "served"))


def status_counts(store: Store) -> dict[str, int]:
    """Repairs per status (rejected ones excluded: they left by a person's hand)."""
    with store.session(action="counting repairs by status") as s:
        out = dict.fromkeys(STATUSES, 0)
        out.update(_status_counts(s))
    return out


def held_ratio(store: Store) -> float | None:
    """Share of all settled servings that held; None before the first outcome."""
    with store.session(action="counting outcomes") as s:
        counts = kind_counts(s)
    total = sum(counts.values())
    return None if total == 0 else counts.get(HELD, 0) / total
