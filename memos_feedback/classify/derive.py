"""How the gate's keys are derived from a rule's source (``_Deriver``).

A message can match only a few of the ~150 masks and cues, and one
``regex`` call costs about a microsecond even when it fails, so each rule
runs only when the message contains something every match of that rule must
contain: a whole ASCII word ("thanks"), a character ("谢", "?") or an ASCII
fragment ("hallucinat"). This module finds those keys in a pattern's source:
literal strings forced by the pattern, with ``\\b`` / ``\\s`` telling where
words end. It runs ahead of time (``devtools.gate``), or at import when the
generated table is stale (``gate_data``).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Sequence
from typing import Any, Final, NamedTuple

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
