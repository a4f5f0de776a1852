"""Rule-based classifier for one user feedback message (English and Chinese).

``classify_feedback(text)`` reads the message a user sent right after the
agent's answer and returns one of eight shapes (see
``shared/spec/feedback-shapes.md``) plus the phrases a repair needs: what to
prefer, what to avoid, the corrected value, the added requirement.

How it decides, in four steps:

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

Extraction then runs only for the chosen shape. Everything is deterministic
and takes time linear in the input (bounded windows, bounded patterns).

*Gating* keeps steps 2 and 3 cheap. A message can match only a few of the
~150 masks and cues, and one ``regex`` call costs about a microsecond even
when it fails, so each rule runs only when the message contains something
every match of that rule must contain: a whole ASCII word ("thanks"), a
character ("谢", "?") or an ASCII fragment ("hallucinat"). Those keys are
derived once, at import, from each rule's own source (``_Deriver``: literal
strings forced by the pattern, with ``\b`` / ``\s`` telling where words
end), so the rules file stays the single source of truth and a rule whose
keys cannot be derived simply always runs. Per message the gate costs one
pass to collect the text's words and characters and a few set
intersections; a skipped rule is one that could not have matched, so the
answer is the same as running every rule.
"""

from __future__ import annotations

import bisect
import enum
import importlib
import itertools
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import regex

from . import _classifier_rules as rules
from .errors import InvalidInputError

__all__ = ["ClassifiedFeedback", "Shape", "classify_feedback"]

_log = logging.getLogger("memos_feedback.classifier")

# Long inputs are mostly pasted logs; the user's words sit at the start or
# the end. Classifying these two windows bounds the cost whatever the size.
HEAD_WINDOW = 2000
TAIL_WINDOW = 2000

# Evidence a shape needs before it can win.
_THRESHOLD = 1.0


class Shape(enum.Enum):
    """What a feedback message means about the agent's previous step."""

    POSITIVE = "positive"
    NEGATIVE = "negative"
    CORRECTION = "correction"
    CONSTRAINT = "constraint"
    PREFERENCE = "preference"
    CONFUSION = "confusion"
    INSTRUCTION = "instruction"
    UNKNOWN = "unknown"

    @property
    def triggers_repair(self) -> bool:
        """True when the message asks the agent to change what it did."""
        return self in _REPAIR_SHAPES


_REPAIR_SHAPES = frozenset({Shape.NEGATIVE, Shape.CORRECTION, Shape.CONSTRAINT, Shape.PREFERENCE})

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


@dataclass(frozen=True, slots=True)
class ClassifiedFeedback:
    """The classifier's answer for one message."""

    shape: Shape
    confidence: float
    prefer: str | None = None
    avoid: str | None = None
    correction: str | None = None
    constraint: str | None = None
    text: str = ""


# ---------------------------------------------------------------------------
# Step 1: prepare the text
# ---------------------------------------------------------------------------
_FENCE = "```"
# How far back from an anchor extraction looks for the start of a phrase;
# keeps every extraction step bounded even inside one very long clause.
_LOOKBACK = 160


@dataclass(frozen=True, slots=True)
class _View:
    """Aligned copies of the message (same length, same offsets), for extraction."""

    prose: str  # original characters, code blanked: extraction slices this
    masked: str  # folded, inline code hidden, mask spans blanked: frames run on this
    break_starts: tuple[int, ...]  # clause breaks, sorted
    break_ends: tuple[int, ...]

    @classmethod
    def build(cls, prose: str, masked: str) -> _View:
        # Clause bounds matter to extraction only, so they are found here.
        breaks = [m.span() for m in rules.CLAUSE_BREAK.finditer(prose)]
        return cls(prose, masked, tuple(a for a, _ in breaks), tuple(b for _, b in breaks))

    def clause(self, pos: int) -> tuple[int, int]:
        """Start and end of the clause that contains ``pos`` (binary search)."""
        i = bisect.bisect_right(self.break_ends, pos)
        start = self.break_ends[i - 1] if i > 0 else 0
        j = bisect.bisect_left(self.break_starts, pos)
        end = self.break_starts[j] if j < len(self.break_starts) else len(self.prose)
        return start, max(start, end)

    def clauses(self) -> list[tuple[int, int]]:
        """Every non-blank clause, in order."""
        bounds = zip((0, *self.break_ends), (*self.break_starts, len(self.prose)), strict=True)
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
try:
    _sre: Any = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover - a Python without re._parser
    _sre = None

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
# Chinese characters too common to say much; a rarer character of the same
# literal makes a better key.
_COMMON_CJK = frozenset("的了是不我你这那个一在有人他也就都要么什吗吧呢啊好用")

