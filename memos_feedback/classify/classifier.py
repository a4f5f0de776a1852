"""Feedback-shape classifier for one user message (English and Chinese): rules plus a learned tier.

``classify_feedback(text, agent_text=None)`` reads the message a user sent
right after the agent's answer and returns one of eight shapes (see
``docs/FEEDBACK_SHAPES.md``) plus the phrases a repair needs: what to
prefer, what to avoid, the corrected value, the added requirement.

How it decides:

1. *Prepare*: trim, keep a bounded head and tail window of long inputs,
   blank pasted code blocks and log lines (the user's own prose decides),
   fold traditional Chinese and typographic quotes onto one spelling.
2. *Mask*: phrases whose words must not be read one by one ("no problem",
   "not bad", "what went wrong", "错误日志") are blanked; some of them count
   as evidence for their real meaning.
3. *Score*: every cue that matches adds its weight to its shape.
4. *Resolve*: among shapes with enough evidence, the spec's tie-break order
   decides (preference > correction > constraint > negative > positive >
   confusion > instruction); with none, ``unknown``.
5. *Learned tier* (``learned.py``, trained by ``python -m
   memos_feedback.train``): a logistic regression over character n-grams of
   the prepared text gives a probability per shape.
6. *Combine* (``_combine``): the rules' shape stands unless the learned tier
   all but rules it out; where the rules found nothing, a confident learned
   shape wins. The confidence is calibrated (``fit_calibration``).

Extraction then runs only for the chosen shape. With ``agent_text``, bare
messages are completed from the agent's previous turn (``_context.py``).
Everything is deterministic and takes time linear in the input (bounded
windows, bounded patterns). ALGORITHMS.md, "Feedback classifier", has the
details and the measured figures.

*Gating* keeps steps 2 and 3 cheap. A message can match only a few of the
~150 masks and cues, and one ``regex`` call costs about a microsecond even
when it fails, so each rule runs only when the message contains something
every match of that rule must contain: a whole ASCII word ("thanks"), a
character ("谢", "?") or an ASCII fragment ("hallucinat"). Those keys are
derived from each rule's own source (``_Deriver``: literal strings forced by
the pattern, with ``\\b`` / ``\\s`` telling where words end), ahead of time
into the generated ``gate_table.py`` (``python -m
memos_feedback.devtools.gate --write-gate``; a stale module is detected by a
fingerprint of the rule sources and derived afresh), so the rules file stays
the single source of truth and a rule whose keys cannot be derived simply
always runs. Per message the gate costs one
pass to collect the text's words and characters and a few set
intersections; a skipped rule is one that could not have matched, so the
answer is the same as running every rule.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import importlib
import itertools
import json
import logging
import operator
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import regex

from ..errors import InvalidInputError
from ..types import _REPAIR_SHAPES, ClassifiedFeedback, Shape
from . import context as _context
from . import rules
from .learned import LearnedModel, shipped_model

__all__ = ["ClassifiedFeedback", "Shape", "classify_feedback"]

_log = logging.getLogger("memos_feedback.classifier")

# Long inputs are mostly pasted logs; the user's words sit at the start or
# the end. Classifying these two windows bounds the cost whatever the size.
HEAD_WINDOW = 2000
TAIL_WINDOW = 2000

# Evidence a shape needs before it can win.
_THRESHOLD = 1.0
# Words around a pasted error this short, that decide nothing, leave it a failure report.
_SHORT_LEAD_IN = 30


# The spec's tie-break order: the first shape with enough evidence wins.
_ORDER = (
    Shape.PREFERENCE,
    Shape.CORRECTION,
    Shape.CONSTRAINT,
    Shape.NEGATIVE,
    Shape.POSITIVE,
    Shape.CONFUSION,
    Shape.INSTRUCTION,
)


# ---------------------------------------------------------------------------
# Step 1: prepare the text
# ---------------------------------------------------------------------------
_FENCE = "```"
# How far back from an anchor extraction looks for the start of a phrase;
# keeps every extraction step bounded even inside one very long clause.
_LOOKBACK = 160
# Clauses extraction reads at most (head and tail).
_MAX_CLAUSES = 64


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


# ---------------------------------------------------------------------------
# Gating: which rules can match this message at all
# ---------------------------------------------------------------------------
# The gate reads each rule's source with the standard library's regex parser
# (the rules use no syntax it lacks). Were it missing, or a rule unreadable,
# that rule is simply never skipped.
# Only the generator path (``_derive_gate_data``) loads it.
_sre: Any = None


def _load_parser() -> Any:
    global _sre
    if _sre is None:
        try:
            _sre = importlib.import_module("re._parser")
        except ImportError:  # pragma: no cover - a Python without re._parser
            return None
    return _sre


# Inside a derived literal, a position where an ASCII word cannot continue:
# a ``\b``, ``^`` or ``$``, or a character such as ``\s`` that is never a word
# character. Literals never contain NUL otherwise (rules blank control chars).
_EDGE = "\x00"
# Derived sets stay small; past these sizes a node counts as "anything".
_MAX_STRINGS = 64
_MAX_CLASS = 12
# What ``\w`` (and so ``\b``) knows under the ASCII flag.
_WORD_RUN = re.compile(r"[A-Za-z0-9_]+")
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
# Chinese characters too common to say much alone; a rarer character or a
# pair of characters of the same literal makes a better key.
_COMMON_CJK = frozenset(
    "的了是不我你这那个一在有人他也就都要么什吗吧呢啊好用"  # function words
    "对错没还把给再先会能可以为下上说看到去来得过"  # and feedback's everyday words
)

_Strings = frozenset[str]
_NOTHING: Final[_Strings] = frozenset({""})  # "no known text" (matches empty)
# A test a message can pass cheaply: ("word", w) a whole ASCII word,
# ("char", c) one non-word character, ("pair", cc) two adjacent non-ASCII
# characters, ("sub", s) an ASCII substring.
_Key = tuple[str, str]
# A pattern's requirements: sets of keys such that every match has one key of
# each set, rarest set first; None when nothing is known.
_Required = tuple[frozenset[_Key], ...] | None


class _Shape(NamedTuple):
    """What every match of a pattern node looks like, case-folded.

    ``exact``: all the strings it can match, when there are few. ``prefix`` /
    ``suffix``: every non-empty match starts / ends with one of these
    (``{""}``: no telling). ``nullable``: it can match the empty string.
    """

    exact: _Strings | None
    prefix: _Strings
    suffix: _Strings
    nullable: bool = False


_ANYTHING = _Shape(None, _NOTHING, _NOTHING)
_NON_WORD = _Shape(None, frozenset({_EDGE}), frozenset({_EDGE}))


def _exactly(strings: _Strings) -> _Shape:
    return _Shape(strings, strings, strings, "" in strings)


def _after(ctx: _Strings, shape: _Shape) -> _Strings:
    """How the text ends once ``shape`` matched, if it ended with one of ``ctx`` before."""
    if shape.exact is not None:
        return _product(ctx, shape.exact) or shape.exact
    if shape.nullable:  # it may have matched nothing
        return _union([shape.suffix, ctx]) or _NOTHING
    return shape.suffix


def _before(shape: _Shape, ctx: _Strings) -> _Strings:
    """How the text starts where ``shape`` matches, if one of ``ctx`` follows it."""
    if shape.exact is not None:
        return _product(shape.exact, ctx) or shape.exact
    if shape.nullable:
        return _union([shape.prefix, ctx]) or _NOTHING
    return shape.prefix


def _product(a: _Strings | None, b: _Strings | None) -> _Strings | None:
    if a is None or b is None or len(a) * len(b) > _MAX_STRINGS:
        return None
    if a == _NOTHING or b == _NOTHING:  # the common case: nothing known on one side
        return b if a == _NOTHING else a
    return frozenset(x + y for x in a for y in b)


def _fold(ch: str) -> str:
    # The rules fold ASCII case only (IGNORECASE under ASCII).
    return ch.lower() if ch.isascii() else ch


def _is_plain(ch: str) -> bool:
    """A character the gate can key on: ASCII, or one without case (CJK, emoji)."""
    return ch != _EDGE and (ch.isascii() or ch.lower() == ch == ch.upper())


class _Deriver:
    """Derives the gate keys of patterns, with memo tables for one build."""

    def __init__(self) -> None:
        self._shapes: dict[tuple[int, int], _Shape] = {}
        self._costs: dict[_Strings, float | None] = {}
        self._keys: dict[str, tuple[float, _Key] | None] = {}
        self._derived: dict[str, _Required] = {}

    def gate_keys(self, source: str) -> _Required:
        if source not in self._derived:
            self._derived[source] = self._gate_keys(source)
        return self._derived[source]

    def _gate_keys(self, source: str) -> _Required:
        """Sets of keys such that every match of ``pattern`` implies one key of each.

        The rarest set comes first; a second one, with other keys, makes the
        gate stricter ("you" and one of "could / can / would"). None when
        nothing is known.
        """
        if _load_parser() is None:
            return None
        try:
            items = _sre.parse(source)
            while len(items) == 1 and items[0][0] is _sre.SUBPATTERN:
                items = items[0][1][3]  # a pattern that is one group: read inside
            candidates = self.seq_needs(items, _NOTHING, _NOTHING)
        except (re.error, RecursionError, TypeError, ValueError, AttributeError):
            return None
        finally:
            self._shapes.clear()  # keyed by id(): valid for one parse tree only
        costed = {(self.cost(strings), strings) for strings in candidates if strings}
        ranked = sorted(
            ((cost, strings) for cost, strings in costed if cost is not None),
            key=lambda pair: (pair[0], sorted(pair[1])),
        )
        chosen: list[frozenset[_Key]] = []
        for cost, strings in ranked:
            keys = frozenset(k[1] for s in strings if (k := self.key_of(s)))
            values = {value for _, value in keys}
            # A further requirement pays only if it often fails and tests new keys.
            if not chosen or (cost < 5.0 and all(values.isdisjoint(v for _, v in c) for c in chosen)):
                chosen.append(keys)
            if len(chosen) == 2:
                break
        return tuple(chosen) if chosen else None

    # -- shapes: what a node's matches look like, whatever surrounds it ------
    def seq_shape(self, items: Sequence[tuple[Any, Any]]) -> _Shape:
        shapes = [self.shape(op, av) for op, av in items]
        whole: _Strings | None = _NOTHING
        for s in shapes:
            whole = _product(whole, s.exact)
        if whole is not None:
            return _exactly(whole)
        head: _Strings = _NOTHING
        for s in reversed(shapes):
            head = _before(s, head)
        tail: _Strings = _NOTHING
        for s in shapes:
            tail = _after(tail, s)
        return _Shape(None, head, tail, all(s.nullable for s in shapes))

    def shape(self, op: Any, av: Any) -> _Shape:
        memo = (id(op), id(av))
        if (found := self._shapes.get(memo)) is None:
            found = self._shapes[memo] = self._shape(op, av)
        return found

    def _shape(self, op: Any, av: Any) -> _Shape:
        sre = _sre
        if op is sre.LITERAL:
            ch = chr(av)
            return _exactly(frozenset({_fold(ch)})) if _is_plain(ch) else _ANYTHING
        if op is sre.IN:
            return _class_shape(av)
        if op is sre.BRANCH:
            return _branch_shape([self.seq_shape(alt) for alt in av[1]])
        if op is sre.SUBPATTERN:
            return self.seq_shape(av[3])
        if op is sre.ATOMIC_GROUP:
            return self.seq_shape(av)
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            return _repeat_shape(av[0], av[1], self.seq_shape(av[2]))
        if op is sre.AT:  # \b ^ $ end words; \B and the like say nothing
            starts = (sre.AT_BOUNDARY, sre.AT_BEGINNING, sre.AT_BEGINNING_STRING)
            edge = av in starts or av in (sre.AT_END, sre.AT_END_STRING)
            return _exactly(frozenset({_EDGE if edge else ""}))
        if op in (sre.ASSERT, sre.ASSERT_NOT):
            return _exactly(_NOTHING)  # zero-width: what it looks at is not part of the match
        return _ANYTHING  # any character, a negated literal, a group reference

    # -- requirements: one of these strings is inside every match -------------
    # A node is read with the strings that must come right before (``left``)
    # and right after (``right``) it, so "\b(?:thanks?|thx)\b" yields whole
    # words, not fragments of words.
    def seq_need(self, items: Sequence[tuple[Any, Any]], left: _Strings, right: _Strings) -> _Strings | None:
        return self.rarest(self.seq_needs(items, left, right))

    def seq_needs(
        self, items: Sequence[tuple[Any, Any]], left: _Strings, right: _Strings
    ) -> list[_Strings | None]:
        """Requirements of a sequence: each one holds for every match."""
        # Adjacent exact items (the letters of a word) are read as one.
        # Each item's own exact strings stay candidates ("错" for "错误(?:日志|码)").
        parts: list[tuple[_Shape, tuple[Any, Any] | None]] = []
        needs: list[_Strings | None] = []
        for op, av in items:
            shape = self.shape(op, av)
            needs.append(shape.exact)
            if op in (_sre.ASSERT, _sre.ASSERT_NOT):  # kept apart: they tell what is around
                parts.append((shape, (op, av)))
                continue
            if shape.exact is not None and parts and parts[-1][1] is None:
                joined = _product(parts[-1][0].exact, shape.exact)
                if joined is not None:
                    parts[-1] = (_exactly(joined), None)
                    continue
            parts.append((shape, None if shape.exact is not None else (op, av)))
        lefts: list[_Strings] = []
        ctx = left
        for shape, node in parts:
            lefts.append(ctx)
            ctx = self._around(node, -1, ctx) or _after(ctx, shape)
        rights: list[_Strings] = []
        ctx = right
        for shape, node in reversed(parts):
            rights.append(ctx)
            ctx = self._around(node, 1, ctx) or _before(shape, ctx)
        rights.reverse()
        for (shape, node), before, after in zip(parts, lefts, rights, strict=True):
            if node is None and shape.exact is not None:
                exact = shape.exact
                both = _product(before, _product(exact, after))
                needs += (both, _product(before, exact), _product(exact, after), exact)
            elif node is not None and node[0] not in (_sre.ASSERT, _sre.ASSERT_NOT):
                needs.append(self.need(node[0], node[1], before, after))
        return needs

    def _around(self, node: tuple[Any, Any] | None, direction: int, ctx: _Strings) -> _Strings | None:
        r"""What a lookbehind (-1) or lookahead (1) says about the text beside it.

        ``(?<=x\s)`` says the text before ends with a space, ``(?<![/\w])`` and
        ``(?!\w)`` that no word goes on across it. None: nothing new.
        """
        if node is None or node[0] not in (_sre.ASSERT, _sre.ASSERT_NOT):
            return None
        op, (way, body) = node
        if way != direction or "" not in ctx:
            return None  # not this way, or ``ctx`` already says something
        if op is _sre.ASSERT:
            shape = self.seq_shape(body)
            told = shape.suffix if direction < 0 else shape.prefix
            return None if shape.nullable or "" in told else told
        items = list(body)
        if len(items) == 1 and items[0][0] is _sre.IN and (_sre.CATEGORY, _sre.CATEGORY_WORD) in items[0][1]:
            return frozenset({_EDGE})
        return None

    def need(self, op: Any, av: Any, left: _Strings, right: _Strings) -> _Strings | None:
        sre = _sre
        shape = self.shape(op, av)
        if shape.exact is not None:
            exact = shape.exact
            both = _product(left, _product(exact, right))
            return self.rarest([both, _product(left, exact), _product(exact, right), exact])
        if shape.nullable:
            return None  # it may match nothing: it requires nothing
        inner: _Strings | None = None
        if op is sre.BRANCH:  # one alternative matched: the union of their requirements
            inner = _union((self.seq_need(alt, left, right) for alt in av[1]), limit=4 * _MAX_STRINGS)
        elif op is sre.SUBPATTERN:
            inner = self.seq_need(av[3], left, right)
        elif op is sre.ATOMIC_GROUP:
            inner = self.seq_need(av, left, right)
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT) and av[0] >= 1:
            # The first repetition follows ``left``, the last precedes ``right``.
            inner = self.rarest([self.seq_need(av[2], left, _NOTHING), self.seq_need(av[2], _NOTHING, right)])
        return self.rarest([inner, _product(left, shape.prefix), _product(shape.suffix, right)])

    # -- keys: the cheap test each literal implies ------------------------------
    def rarest(self, candidates: Iterable[_Strings | None]) -> _Strings | None:
        """Among valid requirements, the one whose keys would pass least often."""
        best: tuple[float, _Strings] | None = None
        for strings in candidates:
            if strings is None:
                continue
            cost = self.cost(strings)
            if cost is not None and (best is None or cost < best[0]):
                best = (cost, strings)
        return best[1] if best else None

    def cost(self, strings: _Strings) -> float | None:
        """How likely the keys of ``strings`` pass (lower is better); None: no keys."""
        cost = self._costs.get(strings, -1.0)
        if cost == -1.0:
            cost = self._costs[strings] = self._cost(strings)
        return cost

    def _cost(self, strings: _Strings) -> float | None:
        keys: set[tuple[float, _Key]] = set()
        for s in strings:
            key = self.key_of(s)
            if key is None:
                return None  # this literal implies nothing testable
            keys.add(key)
        # Summed in a fixed order: a float sum over a set would depend on the hash seed, and
        # so would the choice between two requirements of (nearly) equal cost.
        return sum(sorted(chance for chance, _ in keys)) if keys else None

    def key_of(self, literal: str) -> tuple[float, _Key] | None:
        if literal not in self._keys:
            self._keys[literal] = _key_of(literal)
        return self._keys[literal]


def _class_shape(items: list[tuple[Any, Any]]) -> _Shape:
    sre = _sre
    members: set[str] = set()
    spaces = False  # \s or \W: too many to list, but none continues a word
    for op, av in items:
        if op is sre.LITERAL:
            members.add(chr(av))
        elif op is sre.RANGE and av[1] - av[0] < _MAX_CLASS:
            members.update(chr(c) for c in range(av[0], av[1] + 1))
        elif op is sre.CATEGORY and av in (sre.CATEGORY_SPACE, sre.CATEGORY_NOT_WORD):
            spaces = True
        elif op is sre.NEGATE and (sre.CATEGORY, sre.CATEGORY_WORD) in items:
            return _NON_WORD  # [^\w...]: no word character
        else:
            return _ANYTHING
    if spaces:
        return _NON_WORD if members.isdisjoint(_WORD_CHARS) else _ANYTHING
    if len(members) > _MAX_CLASS or not all(_is_plain(c) for c in members):
        return _ANYTHING
    return _exactly(frozenset(_fold(c) for c in members))


def _union(sets: Iterable[_Strings | None], limit: int = _MAX_STRINGS) -> _Strings | None:
    acc: set[str] = set()
    for s in sets:
        if s is None:
            return None
        acc |= s
    return frozenset(acc) if len(acc) <= limit else None


def _branch_shape(alts: list[_Shape]) -> _Shape:
    exact = _union(a.exact for a in alts)
    if exact is not None:
        return _exactly(exact)
    return _Shape(
        None,
        _union(a.prefix for a in alts) or _NOTHING,
        _union(a.suffix for a in alts) or _NOTHING,
        any(a.nullable for a in alts),
    )


def _repeat_shape(low: int, high: int, body: _Shape) -> _Shape:
    if body.exact is not None and high <= 8:  # x?  o{1,5}: spell the few forms out
        forms: set[str] = set()
        power: _Strings | None = _NOTHING
        for count in range(high + 1):
            if power is None:
                break
            if count >= low:
                forms |= power
            power = _product(power, body.exact)
        else:
            if len(forms) <= _MAX_STRINGS:
                return _exactly(frozenset(forms))
    return _Shape(None, body.prefix, body.suffix, nullable=body.nullable or low == 0)


def _key_of(literal: str) -> tuple[float, _Key] | None:
    """The best test implied by ``literal`` occurring, with a rough chance it passes."""
    keys: list[tuple[float, _Key]] = []
    for m in _WORD_RUN.finditer(literal):
        word = m.group()
        # With an edge or a non-word character on both sides inside the
        # literal, the run is a whole word of the message; else part of one.
        if m.start() > 0 and m.end() < len(literal):
            keys.append((4 * 0.45 ** len(word), ("word", word)))
        else:
            keys.append((16 * 0.45 ** len(word), ("sub", word)))
    chances = [_char_chance(ch) for ch in literal]
    for i, ch in enumerate(literal):
        if ch != _EDGE and ch not in _WORD_CHARS:
            keys.append((chances[i], ("char", ch)))
            if i and not literal[i - 1].isascii() and not ch.isascii():
                keys.append((0.7 * chances[i - 1] * chances[i], ("pair", literal[i - 1 : i + 1])))
    return min(keys) if keys else None


def _char_chance(ch: str) -> float:
    return 0.6 if ch.isascii() or ch in _COMMON_CJK else 0.3


class _Keys(NamedTuple):
    """What a gate tests a text for, read once per text."""

    present: set[str]  # its whole words (lowercased), non-word characters, non-ASCII pairs
    lower: str


def _keys_of(text: str) -> _Keys:
    lower = text.lower()
    present = set(text) - _WORD_CHARS  # iterates the text's few characters
    if text.isascii():  # lower() is plain ASCII folding here: same words
        present.update(_WORD_RUN.findall(lower))
    else:  # lower() could glue a word to e.g. the Kelvin sign: split first
        present.update(map(str.lower, _WORD_RUN.findall(text)))
        present.update(map(operator.add, text, text[1:]))
    return _Keys(present, lower)


# Keys of one requirement, as frames are tested: characters, pairs and
# whole words (looked up in a set: a whole word present is a substring
# present), then words and fragments (substring tests).
_Check = tuple[frozenset[str], tuple[str, ...]]
_Search = Callable[[str], "regex.Match[str] | None"]


@dataclass(frozen=True, slots=True)
class _Gate:
    """For an ordered list of patterns, the ones that can match a given text.

    Sets of patterns are ``int`` bit masks (bit i: pattern i). For each key
    the gate knows the patterns whose rarest requirement it meets and those
    whose second requirement it meets; a pattern may match a text when the
    text meets both (a pattern with one requirement meets its second one
    always; one with no derivable key, both).
    """

    table: dict[str, tuple[int, int]]  # word, char or pair key -> (first met, second met)
    keys: frozenset[str]
    fragments: tuple[tuple[str, int, int], ...]  # the same for ASCII fragments
    first_free: int  # patterns with no requirement
    second_free: int  # patterns with no second requirement

    @classmethod
    def from_stored(cls, stored: Sequence[_Stored]) -> _Gate:
        """The gate of the patterns whose requirements are ``stored`` (in gate order)."""
        met: tuple[dict[str, list[int]], dict[str, list[int]]] = ({}, {})
        fragment_met: tuple[dict[str, list[int]], dict[str, list[int]]] = ({}, {})
        first_free = second_free = 0
        for i, required in enumerate(stored):
            if not required:
                first_free |= 1 << i
            if len(required) < 2:
                second_free |= 1 << i
            for (keys, fragments), words, parts in zip(required, met, fragment_met, strict=False):
                for key in keys:
                    words.setdefault(key, []).append(i)
                for fragment in fragments:
                    parts.setdefault(fragment, []).append(i)

        def bits(indexes: list[int] | None) -> int:
            out = 0
            for i in indexes or ():
                out |= 1 << i
            return out

        first, second = met
        every_key = first.keys() | second.keys()
        every_fragment = sorted(fragment_met[0].keys() | fragment_met[1].keys())
        return cls(
            table={k: (bits(first.get(k)), bits(second.get(k))) for k in every_key},
            keys=frozenset(every_key),
            fragments=tuple(
                (f, bits(fragment_met[0].get(f)), bits(fragment_met[1].get(f))) for f in every_fragment
            ),
            first_free=first_free,
            second_free=second_free,
        )

    def candidates(self, keys: _Keys, after: int = -1) -> list[int]:
        """Indexes (ascending) of the patterns that may match, skipping those up to ``after``."""
        return self.pick(*self.met(keys), after)

    def met(self, keys: _Keys) -> tuple[int, int]:
        """The patterns whose first / second requirement ``keys`` meet."""
        present, lower = keys
        first, second = self.more_met(self.first_free, self.second_free, present)
        for fragment, one, two in self.fragments:
            if fragment in lower:
                first |= one
                second |= two
        return first, second

    def more_met(self, first: int, second: int, words: set[str]) -> tuple[int, int]:
        """``first`` / ``second`` with the patterns that the word, char or pair keys ``words`` meet."""
        table = self.table
        for key in words & self.keys:
            one, two = table[key]
            first |= one
            second |= two
        return first, second

    @staticmethod
    def pick(first: int, second: int, after: int = -1) -> list[int]:
        """Indexes (ascending) of the patterns in both masks, skipping those up to ``after``."""
        base = after + 1
        found = (first & second) >> base
        out = []
        while found:  # highest bit first (cheaper to find and clear), reversed below
            top = found.bit_length() - 1
            out.append(base + top)
            found ^= 1 << top
        out.reverse()
        return out


class _CuePart(NamedTuple):
    cue: int  # index in rules.CUES
    source: str
    flags: int
    required: _Required


def _cue_parts(cues: Sequence[rules.Cue], deriver: _Deriver) -> tuple[_CuePart, ...]:
    """Each cue cut into runs of its top-level alternatives that share gate keys.

    ``regex`` tries every alternative of one pattern at every position, which
    is slow for long alternations (the "x over y" cue has twelve), while a
    part whose keys are absent need not run at all. Searching the parts of a
    cue in order and keeping the leftmost match (the earlier part on a tie)
    finds the match the whole pattern finds.
    """
    parts: list[_CuePart] = []
    for index, cue in enumerate(cues):
        runs: list[tuple[_Required, list[str]]] = []
        for alt in (inner for top in rules.top_level_alternatives(cue.source) for inner in _distributed(top)):
            required = deriver.gate_keys(alt)
            if runs and runs[-1][0] == required:
                runs[-1][1].append(alt)
            else:
                runs.append((required, [alt]))
        parts += (_CuePart(index, "|".join(run), cue.flags, required) for required, run in runs)
    return tuple(parts)


def _distributed(alt: str) -> list[str]:
    r"""``\b(?:a|b)\b`` as its alternatives ``\b(?:a)\b``, ``\b(?:b)\b``.

    Only with nothing but an optional ``\b`` around the group: a ``\b``
    matches in one way only, so at any start the whole tries the alternatives
    in the order the parts are listed, and the leftmost match of the parts
    (the earlier part on a tie) is the match of the whole. The "praise" cue
    is one such group of ~80 words; cut, a message runs only the words it has.
    """
    prefix = r"\b" if alt.startswith(r"\b(?:") else ""
    if not alt.startswith("(?:", len(prefix)):
        return [alt]
    close = _group_end(alt, len(prefix))
    suffix = alt[close + 1 :]
    if close < 0 or suffix not in ("", r"\b"):
        return [alt]
    inner = rules.top_level_alternatives(alt[len(prefix) + 3 : close])
    return [f"{prefix}(?:{body}){suffix}" for body in inner] if len(inner) > 1 else [alt]


def _group_end(source: str, start: int) -> int:
    """Offset of the ``)`` that closes the group opened at ``start`` (-1: none)."""
    depth = 0
    i = start
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            i += 1
        elif ch == "[":
            i = rules.class_end(source, i)
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


# ---------------------------------------------------------------------------
# Steps 2-4: mask, score, resolve
# ---------------------------------------------------------------------------
class _Evidence:
    """What the masks and cues found in one message."""

    __slots__ = ("constraint_anchor", "fired", "scores")

    def __init__(self) -> None:
        # Keyed by shape value, in Shape order (hashing an enum member is slow).
        self.scores: dict[str, float] = _ZERO_SCORES.copy()
        # The first offset inside a matched constraint cue (its last matched
        # character), so extraction can find the clause that carries it; -1
        # when none. Only constraint extraction reads an anchor.
        self.constraint_anchor = -1
        self.fired: list[str] = []

    def add(self, shape: str, weight: float, anchor: int, name: str) -> None:
        self.scores[shape] += weight
        if anchor >= 0 and shape == _CONSTRAINT:
            first = self.constraint_anchor
            if first < 0 or anchor < first:
                self.constraint_anchor = anchor
        self.fired.append(name)


_SHAPE_VALUES: Final = tuple(s.value for s in Shape)
_ZERO_SCORES: Final = dict.fromkeys(_SHAPE_VALUES, 0.0)
_CONSTRAINT: Final = Shape.CONSTRAINT.value
_ORDER_VALUES: Final = tuple((s, s.value) for s in _ORDER)

# The extraction frames the gate knows, in the order of the generated data.
_GATED_FRAMES: Final[tuple[regex.Pattern[str], ...]] = (
    *rules.PREFER_FORWARD,
    *rules.PREFER_BACKWARD,
    rules.CONTRAST_AFTER,
    rules.AVOID_FORWARD,
    rules.AVOID_BACKWARD,
    rules.AVOID_REPLACED,
    *rules.CORRECTION_FRAMES,
    rules.VALUE_BEFORE_NOT,
    rules.COPULA,
    rules.YOU_CLAUSE,
    rules.CONNECTIVE,
    rules.CN_MODAL,
    rules.EN_MODAL,
    rules.TRAILING_SOFTENER,
    rules.TRAILING_OCCASION,
)

# A requirement as stored: whole words, characters and character pairs (told
# apart by their characters), then ASCII fragments.
_StoredRequirement = tuple[tuple[str, ...], tuple[str, ...]]
_Stored = tuple[_StoredRequirement, ...]


class _GateData(NamedTuple):
    """Everything the gate derives from the rules, as plain data.

    Derived by ``_derive_gate_data`` (reading the rules' sources with
    ``re._parser``, ~0.5 s); kept in the generated module
    ``gate_table.py`` so that importing the classifier does not pay it.
    """

    fingerprint: str  # of the rule sources it was derived from
    parts: tuple[tuple[int, str], ...]  # cue parts: (index in rules.CUES, source)
    required: tuple[_Stored, ...]  # per gate index: masks, then cue parts
    frames: tuple[_Stored, ...]  # per frame of _GATED_FRAMES


_GATE_MODULE: Final = "memos_feedback.classify.gate_table"
_REGENERATE: Final = "python -m memos_feedback.devtools.gate --write-gate"


def _rules_fingerprint() -> str:
    """A digest of every rule source and flag the gate is derived from."""
    digest = hashlib.sha256()
    for rule in (*rules.MASKS, *rules.CUES):
        digest.update(f"{rule.flags}\x00{rule.source}\x01".encode())
    for frame in _GATED_FRAMES:
        digest.update(f"{frame.flags}\x00{frame.pattern}\x01".encode())
    return digest.hexdigest()


def _store(required: _Required) -> _Stored:
    return tuple(
        (
            tuple(sorted(value for kind, value in keys if kind != "sub")),
            tuple(sorted(value for kind, value in keys if kind == "sub")),
        )
        for keys in required or ()
    )


def _derive_gate_data() -> _GateData:
    """Derive the gate from the rules' sources (the generator, and a stale table at import)."""
    deriver = _Deriver()
    parts = _cue_parts(rules.CUES, deriver)
    required = [_store(deriver.gate_keys(mask.source)) for mask in rules.MASKS]
    required += [_store(part.required) for part in parts]
    frames = tuple(_store(deriver.gate_keys(frame.pattern)) for frame in _GATED_FRAMES)
    return _GateData(_rules_fingerprint(), tuple((p.cue, p.source) for p in parts), tuple(required), frames)


