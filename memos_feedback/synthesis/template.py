"""The template lessons: two lines from the evidence, saying only what it supports.

Every line names an *object* — a command, a call, an option, an approach —
never an error message alone. Each side takes the first of these that gives
a line passing the lesson check (``text.lessons.lesson_problems``):

``Prefer:``

* the host's ``prefer`` field when it is the host's own words (not a span
  of the message, which is what the classifier's fields are): the host
  knows better than a clause read from the text;
* **the user's prescription** — the clause that prescribes (``Prefer:`` /
  ``Always:``), found by ``clauses.instruction_lines`` in the message, or
  in the user's words beside a trigger that had none (``remarks``: what the
  user said in the session of a failure burst, handed in by the repair
  engine); a field that is a span of the message picks its clause; then
  the classifier's corrected value and constraint;
* **a success** among the high-value traces — the action that worked, as an
  action (the agent's text before its reflection; the reflection may follow
  as the reason);
* the same tool run again without failing, or the tool's own concrete hint.

A prescription that only repeats the failed action is no lesson (a task
request beside a burst, "pip install cryptography", is not a preference).

``Avoid:``

* the host's ``avoid`` field, as for ``prefer``;
* **the user's prohibition** (``Never:`` / ``Avoid:``), or the "instead of
  X" of a prescription;
* **the failed action** — the command of the failed trace (a ``$ cmd`` line
  whose output failed), else the call's context (its arguments: ``Bash
  command=cat x`` is the call ``cat x``), else the tool — with the error's
  first meaningful line as the reason: ``Avoid: pip install cryptography —
  failed with: …``. Written with a user message too when the message
  forbids nothing, unless the prescription itself runs that action.

A side with none of these stays empty: no placeholder is written. With
both sides empty there is no lesson (``None``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..text.lessons import INSTANCE_OPEN, LESSON_CAP, has_cjk, lesson_body, lesson_problems
from ..text.sanitize import sanitize_line
from ..text.tool_context import call_of
from ..types import RepairEvidence, TraceRow
from .clauses import fit_line, instruction_lines, is_concrete, split_sentences
from .failure import failed_command, failure_line, hint_line, repeats, retry_line
from .prompts import FeedbackSignal

__all__ = ["clause_hints", "lesson_source", "template_lines"]

_EXCERPT_CHARS = 1_000
# Something only a call has: an option, a path, an assignment, a dotted or snake name.
# A name in a call or a rule: a program, a flag, a file (3+ characters, "-" "." "_" "/" inside).
_NAME = re.compile(r"[a-z0-9][a-z0-9_./-]*[a-z0-9]")
_PLAIN_VERBS = frozenset({"run", "the", "and", "for", "with", "sudo"})
_CALL_LIKE = re.compile(r"[=/\\`$@:]|(?:^|\s)-|\w[._-]\w")
# A call's context of one argument, "command=cat x.txt": its value is the call.
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
    remarks: Sequence[str] = (),
) -> tuple[str, str] | None:
    """``(preference, anti_pattern)``, either possibly ``""``; None when neither has a line.

    ``remarks``: the user's words beside a trigger without a message of its
    own (a failure burst), newest first; read as the message is.
    """
    words = [r for r in remarks if r.strip()]
    source = lesson_source(feedback, context if not words else words[0])
    prefer, avoid = _from_user(feedback, source)
    for remark in words:
        if prefer is not None and avoid is not None:
            break
        r_prefer, r_avoid = instruction_lines(remark)
        prefer = prefer or (r_prefer.line if r_prefer is not None else None)
        avoid = avoid or (r_avoid.line if r_avoid is not None else None)
    worst = min(evidence.low, key=lambda t: t.value, default=None)
    action = _failed_action(worst, tool_id, context) if worst is not None else None
    if prefer is not None and action and repeats(lesson_body(prefer), action):
        prefer = None  # "Prefer: <what failed>" is the task, not a lesson
    if prefer is None:
        prefer = _success_line(evidence.high, source)
    if avoid is None and worst is not None:
        avoid = _avoid_failed(worst, action, prefer, source)
    elif avoid is not None and worst is not None:
        avoid = _with_instance(avoid, action, prefer)
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


def _avoid_failed(worst: TraceRow, action: str | None, prefer: str | None, source: str) -> str | None:
    """``Avoid: <the failed call> — failed with: <its error>``: the call is the object, the error the reason.

    None when the prescription runs that very call ("run X with --flag"), or
    when the failure left neither text nor a failed call: nothing to quote.
    """
    if prefer and action and _runs(lesson_body(prefer), action):
        return None
    text = _failure_text(worst)
    if not (text.strip() or _failed_tool(worst)):
        return None
    return failure_line(action, text, chinese=has_cjk(source), source=source or None)


def _with_instance(avoid: str, action: str | None, prefer: str | None) -> str:
    """The user's prohibition, and the failed call it was said about when the line does not quote it.

    "Never: run whatever clang-format is on the PATH (as in `clang-format -i
    src/*.c`)": the rule in the user's words, the instance in the agent's —
    the call is what the agent will be about to run again. Not when the
    prescription runs that call itself, not for a bare tool name, and only
    when both fit one lesson line.
    """
    if not action or not _CALL_LIKE.search(action) or repeats(action, lesson_body(avoid)):
        return avoid
    if not _shares_a_name(lesson_body(avoid), action) or (prefer and _runs(lesson_body(prefer), action)):
        return avoid
    body = avoid.rstrip(" .。")
    opening, closing = INSTANCE_OPEN["zh" if has_cjk(body) else "en"]
    tail = f"{opening}{action}{closing}"
    return body + tail if len(body) + len(tail) <= LESSON_CAP else avoid


def _shares_a_name(rule: str, action: str) -> bool:
    """Whether the rule names something the call names (its program, a flag, a file): it is about it.

    "don't paper over it with a retry loop" after a failed ``python sync.py``
    forbids an approach, not the call: quoting the call would forbid the task.
    """
    names = {w for w in _NAME.findall(action.casefold()) if w not in _PLAIN_VERBS}
    return any(w in names for w in _NAME.findall(rule.casefold()))


def _runs(prescription: str, action: str) -> bool:
    """Whether ``prescription`` runs ``action`` itself ("run pip install x --no-binary").

    The action must open it (its first word is the prescription's first or
    second, after a verb like "run"), not only be named in it: "uv for
    ctx-03" names the failed call's context without running it, so the
    failed call is still worth avoiding.
    """
    if not repeats(action, prescription):
        return False
    words = [w.strip("`'\"“”‘’") for w in prescription.casefold().split()[:2]]
    first = action.casefold().split(maxsplit=1)
    return bool(first) and first[0].strip("`'\"“”‘’") in words


def _from_user(feedback: FeedbackSignal | None, source: str) -> tuple[str | None, str | None]:
    if feedback is None:
        return None, None
    text = getattr(feedback, "text", "")
    text = text if isinstance(text, str) else ""
    # The host's own words win; a field that is a span of the message (the
    # classifier's) only picks the clause it comes from.
    prefer = _host_field("Prefer: ", feedback.prefer, text, source)
    avoid = _host_field("Avoid: ", feedback.avoid, text, source)
    prefer_i, avoid_i = (
        instruction_lines(text, *clause_hints(feedback, text)) if text.strip() else (None, None)
    )
    if prefer is None and prefer_i is not None:
        prefer = prefer_i.line
    if avoid is None and avoid_i is not None:
        avoid = avoid_i.line
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


def clause_hints(feedback: FeedbackSignal, text: str) -> tuple[str | None, str | None]:
    """The classifier's spans that hint each side's clause (``prefer``, ``avoid``): a feature of the score.

    ``clause_train`` fits the score with these very hints, so training and the
    template read a message alike.
    """
    prefer = _span_of(feedback.prefer, text) or feedback.correction or feedback.constraint
    return prefer, _span_of(feedback.avoid, text)


def _span_of(value: str | None, text: str) -> str | None:
    """``value`` when it is a span of ``text`` (case and spacing aside), else None."""
    if not value or not value.strip():
        return None
    return value if _squash(value) in _squash(text) else None


def _squash(text: str) -> str:
    return " ".join(text.casefold().split())


def _host_field(label: str, value: str | None, text: str, source: str) -> str | None:
    """The field's own line when the host wrote it (it is no span of the message)."""
    if not value or not value.strip() or _span_of(value, text) is not None:
        return None
    return _field_line(label, value, source)


def _forbids(text: str | None) -> bool:
    return bool(text) and instruction_lines(text or "")[1] is not None


def _field_line(label: str, value: str | None, source: str) -> str | None:
    if not value:
        return None
    line = fit_line(label, sanitize_line(value, LESSON_CAP))
    return line if line is not None and not lesson_problems(line, source or None) else None


def _success_line(traces: tuple[TraceRow, ...], source: str) -> str | None:
    """``Prefer: <the action that worked>`` (— <the reflection, as the reason>)."""
    best = max(traces, key=lambda t: t.value, default=None)
    if best is None:
        return None
    found = [(_first_sentence(text), n) for n, text in enumerate((best.agent_text, best.reflection))]
    # The agent's text says what it did, the reflection why: a concrete action first.
    found.sort(key=lambda item: (not is_concrete(item[0]), item[1]))
    for sentence, n in found:
        action = _as_action(sentence)
        if not action:
            continue
        reason = found[1][0] if n == 0 and len(found) > 1 else ""
        for body in (f"{action} — {reason}" if reason and reason != sentence else "", action):
            line = fit_line("Prefer: ", body) if body and len(body) <= LESSON_CAP - 8 else None
            if line is not None and not lesson_problems(line, source or None):
                return line
    return None


def _first_sentence(text: str | None) -> str:
    return next(iter(split_sentences(sanitize_line((text or "")[:_EXCERPT_CHARS]))), "")


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


def _failed_action(trace: TraceRow, tool_id: str | None, context: str | None) -> str | None:
    """What was done that failed: the trace's failing command, else the call's arguments, else the tool."""
    command = failed_command(_failure_text(trace))
    if command:
        return command
    tool = _failed_tool(trace) or tool_id
    plain = (context or "").strip()
    call = call_of(tool, plain) if plain else ""
    # A context in plain words ("api integration tests") names the task, not
    # the call: avoiding it would tell the agent to stop doing its work.
    return call if call and (call != plain or _CALL_LIKE.search(call)) else tool


def _failure_text(trace: TraceRow) -> str:
    parts = [p for p in (trace.agent_text, trace.reflection) if p]
    return "\n".join(parts)


def _final(line: str | None, source: str) -> str:
    if not line:
        return ""
    clean = sanitize_line(line, LESSON_CAP * 2)
    return clean if clean and not lesson_problems(clean, source or None) else ""