_Strings = frozenset[str]
_NOTHING: Final[_Strings] = frozenset({""})  # "no known text" (matches empty)
# A test a message can pass cheaply: ("word", w) a whole ASCII word,
# ("char", c) one non-word character, ("sub", s) an ASCII substring.
_Key = tuple[str, str]


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
    return frozenset(x + y for x in a for y in b)


def _fold(ch: str) -> str:
    # The rules fold ASCII case only (IGNORECASE under ASCII).
    return ch.lower() if ch.isascii() else ch


class _Deriver:
    """Derives the gate keys of patterns, with memo tables for one build."""

    def __init__(self) -> None:
        self._shapes: dict[tuple[int, int], _Shape] = {}
        self._costs: dict[_Strings, float | None] = {}
        self._keys: dict[str, tuple[float, _Key] | None] = {}

    def gate_keys(self, pattern: regex.Pattern[str]) -> frozenset[_Key] | None:
        """Keys one of which every match of ``pattern`` implies; None when unknown."""
        if _sre is None:
            return None
        try:
            tree = _sre.parse(pattern.pattern)
            required = self.seq_need(tree, _NOTHING, _NOTHING)
        except (re.error, RecursionError, TypeError, ValueError, AttributeError):
            return None
        finally:
            self._shapes.clear()  # keyed by id(): valid for one parse tree only
        if required is None:
            return None
        keys = [self.key_of(s) for s in required]
        return frozenset(k[1] for k in keys if k) if all(keys) else None

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
            return _exactly(frozenset({_fold(ch)})) if ch != _EDGE else _ANYTHING
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
        if op is sre.AT:
            edges = (sre.AT_BOUNDARY, sre.AT_BEGINNING, sre.AT_BEGINNING_STRING, sre.AT_END, sre.AT_END_STRING)
            return _exactly(frozenset({_EDGE if av in edges else ""}))
        if op in (sre.ASSERT, sre.ASSERT_NOT):
            return _exactly(_NOTHING)  # zero-width: what it looks at is not part of the match
        return _ANYTHING  # any character, a negated literal, a group reference

    # -- requirements: one of these strings is inside every match -------------
    # A node is read with the strings that must come right before (``left``)
    # and right after (``right``) it, so "\b(?:thanks?|thx)\b" yields whole
    # words, not fragments of words.
    def seq_need(self, items: Sequence[tuple[Any, Any]], left: _Strings, right: _Strings) -> _Strings | None:
        # Adjacent exact items (the letters of a word) are read as one.
        # Each item's own exact strings stay candidates ("错" for "错误(?:日志|码)").
        parts: list[tuple[_Shape, tuple[Any, Any] | None]] = []
        needs: list[_Strings | None] = []
        for op, av in items:
            shape = self.shape(op, av)
            needs.append(shape.exact)
            if shape.exact is not None and parts and parts[-1][1] is None:
                joined = _product(parts[-1][0].exact, shape.exact)
                if joined is not None:
                    parts[-1] = (_exactly(joined), None)
                    continue
            parts.append((shape, None if shape.exact is not None else (op, av)))
        lefts: list[_Strings] = []
        ctx = left
        for shape, _ in parts:
            lefts.append(ctx)
            ctx = _after(ctx, shape)
        rights: list[_Strings] = []
        ctx = right
        for shape, _ in reversed(parts):
            rights.append(ctx)
            ctx = _before(shape, ctx)
        rights.reverse()
        for (shape, node), before, after in zip(parts, lefts, rights, strict=True):
            if node is None and shape.exact is not None:
                exact = shape.exact
                both = _product(before, _product(exact, after))
                needs += (both, _product(before, exact), _product(exact, after), exact)
            elif node is not None:
                needs.append(self.need(node[0], node[1], before, after))
        return self.rarest(needs)

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
            cost = self._costs.get(strings, -1.0)
            if cost == -1.0:
                cost = self._costs[strings] = self._cost(strings)
            if cost is not None and (best is None or cost < best[0]):
                best = (cost, strings)
        return best[1] if best else None

    def _cost(self, strings: _Strings) -> float | None:
        total = 0.0
        for s in strings:
            key = self.key_of(s)
            if key is None:
                return None  # this literal implies nothing testable
            total += key[0]
        return total if strings else None

    def key_of(self, literal: str) -> tuple[float, _Key] | None:
        if literal not in self._keys:
            self._keys[literal] = _key_of(literal)
        return self._keys[literal]


