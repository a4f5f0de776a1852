"""The write of one repair: the row with its recall fields, the repairs it
supersedes, the policy blocks, the caller's job bookkeeping and the
event-log rows, all in one ``RepairUnit`` (store/unit.py)."""

from __future__ import annotations

import functools

from ..embeddings import check_embedder
from ..events import FeedbackEvent, RepairAttached, RepairPersisted
from ..outcomes.supersede import supersede_new
from ..recall.categories import category_for
from ..recall.indexing import RecallFields, build_source_text, embed_fields
from ..store.repositories import repair_values, write_repair_row
from ..store.unit import RepairUnit
from ..types import ClassifiedFeedback, DecisionRepairDraft, RepairEvidence, RepairInput
from .attach import attach_in
from .deps import RepairDeps

__all__ = ["Written", "recall_fields_of", "write_repair"]

# What write_repair wrote: the repair's id, the policies it attached to, and
# the events to emit on the bus after the commit.
Written = tuple[str, tuple[str, ...], list[FeedbackEvent]]


def _source_text(
    preference: str,
    anti_pattern: str,
    tool_id: str | None,
    context: str | None,
    user_text: str | None,
    reasons: tuple[str, ...],
    trace_text: str | None,
) -> str:
    return build_source_text(
        preference=preference,
        anti_pattern=anti_pattern,
        tool_id=tool_id,
        context=context,
        user_text=user_text,
        reasons=reasons,
        trace_text=trace_text,
    )


# build_source_text is a pure function of its arguments (sanitizing a
# line per part), and consecutive repairs of a tool repeat them: the same
# two lines, tool and failing trace. Short inputs only, as the sanitizer's
# own memo: an entry stays small.
_MEMO_TEXT = 4_096


_source_text_memo = functools.lru_cache(maxsize=1_024)(_source_text)


def recall_fields_of(
    inp: RepairInput,
    deps: RepairDeps,
    feedback: ClassifiedFeedback | None,
    evidence: RepairEvidence,
    draft: DecisionRepairDraft,
) -> RecallFields:
    """Category, project, search text and (with an embedder) embedding of a new repair."""
    worst = min(evidence.low, key=lambda t: t.value, default=None)
    trace_text = None if worst is None else (worst.agent_text or worst.reflection or "")
    parts = (
        draft.preference,
        draft.anti_pattern,
        inp.tool_id,
        inp.context,
        inp.user_text,
        tuple(f.reason for f in inp.failures),
        trace_text,
    )
    if sum(len(p) for p in parts[:5] if p) + len(trace_text or "") <= _MEMO_TEXT:
        source_text = _source_text_memo(*parts)
    else:
        source_text = _source_text(*parts)
    category = category_for(
        inp.trigger, feedback.shape.value if feedback is not None else None, has_success=bool(evidence.high)
    )
    # The job's own scope: the host resolved it (its default project
    # included) before queueing; the worker's config plays no part.
    fields = RecallFields(category=category, project=inp.project, source_text=source_text)
    return embed_fields(fields, check_embedder(deps.embedder))


def write_repair(
    unit: RepairUnit,
    inp: RepairInput,
    deps: RepairDeps,
    started: int,
    draft: DecisionRepairDraft,
    recall: RecallFields,
    known: dict[str, str] | None = None,
) -> Written:
    """The writes of a repair, in ``unit`` (its context locked by the caller).

    The one write of every path (``run_repair``'s and ``stage_repair``'s).
    Everything a repair changes commits here together: the repair row
    (recall columns included), the older repairs it supersedes, the policy
    blocks it attaches to, the caller's bookkeeping (``finalize``: the queue
    marks the job done) and the events that report it in the durable log,
    so a crash leaves all of it or none of it. Returns the events to emit
    on the bus after the commit (supersede events among them; those are
    logged batched, like every outcome event). ``started``: when the run
    began (the repair's ``ts``; 0 or less lets the store stamp it).
    """
    values = repair_values(
        context_hash=inp.context_hash,
        trigger=inp.trigger,
        preference=draft.preference,
        anti_pattern=draft.anti_pattern,
        severity=draft.severity,
        confidence=draft.confidence,
        tool_id=inp.tool_id,
        context=inp.context,
        session_id=inp.session_id,
        high_value_trace_ids=draft.high_value_trace_ids,
        low_value_trace_ids=draft.low_value_trace_ids,
        ts=started if started > 0 else None,
    )
    values.update(
        category=recall.category,
        project=recall.project,
        user_id=inp.user,
        source_text=recall.source_text,
        embedding=recall.embedding,
        embedding_model=recall.embedding_model,
    )
    repair_id: str = values["id"]
    conn = unit.conn
    unit.defer_index(repair_id)
    write_repair_row(conn, values)
    # Older repairs this one contradicts are retired in the same commit, so
    # recall never serves both.
    superseded = supersede_new(conn, deps.store, values)
    attached: tuple[str, ...] = ()
    if deps.config.attach_to_policy and draft.attach_to_policy_ids:
        attached = attach_in(conn, draft, known)
    unit.finalize(deps.finalize, repair_id)
    written: list[FeedbackEvent] = [
        RepairPersisted(
            context_hash=inp.context_hash,
            repair_id=repair_id,
            confidence=draft.confidence,
            severity=draft.severity,
        )
    ]
    if attached:
        written.append(RepairAttached(repair_id=repair_id, policy_ids=attached))
    # The event-log rows go last: they commit with the repair or not at all
    # (store/event_log.py).
    unit.log(written)
    return repair_id, attached, [*written, *superseded]
