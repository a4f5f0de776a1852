"""Steps 2-4 of the classifier: mask, score, resolve.

Phrases whose words must not be read one by one are blanked (some count as
evidence for their real meaning); every cue that matches adds its weight to
its shape; among shapes with enough evidence the spec's tie-break order
decides. Only the rules the gate lets through run.
"""

from __future__ import annotations

from typing import Final

from ..types import Shape
from . import rules
from .gate import (
    _FIRST_PART,
    _FRAGMENTS_ARE_WORDS,
    _GATE,
    _PART_CUE,
    _PART_SEARCH,
    _Keys,
    _keys_of,
    _part_search,
)
from .prepare import _blank, _Prepared

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
