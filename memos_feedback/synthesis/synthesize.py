"""``synthesize_draft``: turn evidence (and the user's words) into one repair draft.

Two ways to write the two lines, tried in order:

1. **LLM** (``config.use_llm`` and a client given): the ``decision.repair.v1``
   prompt; the reply is checked field by field and both lines are
   sanitised. Any failure — transport, refusal, malformed reply, a line
   that is empty once sanitised, even an unexpected exception from the
   client — falls back to the template, with the reason kept in
   ``llm_error``. Only with ``raise_transient=True`` does an
   ``LLMTransientError`` propagate, so the durable queue can retry the job
   later; its last attempt calls again with ``raise_transient=False``.
2. **Template**: lines built from the user's words first, the evidence
   second. A side with neither gets a generic line, but a draft made only of
   generic lines is never written (``insufficient-evidence``, or
   ``llm-failed`` when the LLM was tried): a repair must be grounded.

Without any trace on either side nothing is written either, even when the
user said what to prefer: the spec's first rule ("no evidence on either
side: skip") comes before everything else, and a repair row with no trace
ids could not be audited later.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..config import FeedbackConfig
from ..errors import InvalidInputError, LLMError, LLMTransientError
from ..text.logs import library_logger
from ..text.sanitize import DEFAULT_CAP, SCAN_LIMIT, check_text, sanitize_line
from ..types import REPAIR_SHAPE_VALUES, SEVERITIES, DecisionRepairDraft, Severity, ToolCall, TraceRow
from .evidence import RepairEvidence
from .llm import RepairLLM
from .prompts import REPAIR_SCHEMA_NAME, FeedbackSignal, build_repair_messages, check_feedback, feedback_shape

__all__ = [
    "SKIP_INSUFFICIENT_EVIDENCE",
    "SKIP_LLM_FAILED",
    "SynthesisOutcome",
    "synthesize_draft",
]

logger = library_logger("memos_feedback.synthesize")

SKIP_INSUFFICIENT_EVIDENCE = "insufficient-evidence"
SKIP_LLM_FAILED = "llm-failed"

# Shapes that say the previous step was wrong: the repair is a warning.
_WARN_SHAPES = frozenset({"negative", "correction"})
_CONFIDENCE_BOTH_SIDES = 0.6
_CONFIDENCE_ONE_SIDE = 0.4
# Raw text taken from a trace before sanitising; long enough for one line.
_EXCERPT_CHARS = 1_000
_ERROR_CAP = 200


@dataclass(frozen=True, slots=True)
class SynthesisOutcome:
    """A draft, or why there is none.

    ``source`` is ``"llm"`` or ``"template"`` for a draft, None for a skip.
    ``llm_error`` is a short reason when the LLM path was tried and failed
    (also set when the template then succeeded).
    """

    draft: DecisionRepairDraft | None
    skipped_reason: str | None = None
    source: str | None = None
    llm_error: str | None = None

    @property
    def skipped(self) -> bool:
        return self.draft is None


class _RejectedReply(Exception):
    """The LLM's reply failed validation; the message is the short reason."""


