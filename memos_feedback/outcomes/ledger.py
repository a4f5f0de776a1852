"""Database access for outcomes: servings, settlements, retirement, history.

Writes are idempotent so that a replay after a crash changes nothing: a
serving's id is its primary key and a settlement is unique on its serving
(``INSERT ... ON CONFLICT DO NOTHING`` on both backends).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from .._failpoints import failpoint
from ..errors import InvalidInputError, MemosFeedbackError
from ..events import FeedbackEvent, RepairOutcome, RepairReviewFlagged, RepairStale
from ..store import Store
from ..store.checks import check_text
from ..store.models import DecisionRepairModel, RepairOutcomeModel, RepairServedModel
from ..text.logs import library_logger
from ..text.secrets import redact_optional
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

M = DecisionRepairModel
S = RepairServedModel
# repair_served.session_id is VARCHAR(255).
_SESSION_MAX = 255
OM = RepairOutcomeModel


def _insert(session: Session, table: Any, values: dict[str, Any], key: str) -> bool:
    """Insert one row unless ``key`` already holds its value; True when inserted."""
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    stmt = dialect.insert(table).values(**values).on_conflict_do_nothing(index_elements=[key])
    # RETURNING, not rowcount: the PostgreSQL driver reports -1 for this statement.
    return session.execute(stmt.returning(table.c[key])).first() is not None


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
            _insert(
                s,
                S.__table__,
                {
                    "id": v.id,
                    "repair_id": v.repair_id,
                    "session_id": v.session_id,
                    "tool_id": v.tool_id,
                    "context": redact_optional(v.context),
                    "ts": v.ts,
                },
                "id",
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
            if not _insert(s, OM.__table__, values, "served_id"):
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
    model = s.get(M, repair_id, with_for_update=True)
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
    model.status = status
    model.superseded_by = superseded_by
    s.flush()
    return store.repairs.detach(s, model.preference, model.anti_pattern)


def open_servings(store: Store, since: int) -> list[Served]:
    """Servings written at or after ``since`` that no outcome settled yet, oldest first."""
    stmt = (
        select(S)
        .outerjoin(OM, OM.served_id == S.id)
        .where(S.ts >= since, OM.id.is_(None))
        .order_by(S.ts, S.id)
    )
    with store.session(action="reading open servings") as s:
        return [Served(r.id, r.repair_id, r.session_id, r.tool_id, r.context, r.ts) for r in s.scalars(stmt)]


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    ts: int
    session_id: str
    event: str  # "served" or an outcome kind
    tool_id: str | None = None


def history(store: Store, repair_id: str) -> list[HistoryEntry]:
    """Every serving and outcome of a repair, oldest first."""
    with store.session(action="reading a repair's outcomes") as s:
        served = [
            HistoryEntry(r.ts, r.session_id, "served", r.tool_id)
            for r in s.scalars(select(S).where(S.repair_id == repair_id))
        ]
        outcomes = [
            HistoryEntry(r.ts, r.session_id, r.kind)
            for r in s.scalars(select(OM).where(OM.repair_id == repair_id))
        ]
    return sorted(served + outcomes, key=lambda e: (e.ts, e.event != "served"))


def status_counts(store: Store) -> dict[str, int]:
    """Repairs per status (rejected ones excluded: they left by a person's hand)."""
    status = func.coalesce(M.status, "active")
    stmt = select(status, func.count()).where(M.rejected.is_(False)).group_by(status)
    with store.session(action="counting repairs by status") as s:
        out = dict.fromkeys(STATUSES, 0)
        out.update({str(k): int(n) for k, n in s.execute(stmt)})
    return out


def held_ratio(store: Store) -> float | None:
    """Share of all settled servings that held; None before the first outcome."""
    stmt = select(OM.kind, func.count()).group_by(OM.kind)
    with store.session(action="counting outcomes") as s:
        counts = {str(k): int(n) for k, n in s.execute(stmt)}
    total = sum(counts.values())
    return None if total == 0 else counts.get(HELD, 0) / total