def _class_shape(items: list[tuple[Any, Any]]) -> _Shape:
    sre = _sre
    chars: set[str] = set()
    for op, av in items:
        if op is sre.LITERAL:
            chars.add(_fold(chr(av)))
        elif op is sre.RANGE and av[1] - av[0] < _MAX_CLASS:
            chars.update(_fold(chr(c)) for c in range(av[0], av[1] + 1))
        elif op is sre.CATEGORY and av in (sre.CATEGORY_SPACE, sre.CATEGORY_NOT_WORD):
            chars.add(_EDGE)  # too many to list, but none continues a word
        elif op is sre.NEGATE and (sre.CATEGORY, sre.CATEGORY_WORD) in items:
            return _NON_WORD  # [^\w...]
        else:
            return _ANYTHING
    if _EDGE in chars:
        return _NON_WORD if all(c == _EDGE or c not in _WORD_CHARS for c in chars) else _ANYTHING
    return _exactly(frozenset(chars)) if len(chars) <= _MAX_CLASS else _ANYTHING


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
    if body.exact is not None and high <= 3:  # x?  x{1,3}: spell the few forms out
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
    """The cheapest test implied by ``literal`` occurring, with a rough chance it passes."""
    keys: list[tuple[float, _Key]] = []
    for m in _WORD_RUN.finditer(literal):
        word = m.group()
        # With an edge or a non-word character on both sides inside the
        # literal, the run is a whole word of the message; else part of one.
        if 0 < m.start() and m.end() < len(literal):
            keys.append((4 * 0.45 ** len(word), ("word", word)))
        else:
            keys.append((16 * 0.45 ** len(word), ("sub", word)))
    for ch in literal:
        if ch != _EDGE and ch not in _WORD_CHARS:
            keys.append((0.6 if ch.isascii() or ch in _COMMON_CJK else 0.3, ("char", ch)))
    return min(keys) if keys else None


class _Keys(NamedTuple):
    """What a gate tests a text for, read once per text."""

    words: set[str]  # whole ASCII words, lowercased
    chars: set[str]
    lower: str


def _keys_of(text: str) -> _Keys:
    lower = text.lower()
    if text.isascii():  # lower() is plain ASCII folding here: same words
        return _Keys(set(_WORD_RUN.findall(lower)), set(text), lower)
    # Elsewhere lower() could glue a word to e.g. the Kelvin sign: split first.
    return _Keys({w.lower() for w in _WORD_RUN.findall(text)}, set(text), lower)


@dataclass(frozen=True, slots=True)
class _Gate:
    """For an ordered list of patterns, the ones that can match a given text.

    Each pattern is indexed under the keys derived from its source; one with
    no derivable key always runs.
    """

    always: frozenset[int]
    by_key: dict[str, frozenset[int]]  # whole words and characters (never a word character)
    words: frozenset[str]
    chars: frozenset[str]
    by_sub: tuple[tuple[str, frozenset[int]], ...]

    @classmethod
    def build(cls, patterns: Sequence[regex.Pattern[str]]) -> _Gate:
        deriver = _Deriver()
        always: set[int] = set()
        index: dict[str, dict[str, set[int]]] = {"word": {}, "char": {}, "sub": {}}
        for i, pattern in enumerate(patterns):
            keys = deriver.gate_keys(pattern)
            if keys is None:
                always.add(i)
                continue
            for kind, value in keys:
                index[kind].setdefault(value, set()).add(i)
        frozen = {kind: {k: frozenset(v) for k, v in table.items()} for kind, table in index.items()}
        return cls(
            always=frozenset(always),
            by_key=frozen["word"] | frozen["char"],
            words=frozenset(frozen["word"]),
            chars=frozenset(frozen["char"]),
            by_sub=tuple(frozen["sub"].items()),
        )

    def candidates(self, keys: _Keys, after: int = -1) -> list[int]:
        """Indexes (ascending) of the patterns that may match, skipping those up to ``after``."""
        found = set(self.always)
        by_key = self.by_key
        for key in keys.words & self.words:
            found |= by_key[key]
        for key in keys.chars & self.chars:
            found |= by_key[key]
        for sub, indexes in self.by_sub:
            if sub in keys.lower:
                found |= indexes
        if after >= 0:
            return sorted(i for i in found if i > after)
        return sorted(found)