def synthesize_draft(
    *,
    context_hash: str,
    trigger: str,
    tool_id: str | None,
    evidence: RepairEvidence,
    feedback: FeedbackSignal | None = None,
    config: FeedbackConfig,
    llm: RepairLLM | None = None,
    attach_to_policy_ids: Iterable[str] = (),
    raise_transient: bool = False,
) -> SynthesisOutcome:
    """Write a ``DecisionRepairDraft`` or say why not (see the module docstring)."""
    policy_ids = _check_inputs(context_hash, trigger, tool_id, evidence, config, attach_to_policy_ids)
    check_feedback(feedback)
    if llm is not None and not isinstance(llm, RepairLLM):
        raise InvalidInputError(f"llm must have complete_json (RepairLLM), got {type(llm).__name__}")
    if not isinstance(raise_transient, bool):
        raise InvalidInputError(f"raise_transient must be a bool, got {type(raise_transient).__name__}")
    if evidence.empty:
        logger.info("no repair for %s: no evidence on either side", context_hash)
        return SynthesisOutcome(draft=None, skipped_reason=SKIP_INSUFFICIENT_EVIDENCE)

    high_ids, low_ids = evidence.trace_ids()
    base = DecisionRepairDraft(
        context_hash=context_hash,
        preference="",
        anti_pattern="",
        severity="info",
        confidence=0.0,
        high_value_trace_ids=high_ids,
        low_value_trace_ids=low_ids,
        attach_to_policy_ids=policy_ids,
    )

    llm_error: str | None = None
    if config.use_llm and llm is not None:
        try:
            draft = _llm_draft(base, trigger, tool_id, evidence, feedback, config, llm)
        except LLMTransientError as exc:
            if raise_transient:
                logger.info("LLM transient failure for %s, leaving it to the queue: %s", context_hash, exc)
                raise
            llm_error = _short_reason(exc)
        except _RejectedReply as exc:
            llm_error = f"invalid reply: {exc}"
        except LLMError as exc:
            llm_error = _short_reason(exc)
        except Exception as exc:
            # A third-party client may raise anything; a repair must not crash on it.
            logger.warning("LLM client raised %s for %s", type(exc).__name__, context_hash, exc_info=True)
            llm_error = _short_reason(exc)
        else:
            logger.info("repair drafted by LLM for %s", context_hash)
            return SynthesisOutcome(draft=draft, source="llm")
        logger.warning("LLM synthesis failed for %s, using the template: %s", context_hash, llm_error)

    draft_or_none = _template_draft(base, tool_id, evidence, feedback)
    if draft_or_none is None:
        reason = SKIP_LLM_FAILED if llm_error is not None else SKIP_INSUFFICIENT_EVIDENCE
        logger.info("no repair for %s: %s (no grounded text on either side)", context_hash, reason)
        return SynthesisOutcome(draft=None, skipped_reason=reason, llm_error=llm_error)
    logger.info("repair drafted from the template for %s", context_hash)
    return SynthesisOutcome(draft=draft_or_none, source="template", llm_error=llm_error)


# -- LLM path -----------------------------------------------------------------


def _llm_draft(
    base: DecisionRepairDraft,
    trigger: str,
    tool_id: str | None,
    evidence: RepairEvidence,
    feedback: FeedbackSignal | None,
    config: FeedbackConfig,
    llm: RepairLLM,
) -> DecisionRepairDraft:
    messages = build_repair_messages(
        trigger=trigger, tool_id=tool_id, evidence=evidence, feedback=feedback, config=config
    )
    reply = llm.complete_json(messages, REPAIR_SCHEMA_NAME)
    preference, anti_pattern, severity, confidence = _validate_reply(reply)
    return _replace(base, preference, anti_pattern, severity, confidence)


def _validate_reply(reply: object) -> tuple[str, str, Severity, float]:
    """Check the reply against the contract; return sanitised, clamped values."""
    if not isinstance(reply, dict):
        raise _RejectedReply(f"not a JSON object ({type(reply).__name__})")
    lines: list[str] = []
    for key in ("preference", "anti_pattern"):
        value = reply.get(key)
        if not isinstance(value, str) or not value.strip():
            raise _RejectedReply(f"{key} must be a non-empty string")
        line = sanitize_line(value)
        if not line:
            raise _RejectedReply(f"{key} is empty once sanitised")
        lines.append(line)
    severity = reply.get("severity")
    if severity not in SEVERITIES:
        raise _RejectedReply("severity must be 'info' or 'warn'")
    confidence = reply.get("confidence")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise _RejectedReply("confidence must be a number")
    # NaN and infinities carry no amount at all (JSON has no such numbers;
    # Python's parser accepts them): rejected, unlike a number that is merely
    # out of range, which the contract (docs/LLM.md) says is clamped.
    if not math.isfinite(confidence):
        raise _RejectedReply("confidence must be finite")
    sev: Severity = "warn" if severity == "warn" else "info"
    return lines[0], lines[1], sev, _clamp(float(confidence))


