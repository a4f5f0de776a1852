"""The gate at run time: which rules and frames can match a given text.

Per message the gate costs one pass to collect the text's words and
characters (``_keys_of``) and a few set intersections and bit masks
(``_Gate``); a skipped rule is one that could not have matched, so the
answer is the same as running every rule. Built at import from the gate
data (``gate_data``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

import regex

from . import rules
from .derive import _WORD_CHARS, _WORD_RUN
from .gate_data import _GATE_DATA, _GATED_FRAMES, _CuePart, _Stored


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