def _read_stored(records: Sequence[str]) -> tuple[_Stored, ...]:
    loaded = json.loads("[" + ",".join(records) + "]")
    return tuple(tuple((tuple(keys), tuple(fragments)) for keys, fragments in r) for r in loaded)


def _load_gate_data() -> _GateData:
    """The generated gate; derived afresh (slow, with a warning) when stale or missing."""
    fingerprint = _rules_fingerprint()
    try:
        module: Any = importlib.import_module(_GATE_MODULE)
        if fingerprint == module.FINGERPRINT:
            parts = json.loads("[" + ",".join(module.PARTS) + "]")
            return _GateData(
                module.FINGERPRINT,
                tuple((cue, source) for cue, source in parts),
                _read_stored(module.REQUIRED),
                _read_stored(module.FRAMES),
            )
    except (ImportError, AttributeError, ValueError, TypeError):
        pass
    _log.warning(
        "classifier gate %s is missing or stale; deriving it now. Run: %s", _GATE_MODULE, _REGENERATE
    )
    return _derive_gate_data()


_GATE_DATA: Final = _load_gate_data()


def _frame_checks(
    frames: Sequence[regex.Pattern[str]], stored: Sequence[_Stored], whole: Iterable[regex.Pattern[str]]
) -> dict[int, tuple[_Check, ...]]:
    """The gate's requirements of each extraction frame, by ``id``.

    Most frames also search from a ``pos`` or up to an ``endpos``, where a
    word can look cut short ("keep|ers" reads "keep"): their whole-word keys
    are also tested as fragments. The frames in ``whole`` only ever search the
    whole text, as cues do: a whole-word key must be a word of it.
    """
    whole_ids = {id(frame) for frame in whole}
    checks: dict[int, tuple[_Check, ...]] = {}
    for frame, required in zip(frames, stored, strict=True):
        if id(frame) in whole_ids:
            checks[id(frame)] = tuple((frozenset(keys), fragments) for keys, fragments in required)
            continue
        checks[id(frame)] = tuple(
            (
                # A whole word present is a substring present: settles it at once.
                frozenset(keys) | frozenset(f for f in fragments if _WORD_CHARS.issuperset(f)),
                tuple(sorted({k for k in keys if _WORD_CHARS.issuperset(k)} | set(fragments))),
            )
            for keys, fragments in required
        )
    return checks