# -- template path ------------------------------------------------------------


def _template_draft(
    base: DecisionRepairDraft,
    tool_id: str | None,
    evidence: RepairEvidence,
    feedback: FeedbackSignal | None,
) -> DecisionRepairDraft | None:
    preference = _preference_from_feedback(feedback)
    if preference is None:
        preference = _from_trace(_best(evidence.high), "Prefer: ", tail=False)
    anti_pattern = _avoid_from_feedback(feedback)
    if anti_pattern is None:
        anti_pattern = _from_trace(_worst(evidence.low), "Avoid: ", tail=True)
    if preference is None and anti_pattern is None:
        return None  # only generic lines: nothing grounded to say
    subject = _subject(tool_id)
    shape = feedback_shape(feedback)
    warn = bool(evidence.low) or shape in _WARN_SHAPES
    if _actionable(feedback):
        confidence = _clamp(_feedback_confidence(feedback))
    else:
        both = preference is not None and anti_pattern is not None
        confidence = _CONFIDENCE_BOTH_SIDES if both else _CONFIDENCE_ONE_SIDE
    return _replace(
        base,
        preference or sanitize_line(f"Prefer: an approach that succeeded before for {subject}"),
        anti_pattern or sanitize_line(f"Avoid: repeating the approach that failed for {subject}"),
        "warn" if warn else "info",
        confidence,
    )


def _preference_from_feedback(feedback: FeedbackSignal | None) -> str | None:
    if feedback is None:
        return None
    prefer, avoid = _clean(feedback.prefer), _clean(feedback.avoid)
    if prefer:
        return _line(f"Prefer: {prefer} instead of {avoid}" if avoid else f"Prefer: {prefer}")
    correction = _clean(feedback.correction)
    if correction:
        return _line(f"Use the corrected value: {correction}")
    constraint = _clean(feedback.constraint)
    if constraint:
        return _line(f"Always: {constraint}")
    return None


def _avoid_from_feedback(feedback: FeedbackSignal | None) -> str | None:
    avoid = _clean(feedback.avoid) if feedback is not None else None
    return _line(f"Avoid: {avoid}") if avoid else None


def _best(traces: tuple[TraceRow, ...]) -> TraceRow | None:
    # Highest value; ``max`` keeps the first (most recent) of equal values.
    return max(traces, key=lambda t: t.value, default=None)


def _worst(traces: tuple[TraceRow, ...]) -> TraceRow | None:
    return min(traces, key=lambda t: t.value, default=None)


def _from_trace(trace: TraceRow | None, prefix: str, *, tail: bool) -> str | None:
    """The trace's reflection, else its agent text, as one prefixed line.

    For a failure (``tail=True``) the end of the text is kept, since that is
    where the error message is; a failure with no text at all still has
    its failing tool calls and their error codes, which are facts too.
    """
    if trace is None:
        return None
    reflection, agent_text = trace.reflection, trace.agent_text
    if len(agent_text) + len(reflection or "") <= _MEMO_TEXT:
        return _line_from_memo(reflection, agent_text, trace.tool_calls, prefix, tail)
    return _line_from(reflection, agent_text, trace.tool_calls, prefix, tail)


def _line_from(
    reflection: str | None, agent_text: str, tool_calls: tuple[ToolCall, ...], prefix: str, tail: bool
) -> str | None:
    budget = DEFAULT_CAP - len(prefix)
    for text in (reflection, agent_text):
        cleaned = _clean(_excerpt(text or "", tail=tail), cap=SCAN_LIMIT)
        if cleaned:
            if tail and len(cleaned) > budget:
                # The same cut marker as cap_trace uses for a kept tail.
                cleaned = "..." + cleaned[-(budget - 3) :].lstrip()
            return _line(prefix + cleaned)
    if tail:
        failed = [f"{c.name} ({c.error_code})" for c in tool_calls if c.error_code]
        if failed:
            return _line(prefix + "calls that failed before: " + ", ".join(failed[:3]))
    return None


