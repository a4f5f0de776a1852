"""``run_repair``: the only code that writes decision repairs (PIPELINE.md §6).

Guards run in the contract's order; every call ends in exactly one
terminal event, ``repair.persisted`` or ``repair.skipped``. With an LLM or
an embedder the slow part (synthesis, the embedding) runs outside any
write transaction; the write — cooldown re-check, repair row, policy
blocks and the caller's job bookkeeping — is one transaction, serialized
per context (an advisory lock on PostgreSQL, ``BEGIN IMMEDIATE`` on
SQLite), so two processes that trigger the same context at once write one
repair. With template synthesis (fast, local) the reads, synthesis and
the write are all that one transaction (ALGORITHMS.md, "run_repair").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..classify.classifier import classify_feedback
from ..embeddings import check_embedder
from ..errors import InvalidInputError
from ..events import (
    FeedbackClassified,
    FeedbackEvent,
    RepairSkipped,
    RepairTriggered,
)
from ..store.handles import Connection, Executor
from ..store.reads import newest_in_family, policy_boundaries_with_episodes, transaction_traces
from ..store.unit import RepairUnit, repair_unit
from ..synthesis.evidence import evidence_window, split_evidence
from ..synthesis.synthesize import SynthesisOutcome, synthesize_draft
from ..text.logs import library_logger
from ..types import (
    TRIGGERS,
    ClassifiedFeedback,
    DecisionRepairDraft,
    RepairEvidence,
    RepairInput,
    RepairResult,
)
from .deps import RepairDeps
from .evidence import user_remarks
from .write import Written, recall_fields_of, write_repair

__all__ = [
    "RepairDeps",
    "StagedRepair",
    "cooldown_family",
    "local_synthesis",
    "run_repair",
    "stage_repair",
]

logger = library_logger("memos_feedback.repair")


class _Run:
    """State of one ``run_repair`` call."""

    def __init__(self, inp: RepairInput, deps: RepairDeps) -> None:
        self.inp = inp
        self.deps = deps
        self.started = deps.clock()
        # The user's words beside a trigger that carried none (evidence.user_remarks).
        self.remarks: tuple[str, ...] = ()

    def emit(self, event: FeedbackEvent) -> None:
        if self.deps.bus is not None:
            self.deps.bus.emit(event)

    def result(
        self,
        *,
        repair_id: str | None = None,
        draft: DecisionRepairDraft | None = None,
        skipped_reason: str | None = None,
        attached: tuple[str, ...] = (),
    ) -> RepairResult:
        return RepairResult(
            trigger=self.inp.trigger,
            context_hash=self.inp.context_hash,
            repair_id=repair_id,
            draft=draft,
            skipped=skipped_reason is not None,
            skipped_reason=skipped_reason,
            started_at=self.started,
            completed_at=self.deps.clock(),
            attached_policy_ids=attached,
        )

    def skip(self, reason: str) -> RepairResult:
        logger.info("repair skipped for %s (%s): %s", self.inp.context_hash, self.inp.trigger, reason)
        self.emit(RepairSkipped(context_hash=self.inp.context_hash, trigger=self.inp.trigger, reason=reason))
        return self.result(skipped_reason=reason)

    def in_cooldown(self, ex: Executor) -> bool:
        cooldown = self.deps.config.cooldown_ms
        if cooldown <= 0:
            return False
        newest = newest_in_family(ex, self.inp.context_hash, cooldown_family(self.inp.trigger))
        # abs(): a repair stamped in the future (the wall clock went back)
        # holds its context for at most cooldown_ms, not until the clock
        # catches up with it.
        return newest is not None and abs(self.deps.clock() - newest) < cooldown


# A user's correction is new information: it must not be held back because
# a failure burst of the same tool just wrote a repair (and a burst after a
# correction is evidence the correction did not help). So the cooldown is
# kept per family of triggers: what the tool did, what people said.
_TOOL_TRIGGERS = ("failure-burst",)
_PEOPLE_TRIGGERS = tuple(t for t in TRIGGERS if t not in _TOOL_TRIGGERS)


def cooldown_family(trigger: str) -> tuple[str, ...]:
    """The triggers whose repairs hold ``trigger`` in cooldown."""
    return _TOOL_TRIGGERS if trigger in _TOOL_TRIGGERS else _PEOPLE_TRIGGERS


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _value_gap_too_small(evidence: RepairEvidence, delta: float) -> bool:
    # An empty side counts as an infinite gap (PIPELINE.md §6.4).
    if not evidence.high or not evidence.low:
        return False
    gap = abs(_mean([t.value for t in evidence.high]) - _mean([t.value for t in evidence.low]))
    return gap < delta


def _candidate_policies(ex: Executor, inp: RepairInput, evidence: RepairEvidence) -> dict[str, str]:
    """The active policies learned from the evidence's episodes: id -> boundary, in id order."""
    episodes = {t.episode_id for t in (*evidence.high, *evidence.low) if t.episode_id}
    episodes.update(f.episode_id for f in inp.failures if f.episode_id)
    if inp.episode_id:
        episodes.add(inp.episode_id)
    if not episodes:
        return {}
    return policy_boundaries_with_episodes(ex, episodes, "active")


