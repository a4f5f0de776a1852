"""The learned relevance gate: whether a candidate repair is about the query's problem.

A logistic regression over the signals the scorer already has (``FEATURES``),
one model per evidence scale: ``lexical`` (no cosine), and ``semantic:<model>``
for each embedding model it was trained with (a cosine's scale is the
model's own). Trained at build time (``memos-feedback train recall``,
``devtools/recall_train.py``) on the recall cases of ``tests/data/recall/``;
its artefact is data (``data/relevance_gate.json``), read once. Inference is
a dot product in plain Python.

Each model's ``threshold`` was chosen on data it was not fitted on (the
training domains' out-of-fold probabilities) so that at most 3 % of
unrelated queries get their near-miss repair; a candidate whose probability
is below it is not returned (no candidate above it: ``render()`` gives "").

The probability is also the candidate's score inside its tier. The rules
that are principles stay rules (``guidance``): rejected never, project
scope, validated before unvalidated, outcomes and recency in the ranking
factor, an exact (tool, context) asked without a query.

``using_gate`` swaps the gate for the current context (evaluation: each
fold's own gate) and can record every candidate's features (training).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import math
import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..errors import ConfigError
from .categories import CATEGORIES

__all__ = [
    "FEATURES",
    "FORMAT",
    "GATE_PATH",
    "GateModel",
    "Recorder",
    "RelevanceGate",
    "current_gate",
    "recorder",
    "using_gate",
]

FORMAT: Final = 1
GATE_PATH: Final = Path(__file__).parent / "data" / "relevance_gate.json"

# Every feature is in [0, 1]. Per candidate: the weighted share of the
# query's terms found in its problem, the cosine (0 without), their
# product, the share of the caller's situation terms found in its tool and
# context, the query's error identifiers found in / missing from its
# problem, same tool, exact (tool, context), Chinese in its problem, the
# language pair differing, its category. Per call: the query is a tool's
# report (and that times the situation share), Chinese in the query, the
# query's size.
_BASE: Final = (
    "coverage",
    "novel_coverage",
    "rarest_match",
    "lesson_in_query",
    "coverage_ratio",
    "best_coverage",
    "cosine_ratio",
    "best_cosine",
    "cosine",
    "coverage_x_cosine",
    "situation",
    "report",
    "report_x_situation",
    "same_error",
    "conflicting_error",
    "same_tool",
    "exact_context",
    "query_cjk",
    "problem_cjk",
    "language_differs",
    "query_size",
)
FEATURES: Final = (*_BASE, *(f"category_{c}" for c in CATEGORIES))


@dataclass(frozen=True, slots=True)
class GateModel:
    """One evidence scale's weights (``FEATURES`` order), bias and threshold."""

    weights: tuple[float, ...]
    bias: float
    threshold: float

    def logit(self, features: Sequence[float]) -> float:
        # map(mul) runs in C: this is called for every candidate of every call.
        total: float = sum(map(operator.mul, self.weights, features))
        return self.bias + total

    def probability(self, features: Sequence[float]) -> float:
        z = self.logit(features)
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)


class RelevanceGate:
    """The models of the artefact by scale: ``lexical`` and ``semantic:<embedding model>``."""

    __slots__ = ("models",)

    def __init__(self, models: Mapping[str, GateModel]) -> None:
        if "lexical" not in models:
            raise ConfigError("relevance_gate", sorted(models), "needs a lexical model")
        for name, m in models.items():
            if len(m.weights) != len(FEATURES):
                got = len(m.weights)
                raise ConfigError("relevance_gate", name, f"needs {len(FEATURES)} weights, has {got}")
        self.models = dict(models)

    def model(self, embedding_model: str | None) -> tuple[GateModel, bool]:
        """The model for a call, and whether it reads the cosine.

        An embedding model the gate was not trained with gets the lexical
        model: its cosines are on a scale no threshold here was chosen for.
        """
        if embedding_model is not None:
            semantic = self.models.get(f"semantic:{embedding_model}")
            if semantic is not None:
                return semantic, True
        return self.models["lexical"], False

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RelevanceGate:
        if data.get("format") != FORMAT or list(data.get("features", ())) != list(FEATURES):
            raise ConfigError("relevance_gate", data.get("format"), "artefact of another format; retrain")
        models = {
            name: GateModel(tuple(float(w) for w in m["weights"]), float(m["bias"]), float(m["threshold"]))
            for name, m in data["models"].items()
        }
        return cls(models)


@functools.lru_cache(maxsize=1)
def shipped_gate() -> RelevanceGate:
    """The packaged artefact, read once."""
    try:
        data = json.loads(GATE_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError("relevance_gate", str(GATE_PATH), f"cannot read: {exc}") from None
    return RelevanceGate.from_dict(data)


# (query key, candidate id, features) for every candidate scored while set.
Recorder = list[tuple[object, str, tuple[float, ...]]]

_gate: contextvars.ContextVar[RelevanceGate | None] = contextvars.ContextVar("relevance_gate", default=None)
_recorder: contextvars.ContextVar[tuple[Recorder, object] | None] = contextvars.ContextVar(
    "relevance_recorder", default=None
)


def current_gate() -> RelevanceGate:
    """The gate of this context (``using_gate``), else the shipped one."""
    return _gate.get() or shipped_gate()


def recorder() -> tuple[Recorder, object] | None:
    """The list features are recorded into, and the key to record them under (None: not recording)."""
    return _recorder.get()


@contextlib.contextmanager
def using_gate(
    gate: RelevanceGate | None = None, *, record: Recorder | None = None, key: object = None
) -> Iterator[None]:
    """Within: ``gate`` in place of the shipped one, and/or every candidate's features into ``record``."""
    token = _gate.set(gate) if gate is not None else None
    rtoken = _recorder.set((record, key)) if record is not None else None
    try:
        yield
    finally:
        if rtoken is not None:
            _recorder.reset(rtoken)
        if token is not None:
            _gate.reset(token)
