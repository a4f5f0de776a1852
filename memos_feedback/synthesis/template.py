"""The template lessons: two lines from the evidence, saying only what it supports.

In order, each side taking the first that gives a line passing the lesson
check (``text.lessons.lesson_problems``):

* **the user's words** — the clause that prescribes (``Prefer:`` /
  ``Always:``) and the one that forbids (``Never:`` / ``Avoid:``), found in
  the message by ``clauses.instruction_lines``; then the classifier's
  extracted fields, as lines of their own;
* **a success** among the high-value traces — ``Prefer:`` the action that
  worked, stated as an action;
* **a failure** among the low-value traces — ``Avoid:`` the tool call
  (without a user message) and the error's first meaningful line. The
  context is not repeated in the line: the repair stores it beside its
  lines, and recall would see every near miss in that situation as alike.

A side with none of these stays empty: no placeholder is written. With
both sides empty there is no lesson (``None``).
"""

from __future__ import annotations

import re

from ..text.lessons import LESSON_CAP, has_cjk, lesson_problems
from ..text.sanitize import sanitize_line
from ..types import RepairEvidence, TraceRow
from .clauses import fit_line, instruction_lines, split_sentences
from .failure import failure_line, hint_line, retry_line
from .prompts import FeedbackSignal

__all__ = ["lesson_source", "template_lines"]

_EXCERPT_CHARS = 1_000
_WORKED = re.compile(
    r"\s+(?:works?|worked|succeeded|succeeds|passed|passes|is fine|was fine|went through|is ok|was ok)\b",
    re.IGNORECASE,
)
_PAST = {
    "ran": "run",
    "used": "use",
    "installed": "install",
    "called": "call",
    "switched": "switch",
    "added": "add",
    "pinned": "pin",
    "set": "set",
    "built": "build",
    "re-ran": "re-run",
    "reran": "rerun",
    "restarted": "restart",
    "upgraded": "upgrade",
    "downgraded": "downgrade",
}


def lesson_source(feedback: FeedbackSignal | None, context: str | None) -> str:
    """The text whose language the lesson follows: the user's message, else the context."""
    text = getattr(feedback, "text", "") if feedback is not None else ""
    if isinstance(text, str) and text.strip():
        return text
    return context or ""


def template_lines(
    tool_id: str | None,
    evidence: RepairEvidence,
    feedback: FeedbackSignal | None,
    context: str | None,
) -> tuple[str, str] | None:
    """``(preference, anti_pattern)``, either possibly ``""``; None when neither has a line."""
    source = lesson_source(feedback, context)
    prefer, avoid = _from_user(feedback, source)
    if prefer is None:
        prefer = _success_line(evidence.high, source)
    if avoid is None:
        worst = min(evidence.low, key=lambda t: t.value, default=None)
        # A failure that left neither text nor a failed call says nothing to quote.
        if worst is not None and (_failure_text(worst).strip() or _failed_tool(worst)):
            # With a user message the lesson is about what they said; the
            # situation is stored beside the lines already, and repeating
            # it in them would make every near miss of it look alike.
            action = None if feedback is not None else (_failed_tool(worst) or tool_id or context)
            text = _failure_text(worst)
            avoid = failure_line(action, text, chinese=has_cjk(source), source=source or None)
    if prefer is None and evidence.low:
        # The trace itself may hold the success: the same tool run again,
        # differently, without failing; else the tool's own concrete hint.
        failed = _failure_text(evidence.low[0])
        done = " ".join(p for p in (_failed_tool(evidence.low[0]) or tool_id, context) if p)
        prefer = retry_line(done, failed, source or None) or hint_line(failed, source or None, avoid)
    lines = [_final(line, source) for line in (prefer, avoid)]
    if not any(lines):
        return None
    return lines[0], lines[1]


def _from_user(feedback: FeedbackSignal | None, source: str) -> tuple[str | None, str | None]:
    if feedback is None:
        return None, None
    text = getattr(feedback, "text", "")
    hint = feedback.prefer or feedback.correction or feedback.constraint or feedback.avoid
    prefer_i, avoid_i = (
        instruction_lines(text, hint) if isinstance(text, str) and text.strip() else (None, None)
    )
    prefer = prefer_i.line if prefer_i is not None else None
    avoid = avoid_i.line if avoid_i is not None else None
    if feedback.constraint:
        # A constraint may forbid ("绝对不能加 NEXT_PUBLIC_"): read it as a clause,
        # so a prohibition never comes out as "Always: don't …".
        c_prefer, c_avoid = instruction_lines(feedback.constraint)
        if avoid is None and c_avoid is not None:
            avoid = c_avoid.line
        if prefer is None and c_prefer is not None:
            prefer = c_prefer.line
    if prefer is None:
        for label, value in (
            ("Prefer: ", feedback.prefer),
            ("Use the corrected value: ", feedback.correction),
            ("Always: ", None if _forbids(feedback.constraint) else feedback.constraint),
        ):
            prefer = _field_line(label, value, source)
            if prefer is not None:
                break
    if avoid is None:
        avoid = _field_line("Avoid: ", feedback.avoid, source)
    return prefer, avoid


def _forbids(text: str | None) -> bool:
    return bool(text) and instruction_lines(text or "")[1] is not None


def _field_line(label: str, value: str | None, source: str) -> str | None:
    if not value:
        return None
    line = fit_line(label, sanitize_line(value, LESSON_CAP))
    return line if line is not None and not lesson_problems(line, source or None) else None


def _success_line(traces: tuple[TraceRow, ...], source: str) -> str | None:
    best = max(traces, key=lambda t: t.value, default=None)
    if best is None:
        return None
    for text in (best.reflection, best.agent_text):
        sentence = next(iter(split_sentences(sanitize_line((text or "")[:_EXCERPT_CHARS]))), "")
        action = _as_action(sentence)
        if action:
            line = fit_line("Prefer: ", action)
            if line is not None and not lesson_problems(line, source or None):
                return line
    return None


def _as_action(sentence: str) -> str:
    """ "Ran pnpm install in web/: 312 packages" → "run pnpm install in web/"."""
    sentence = sentence.split(": ", 1)[0].strip()
    head, *tail = _WORKED.split(sentence, maxsplit=1)
    rest = tail[0].strip() if tail else ""
    sentence = f"{head} {rest}".strip() if re.match(r"(?:for|in|on|with|under)\b", rest) else head.strip()
    first, _, rest = sentence.partition(" ")
    verb = _PAST.get(first.lower())
    return f"{verb} {rest}".strip() if verb else sentence


def _failed_tool(trace: TraceRow) -> str | None:
    return next((c.name for c in trace.tool_calls if c.error_code), None)


def _failure_text(trace: TraceRow) -> str:
    parts = [p for p in (trace.agent_text, trace.reflection) if p]
    return "\n".join(parts)


def _final(line: str | None, source: str) -> str:
    if not line:
        return ""
    clean = sanitize_line(line, LESSON_CAP * 2)
    return clean if clean and not lesson_problems(clean, source or None) else ""
