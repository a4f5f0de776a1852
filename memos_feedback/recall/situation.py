"""The situation a served lesson applies to, in a few words, in front of it.

A recalled lesson can be a near miss: the same tool and file, another
problem. Recall cannot always tell (ALGORITHMS.md, "Recall"), but the agent
reading the block can, if each lesson says when it applies::

    When `pnpm build` fails with ERR_PNPM_NO_SCRIPT: Prefer: …
    当 `pnpm build` 报 ERR_PNPM_NO_SCRIPT 时：…

``situation_of(tool_id, context, source_text)`` reads the parts from what
the repair row already holds: the action is the call its context names
(``call_of``: ``Bash command=pnpm build`` is ``pnpm build``), else its tool;
the error is the first ``error:`` line of its search text (the failure
reasons it was written from, ``indexing.build_source_text``) as an error
code or exception class when it names one, else its first message line,
short; a repair without failure reasons takes an error code or class named
in its trace line, never a trace's prose. ``Situation.clause(chinese=…,
cap=…)`` writes the clause in the lesson's language, at most ``cap``
characters, cut at a word and never inside the back-ticks it puts around
the action; ``""`` when nothing is known or nothing fits.

Both parts are untrusted text: each is sanitised on its own
(``sanitize_line``: one line, no markup, no back-ticks, secrets redacted)
before the clause's own back-ticks are put around the action, and a part
that reads as an instruction to the model ("ignore previous instructions")
is dropped, so a clause only ever names a call and an error.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ..synthesis.failure import error_signature
from ..text.failures import failure_message
from ..text.sanitize import ELLIPSIS, sanitize_line
from ..text.tool_context import call_of
from .terms import error_identifiers

__all__ = ["SITUATION_CAP", "Situation", "situation_of"]

# A clause longer than this is no longer "a few words" in front of a lesson.
SITUATION_CAP = 80
# Each part's own cap, before the clause is fitted (where it is cut at a word).
_ACTION_CAP = 4 * SITUATION_CAP
_MESSAGE_CAP = 40
# A part cut shorter than this names nothing: the clause goes without it.
_MIN_KEPT = 3
# Where a long token may be cut when it has no space to cut at.
_TOKEN_MARKS = ("/", "-", "_", ".", ":")
_ERROR_PREFIX = "error: "
_TRACE_PREFIX = "trace: "
# "Exit code 1" says only that it failed, which the clause already says.
_EXIT_ONLY = re.compile(r"^(?:exit(?:ed)?\s+(?:with\s+)?(?:code|status)\s*-?\d+|failed)\W*$", re.IGNORECASE)
# A message's own label ("error: ", "fatal: ", "npm ERR! "): the clause says it failed.
_LABEL = re.compile(r"^(?:(?:error|fatal|failed|failure|npm\s+err!)\s*:?\s+)+", re.IGNORECASE)
# An errno-style code, which ``error_identifiers`` leaves to the gate's
# words: ENOENT, EACCES, ERESOLVE, ECONNREFUSED.
_ERRNO = re.compile(r"(?<![\w.-])E[A-Z]{3,15}(?![\w.-])")
# Capitalised words of a log that have that shape and name no error.
_NOT_ERRNO = frozenset(
    [
        "ERROR",
        "ERRORS",
        "EXIT",
        "EXITED",
        "EXCEPTION",
        "EXPECTED",
        "EVENT",
        "EVENTS",
        "ENTRY",
        "EMPTY",
        "ENABLE",
        "ENABLED",
        "ENDPOINT",
        "ENGINE",
        "ENVIRONMENT",
        "EXAMPLE",
        "EXECUTE",
        "EXPORT",
        "EXTRA",
        "ELSE",
        "EVERY",
        "EDIT",
        "EMAIL",
        "ENTER",
    ]
)
# Text that speaks to the model rather than naming a call or an error.
_INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass)\b[^.;]{0,40}?"
    r"\b(?:instructions?|prompts?|rules?|guidelines?|above|previous|prior|earlier)\b"
    r"|\byou\s+(?:are|must|should|will)\b|\b(?:system|developer)\s+(?:prompt|message)\b"
    r"|\bact\s+as\b|\bnew\s+instructions?\b"
    r"|(?:忽略|无视|忘记|忘掉)[^。；]{0,20}(?:指令|指示|提示|规则|说明)|你(?:现在)?(?:是|必须|应该)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Situation:
    """What a repair was written from: the call, the error it failed with, and whether it failed.

    ``action`` and ``error`` are sanitised, without back-ticks, or None.
    """

    action: str | None = None
    error: str | None = None
    failed: bool = False

    def __bool__(self) -> bool:
        return bool(self.action or self.error)

    def clause(self, *, chinese: bool, cap: int = SITUATION_CAP) -> str:
        """``When `<action>` fails with <error>:`` (or its Chinese form), at most ``cap`` characters.

        Too long, the action is cut at a word first (the error is what
        tells a near miss apart), then the error goes, then the action;
        ``""`` when nothing is known or nothing fits.
        """
        if not self or cap < 1:
            return ""
        forms: list[tuple[str | None, str | None]] = [(self.action, self.error)]
        if self.action and self.error:
            forms += [(self.action, None), (None, self.error)]
        for action, error in forms:
            text = _fit(action, error, self.failed, chinese, min(cap, SITUATION_CAP))
            if text:
                return text
        return ""


def _fit(action: str | None, error: str | None, failed: bool, chinese: bool, cap: int) -> str:
    shown = _shown_error(error, chinese) if error else None
    frame = len(_form(" " if action else None, shown, failed or bool(error), chinese))
    if frame > cap:
        return ""
    if action is None:
        return _form(None, shown, True, chinese)
    # Two back-ticks are in the frame already (the form of a one-character action).
    room = cap - frame + 1
    cut = _cut(action, room)
    if cut is None:
        return ""
    return _form(cut, shown, failed or bool(error), chinese)


def _form(action: str | None, error: str | None, failed: bool, chinese: bool) -> str:
    call = f"`{action}`" if action else None
    if chinese:
        if call and error:
            return f"当 {call} 报 {error} 时："
        if call:
            return f"当 {call} 失败时：" if failed else f"使用 {call} 时："
        return f"遇到 {error} 时："
    if call and error:
        return f"When {call} fails with {error}:"
    if call:
        return f"When {call} fails:" if failed else f"When using {call}:"
    return f"On {error}:"


def _shown_error(error: str, chinese: bool) -> str:
    if _error_name(error) == error:
        return error  # a code or a class name reads as itself
    return f"“{error}”" if chinese else f'"{error}"'


def _cut(text: str, cap: int) -> str | None:
    """``text`` in at most ``cap`` characters, cut after a word with ``…``; None when no word fits.

    At the last space, else at the last separator inside one long token
    (``/``, ``-``, ``_``, ``.``, ``:``), never inside a word.
    """
    if len(text) <= cap:
        return text
    room = cap - 1  # the ellipsis takes one
    at = room if text[room] == " " else text.rfind(" ", 0, room)
    if at <= 0:
        at = max(text.rfind(mark, 0, room) + 1 for mark in _TOKEN_MARKS)
    head = text[:at].rstrip(" ,;:")
    return head + ELLIPSIS if len(head) >= _MIN_KEPT else None


def situation_of(tool_id: str | None, context: str | None, source_text: str | None) -> Situation:
    """The situation of a repair from its stored columns (module docstring); empty when none is known."""
    return _situation(tool_id or None, context or None, source_text or "")


@functools.lru_cache(maxsize=2_048)
def _situation(tool_id: str | None, context: str | None, source_text: str) -> Situation:
    reasons = [ln[len(_ERROR_PREFIX) :] for ln in source_text.splitlines() if ln.startswith(_ERROR_PREFIX)]
    trace = next(
        (ln[len(_TRACE_PREFIX) :] for ln in source_text.splitlines() if ln.startswith(_TRACE_PREFIX)), ""
    )
    action = _action(tool_id, context)
    if reasons:
        error = next((e for e in (_error(r, action) for r in reasons) if e), None)
    else:
        error = _error_name(trace)
    return Situation(action, error, failed=bool(reasons))


def _action(tool_id: str | None, context: str | None) -> str | None:
    raw = call_of(tool_id, context.strip()) if context and context.strip() else (tool_id or "")
    return _part(raw, _ACTION_CAP)


def _error(reason: str, action: str | None) -> str | None:
    """An error code or class the reason names, else its first message line, short.

    The line loses what only repeats that it failed: a label ("error: ")
    and the program's own name in front ("cat: " after `cat foo.txt`).
    """
    message = failure_message(reason)
    named = _error_name(message)
    if named is not None:
        return named
    signature = error_signature(message)
    if not signature:
        return None
    signature = _LABEL.sub("", signature).replace('"', "").strip()
    program = action.split(" ", 1)[0] if action else ""
    if program and signature.casefold().startswith(program.casefold() + ": "):
        signature = signature[len(program) + 2 :].strip()
    if not signature or _EXIT_ONLY.match(signature):
        return None
    part = _part(signature, 2 * _MESSAGE_CAP)
    return _cut(part, _MESSAGE_CAP) if part else None


def _error_name(text: str) -> str | None:
    """The first error code or exception class ``text`` names, or None.

    A word of a stored, sanitised line, made of name characters only:
    nothing to sanitise again (most of a clause's cost when it is done).
    """
    named = [n for n in error_identifiers(text) if len(n) <= _MESSAGE_CAP]
    errno = next((m for m in _ERRNO.finditer(text) if m.group(0) not in _NOT_ERRNO), None)
    if errno is not None and (not named or errno.start() < text.find(named[0])):
        return errno.group(0)
    return named[0] if named else None


def _part(text: str, cap: int) -> str | None:
    """``text`` sanitised to one line without back-ticks; None when empty or when it speaks to the model."""
    clean = sanitize_line(text, cap).replace("`", "")
    if not clean or _INSTRUCTION.search(clean):
        return None
    return clean