def _keyword(inp: RepairInput, feedback: ClassifiedFeedback | None) -> str | None:
    if inp.tool_id:
        return inp.tool_id
    if feedback is not None:
        return feedback.prefer or feedback.avoid
    return None


def _about(inp: RepairInput, feedback: ClassifiedFeedback | None) -> str:
    """What a trace must be about, in words, to count as evidence by meaning."""
    parts = [inp.tool_id, inp.context, inp.user_text]
    if feedback is not None:
        parts += [feedback.prefer, feedback.avoid]
    parts += [f.reason for f in inp.failures[:3]]
    return " ".join(p for p in parts if p)


def run_repair(input: RepairInput, deps: RepairDeps) -> RepairResult:
    """Run the guards, synthesize, persist and attach one repair (§6)."""
    if not isinstance(input, RepairInput):
        raise InvalidInputError(f"run_repair takes a RepairInput, got {type(input).__name__}")
    run = _Run(input, deps)
    feedback = _classify(run)
    if local_synthesis(deps):
        return _run_in_one_transaction(run, feedback)

    # The reads before synthesis — cooldown, the session's traces, the
    # candidate policies — share one read transaction (one snapshot, one
    # BEGIN/COMMIT instead of three).
    with deps.store.connection(action="reading repair evidence") as conn:
        read = _read_evidence(conn, run, feedback)
    if isinstance(read, str):
        return run.skip(read)
    evidence, policies = read
    run.emit(
        RepairTriggered(
            context_hash=input.context_hash, trigger=input.trigger, failure_count=len(input.failures)
        )
    )
    outcome = _synthesize(run, feedback, evidence, tuple(policies))
    if outcome.draft is None:
        return run.skip(outcome.skipped_reason or "insufficient-evidence")
    draft = outcome.draft
    # Computed before the write transaction: an embedding can take a while.
    recall_fields = recall_fields_of(input, deps, feedback, evidence, draft)

    with repair_unit(deps.store, deps.events) as unit:
        unit.lock(input.context_hash)
        # Re-checked under the lock: another process may have written a
        # repair for this context while we were synthesizing.
        written = None
        if not run.in_cooldown(unit.conn):
            written = write_repair(unit, input, deps, run.started, draft, recall_fields)
    if written is None:
        return run.skip("cooldown")
    return _persisted(run, draft, written)


def _classify(run: _Run) -> ClassifiedFeedback | None:
    # Classify first: a feedback is announced as classified even when the
    # cooldown then skips it.
    text = run.inp.user_text
    if not (text and text.strip()):
        return None
    # Whether a repair is due was decided when the trigger was queued (by the
    # classifier, its LLM tier, or the caller of run_once): an unsure model
    # abstains there, not here, where the fields are what is asked for. The
    # subscriber's answer travels with the job: the message is classified once.
    feedback = run.inp.classified or classify_feedback(text, agent_text=run.inp.agent_text, abstain=False)
    run.emit(FeedbackClassified(shape=feedback.shape.value, confidence=feedback.confidence))
    return feedback


def _run_in_one_transaction(run: _Run, feedback: ClassifiedFeedback | None) -> RepairResult:
    """``run_repair`` when synthesis is local (no LLM, no embedder): one write transaction.

    Template synthesis takes tens of microseconds, so there is nothing to
    keep out of the write transaction: the guards' reads, synthesis and the
    write run under the context lock, in one snapshot. That saves a
    transaction and the cooldown re-check (nothing can be written for the
    context between this read and this write).
    """
    with repair_unit(run.deps.store, run.deps.events) as unit:
        done = _stage(unit, run, feedback)
    if isinstance(done, str):
        return run.skip(done)
    return _persisted(run, *done)


def _stage(
    unit: RepairUnit, run: _Run, feedback: ClassifiedFeedback | None
) -> str | tuple[DecisionRepairDraft, Written]:
    """The one-transaction work, context lock first: a skip reason, or the draft and what was written."""
    inp = run.inp
    unit.lock(inp.context_hash)
    read = _read_evidence(unit.conn, run, feedback)
    if isinstance(read, str):
        return read
    evidence, policies = read
    # Emitted here, inside the transaction, as on the two-transaction path
    # before the write: the event log then holds it before repair.persisted.
    run.emit(
        RepairTriggered(context_hash=inp.context_hash, trigger=inp.trigger, failure_count=len(inp.failures))
    )
    outcome = _synthesize(run, feedback, evidence, tuple(policies))
    if outcome.draft is None:
        return outcome.skipped_reason or "insufficient-evidence"
    draft = outcome.draft
    recall_fields = recall_fields_of(inp, run.deps, feedback, evidence, draft)
    # The policies' boundaries were read in this transaction: attaching
    # need not read them again (on SQLite; PostgreSQL still locks the rows).
    return draft, write_repair(unit, inp, run.deps, run.started, draft, recall_fields, known=policies)