# The frames that extraction only runs over the whole of ``_View.masked``
# (``search`` / ``finditer`` with no ``pos`` nor ``endpos``).
_WHOLE_TEXT_FRAMES: Final = (
    *rules.PREFER_FORWARD,
    *rules.PREFER_BACKWARD,
    rules.AVOID_FORWARD,
    rules.AVOID_BACKWARD,
    rules.AVOID_REPLACED,
    *rules.CORRECTION_FRAMES,
    rules.VALUE_BEFORE_NOT,
)


_FRAME_CHECKS: Final = _frame_checks(_GATED_FRAMES, _GATE_DATA.frames, _WHOLE_TEXT_FRAMES)
# ``rules.CLAUSE_BREAK`` compiled by the standard library, which runs this
# pattern faster than ``regex``: it has no letters, and ``\s`` and ``$`` mean
# the same under ASCII in both (checked against every character in the tests).
_CLAUSE_BREAK: Final = re.compile(rules.CLAUSE_BREAK.pattern, re.ASCII)
_CUE_PARTS: Final = tuple(
    _CuePart(cue, source, rules.CUES[cue].flags, None) for cue, source in _GATE_DATA.parts
)
# One gate for masks and cue parts, which read the same keys: masks first.
_FIRST_PART: Final = len(rules.MASKS)
_GATE: Final = _Gate.from_stored(_GATE_DATA.required)
# Every ASCII fragment key is made of word characters only.
_FRAGMENTS_ARE_WORDS: Final = all(_WORD_CHARS.issuperset(f) for f, _, _ in _GATE.fragments)
# The cue loop's lookups, indexed like the gate. Patterns are compiled when
# first needed (a message runs a handful of them; compiling all would cost
# about 0.2 s at import).
_PART_CUE: Final = (-1,) * _FIRST_PART + tuple(part.cue for part in _CUE_PARTS)
_PART_SEARCH: list[_Search | None] = [None] * len(_PART_CUE)