def _alternatives(source: str) -> list[str]:
    """The top-level alternatives of a pattern's source (itself when it has none)."""
    parts: list[str] = []
    depth = start = 0
    i = 0
    in_class = False
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            i += 1 + (source.startswith("^]", i + 1) * 2 or source.startswith("]", i + 1))
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(source[start:i])
            start = i + 1
        i += 1
    parts.append(source[start:])
    return parts


class _CuePart(NamedTuple):
    cue: int  # index in rules.CUES
    pattern: regex.Pattern[str]


def _cue_parts(cues: Sequence[rules.Cue]) -> tuple[_CuePart, ...]:
    """Each cue cut into runs of its top-level alternatives that share gate keys.

    ``regex`` tries every alternative of one pattern at every position, which
    is slow for long alternations (the "x over y" cue has twelve), while a
    part whose keys are absent need not run at all. Searching the parts of a
    cue in order and keeping the leftmost match (the earlier part on a tie)
    finds the match the whole pattern finds.
    """
    deriver = _Deriver()
    parts: list[_CuePart] = []
    for index, cue in enumerate(cues):
        alternatives = _alternatives(cue.pattern.pattern)
        if len(alternatives) == 1:
            parts.append(_CuePart(index, cue.pattern))
            continue
        runs: list[tuple[frozenset[_Key] | None, list[str]]] = []
        for alt in alternatives:
            keys = deriver.gate_keys(regex.compile(alt, cue.pattern.flags))
            if runs and runs[-1][0] == keys:
                runs[-1][1].append(alt)
            else:
                runs.append((keys, [alt]))
        parts += (_CuePart(index, regex.compile("|".join(run), cue.pattern.flags)) for _, run in runs)
    return tuple(parts)


# ---------------------------------------------------------------------------
# Steps 2-4: mask, score, resolve
# ---------------------------------------------------------------------------
@dataclass(slots=True)
class _Evidence:
    # Keyed by shape value, in Shape order (hashing an enum member is slow).
    scores: dict[str, float]
    # Offsets inside each shape's matched cues (the last matched character),
    # so extraction can find the clause that carries the evidence.
    anchors: dict[str, list[int]]
    fired: list[str]


_SHAPE_VALUES: Final = tuple(s.value for s in Shape)
_MASK_GATE: Final = _Gate.build([mask.pattern for mask in rules.MASKS])
_CUE_PARTS: Final = _cue_parts(rules.CUES)
_CUE_GATE: Final = _Gate.build([part.pattern for part in _CUE_PARTS])


def _apply_masks(norm: str, ev: _Evidence) -> tuple[str, _Keys]:
    """Blank every mask's spans, in order; returns the text and its gate keys."""
    masked = norm
    keys = _keys_of(masked)
    todo = _MASK_GATE.candidates(keys)
    pos = 0
    while pos < len(todo):
        index = todo[pos]
        pos += 1
        mask = rules.MASKS[index]
        spans = [m.span() for m in mask.pattern.finditer(masked)]
        if not spans:
            continue
        masked = _blank(masked, spans)
        if mask.shape is not None:
            ev.scores[mask.shape] += mask.weight
            ev.anchors[mask.shape].append(spans[0][1] - 1)
        ev.fired.append(mask.name)
        # Blanking can cut a word short ("…foo|bar" -> "bar"), which may
        # give later masks a word to key on: read the keys again.
        keys = _keys_of(masked)
        todo, pos = _MASK_GATE.candidates(keys, after=index), 0
    return masked, keys


