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
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import CompoundSelect, Connection, Select, bindparam, func, select, union
from sqlalchemy.orm import Session

from ..events import FeedbackEvent, RepairReviewFlagged, RepairSuperseded
from ..store import Store
from ..store.engine import Prepared
from ..store.models import DecisionRepairModel
from ..types import now_ms
from .ledger import retire
from .states import SUPERSEDED

__all__ = ["SIMILAR", "line_object", "opposes", "supersede_new", "supersede_older"]

M = DecisionRepairModel
SIMILAR = 0.6
# Older repairs compared per source (same context; same tool), newest first.
_SCAN = 20
_DIRECTIVE = re.compile(r"^\s*(prefer|avoid|do not|don't|do|never|use)\s*:?\s*", re.IGNORECASE)
_INSTEAD = re.compile(r"\s+instead of\s+.*$", re.IGNORECASE | re.DOTALL)
_WORD = re.compile(r"\w+", re.UNICODE)
_NEW = (M.id, M.context_hash, M.tool_id, M.ts, M.project, M.user_id, M.preference, M.anti_pattern)


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


def _older(column: Any, key: str, *columns: Any) -> Select[Any]:
    # One indexed range per source — (context_hash, ts) and (tool_id, ts) —
    # instead of an OR that no single index serves (a scan and a sort of
    # every repair of the tool, for every new repair).
    return (
        select(*columns)
        .where(
            column == bindparam(key),
            M.id != bindparam("new_id"),
            M.status.is_(None),
            M.rejected.is_(False),
            M.ts <= bindparam("ts"),
            func.coalesce(M.project, "") == bindparam("project"),
            func.coalesce(M.user_id, "") == bindparam("user"),
        )
        .order_by(M.ts.desc(), M.id.desc())
        .limit(_SCAN)
    )


_SAME_CONTEXT = _older(M.context_hash, "key", M.id, M.preference, M.anti_pattern)
_SAME_TOOL = _older(M.tool_id, "key", M.id, M.preference, M.anti_pattern)
_NEW_ROW = select(*_NEW).where(M.id == bindparam("new_id"))


def _lines_statement() -> CompoundSelect[str, str]:
    # The same two ranges as _SAME_CONTEXT and _SAME_TOOL, but only their
    # distinct (preference, anti_pattern) pairs, in one statement: the
    # database drops the duplicates (repairs of one tool often repeat their
    # lines), and the ids are read only when a pair contradicts — rarely.
    def lines(column: Any, key: str) -> Select[Any]:
        inner = _older(column, key, M.preference, M.anti_pattern).subquery()
        return select(inner.c.preference, inner.c.anti_pattern)

    return union(lines(M.context_hash, "context_key"), lines(M.tool_id, "tool_key"))


_OLDER_LINES = _lines_statement()
_RUN_OLDER_LINES = Prepared(_OLDER_LINES)


def _distinct_lines(column: Any) -> Select[Any]:
    # One range's distinct pairs: the rows are de-duplicated in SQLite, not
    # in Python (a row costs more to hand to Python than to compare there).
    inner = _older(column, "key", M.preference, M.anti_pattern).subquery()
    return select(inner.c.preference, inner.c.anti_pattern).distinct()


# SQLite: the two ranges as two statements on the driver's cursor. SQLite
# runs the UNION of the two LIMITed subqueries at about twice the cost of
# the two selects (measured ~100 us against ~50 us with 1,200 repairs of
# one tool), and a statement on the cursor costs a few microseconds. The
# tool range is read from the covering index ix_decision_repairs_tool_lines
# alone (migration 0009), its duplicates dropped there: ~70 -> ~33 us with
# 1,500 repairs of one tool. (A context's range is short: DISTINCT's
# temporary b-tree costs more there than it saves.)
_CONTEXT_LINES = Prepared(_older(M.context_hash, "key", M.preference, M.anti_pattern))
_TOOL_LINES = Prepared(_distinct_lines(M.tool_id))


def _older_lines(
    conn: Connection, params: Mapping[str, Any], context_hash: str, tool_id: str | None
) -> Iterable[tuple[str, str]]:
    """The distinct (preference, anti_pattern) pairs of ``_OLDER_LINES``, per backend."""
    if conn.dialect.name != "sqlite":
        # One round trip: the database drops the duplicates.
        keys = {"context_key": context_hash, "tool_key": tool_id}
        return [(p, a) for p, a in _RUN_OLDER_LINES.all(conn, {**params, **keys})]
    pairs = {(p, a) for p, a in _CONTEXT_LINES.all(conn, {**params, "key": context_hash})}
    if tool_id is not None:  # "tool_id = NULL" matches nothing: skip the statement
        pairs.update((p, a) for p, a in _TOOL_LINES.all(conn, {**params, "key": tool_id}))
    return pairs


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


def supersede_older(ex: Session | Connection, store: Store, new_id: str) -> list[FeedbackEvent]:
    """``supersede_new`` for a repair already written in ``ex``'s transaction, by id."""
    if isinstance(ex, Session):
        ex.flush()  # the new row may still be pending in the session
    conn = ex.connection() if isinstance(ex, Session) else ex
    new = conn.execute(_NEW_ROW, {"new_id": new_id}).first()
    if new is None:
        return []
    return supersede_new(ex, store, new._asdict())


def supersede_new(ex: Session | Connection, store: Store, new: Mapping[str, Any]) -> list[FeedbackEvent]:
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
    if isinstance(ex, Session):
        ex.flush()  # the new row may still be pending in the session
    conn = ex.connection() if isinstance(ex, Session) else ex
    params = {
        "new_id": new["id"],
        "ts": new["ts"],
        "project": new["project"] or "",
        "user": new.get("user_id") or "",
    }
    lines = _older_lines(conn, params, new["context_hash"], new["tool_id"])
    against = {(p, a): why for p, a in lines if (why := opposes(pref, avoid, p, a)) is not None}
    if not against:
        return []
    olders: dict[str, Any] = {}
    for stmt, key in ((_SAME_CONTEXT, new["context_hash"]), (_SAME_TOOL, new["tool_id"])):
        if key is not None:
            olders.update((row.id, row) for row in conn.execute(stmt, {**params, "key": key}))
    hits = [
        (old.id, against[old.preference, old.anti_pattern])
        for old in olders.values()
        if (old.preference, old.anti_pattern) in against
    ]
    if not hits:
        return []
    if isinstance(ex, Session):
        return _retire_all(ex, store, new["id"], hits)
    # Joins the connection's transaction: the session neither commits nor ends it.
    with Session(bind=conn) as s:
        events = _retire_all(s, store, new["id"], hits)
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