# A pure function of the trace's texts and tool calls, and every repair of
# a session draws its lines from the same few traces: a line is made
# (excerpted, sanitized, prefixed) once per distinct short trace and side.
# Long texts are not kept (memory; the sanitizer does not keep them either).
_MEMO_TEXT = 4_096
_line_from_memo = functools.lru_cache(maxsize=1_024)(_line_from)


def _excerpt(text: str, *, tail: bool) -> str:
    """A bounded piece of raw text: the start of a success, the end of a failure.

    When the tail is cut out of a longer text the first (partial) word is
    dropped, so half a secret token never survives as an unrecognisable
    fragment.
    """
    if len(text) <= _EXCERPT_CHARS:
        return text
    if not tail:
        return text[:_EXCERPT_CHARS]
    piece = text[-_EXCERPT_CHARS:]
    parts = piece.split(None, 1)
    return parts[1] if len(parts) == 2 else ""


def _clean(text: str | None, cap: int = DEFAULT_CAP) -> str | None:
    """Sanitised content (no prefix yet), or None when nothing is left."""
    if not text:
        return None
    return sanitize_line(text, cap) or None


def _line(text: str) -> str | None:
    return sanitize_line(text, DEFAULT_CAP) or None


def _subject(tool_id: str | None) -> str:
    return (sanitize_line(tool_id, 80) if tool_id else "") or "this task"


def _actionable(feedback: FeedbackSignal | None) -> bool:
    if feedback is None:
        return False
    if feedback_shape(feedback) in REPAIR_SHAPE_VALUES:
        return True
    return any((feedback.prefer, feedback.avoid, feedback.correction, feedback.constraint))


def _feedback_confidence(feedback: FeedbackSignal | None) -> float:
    value: Any = getattr(feedback, "confidence", None)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return _CONFIDENCE_ONE_SIDE
    return float(value)


# -- helpers ------------------------------------------------------------------


def _replace(
    base: DecisionRepairDraft, preference: str, anti_pattern: str, severity: Severity, confidence: float
) -> DecisionRepairDraft:
    return DecisionRepairDraft(
        context_hash=base.context_hash,
        preference=preference,
        anti_pattern=anti_pattern,
        severity=severity,
        confidence=confidence,
        high_value_trace_ids=base.high_value_trace_ids,
        low_value_trace_ids=base.low_value_trace_ids,
        attach_to_policy_ids=base.attach_to_policy_ids,
    )


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))


def _short_reason(exc: BaseException) -> str:
    # Error text can echo server bodies; it goes into logs and events, so it
    # is sanitised and kept short like any other untrusted line.
    message = sanitize_line(str(exc), _ERROR_CAP)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _check_inputs(
    context_hash: object,
    trigger: object,
    tool_id: object,
    evidence: object,
    config: object,
    attach_to_policy_ids: object,
) -> tuple[str, ...]:
    if not check_text("context_hash", context_hash).strip():
        raise InvalidInputError("context_hash must be a non-empty str")
    check_text("trigger", trigger)
    if tool_id is not None:
        check_text("tool_id", tool_id)
    if not isinstance(evidence, RepairEvidence):
        raise InvalidInputError(f"evidence must be a RepairEvidence, got {type(evidence).__name__}")
    if not isinstance(config, FeedbackConfig):
        raise InvalidInputError(f"config must be a FeedbackConfig, got {type(config).__name__}")
    if isinstance(attach_to_policy_ids, (str, bytes)) or not isinstance(attach_to_policy_ids, Iterable):
        raise InvalidInputError("attach_to_policy_ids must be a sequence of str")
    ids = tuple(check_text("attach_to_policy_ids item", i) for i in attach_to_policy_ids)
    # A policy named twice is still one policy: first occurrence wins, order kept.
    return tuple(dict.fromkeys(ids))
