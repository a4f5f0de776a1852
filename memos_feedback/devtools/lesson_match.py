"""Whether a lesson line names the object a reference names, one side at a time.

``eval lessons`` compares each written line with the case's reference
(``expected.prefer_object`` / ``avoid_object``). A whole-line comparison
rewards copying the user's sentence and punishes a good line in other
words, so the comparison is of *objects*: the share of the reference
object's tokens that the line's body contains (``object_overlap``). Tokens
are code-aware — ``--forcerun``, ``numpy>=2.0`` and ``/shared/models/`` stay
one token each, quotes and back-ticks are ignored — and Chinese text counts
by its character pairs, as most Chinese words are two characters. A side
matches at ``MATCH_SHARE`` of the reference's tokens.

``error_alone`` is the other half of the reader's first complaint: an
``Avoid:`` whose object is an error message (what happened) instead of an
action (what not to do).
"""

from __future__ import annotations

import re
from typing import Final

from ..text.lessons import lesson_body

__all__ = ["MATCH_SHARE", "error_alone", "object_overlap", "object_tokens"]

# Two thirds of a short object ("adb logcat -d": 2 of 3 tokens) or most of a long one.
MATCH_SHARE: Final = 0.6

_QUOTES = str.maketrans({q: " " for q in "`\"'“”‘’「」"})
_CODE = re.compile(r"[A-Za-z0-9_\-./=:@+<>~$*]+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_EDGE = ".:,;"
# What a tool prints to say it failed, at the very start of an object: an
# exception class, a level or error word and a colon, a Rust/TS error code.
_ERROR_START = re.compile(
    r"^(?:[A-Za-z_][\w.]*(?:Error|Exception)\b|(?:error|fatal|panic|err!?|e)\s*(?:\[[^\]]{1,12}\])?\s*:"
    r"|ERROR\b|FATAL\b|FAILED\b|Traceback\b|npm ERR!|[A-Z]{1,4}\d{3,5}\s*:)",
    re.IGNORECASE,
)


def object_tokens(text: str) -> frozenset[str]:
    """The comparable tokens of ``text``: code-like words case-folded, Chinese character pairs."""
    flat = text.translate(_QUOTES).casefold()
    tokens = {t.strip(_EDGE) for t in _CODE.findall(flat)}
    for run in _CJK.findall(flat):
        if len(run) == 1:
            tokens.add(run)
        tokens.update(run[i : i + 2] for i in range(len(run) - 1))
    tokens.discard("")
    return frozenset(tokens)


def object_overlap(reference: str, line: str) -> float | None:
    """The share of ``reference``'s tokens in ``line``'s body (None: the reference has no token)."""
    wanted = object_tokens(reference)
    if not wanted:
        return None
    have = object_tokens(lesson_body(line))
    return len(wanted & have) / len(wanted)


def error_alone(line: str) -> bool:
    """Whether the line's object is an error message rather than an action."""
    body = lesson_body(line)
    return bool(body) and _ERROR_START.match(body) is not None