def _score(prepared: _Prepared) -> tuple[str, _Evidence]:
    ev = _Evidence(
        scores=dict.fromkeys(_SHAPE_VALUES, 0.0), anchors={s: [] for s in _SHAPE_VALUES}, fired=[]
    )
    masked, keys = _apply_masks(prepared.norm, ev)
    # Anchored cues (^ ... $) must see the message without surrounding blanks.
    lead = len(masked) - len(masked.lstrip())
    stripped = masked.strip()
    # Stripping removes blanks only: ``keys`` still covers what cues can match.
    current, best = -1, None
    for index in _CUE_GATE.candidates(keys):
        part = _CUE_PARTS[index]
        if part.cue != current:
            _add_cue(ev, current, best, lead)
            current, best = part.cue, None
        m = part.pattern.search(stripped)
        if m is not None and (best is None or m.start() < best.start()):
            best = m
    _add_cue(ev, current, best, lead)
    if prepared.code_trouble and not stripped:
        # Only a pasted error, no words around it: the last step failed.
        ev.scores[Shape.NEGATIVE.value] += _THRESHOLD
        ev.fired.append("pasted-error-only")
    return masked, ev


def _add_cue(ev: _Evidence, index: int, m: regex.Match[str] | None, lead: int) -> None:
    if m is None:
        return
    cue = rules.CUES[index]
    ev.scores[cue.shape] += cue.weight
    if cue.weight > 0:
        ev.anchors[cue.shape].append(lead + m.end() - 1)
    ev.fired.append(cue.name)


def _resolve(scores: dict[str, float]) -> Shape:
    """The first shape, in the spec's tie-break order, with enough evidence."""
    for shape in _ORDER:
        if scores[shape.value] >= _THRESHOLD:
            return shape
    return Shape.UNKNOWN


def _confidence(shape: Shape, scores: dict[str, float]) -> float:
    if shape is Shape.UNKNOWN:
        # No evidence at all reads as small talk; weak evidence, less sure.
        strongest = max(scores.values())
        return round(max(0.2, 0.6 - 0.3 * max(strongest, 0.0)), 2)
    own = scores[shape.value]
    rivals = sum(1 for s, v in scores.items() if s != shape.value and v >= _THRESHOLD)
    value = 0.55 + 0.2 * min(own - _THRESHOLD, 1.5) - 0.1 * rivals
    return round(min(0.95, max(0.3, value)), 2)


# ---------------------------------------------------------------------------
# Step 5: extraction (only for the chosen shape)
# ---------------------------------------------------------------------------
def _clean(phrase: str) -> str | None:
    phrase = phrase.strip(rules.EDGE_PUNCT)
    return phrase or None


def _tokens(text: str, start: int, end: int) -> Iterator[regex.Match[str]]:
    return rules.TOKEN.finditer(text, start, end)


def _is_cjk(tok: str) -> bool:
    return bool(rules.CJK.match(tok))


def _is_cn_modifier(tok: str) -> bool:
    return tok.translate(rules.TRAD_TO_SIMP) in rules.CN_MODIFIERS


def _cut_cjk(run: str) -> str:
    """A Chinese noun phrase ends before a particle or verb ("手写循环", not "手写循环吧")."""
    m = rules.CN_CUT.search(run, 2)
    return run[: m.start()] if m else run[:8]


def _grab_forward(view: _View, start: int) -> tuple[str, int] | None:
    """The tool/approach phrase that starts at ``start``, and where it ends.

    Determiners and modifiers ("the", "plain", "原生") are skipped; a pronoun
    ("it", "这个") means the frame did not name a tool.
    """
    prose = view.prose
    end = view.clause(start)[1]
    words: list[str] = []
    last_end = start
    # A tool name sits within the first few tokens after its frame.
    for tok in itertools.islice(_tokens(prose, start, end), 12):
        t = tok.group()
        if t[0] in rules.QUOTES and len(t) > 2 and t[-1] in rules.QUOTES:
            return (t[1:-1].strip(), tok.end()) if not words else (" ".join(words), last_end)
        if _is_cjk(t):
            if words:
                break
            if _is_cn_modifier(t):
                continue
            cut = _cut_cjk(t)
            return cut, tok.start() + len(cut)
        if not (t[0].isalnum() or t[0] in "$¥€£~./_"):
            break
        low = t.lower().rstrip(".:'")
        if not words and low in rules.DETERMINERS:
            continue
        if not words and (low in rules.DEMONSTRATIVES or low in rules.SOFTENERS):
            return None
        if words and low in rules.TOOL_STOP:
            break
        words.append(t)
        last_end = tok.end()
        if len(words) == 3:
            break
    while words and words[-1].lower() in ("one", "ones", "thing", "stuff"):
        words.pop()
    phrase = _clean(" ".join(words))
    return (phrase, last_end) if phrase else None


