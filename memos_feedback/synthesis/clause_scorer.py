"""Which of a message's instructions is the lesson: a learned score over the rules' candidates.

``clauses`` finds the candidates — every clause that prescribes or forbids,
in the user's words, kept whole. Which one carries the main fix is the
part hand-written ranking got wrong out of domain (a message that says
"don't use --forceall; if only DESeq2 changed, use --forcerun deseq2;
always dry-run first" has three; the reference is the second). A small
linear model per side scores each candidate from a few features:
whether it names something concrete and how much code it carries, a firm
cue ("must", "改用"), a cue of contrast ("instead", "正确做法"), an
example or a condition inside it, its place among the side's candidates
and in the message, its length, and whether the classifier's span comes
from it.

The weights are data (``clause_weights.json``), fitted by ``memos-feedback
train --tier clauses`` on the recall corpus's references (leave one domain out
for the figure of record: ALGORITHMS.md, "Lessons"); scoring is a dot
product, with no dependency at run time. Ties keep the user's order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Final, NamedTuple

from ..errors import ConfigError

__all__ = ["FEATURES", "WEIGHTS_PATH", "Candidate", "candidate_features", "pick", "weights"]

WEIGHTS_PATH: Final = Path(__file__).resolve().parent / "clause_weights.json"

FEATURES: Final = (
    "bias",
    "concrete",
    "firm",
    "hint",
    "position",
    "first",
    "last",
    "code",
    "backticks",
    "length",
    "contrast",
    "example",
    "sentence",
    "condition",
)

_CODE = re.compile(r"`[^`]+`|--?[A-Za-z][\w-]*|[\w.-]+/[\w./-]+|\w+=\S+|\w+\.\w+\(|\b[A-Z_]{3,}\b")
_CONTRAST = re.compile(r"\b(?:instead|rather)\b|改用|换成|换用|改成|改为|就用|正确做法|应该", re.IGNORECASE)
_EXAMPLE = re.compile(r"\be\.g\.|\bfor example\b|\bsuch as\b|比如|例如")
_CONDITION = re.compile(r"\b(?:if|when|unless)\b|如果|的话", re.IGNORECASE)
_MAX_CODE = 5
_MAX_LENGTH = 300


class Candidate(NamedTuple):
    """One clause of a side: its text, its sentence's place, and what the rules saw in it."""

    clause: str
    sentence: int
    sentences: int
    concrete: bool
    firm: bool


def candidate_features(items: Sequence[Candidate], hint: str | None) -> list[list[float]]:
    """One row of ``FEATURES`` per candidate of a side (in the user's order)."""
    last = max(len(items) - 1, 1)
    rows: list[list[float]] = []
    for k, c in enumerate(items):
        text = c.clause
        rows.append(
            [
                1.0,
                float(c.concrete),
                float(c.firm),
                float(hint is not None and hint != "" and hint in text),
                k / last,
                float(k == 0),
                float(k == len(items) - 1),
                min(len(_CODE.findall(text)), _MAX_CODE) / _MAX_CODE,
                float("`" in text),
                min(len(text), _MAX_LENGTH) / _MAX_LENGTH,
                float(_CONTRAST.search(text) is not None),
                float(_EXAMPLE.search(text) is not None),
                c.sentence / max(c.sentences - 1, 1),
                float(_CONDITION.search(text) is not None),
            ]
        )
    return rows


@cache
def weights() -> dict[str, tuple[float, ...]]:
    """The shipped weights per side (``prefer``, ``avoid``), in ``FEATURES`` order."""
    raw = json.loads(WEIGHTS_PATH.read_text(encoding="utf-8"))
    if tuple(raw["features"]) != FEATURES:
        why = "fitted on other features; run `memos-feedback train --tier clauses`"
        raise ConfigError("clause_weights.json", raw["features"], why)
    return {side: tuple(float(w) for w in raw["weights"][side]) for side in ("prefer", "avoid")}


def pick(side: str, items: Sequence[Candidate], hint: str | None) -> list[int]:
    """The candidates' indexes, best first (the first of equals is the user's first)."""
    w = weights()[side]
    scores = [sum(a * b for a, b in zip(row, w, strict=True)) for row in candidate_features(items, hint)]
    return sorted(range(len(items)), key=lambda k: (-scores[k], k))
