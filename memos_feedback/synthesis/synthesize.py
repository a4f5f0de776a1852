"""``synthesize_draft``: turn evidence (and the user's words) into one repair draft.

Two ways to write the two lines, tried in order:

1. **LLM** (``config.use_llm`` and a client given): the ``decision.repair.v1``
   prompt; the reply is checked field by field, both lines are sanitised
   and then held to the lesson rules (``text.lessons``) the template keeps
   too. Any failure — transport, refusal, malformed reply, a line that is
   empty once sanitised, a line that breaks a lesson rule, even an
   unexpected exception from the client — falls back to the template, with
   the reason kept in ``llm_error`` (and counted, ``synthesis_counts``).
   One side may be ``""`` (the evidence says nothing about it), not both.
   Only with ``raise_transient=True`` does an
   ``LLMTransientError`` propagate, so the durable queue can retry the job
   later; its last attempt calls again with ``raise_transient=False``.
2. **Template** (``template.py``): the user's prescribing and forbidding
   clauses first, the evidence second (a success: the action that worked;
   a failure: the action and its error's first meaningful line). A side
   with neither stays empty — never a placeholder — and a draft with both
   sides empty is never written (``insufficient-evidence``, or
   ``llm-failed`` when the LLM was tried): a repair must be grounded.

Without any trace on either side nothing is written either, even when the
user said what to prefer: the spec's first rule ("no evidence on either
side: skip") comes before everything else, and a repair row with no trace
ids could not be audited later.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..config import FeedbackConfig
from ..errors import InvalidInputError, LLMError, LLMTransientError
from ..text.lessons import LESSON_CAP, lesson_problems
from ..text.logs import library_logger
from ..text.sanitize import check_text, sanitize_line
from ..types import REPAIR_SHAPE_VALUES, SEVERITIES, DecisionRepairDraft, RepairEvidence, Severity
from .llm import RepairLLM
from .prompts import REPAIR_SCHEMA_NAME, FeedbackSignal, build_repair_messages, check_feedback, feedback_shape
from .template import lesson_source, template_lines

__all__ = [
    "SKIP_INSUFFICIENT_EVIDENCE",
    "SKIP_LLM_FAILED",
    "SynthesisOutcome",
    "synthesis_counts",
    "synthesize_draft",
]

logger = library_logger("memos_feedback.synthesize")

SKIP_INSUFFICIENT_EVIDENCE = "insufficient-evidence"
SKIP_LLM_FAILED = "llm-failed"

# Shapes that say the previous step was wrong: the repair is a warning.
_WARN_SHAPES = frozenset({"negative", "correction"})
_CONFIDENCE_BOTH_SIDES = 0.6
_CONFIDENCE_ONE_SIDE = 0.4
_ERROR_CAP = 200

# How drafts were written since the process started, for metrics: "llm",
# "template", "llm-rejected-lesson" (the reply broke a lesson rule and the
# template was used) and "llm-failed" (any other LLM failure).
_COUNTS: dict[str, int] = {"llm": 0, "template": 0, "llm-rejected-lesson": 0, "llm-failed": 0}
_COUNTS_LOCK = threading.Lock()


def synthesis_counts() -> dict[str, int]:
    """A copy of the draft counters (see ``_COUNTS``)."""
    with _COUNTS_LOCK:
        return dict(_COUNTS)


def _count(name: str) -> None:
    with _COUNTS_LOCK:
        _COUNTS[name] += 1


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


class _RejectedLesson(_RejectedReply):
    """The reply's lines break a lesson rule; the message names the rules."""


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
    context: str | None = None,
    remarks: Sequence[str] = (),
) -> SynthesisOutcome:
    """Write a ``DecisionRepairDraft`` or say why not (see the module docstring).

    ``context`` is the tool's context text: without a user message, the
    language the lesson is written in, and where a retry of the failing
    command is recognised. It is not repeated in the lines (the repair
    stores it beside them).

    ``remarks``: the user's words beside a trigger that carried no message
    (a failure burst), newest first, as the repair engine found them in the
    session; the template reads them as it reads a message.
    """
    policy_ids = _check_inputs(context_hash, trigger, tool_id, evidence, config, attach_to_policy_ids)
    if context is not None:
        check_text("context", context)
    check_feedback(feedback)
    if isinstance(remarks, (str, bytes)) or not isinstance(remarks, Sequence):
        raise InvalidInputError("remarks must be a sequence of str")
    remarks = tuple(check_text("remarks item", r) for r in remarks)
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
            draft = _llm_draft(base, trigger, tool_id, evidence, feedback, config, llm, context)
        except LLMTransientError as exc:
            if raise_transient:
                logger.info("LLM transient failure for %s, leaving it to the queue: %s", context_hash, exc)
                raise
            llm_error = _short_reason(exc)
        except _RejectedLesson as exc:
            llm_error = f"lesson check: {exc}"
            _count("llm-rejected-lesson")
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
            _count("llm")
            return SynthesisOutcome(draft=draft, source="llm")
        if not llm_error.startswith("lesson check"):
            _count("llm-failed")
        logger.warning("LLM synthesis failed for %s, using the template: %s", context_hash, llm_error)

    draft_or_none = _template_draft(base, tool_id, evidence, feedback, context, remarks)
    if draft_or_none is None:
        reason = SKIP_LLM_FAILED if llm_error is not None else SKIP_INSUFFICIENT_EVIDENCE
        logger.info("no repair for %s: %s (no grounded text on either side)", context_hash, reason)
        return SynthesisOutcome(draft=None, skipped_reason=reason, llm_error=llm_error)
    logger.info("repair drafted from the template for %s", context_hash)
    _count("template")
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
    context: str | None,
) -> DecisionRepairDraft:
    messages = build_repair_messages(
        trigger=trigger, tool_id=tool_id, evidence=evidence, feedback=feedback, config=config
    )
    reply = llm.complete_json(messages, REPAIR_SCHEMA_NAME)
    preference, anti_pattern, severity, confidence = _validate_reply(reply)
    # The same rules as the template's lines: a weak model cannot write a
    # worse lesson than the template would.
    source = lesson_source(feedback, context) or None
    broken = sorted({rule for line in (preference, anti_pattern) for rule in lesson_problems(line, source)})
    if broken:
        raise _RejectedLesson(", ".join(broken))
    return _replace(base, preference, anti_pattern, severity, confidence)