def _part_search(index: int) -> _Search:
    """The search of cue part ``index`` (a gate index), compiling it on first use."""
    search = _PART_SEARCH[index]
    if search is None:
        if index < _FIRST_PART:
            search = rules.MASKS[index].pattern.search
        else:
            part = _CUE_PARTS[index - _FIRST_PART]
            cue = rules.CUES[part.cue]
            # A part that is the whole cue shares the cue's compiled pattern.
            whole = part.source == cue.source
            search = (cue.pattern if whole else regex.compile(part.source, part.flags)).search
        _PART_SEARCH[index] = search
    return search


def _apply_masks(norm: str, ev: _Evidence) -> tuple[str, _Keys, list[int]]:
    """Blank every mask's spans, in order.

    Returns the masked text, its keys and the cue parts (gate indexes) that
    may match it.
    """
    masked = norm
    keys = _keys_of(masked)
    first, second = _GATE.met(keys)
    todo = _GATE.pick(first, second)
    pos = 0
    while pos < len(todo) and (index := todo[pos]) < _FIRST_PART:
        pos += 1
        mask = rules.MASKS[index]
        spans = [m.span() for m in mask.pattern.finditer(masked)]
        if not spans:
            continue
        masked = _blank(masked, spans)
        if mask.shape is not None:
            ev.add(mask.shape, mask.weight, spans[0][1] - 1, mask.name)
        else:
            ev.fired.append(mask.name)
        # Blanking can cut a word short ("…foo|bar" -> "bar"), which may give
        # later rules a word to key on: read the keys again, and add the rules
        # the new keys let through. Rules whose keys were blanked stay: they
        # cannot match (that is what the gate knows), so running them changes
        # nothing. ASCII word fragments stay as they were: blanking (spaces)
        # cannot make one appear.
        old_present = keys.present
        keys = _keys_of(masked)
        if _FRAGMENTS_ARE_WORDS:
            first, second = _GATE.more_met(first, second, keys.present - old_present)
        else:  # pragma: no cover - no such fragment in the rules today
            first, second = _GATE.met(keys)
        todo, pos = _GATE.pick(first, second, after=index), 0
    return masked, keys, todo[pos:]


