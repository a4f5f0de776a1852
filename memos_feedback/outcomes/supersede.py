"""Superseding: a newer repair that prefers what an older one avoids (or the reverse).

Two repairs of the same scope (same project and user, and the same context or the
same tool) that point in opposite directions cannot both be right; the
newer one was written from newer evidence, so the older one is retired
with ``superseded_by`` set. "Prefers what the other avoids" compares the
*object* of the lines — the text after ``Prefer:``/``Avoid:``, without a
``instead of …`` tail — by word-set overlap (Jaccard >= ``SIMILAR``), and
only when the object is closer to the other side of the older pair than to
the same side: "run x-right for ci" and "run x-default for ci" share most of
their words, so a repeat of the same lesson would otherwise "prefer what
the older one avoided" and retire it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from ..events import FeedbackEvent, RepairReviewFlagged, RepairSuperseded
from ..store import Store
from ..store.handles import Executor, Session
from ..store.outcomes import get_repair
from ..store.supersede import connection_of, joined_session, new_repair, older_lines, older_repairs
from ..types import now_ms
from .ledger import retire
from .states import SUPERSEDED

__all__ = ["SIMILAR", "line_object", "opposes", "supersede_new", "supersede_older"]

SIMILAR = 0.6
_DIRECTIVE = re.compile(r"^\s*(prefer|avoid|do not|don't|do|never|use)\s*:?\s*", re.IGNORECASE)
_INSTEAD = re.compile(r"\s+instead of\s+.*$", re.IGNORECASE | re.DOTALL)
_WORD = re.compile(r"\w+", re.UNICODE)


@functools.lru_cache(maxsize=4096)
def line_object(line: str) -> frozenset[str]:
    """The words of what a line recommends or warns against (cached: the same
    older lines are compared again for every new repair of their tool)."""
    core = _INSTEAD.sub("", _DIRECTIVE.sub("", line.strip()))
    return frozenset(w.lower() for w in _WORD.findall(core))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _crosses(line: str, other_side: str, same_side: str) -> bool:
    """``line`` names what ``other_side`` names, and more so than ``same_side``."""
    obj = line_object(line)
    across = _jaccard(obj, line_object(other_side))
    return across >= SIMILAR and across > _jaccard(obj, line_object(same_side))


def opposes(new_pref: str, new_avoid: str, old_pref: str, old_avoid: str) -> str | None:
    """Why the new pair contradicts the old one, or None.

    A line crosses over only when it is closer to the older pair's other
    side than to its own side: a repeat of the older pair, or a pair whose
    lines all differ from it by one word, contradicts nothing.
    """
    if _crosses(new_pref, old_avoid, old_pref):
        return "prefers what it avoided"
    if _crosses(new_avoid, old_pref, old_avoid):
        return "avoids what it preferred"
    return None


def supersede_older(ex: Executor, store: Store, new_id: str) -> list[FeedbackEvent]:
    """``supersede_new`` for a repair already written in ``ex``'s transaction, by id."""
    new = new_repair(connection_of(ex), new_id)
    if new is None:
        return []
    return supersede_new(ex, store, new)


def supersede_new(ex: Executor, store: Store, new: Mapping[str, Any]) -> list[FeedbackEvent]:
    """Inside the new repair's transaction: retire the active older repairs it contradicts.

    ``ex`` is the transaction: an ORM session, or the Core connection of the
    worker's repair write. ``new`` holds the new row's ``id``,
    ``context_hash``, ``tool_id``, ``ts``, ``project``, ``preference`` and
    ``anti_pattern`` (the worker passes the values it just inserted, so the
    row is not read back). The scan is one read of the distinct line pairs
    of the 20 newest active repairs of the same context and the 20 newest
    of the same tool (two index ranges); the ids are read, and the ORM set
    up on the same connection, only when a pair contradicts. A validated
    older repair is not retired (a person vouched for it); it is flagged
    for review. Returns the events, to be emitted after the commit.
    """
    pref, avoid = new["preference"], new["anti_pattern"]
    if not line_object(pref) and not line_object(avoid):
        return []  # nothing to compare: an empty word set is never similar
    conn = connection_of(ex)
    params = {
        "new_id": new["id"],
        "ts": new["ts"],
        "project": new["project"] or "",
        "user": new.get("user_id") or "",
    }
    lines = older_lines(conn, params, new["context_hash"], new["tool_id"])
    against = {(p, a): why for p, a in lines if (why := opposes(pref, avoid, p, a)) is not None}
    if not against:
        return []
    olders = older_repairs(conn, params, new["context_hash"], new["tool_id"])
    hits = [
        (old.id, against[old.preference, old.anti_pattern])
        for old in olders.values()
        if (old.preference, old.anti_pattern) in against
    ]
    if not hits:
        return []
    with joined_session(ex) as s:
        return _retire_all(s, store, new["id"], hits)


def _retire_all(s: Session, store: Store, new_id: str, hits: list[tuple[str, str]]) -> list[FeedbackEvent]:
    events: list[FeedbackEvent] = []
    for old_id, reason in hits:
        old = get_repair(s, old_id)
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