def _grab_backward(view: _View, pos: int) -> str | None:
    """The tool phrase that ends right before ``pos`` in the same clause."""
    start = max(view.clause(max(pos - 1, 0))[0], pos - _LOOKBACK)
    words: list[str] = []
    for tok in reversed(list(_tokens(view.prose, start, pos))):
        t = tok.group()
        low = t.lower()
        if not words and (low in rules.SOFTENERS or low in ("one", "ones")):
            continue
        if _is_cjk(t):
            if not words and not _is_cn_modifier(t):
                return _clean(t[-8:])
            break
        stop = low in rules.DETERMINERS or low in rules.TOOL_STOP or low in rules.DEMONSTRATIVES
        if stop or not t[0].isalnum():
            break
        words.insert(0, t)
        if len(words) == 3:
            break
    return _clean(" ".join(words))


def _first_forward(
    view: _View, frames: Iterable[regex.Pattern[str]], skip: str | None
) -> tuple[str, int] | None:
    """The first phrase a frame introduces (frames tried in priority order)."""
    for frame in frames:
        for m in frame.finditer(view.masked):
            got = _grab_forward(view, m.end())
            if got and got[0] != skip:
                return got
    return None


def _extract_preference(view: _View) -> tuple[str | None, str | None]:
    prefer: str | None = None
    prefer_end = -1
    if got := _first_forward(view, rules.PREFER_FORWARD, None):
        prefer, prefer_end = got
    else:
        # "plotly works better", "poetry please, not pip": the tool comes first.
        for frame in rules.PREFER_BACKWARD:
            m = frame.search(view.masked)
            if m and (back := _grab_backward(view, m.start())):
                prefer, prefer_end = back, m.start()
                break
    # Right after the preferred tool: "X instead of Y", "X, not Y", "X 而不是 Y".
    if (
        prefer_end >= 0
        and (c := rules.CONTRAST_AFTER.match(view.masked, prefer_end))
        and c.end() > prefer_end
    ):
        got = _grab_forward(view, c.end())
        if got and got[0] != prefer:
            return prefer, got[0]
    if got := _first_forward(view, (rules.AVOID_FORWARD,), prefer):
        return prefer, got[0]
    # "Y is overkill", "Y 太丑": the complaint names the tool before it.
    for m in rules.AVOID_BACKWARD.finditer(view.masked):
        cand = _grab_backward(view, m.start())
        if cand and cand != prefer:
            return prefer, cand
    return prefer, None


def _grab_value(view: _View, start: int, end: int) -> str | None:
    """The corrected value starting at ``start``: a few tokens, up to a stop word."""
    words: list[str] = []
    for tok in itertools.islice(_tokens(view.prose, start, end), 12):
        t = tok.group()
        if _is_cjk(t):
            if words:
                break
            # "七点四十落地": the time, not the event.
            return _clean(rules.CN_EVENT_VERB.sub("", t) or t)
        if t[0] in rules.QUOTES and len(t) > 2:
            return _clean(t) if not words else _clean(" ".join(words))
        low = t.lower()
        if not words and low in ("the", "a", "an"):
            continue
        if low in rules.VALUE_STOP or t in "—–-" or not (t[0].isalnum() or t[0] in "$¥€£~./+"):
            break
        words.append(t)
        if len(words) == 4:
            break
    return _clean(" ".join(words))


def _parallel_number(view: _View, start: int, end: int, old_start: int) -> str | None:
    """For "17 rows, not 16" / "15 号，不是 16 号": the new number, shaped like the old one."""
    old_end = min(view.clause(old_start)[1], old_start + _LOOKBACK)
    old = [t for _, t in zip(range(2), _tokens(view.prose, old_start, old_end), strict=False)]
    if not old or not old[0].group()[0].isdigit():
        return None
    new = list(_tokens(view.prose, start, end))
    for i, tok in enumerate(new):
        if tok.group()[0].isdigit():
            # Keep a unit only when the old value carries one too.
            if len(old) > 1 and i + 1 < len(new):
                return _clean(view.prose[tok.start() : new[i + 1].end()])
            return _clean(tok.group())
    return None