def _score(prepared: _Prepared) -> tuple[str, _Keys, _Evidence]:
    ev = _Evidence()
    masked, keys, parts = _apply_masks(prepared.norm, ev)
    # Anchored cues (^ ... $) must see the message without surrounding blanks.
    lead = len(masked) - len(masked.lstrip())
    stripped = masked.strip()
    # Stripping removes blanks only: the keys still cover what cues can match.
    # The parts of one cue are adjacent; its match is the leftmost of theirs.
    current, best = -1, None
    for index in parts:
        if _PART_CUE[index] != current:
            if best is not None:
                _add_cue(ev, current, best.end() + lead - 1)
            current, best = _PART_CUE[index], None
        m = (_PART_SEARCH[index] or _part_search(index))(stripped)
        if m is not None and (best is None or m.start() < best.start()):
            best = m
    if best is not None:
        _add_cue(ev, current, best.end() + lead - 1)
    if prepared.code_trouble and (
        not stripped or (len(stripped) <= _SHORT_LEAD_IN and max(ev.scores.values()) < _THRESHOLD)
    ):
        # Only a pasted error, no words around it (or a short lead-in such as "ran it
        # again:" that says nothing else): the last step failed.
        ev.add(Shape.NEGATIVE.value, _THRESHOLD, -1, "pasted-error-only")
    return masked, keys, ev


def _add_cue(ev: _Evidence, index: int, anchor: int) -> None:
    cue = rules.CUES[index]
    ev.add(cue.shape, cue.weight, anchor if cue.weight > 0 else -1, cue.name)


def _resolve(scores: dict[str, float]) -> Shape:
    """The first shape, in the spec's tie-break order, with enough evidence."""
    for shape, value in _ORDER_VALUES:
        if scores[value] >= _THRESHOLD:
            return shape
    return Shape.UNKNOWN


# Confidences already computed, by (own score, rivals); rivals -2 marks
# ``unknown`` (own: the strongest score). Scores are sums of a few rule
# weights, so few keys recur; the table stops growing at a bound.
_CONFIDENCES: dict[tuple[float, int], float] = {}
_CONFIDENCES_MAX: Final = 4096


def _confidence(shape: Shape, scores: dict[str, float]) -> float:
    if shape is Shape.UNKNOWN:
        own = max(scores.values())
        rivals = -2
    else:
        own = scores[shape.value]
        rivals = -1  # the winner itself reached the threshold; every other shape that did is a rival
        for v in scores.values():
            if v >= _THRESHOLD:
                rivals += 1
    key = (own, rivals)
    found = _CONFIDENCES.get(key)
    if found is not None:
        return found
    if rivals == -2:
        # No evidence at all reads as small talk; weak evidence, less sure.
        result = round(max(0.2, 0.6 - 0.3 * max(own, 0.0)), 2)
    else:
        value = 0.55 + 0.2 * min(own - _THRESHOLD, 1.5) - 0.1 * rivals
        result = round(min(0.95, max(0.3, value)), 2)
    if len(_CONFIDENCES) < _CONFIDENCES_MAX:
        _CONFIDENCES[key] = result
    return result


# ---------------------------------------------------------------------------
# Step 5: extraction (only for the chosen shape)
# ---------------------------------------------------------------------------
def _clean(phrase: str) -> str | None:
    phrase = phrase.strip(rules.EDGE_PUNCT)
    return phrase or None


def _tokens(text: str, start: int, end: int) -> Iterator[regex.Match[str]]:
    return rules.TOKEN.finditer(text, start, end)


def _is_cjk(tok: str) -> bool:
    # ``rules.CJK.match(tok)`` without a regex call: its two ranges, read from
    # the first character (CJK characters have no case to fold).
    if not tok:
        return False
    first = tok[0]
    return "\u3400" <= first <= "\u9fff" or "\uf900" <= first <= "\ufaff"


def _is_cn_modifier(tok: str) -> bool:
    return tok.translate(rules.TRAD_TO_SIMP) in rules.CN_MODIFIERS


def _cut_cjk(run: str) -> str:
    """A Chinese noun phrase ends before a particle or verb ("手写循环", not "手写循环吧")."""
    m = rules.CN_CUT.search(run, 2)
    return run[: m.start()] if m else run[:8]


def _grab_forward(view: _View, start: int) -> tuple[str, int] | None:
    """The tool/approach phrase that starts at ``start``, and where it ends.

    Determiners and modifiers ("the", "just", "原生") are skipped, but not a modifier
    that names an approach ("plain SQL", "bare metal"); a pronoun
    ("it", "这个") means the frame did not name a tool.
    """
    prose = view.prose
    end = view.clause(start)[1]
    # "that chain of str.replace calls": the quantity is not the tool.
    article = False  # "the" / "teh" (or a quantity) skipped before the phrase
    if "of" in view.masked[start : start + 40] and (
        quantity := rules.QUANTITY_HEAD.match(view.masked, start + _leading_space(prose, start), end)
    ):
        start = quantity.end()
        article = True
    words: list[str] = []
    ends: list[int] = []
    first = start
    # A tool name sits within the first few tokens after its frame.
    for tok in itertools.islice(_tokens(prose, start, end), 12):
        t = tok.group()
        if t[0] in rules.QUOTES and len(t) > 2 and t[-1] in rules.QUOTES:
            if words:
                break
            return t[1:-1].strip(), tok.end()
        if _is_cjk(t):
            if words:
                # "shell 脚本", "for 迴圈": the noun makes a kind of the word before it.
                kind = rules.CN_KIND_NOUN.match(t.translate(rules.TRAD_TO_SIMP))
                if kind is not None and len(words) == 1:
                    words.append(t)
                    ends.append(tok.start() + kind.end())
                break
            # Modifiers, and the verb of "prefer 用 Obsidian": the tool comes next; so does
            # a one-character verb or preposition ("别再发 Excel 了", "别往 MySQL 里塞").
            if _is_cn_modifier(t) or t in rules.CN_USE_VERBS:
                continue
            if len(t) == 1 and _ascii_next(prose, tok.end(), end):
                continue
            cut = _cut_cjk(t)
            return cut, tok.start() + len(cut)
        if not (t[0].isalnum() or t[0] in "$¥€£~./_"):
            break
        low = t.lower().rstrip(".:'")
        if not words and low in rules.DETERMINERS:
            article = article or low in ("the", "teh")
            continue
        if not words and (low in rules.DEMONSTRATIVES or low in rules.SOFTENERS):
            return None
        if words and low in rules.TOOL_STOP:
            break
        if not words:
            first = tok.start()
        words.append(t)
        ends.append(tok.end())
        if len(words) == 3:
            break
    while words and words[-1].lower() in ("one", "ones", "thing", "stuff"):
        words.pop()
        ends.pop()
    if article and len(words) > 1 and words[-1].lower() in rules.KIND_NOUNS:
        words.pop()
        ends.pop()
    if not words:
        return None
    # Cut from the text, not joined: the phrase is what the user wrote ("ＵＶ", not "Ｕ Ｖ").
    last_end = ends[-1]
    phrase = _clean(prose[first:last_end])
    return (phrase, last_end) if phrase else None


