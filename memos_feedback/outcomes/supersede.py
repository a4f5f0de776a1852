"""Superseding: a newer repair that prefers what an older one avoids (or the reverse).

Two repairs of the same scope (same project, and the same context or the
same tool) that point in opposite directions cannot both be right; the
newer one was written from newer evidence, so the older one is retired
with ``superseded_by`` set. "Prefers what the other avoids" compares the
*object* of the lines — the text after ``Prefer:``/``Avoid:``, without a
``instead of …`` tail — by word-set overlap (Jaccard >= ``SIMILAR``).
"""

from __future__ import annotations

import re

from sqlalchemy import Connection, func, or_, select
from sqlalchemy.orm import Session

from ..events import FeedbackEvent, RepairReviewFlagged, RepairSuperseded
from ..store import Store
from ..store.models import DecisionRepairModel
from ..store.rows import now_ms
from .ledger import retire
from .states import SUPERSEDED

__all__ = ["SIMILAR", "line_object", "opposes", "supersede_older"]

M = DecisionRepairModel
SIMILAR = 0.6
_SCAN = 100
_DIRECTIVE = re.compile(r"^\s*(prefer|avoid|do not|don't|do|never|use)\s*:?\s*", re.IGNORECASE)
_INSTEAD = re.compile(r"\s+instead of\s+.*$", re.IGNORECASE | re.DOTALL)
_WORD = re.compile(r"\w+", re.UNICODE)
_NEW = (M.id, M.context_hash, M.tool_id, M.ts, M.project, M.preference, M.anti_pattern)


def line_object(line: str) -> frozenset[str]:
    """The words of what a line recommends or warns against."""
    core = _INSTEAD.sub("", _DIRECTIVE.sub("", line.strip()))
    return frozenset(w.lower() for w in _WORD.findall(core))


def _similar(a: frozenset[str], b: frozenset[str]) -> bool:
    return bool(a) and bool(b) and len(a & b) / len(a | b) >= SIMILAR


def opposes(new_pref: str, new_avoid: str, old_pref: str, old_avoid: str) -> str | None:
    """Why the new pair contradicts the old one, or None."""
    if _similar(line_object(new_pref), line_object(old_avoid)):
        return "prefers what it avoided"
    if _similar(line_object(new_avoid), line_object(old_pref)):
        return "avoids what it preferred"
    return None


def supersede_older(ex: Session | Connection, store: Store, new_id: str) -> list[FeedbackEvent]:
    """Inside the new repair's transaction: retire the active older repairs it contradicts.

    ``ex`` is the transaction: an ORM session, or the Core connection of the
    worker's repair write. The scan is one Core read (it runs for every
    repair); the ORM is only set up, on the same connection, when something
    is retired. A validated older repair is not retired (a person vouched
    for it); it is flagged for review. Returns the events, to be emitted
    after the commit.
    """
    if isinstance(ex, Session):
        ex.flush()  # the new row may still be pending in the session
    conn = ex.connection() if isinstance(ex, Session) else ex
    new = conn.execute(select(*_NEW).where(M.id == new_id)).first()
    if new is None:
        return []
    same_place = M.context_hash == new.context_hash
    if new.tool_id is not None:
        same_place = or_(same_place, M.tool_id == new.tool_id)
    stmt = (
        select(M.id, M.preference, M.anti_pattern)
        .where(
            same_place,
            M.id != new.id,
            M.status.is_(None),
            M.rejected.is_(False),
            M.ts <= new.ts,
            func.coalesce(M.project, "") == (new.project or ""),
        )
        .order_by(M.ts.desc(), M.id.desc())
        .limit(_SCAN)
    )
    hits: list[tuple[str, str]] = []
    for old in conn.execute(stmt):
        reason = opposes(new.preference, new.anti_pattern, old.preference, old.anti_pattern)
        if reason is not None:
            hits.append((old.id, reason))
    if not hits:
        return []
    if isinstance(ex, Session):
        return _retire_all(ex, store, new.id, hits)
    # Joins the connection's transaction: the session neither commits nor ends it.
    with Session(bind=conn) as s:
        events = _retire_all(s, store, new.id, hits)
        s.flush()
    return events


def _retire_all(s: Session, store: Store, new_id: str, hits: list[tuple[str, str]]) -> list[FeedbackEvent]:
    events: list[FeedbackEvent] = []
    for old_id, reason in hits:
        old = s.get(M, old_id)
        if old is None:
            continue
        if old.validated:
            if old.review_flagged_at is None:
                old.review_flagged_at = now_ms()
                events.append(RepairReviewFlagged(repair_id=old.id, recurrences=0))
            continue
        policies = retire(s, store, old, SUPERSEDED, superseded_by=new_id)
        events.append(
            RepairSuperseded(repair_id=old.id, superseded_by=new_id, reason=reason, policy_ids=policies)
        )
    return events