def _value_before(view: _View, neg_start: int, old_start: int) -> str | None:
    """The new value in "<new>, not <old>": after the clause's copula, else its last token."""
    c_start = max(view.clause(neg_start - 1)[0], neg_start - _LOOKBACK)
    value = _parallel_number(view, c_start, neg_start, old_start)
    if value is None:
        copulas = list(rules.COPULA.finditer(view.masked, c_start, neg_start))
        if copulas:
            value = _clean(view.prose[copulas[-1].end() : neg_start])
        else:
            toks = list(_tokens(view.prose, c_start, neg_start))
            value = _clean(toks[-1].group()) if toks else None
    return value if value and len(value) <= 60 else None


def _extract_correction(view: _View) -> str | None:
    text = view.masked
    # "should be X", "应该是 X".
    for frame in rules.CORRECTION_FRAMES:
        m = frame.search(text)
        if m and (value := _grab_value(view, m.end(), view.clause(m.end())[1])):
            return value
    # "<new>, not <old>": the value sits right before the negation.
    for m in rules.VALUE_BEFORE_NOT.finditer(text):
        if m.start() > 0 and (value := _value_before(view, m.start(), m.end())):
            return value
    # "<thing> is <value>" in a clause that is not the "you did X" one.
    stated = [(a, b) for a, b in view.clauses() if not rules.YOU_CLAUSE.match(text, a)]
    for c_start, c_end in stated:
        copulas = list(rules.COPULA.finditer(text, c_start, c_end))
        if copulas and (value := _grab_value(view, copulas[-1].end(), c_end)):
            return value
    # Last resort: the first figure stated outside a "you did X" clause.
    for c_start, c_end in stated:
        for tok in _tokens(view.prose, c_start, c_end):
            if any(ch.isdigit() for ch in tok.group()):
                return _clean(tok.group())
    return None


def _extract_constraint(view: _View, anchors: list[int]) -> str | None:
    """The requirement in the clause of the first constraint cue.

    It starts after a connective ("but", "also", "另外", "不过") and after a
    modal that only frames it ("needs to", "make sure", "但是要"), and ends at
    the clause end without trailing softeners ("though", "吧", "就行").
    """
    if not anchors:
        return None
    text = view.masked
    c_start, c_end = view.clause(min(anchors))
    start = c_start
    if conn := rules.CONNECTIVE.search(text, c_start, c_end):
        start = conn.end()
    cn_modal = rules.CN_MODAL.match(text, start, c_end)
    if cn_modal and cn_modal.end() > start:
        start = cn_modal.end()
    elif en_modal := rules.EN_MODAL.search(text, start, c_end):
        start = en_modal.end()
    end = c_end
    if softener := rules.TRAILING_SOFTENER.search(text, start, c_end):
        end = softener.start()
    return _clean(view.prose[start:end])


# ---------------------------------------------------------------------------
# Public entry point
# ---------------------------------------------------------------------------
def classify_feedback(text: object) -> ClassifiedFeedback:
    """Classify one user message; see the module docstring and the shapes spec.

    ``text`` may be ``str``, ``bytes`` (decoded as UTF-8, bad bytes replaced)
    or ``None``; anything else raises ``InvalidInputError``.
    """
    trimmed = _coerce(text).strip()
    if not trimmed:
        return ClassifiedFeedback(Shape.UNKNOWN, 0.0, text=trimmed)
    prepared = _prepare(trimmed)
    masked, ev = _score(prepared)
    shape = _resolve(ev.scores)
    prefer = avoid = correction = constraint = None
    if shape is Shape.PREFERENCE:
        prefer, avoid = _extract_preference(_View.build(prepared.prose, masked))
    elif shape is Shape.CORRECTION:
        correction = _extract_correction(_View.build(prepared.prose, masked))
    elif shape is Shape.CONSTRAINT:
        view = _View.build(prepared.prose, masked)
        constraint = _extract_constraint(view, ev.anchors[Shape.CONSTRAINT.value])
    confidence = _confidence(shape, ev.scores)
    if _log.isEnabledFor(logging.DEBUG):
        _log.debug(
            "classified %s (%.2f) scores=%s cues=%s",
            shape.value,
            confidence,
            {s: round(v, 2) for s, v in ev.scores.items() if v},
            ev.fired,
        )
    return ClassifiedFeedback(
        shape=shape,
        confidence=confidence,
        prefer=prefer,
        avoid=avoid,
        correction=correction,
        constraint=constraint,
        text=trimmed,
    )