def _ascii_next(text: str, pos: int, end: int) -> bool:
    """True when an ASCII word starts at ``pos``, after at most a space, before ``end``."""
    pos += text.startswith(" ", pos)
    return pos < end and text[pos].isascii() and text[pos].isalpha()


def _leading_space(text: str, start: int) -> int:
    """How many spaces follow ``start`` (at most a few)."""
    n = 0
    while n < 3 and start + n < len(text) and text[start + n] == " ":
        n += 1
    return n


def _grab_backward(view: _View, pos: int) -> str | None:
    """The tool phrase that ends right before ``pos`` in the same clause."""
    start = max(view.clause(max(pos - 1, 0))[0], pos - _LOOKBACK)
    words: list[str] = []
    first = last = pos
    toks = list(_tokens(view.prose, start, pos))
    for i in range(len(toks) - 1, -1, -1):
        tok = toks[i]
        t = tok.group()
        low = t.lower()
        if not words and (low in rules.SOFTENERS or low in ("one", "ones")):
            continue
        if _is_cjk(t):
            if not words and not _is_cn_modifier(t):
                # "pip 装依赖太慢": a tool named in ASCII right before the Chinese verb phrase.
                if (ascii_tool := _ascii_before(view, start, tok.start())) is not None:
                    return ascii_tool
                # "shell 脚本就够了": the noun makes a kind of the ASCII word before it.
                if i > 0 and rules.CN_KIND_NOUN.fullmatch(t.translate(rules.TRAD_TO_SIMP)):
                    before = toks[i - 1]
                    word = before.group()
                    if word[0].isalpha() and word.isascii():
                        return _clean(view.prose[before.start() : tok.end()])
                return _clean(t[-8:])
            break
        if words and low in rules.APPROACH_MODIFIERS:
            # "… than raw dicts": the modifier is part of the approach, and starts it.
            words.insert(0, t)
            first = tok.start()
            break
        stop = low in rules.DETERMINERS or low in rules.TOOL_STOP or low in rules.DEMONSTRATIVES
        if stop or not t[0].isalnum():
            break
        if not words:
            last = tok.end()
        words.insert(0, t)
        first = tok.start()
        if len(words) == 3:
            break
    return _clean(view.prose[first:last]) if words else None


def _ascii_before(view: _View, start: int, pos: int) -> str | None:
    """The ASCII word that ends, after at most a space, right before ``pos`` at the start of its clause."""
    prose = view.prose
    end = pos
    while end > start and prose[end - 1] == " ":
        end -= 1
    if end == pos:
        return None
    toks = list(_tokens(prose, start, end))
    if len(toks) != 1:
        return None
    t = toks[0].group()
    low = t.lower()
    if not t[0].isalpha() or not t.isascii() or low in rules.TOOL_STOP or low in rules.DEMONSTRATIVES:
        return None
    return _clean(t)


def _first_forward(
    view: _View, frames: Iterable[regex.Pattern[str]], skip: str | None
) -> tuple[str, int] | None:
    """The first phrase a frame introduces (frames tried in priority order)."""
    for frame in frames:
        if not view.may_match(frame):
            continue
        for m in frame.finditer(view.masked):
            got = _grab_forward(view, m.end())
            if got and got[0] != skip:
                return got
    return None


def _extract_preference(view: _View) -> tuple[str | None, str | None]:
    # "why are you using moment.js? date-fns is what we standardised on": the question names
    # the tool to avoid, the rest the one to prefer.
    if "?" in view.masked and "why" in view.keys.lower and (q := rules.WHY_QUESTION.search(view.masked)):
        outside = dataclasses.replace(view, masked=_blank(view.masked, [q.span()]))
        prefer, avoid = _extract_preference_in(outside)
        if prefer is not None:
            if avoid is None:
                around = [(0, q.start()), (q.end(), len(view.masked))]
                inside = dataclasses.replace(view, masked=_blank(view.masked, around))
                got = _first_forward(inside, rules.PREFER_FORWARD, prefer)
                avoid = got[0] if got else None
            return prefer, avoid
    # "为啥要用 Redux，context 不就够了": the same, in Chinese.
    if "不就" in view.masked and (cn := rules.CN_WHY_THEN_ENOUGH.search(view.masked)):
        prefer = _grab_backward(view, cn.start("enough"))
        if prefer is not None:
            got = _grab_forward(view, cn.start("tool"))
            return prefer, got[0] if got and got[0] != prefer else None
    return _extract_preference_in(view)


def _extract_preference_in(view: _View) -> tuple[str | None, str | None]:
    prefer: str | None = None
    prefer_end = -1
    if got := _first_forward(view, rules.PREFER_FORWARD, None):
        prefer, prefer_end = got
    else:
        # "plotly works better", "poetry please, not pip": the tool comes first. The
        # earliest frame in the text speaks of it ("composition over inheritance here please").
        found = [
            m for frame in rules.PREFER_BACKWARD if view.may_match(frame) and (m := frame.search(view.masked))
        ]
        for m in sorted(found, key=lambda m: m.start()):  # stable: frame order on a tie
            if back := _grab_backward(view, m.start()):
                prefer, prefer_end = back, m.start()
                break
    # Right after the preferred tool: "X instead of Y", "X, not Y", "X 而不是 Y".
    if (
        prefer_end >= 0
        and view.may_match(rules.CONTRAST_AFTER)
        and (c := rules.CONTRAST_AFTER.match(view.masked, prefer_end))
        and c.end() > prefer_end
    ):
        got = _grab_forward(view, c.end())
        if got and got[0] != prefer:
            return prefer, got[0]
    if got := _first_forward(view, (rules.AVOID_FORWARD,), prefer):
        return prefer, got[0]
    # "Y is overkill", "Y 太丑": the complaint names the tool before it; else "Y 换成 X".
    for frame in (rules.AVOID_BACKWARD, rules.AVOID_REPLACED):
        if not view.may_match(frame):
            continue
        for m in frame.finditer(view.masked):
            cand = _grab_backward(view, m.start())
            if cand and cand != prefer:
                return prefer, cand
    return prefer, None


def _grab_value(view: _View, start: int, end: int) -> str | None:
    """The corrected value starting at ``start``: a few tokens, up to a stop word.

    A Chinese unit after a figure stays with it ("3,450 元", "2024 年 5 月 1 日"); the
    value is cut from the original text, spacing included.
    """
    words: list[str] = []
    first = last = start
    article = call = False
    for tok in itertools.islice(_tokens(view.prose, start, end), 12):
        t = tok.group()
        if tok.start() < last:  # inside the call read below
            continue
        if t[0] == "(" and words and tok.start() == last:
            # "len(items) - 1": a call is part of the value, up to its closing parenthesis.
            close = view.prose.find(")", tok.start(), min(end, tok.start() + 60))
            if close < 0:
                break
            words[-1] += view.prose[tok.start() : close + 1]
            last = close + 1
            call = True
            continue
        if _is_cjk(t):
            if words and any(ch.isdigit() for ch in words[-1]) and rules.CN_UNIT.fullmatch(t):
                words.append(t)
                last = tok.end()
                continue
            # "8 点开会": the unit stays with the figure, the event after it does not.
            if (
                words
                and any(ch.isdigit() for ch in words[-1])
                and (unit := rules.CN_UNIT.match(t))
                and (rules.CN_EVENT_VERB.fullmatch(t[unit.end() :]) or t[unit.end() :] in rules.CN_PARTICLES)
            ):
                last = tok.start() + unit.end()
                break
            if words:
                break
            # "七点四十落地", "下午兩點半開始": the time, not the event (matched on the folded text).
            event = rules.CN_EVENT_VERB.search(t.translate(rules.TRAD_TO_SIMP))
            return _clean(t[: event.start()] if event and event.start() > 0 else t)
        if t[0] in rules.QUOTES and len(t) > 2:
            return _clean(t) if not words else _clean(" ".join(words))
        low = t.lower()
        if not words and low in ("the", "a", "an"):
            article = article or low == "the"
            continue
        if low in rules.VALUE_STOP or t in "—–-" or not (t[0].isalnum() or t[0] in "$¥€£~./+"):
            break
        if not words:
            first = tok.start()
        words.append(t)
        last = tok.end()
        if len(words) == 4:
            break
    if not words:
        return None
    # "len(items) - 1" (a spaced minus also ends a clause, so the offset may lie past ``end``).
    if call and (tail := rules.EXPRESSION_TAIL.match(view.prose, last)):
        last = tail.end()
    # "I meant the orders table": the name, not the kind of thing it names.
    if article and len(words) > 1 and words[-1].lower() in rules.KIND_NOUNS:
        last = view.prose.rfind(words[-2], first, last) + len(words[-2])
    return _clean(view.prose[first:last])