def _validate_reply(reply: object) -> tuple[str, str, Severity, float]:
    """Check the reply against the contract; return sanitised, clamped values."""
    if not isinstance(reply, dict):
        raise _RejectedReply(f"not a JSON object ({type(reply).__name__})")
    lines: list[str] = []
    for key in ("preference", "anti_pattern"):
        value = reply.get(key)
        if not isinstance(value, str):
            raise _RejectedReply(f"{key} must be a string")
        # "" is an honest answer for a side the evidence says nothing about;
        # a line that had text and loses all of it to the sanitiser is not.
        line = sanitize_line(value, LESSON_CAP * 2) if value.strip() else ""
        if value.strip() and not line:
            raise _RejectedReply(f"{key} is empty once sanitised")
        lines.append(line)
    if not any(lines):
        raise _RejectedReply("preference and anti_pattern are both empty")
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
    context: str | None,
    remarks: Sequence[str],
) -> DecisionRepairDraft | None:
    lines = template_lines(tool_id, evidence, feedback, context, remarks)
    if lines is None:
        return None  # nothing grounded to say on either side
    preference, anti_pattern = lines
    shape = feedback_shape(feedback)
    warn = bool(evidence.low) or shape in _WARN_SHAPES
    if _actionable(feedback):
        confidence = _clamp(_feedback_confidence(feedback))
    else:
        confidence = _CONFIDENCE_BOTH_SIDES if preference and anti_pattern else _CONFIDENCE_ONE_SIDE
    return _replace(base, preference, anti_pattern, "warn" if warn else "info", confidence)


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
