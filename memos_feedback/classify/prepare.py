"""Step 1 of the classifier: the message as the rules and extraction read it.

``_prepare`` trims a long input to a head and a tail window, blanks pasted
code blocks and log lines (the user's own prose decides) and folds
traditional Chinese and typographic quotes onto one spelling. ``_View``
holds the aligned copies extraction slices, with the clause bounds.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Final, NamedTuple

import regex

from ..errors import InvalidInputError
from . import rules
from .gate import _FRAME_CHECKS, _Keys

# Long inputs are mostly pasted logs; the user's words sit at the start or
# the end. Classifying these two windows bounds the cost whatever the size.
HEAD_WINDOW = 2000
TAIL_WINDOW = 2000

_FENCE = "```"
# Clauses extraction reads at most (head and tail).
_MAX_CLAUSES = 64
# ``rules.CLAUSE_BREAK`` compiled by the standard library, which runs this
# pattern faster than ``regex``: it has no letters, and ``\s`` and ``$`` mean
# the same under ASCII in both (checked against every character in the tests).
_CLAUSE_BREAK: Final = re.compile(rules.CLAUSE_BREAK.pattern, re.ASCII)


@dataclass(frozen=True, slots=True)
class _View:
    """Aligned copies of the message (same length, same offsets), for extraction."""

    prose: str  # original characters, code blanked: extraction slices this
    masked: str  # folded, inline code hidden, mask spans blanked: frames run on this
    keys: _Keys  # of ``masked``, to skip frames that cannot match
    break_starts: tuple[int, ...]  # clause breaks, sorted
    break_ends: tuple[int, ...]

    @classmethod
    def build(cls, prose: str, masked: str, keys: _Keys) -> _View:
        # Clause bounds matter to extraction only, so they are found here.
        breaks = [m.span() for m in _CLAUSE_BREAK.finditer(prose)]
        starts, ends = zip(*breaks, strict=True) if breaks else ((), ())
        return cls(prose, masked, keys, starts, ends)

    def may_match(self, frame: regex.Pattern[str]) -> bool:
        """False when ``frame`` cannot match anywhere in ``masked`` (see ``_FRAME_CHECKS``)."""
        present, lower = self.keys
        for quick, fragments in _FRAME_CHECKS.get(id(frame), ()):
            # A key character, pair or whole word present settles it; else a
            # fragment (a word may also sit inside a longer one).
            if present.isdisjoint(quick):
                for f in fragments:
                    if f in lower:
                        break
                else:
                    return False
        return True

    def clause(self, pos: int) -> tuple[int, int]:
        """Start and end of the clause that contains ``pos`` (binary search)."""
        i = bisect.bisect_right(self.break_ends, pos)
        start = self.break_ends[i - 1] if i > 0 else 0
        j = bisect.bisect_left(self.break_starts, pos)
        end = self.break_starts[j] if j < len(self.break_starts) else len(self.prose)
        return start, max(start, end)

    def clauses(self) -> list[tuple[int, int]]:
        """The non-blank clauses, in order: the first and last ``_MAX_CLAUSES // 2`` of them.

        A value is stated near the start or the end of a message; the bound keeps
        extraction cheap on text made of thousands of tiny clauses ("a, a, a, …").
        """
        bounds = list(zip((0, *self.break_ends), (*self.break_starts, len(self.prose)), strict=True))
        if len(bounds) > _MAX_CLAUSES:
            bounds = bounds[: _MAX_CLAUSES // 2] + bounds[-_MAX_CLAUSES // 2 :]
        return [(a, b) for a, b in bounds if self.prose[a:b].strip()]


def _coerce(text: object) -> str:
    if text is None:
        return ""
    if isinstance(text, str):
        return text
    if isinstance(text, bytes | bytearray):
        return bytes(text).decode("utf-8", errors="replace")
    raise InvalidInputError(f"classify_feedback expects str, bytes or None, got {type(text).__name__}")


def _window(text: str) -> str:
    """Head and tail of a long text, with fences re-balanced across the cut."""
    if len(text) <= HEAD_WINDOW + TAIL_WINDOW:
        return text
    head = text[:HEAD_WINDOW]
    tail_start = len(text) - TAIL_WINDOW
    tail = text[tail_start:]
    # When a cut falls inside a fenced block, close / reopen it so the rest
    # of the block is still read as code.
    if text.count(_FENCE, 0, tail_start) % 2 == 1:
        tail = _FENCE + tail[len(_FENCE) :]
    head_open = head.count(_FENCE) % 2 == 1
    return head + ("\n" + _FENCE if head_open else "") + "\n" + tail


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each (sorted, disjoint) span replaced by as many spaces."""
    if not spans:
        return text
    parts: list[str] = []
    last = 0
    for start, end in spans:
        parts.append(text[last:start])
        parts.append(" " * (end - start))
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _fenced_spans(text: str) -> list[tuple[int, int]]:
    """Fenced blocks; an unclosed fence runs to the end."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while (start := text.find(_FENCE, pos)) >= 0:
        end = text.find(_FENCE, start + len(_FENCE))
        end = len(text) if end < 0 else end + len(_FENCE)
        spans.append((start, end))
        pos = end
    return spans


def _log_line_spans(text: str) -> list[tuple[int, int]]:
    """Lines of a pasted log or traceback that were not fenced."""
    out: list[tuple[int, int]] = []
    pos = 0
    for line in text.split("\n"):
        if line.strip() and rules.LOG_LINE.match(line):
            out.append((pos, pos + len(line)))
        pos += len(line) + 1
    return out


class _Prepared(NamedTuple):
    prose: str  # original characters, code blanked
    norm: str  # prose folded (traditional -> simplified, quotes), inline code hidden
    code_trouble: bool  # a blanked code block or log line reports an error


def _prepare(text: str) -> _Prepared:
    work = _window(text)
    # Each step below is skipped when a cheap test shows it would change nothing.
    if not work.isprintable():  # every CONTROL character is unprintable
        work = rules.CONTROL.sub(" ", work)
    fenced = _fenced_spans(work) if _FENCE in work else []
    without_fences = _blank(work, fenced)
    spans = sorted(fenced + (_log_line_spans(without_fences) if "\n" in work else []))
    code_trouble = any(rules.CODE_TROUBLE.search(work, a, b) for a, b in spans)
    prose = _blank(without_fences, [s for s in spans if s not in fenced]) if spans else work
    # TRAD_TO_SIMP maps no ASCII character to another one.
    norm = prose if prose.isascii() else prose.translate(rules.TRAD_TO_SIMP)
    # Inline code keeps its back-ticks but not its words: `no_errors` must
    # not read as "no errors".
    if "`" in norm:
        norm = rules.INLINE_CODE.sub(lambda m: "`" + "_" * (len(m.group()) - 2) + "`", norm)
    return _Prepared(prose, norm, code_trouble)