def _parallel_number(view: _View, start: int, end: int, old_start: int) -> str | None:
    """For "17 rows, not 16" / "15 号，不是 16 号": the new number, shaped like the old one."""
    old_end = min(view.clause(old_start)[1], old_start + _LOOKBACK)
    old = [t for _, t in zip(range(2), _tokens(view.prose, old_start, old_end), strict=False)]
    if not old or not old[0].group()[0].isdigit():
        return None
    new = list(_tokens(view.prose, start, end))
    for i, tok in enumerate(new):
        if tok.group()[0].isdigit():
            # "Node 20, not 18": a figure that follows the name it belongs to at the clause start.
            name = new[0].group()
            if i == 1 and len(old) == 1 and name.isalpha() and name[:1].isupper() and name.isascii():
                return _clean(view.prose[new[0].start() : tok.end()])
            # Keep a unit only when the old value carries one too.
            if len(old) > 1 and i + 1 < len(new):
                return _clean(view.prose[tok.start() : new[i + 1].end()])
            return _clean(tok.group())
    return None


_VALUE_PREPOSITIONS: Final = frozenset({"from", "by", "in", "at", "on", "under"})


def _value_before(view: _View, neg_start: int, old_start: int) -> str | None:
    """The new value in "<new>, not <old>": after the clause's copula, else its last token."""
    c_start = max(view.clause(neg_start - 1)[0], neg_start - _LOOKBACK)
    value = _parallel_number(view, c_start, neg_start, old_start)
    if value is None:
        copulas = _copulas(view, c_start, neg_start)
        after = copulas[-1].end() if copulas else -1
        if copulas and view.prose[after : after + 1] in rules.QUOTES:
            # "it's 'affect' in that sentence, not 'effect'": the quoted word is the value.
            value = _grab_value(view, after, neg_start)
        elif copulas:
            value = _clean(_trim_cn_tail(view.prose[copulas[-1].end() : neg_start]))
            # "the quote's from Knuth, not Dijkstra": the value, not its preposition.
            if value and (head := value.split(" ", 1))[0].lower() in _VALUE_PREPOSITIONS and len(head) == 2:
                value = _clean(head[1])
        else:
            toks = list(_tokens(view.prose, c_start, neg_start))
            value = _clean(toks[-1].group()) if toks else None
    return value if value and len(value) <= 60 else None


def _trim_cn_tail(value: str) -> str:
    """ "下週一要" -> "下週一", ".env.local 里" -> ".env.local": the event or place word after a value."""
    value = value.rstrip()
    if value[-1:] in ("里", "裡", "中", "内", "內") and value[-2:-1] == " ":
        return value[:-1]
    if value and _is_cjk(value[-1]):
        event = rules.CN_EVENT_VERB.search(value.translate(rules.TRAD_TO_SIMP))
        if event and event.start() > 0 and _is_cjk(value[event.start() - 1]):
            return value[: event.start()]
    return value


def _copulas(view: _View, start: int, end: int) -> list[regex.Match[str]]:
    if not view.may_match(rules.COPULA):
        return []
    return list(rules.COPULA.finditer(view.masked, start, end))


def _extract_correction(view: _View) -> str | None:
    text = view.masked
    # "should be X", "应该是 X".
    for frame in rules.CORRECTION_FRAMES:
        m = frame.search(text) if view.may_match(frame) else None
        if m and (value := _grab_value(view, m.end(), view.clause(m.end())[1])):
            return value
    # "你把李总写成王总了": the value the agent overwrote is the right one.
    if "成" in text and (wrote := rules.WROTE_AS.search(text)):
        return _clean(view.prose[wrote.start(1) : wrote.end(1)])
    # "<new>, not <old>": the value sits right before the negation.
    for m in rules.VALUE_BEFORE_NOT.finditer(text) if view.may_match(rules.VALUE_BEFORE_NOT) else ():
        if m.start() > 0 and (value := _value_before(view, m.start(), m.end())):
            return value
    # "<thing> is <value>" in a clause that is not the "you did X" one.
    you = view.may_match(rules.YOU_CLAUSE)
    stated = [(a, b) for a, b in view.clauses() if not (you and rules.YOU_CLAUSE.match(text, a))]
    for c_start, c_end in stated:
        copulas = _copulas(view, c_start, c_end)
        if copulas and (value := _grab_value(view, copulas[-1].end(), c_end)):
            return value
    # "you wrote Monday but it's Tuesday": the value after "but" in the "you did X" clause.
    for c_start, c_end in view.clauses():
        in_you_clause = you and rules.YOU_CLAUSE.match(text, c_start) is not None
        but = rules.BUT_STATED.search(text, c_start, c_end) if in_you_clause else None
        if but is not None:
            copulas = _copulas(view, but.end(), c_end)
            if copulas and (value := _grab_value(view, copulas[-1].end(), c_end)):
                return value
    # Last resort: the first figure stated outside a "you did X" clause, with its unit.
    for c_start, c_end in stated:
        toks = _tokens(view.prose, c_start, c_end)
        for tok in toks:
            if any(ch.isdigit() for ch in tok.group()):
                unit = next(toks, None)
                if unit is not None and _is_unit(unit.group()):
                    return _clean(view.prose[tok.start() : unit.end()])
                return _clean(tok.group())
    return None


def _is_unit(token: str) -> bool:
    """A unit of measure that belongs to the figure before it ("200 g", "100 度")."""
    if _is_cjk(token):
        return rules.CN_UNIT.fullmatch(token.translate(rules.TRAD_TO_SIMP)) is not None
    return token.lower() in rules.MEASURE_UNIT


def _extract_constraint(view: _View, anchor: int) -> str | None:
    """The requirement in the clause of the first constraint cue.

    It starts after a connective ("but", "also", "另外", "不过") and after a
    modal that only frames it ("needs to", "make sure", "但是要"), and ends at
    the clause end without trailing softeners ("though", "吧", "就行").
    """
    if anchor < 0:
        return None
    text = view.masked
    c_start, c_end = view.clause(anchor)
    # "also, log every retry": a lead-in alone in its clause; the requirement follows.
    if view.prose[c_start:c_end].strip(rules.EDGE_PUNCT).lower() in rules.LEAD_INS and c_end < len(text):
        c_start, c_end = view.clause(c_end + 1)
    start = c_start
    if conn := rules.CONNECTIVE.search(text, c_start, c_end):
        start = conn.end()
    cn_modal = rules.CN_MODAL.match(text, start, c_end) if view.may_match(rules.CN_MODAL) else None
    if cn_modal and cn_modal.end() > start:
        start = cn_modal.end()
    elif view.may_match(rules.EN_MODAL) and (en_modal := rules.EN_MODAL.search(text, start, c_end)):
        start = en_modal.end()
    end = c_end
    # "preserve the timestamps when you copy them": the requirement, not its occasion.
    occasion = view.may_match(rules.TRAILING_OCCASION) and rules.TRAILING_OCCASION.search(text, start, c_end)
    if occasion and occasion.start() > start:
        end = c_end = occasion.start()
    softener = view.may_match(rules.TRAILING_SOFTENER) and rules.TRAILING_SOFTENER.search(text, start, c_end)
    if softener:
        end = softener.start()
    return _clean(view.prose[start:end])


# ---------------------------------------------------------------------------
# Step 6: the learned tier, and how it combines with the rules
# ---------------------------------------------------------------------------
# The rules' shape stands unless the learned tier all but rules it out (its
# probability for that shape below ``_FLOOR``); where the rules found no shape
# (``unknown``) or are ruled out, the learned tier's top shape wins. Chosen on
# out-of-fold answers on data the rules were never tuned on
# (``train.CALIBRATION_FILES``); see ALGORITHMS.md, "Combination".
_FLOOR: Final = 0.02
# Where the rules found nothing, the learned tier's top shape needs this much,
# and may not be ``confusion``: a question the rules do not read as being about
# the agent's choice or meaning is about something else (spec rule 6).
_OVERRIDE_UNKNOWN: Final = 0.5
# ... unless it is a repair shape and the learned tier thinks a repair more likely
# than not (its four repair shapes together at least this much): the repair
# decision is what matters most (docs/FEEDBACK_SHAPES.md, scoring), and a
# rejection phrased in a way no rule knows ("segfault", "撤回", "唔係咁") spreads
# its probability over negative and correction. Out of fold on the calibration
# files this moved trigger accuracy from 0.938 to 0.950 and shape accuracy from
# 0.909 to 0.917 (0.4-0.7 were within half a point).
_OVERRIDE_REPAIR: Final = 0.5
# A fixed order (not the frozenset's, which varies with hash seeds): the sum is the same every run.
_REPAIR_VALUES: Final = tuple(s.value for s in Shape if s in _REPAIR_SHAPES)