@dataclass(frozen=True, slots=True)
class StagedRepair:
    """A repair run in a caller's still-open transaction (``stage_repair``)."""

    # Why it was skipped (nothing was written), or None: it was written.
    skipped_reason: str | None
    # Call once, after the commit: emits the after-commit events, returns the result.
    finish: Callable[[], RepairResult]


def local_synthesis(deps: RepairDeps) -> bool:
    """True when ``run_repair`` synthesizes locally (no LLM call, no embedder): one transaction."""
    return deps.embedder is None and not (deps.config.use_llm and deps.llm is not None)


def stage_repair(unit: RepairUnit, input: RepairInput, deps: RepairDeps) -> StagedRepair:
    """``run_repair``'s one-transaction path inside the caller's ``RepairUnit``.

    For a caller that commits several repairs together (the worker's group
    commit, ``repair_unit(..., group=True)``, each repair in a
    ``unit.savepoint()``): everything ``run_repair`` would write is written
    in the unit's transaction (with ``deps.finalize``; the event-log rows
    through the unit's writer), and the result's ``finish``, called once
    that transaction has committed, emits the after-commit events and
    returns the ``RepairResult``. If the transaction fails instead, the
    unit hands back what it owed. Only for local synthesis
    (``local_synthesis(deps)``): an LLM call must not run inside a write
    transaction.
    """
    if not isinstance(input, RepairInput):
        raise InvalidInputError(f"run_repair takes a RepairInput, got {type(input).__name__}")
    if not local_synthesis(deps):
        raise InvalidInputError("stage_repair needs local synthesis (no LLM, no embedder)")
    run = _Run(input, deps)
    feedback = _classify(run)
    done = _stage(unit, run, feedback)
    if isinstance(done, str):
        reason = done
        return StagedRepair(skipped_reason=reason, finish=lambda: run.skip(reason))
    written = done
    return StagedRepair(skipped_reason=None, finish=lambda: _persisted(run, *written))


def _synthesize(
    run: _Run, feedback: ClassifiedFeedback | None, evidence: RepairEvidence, policy_ids: tuple[str, ...]
) -> SynthesisOutcome:
    inp, deps, cfg = run.inp, run.deps, run.deps.config
    return synthesize_draft(
        context_hash=inp.context_hash,
        trigger=inp.trigger,
        tool_id=inp.tool_id,
        evidence=evidence,
        feedback=feedback,
        config=cfg,
        llm=deps.llm if cfg.use_llm else None,
        attach_to_policy_ids=policy_ids,
        raise_transient=deps.raise_transient,
        context=inp.context,
        remarks=run.remarks,
    )


def _read_evidence(
    conn: Connection, run: _Run, feedback: ClassifiedFeedback | None
) -> str | tuple[RepairEvidence, dict[str, str]]:
    """The guards that read, in order: a skip reason, or the evidence and policies (id -> boundary)."""
    inp, cfg = run.inp, run.deps.config
    if run.in_cooldown(conn):
        return "cooldown"
    if feedback is not None and not feedback.shape.triggers_repair:
        return "feedback-not-actionable"
    if not inp.session_id:
        return "no-session"
    traces = transaction_traces(conn, inp.session_id, evidence_window(None, cfg))
    embedder = check_embedder(run.deps.embedder)
    evidence = split_evidence(
        traces,
        _keyword(inp, feedback),
        None,
        cfg,
        session_id=inp.session_id,
        embedder=embedder,
        # Only an embedder reads it (the meaning a trace is compared with).
        about=None if embedder is None else _about(inp, feedback),
        similarity=run.deps.recall.evidence_similarity,
    )
    if feedback is None and _value_gap_too_small(evidence, cfg.value_delta):
        return "value-delta-low"
    if not (inp.user_text and inp.user_text.strip()):
        run.remarks = user_remarks(traces, inp.episode_id)
    return evidence, _candidate_policies(conn, inp, evidence)


def _persisted(run: _Run, draft: DecisionRepairDraft, written: Written) -> RepairResult:
    repair_id, attached, events = written
    for event in events:
        run.emit(event)
    logger.info("repair %s persisted for %s (%s)", repair_id, run.inp.context_hash, run.inp.trigger)
    return run.result(repair_id=repair_id, draft=draft, attached=attached)