class Combined(NamedTuple):
    """The two tiers' answers for one message, and the combination's (before calibration)."""

    shape: Shape
    raw: float  # the learned probability of ``shape`` (or the rules' confidence without a model)
    agree: bool  # both tiers chose ``shape``
    rule_shape: Shape
    learned_shape: Shape | None


def prepared_text(text: object) -> str:
    """The text both tiers read: trimmed, windowed, code blanked, folded."""
    trimmed = _coerce(text).strip()
    return _prepare(trimmed).norm if trimmed else ""


def _combine(rule: Shape, rule_conf: float, norm: str, model: LearnedModel | None) -> Combined:
    if model is None:
        return Combined(rule, rule_conf, True, rule, None)
    probs = model.probabilities(norm)
    top_value = max(probs, key=probs.__getitem__)
    top = Shape(top_value)
    if top is rule:
        return Combined(rule, probs[top_value], True, rule, top)
    if rule is Shape.UNKNOWN:
        repair = top.triggers_repair and sum(probs[v] for v in _REPAIR_VALUES) >= _OVERRIDE_REPAIR
        if not repair and (probs[top_value] < _OVERRIDE_UNKNOWN or top is Shape.CONFUSION):
            return Combined(rule, probs[rule.value], False, rule, top)
    elif probs[rule.value] >= _FLOOR:
        return Combined(rule, probs[rule.value], False, rule, top)
    return Combined(top, probs[top_value], False, rule, top)


def combine_raw(text: object, model: LearnedModel | None) -> Combined:
    """Both tiers' answers and the uncalibrated combination (for training and calibration)."""
    trimmed = _coerce(text).strip()
    if not trimmed:
        return Combined(Shape.UNKNOWN, 1.0, True, Shape.UNKNOWN, None)
    prepared = _prepare(trimmed)
    _masked, _keys, ev = _score(prepared)
    rule = _resolve(ev.scores)
    return _combine(rule, _confidence(rule, ev.scores), prepared.norm, model)


# Calibration: the learned probability of the final shape, in bins, within one
# of four groups — how the combination reached its answer — maps to the observed
# accuracy of answers like it (smoothed, monotone). The groups differ sharply
# out of fold: both tiers agreeing is right ~99% of the time, the rules keeping
# a shape against the learned tier ~65%, the rules keeping ``unknown`` while the
# learned tier leaned elsewhere ~30%. One "disagree" group pooled the last two
# and reported ~0.5 for both, over-confident for the kept ``unknown``s.
_CAL_EDGES: Final = (0.4, 0.55, 0.7, 0.85, 1.0)
CALIBRATION_GROUPS: Final = ("agree", "rules", "unknown", "learned")
# Pseudo-counts pulling a bin towards its centre: a bin with few answers says little.
_CAL_PRIOR: Final = 2


def calibration_group(comb: Combined) -> str:
    """Which way the combination reached its answer (a key of the reliability map)."""
    if comb.agree:
        return "agree"
    if comb.shape is comb.rule_shape:
        return "unknown" if comb.shape is Shape.UNKNOWN else "rules"
    return "learned"


def fit_calibration(rows: Sequence[tuple[Combined, str]]) -> dict[str, list[float]]:
    """Reliability map fitted on (combined answer, true shape) pairs: group -> accuracy per bin."""
    out: dict[str, list[float]] = {}
    centres = [(lo + hi) / 2 for lo, hi in zip((0.0, *_CAL_EDGES[:-1]), _CAL_EDGES, strict=True)]
    for group in CALIBRATION_GROUPS:
        hits = [0] * len(_CAL_EDGES)
        counts = [0] * len(_CAL_EDGES)
        for comb, label in rows:
            if calibration_group(comb) == group:
                b = _bin(comb.raw)
                counts[b] += 1
                hits[b] += comb.shape.value == label
        # Smoothed towards the bin's own raw score, then made non-decreasing
        # (pool adjacent violators): a higher learned probability never lowers it.
        values = [
            (h + _CAL_PRIOR * c) / (n + _CAL_PRIOR) for h, n, c in zip(hits, counts, centres, strict=True)
        ]
        weights = [n + _CAL_PRIOR for n in counts]
        out[group] = [round(v, 3) for v in _pav(values, weights)]
        out[group + "_counts"] = [float(n) for n in counts]
    return out


def _bin(raw: float) -> int:
    return min(bisect.bisect_left(_CAL_EDGES, raw), len(_CAL_EDGES) - 1)


def _pav(values: list[float], weights: list[int]) -> list[float]:
    blocks: list[list[float]] = []  # [value, weight, size]
    for v, w in zip(values, weights, strict=True):
        blocks.append([v, float(w), 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            b = blocks.pop()
            a = blocks[-1]
            total = a[1] + b[1]
            a[0] = (a[0] * a[1] + b[0] * b[1]) / total
            a[1] = total
            a[2] += b[2]
    return [b[0] for b in blocks for _ in range(int(b[2]))]


def _calibrated(comb: Combined, model: LearnedModel | None) -> float:
    if model is None or comb.learned_shape is None:
        return comb.raw
    table = model.meta.get("calibration")
    if not isinstance(table, dict):
        return round(comb.raw, 2)
    values = table.get(calibration_group(comb))
    if not isinstance(values, list) or len(values) != len(_CAL_EDGES):
        return round(comb.raw, 2)
    return round(float(values[_bin(comb.raw)]), 2)


# ---------------------------------------------------------------------------
# Public entry point
# ---------------------------------------------------------------------------
def classify_feedback(text: object, agent_text: object = None) -> ClassifiedFeedback:
    """Classify one user message; see the module docstring and the shapes spec.

    ``text`` may be ``str``, ``bytes`` (decoded as UTF-8, bad bytes replaced)
    or ``None``; anything else raises ``InvalidInputError``. ``agent_text``,
    the agent's previous turn, is optional context (see ``classify_with``).
    """
    return classify_with(text, agent_text=agent_text, model=shipped_model())


def classify_with(
    text: object, *, agent_text: object = None, model: LearnedModel | None = None
) -> ClassifiedFeedback:
    """``classify_feedback`` with an explicit learned model (``None``: the rules alone)."""
    trimmed = _coerce(text).strip()
    if not trimmed:
        return ClassifiedFeedback(Shape.UNKNOWN, 0.0, text=trimmed)
    prepared = _prepare(trimmed)
    masked, keys, ev = _score(prepared)
    rule = _resolve(ev.scores)
    comb = _combine(rule, _confidence(rule, ev.scores), prepared.norm, model)
    shape = comb.shape
    prefer = avoid = correction = constraint = None
    if shape is Shape.PREFERENCE:
        prefer, avoid = _extract_preference(_View.build(prepared.prose, masked, keys))
    elif shape is Shape.CORRECTION:
        correction = _extract_correction(_View.build(prepared.prose, masked, keys))
    elif shape is Shape.CONSTRAINT:
        view = _View.build(prepared.prose, masked, keys)
        constraint = _extract_constraint(view, ev.constraint_anchor)
    if prefer or avoid or correction or constraint:
        # A field is the user's own words: never one the preparation changed
        # (a control character read as a space).
        prefer, avoid = _verbatim(prefer, trimmed), _verbatim(avoid, trimmed)
        correction, constraint = _verbatim(correction, trimmed), _verbatim(constraint, trimmed)
    confidence = _calibrated(comb, model)
    if _log.isEnabledFor(logging.DEBUG):
        _log.debug(
            "classified %s (%.2f) rules=%s learned=%s scores=%s cues=%s",
            shape.value,
            confidence,
            comb.rule_shape.value,
            comb.learned_shape.value if comb.learned_shape else None,
            {s: round(v, 2) for s, v in ev.scores.items() if v},
            ev.fired,
        )
    # Positional arguments: measurably cheaper than keywords for this frozen class.
    result = ClassifiedFeedback(shape, confidence, prefer, avoid, correction, constraint, trimmed)
    if agent_text is not None:
        result = _context.resolve(result, _coerce(agent_text))
    return result


def _verbatim(value: str | None, text: str) -> str | None:
    if value is None or value not in text:
        return None
    # A field must not end inside a combining sequence ("C" of "C\u0301"):
    # after normalising both, it must still be found in the message.
    if not value.isascii() or not text.isascii():
        folded = unicodedata.normalize("NFKC", value).casefold()
        if folded not in unicodedata.normalize("NFKC", text).casefold():
            return None
    return value
