"""The problem gate: is a candidate that passed the text gate about the query's problem?

The text gate (``scoring``) asks whether the query's words are found in a
repair's problem more than in the situation both share. A near miss — the
same tool, file and most words, another failure — passes it. This gate
looks at the repair part by part, as the source text stores them (lesson,
error, user words; ``indexing``): how much of the query each part
explains, whether the query is a tool's report (which names a failure of
its own), whether it already names what the lesson prefers (it is doing
what the lesson says, so its trouble is another one), whether its error
identifiers conflict with the repair's. A logistic model over those
features, fitted leave one domain out on the labelled recall domains and
shipped as ``problem_gate.json`` with the threshold chosen on the
training domains (``memos-feedback train --tier recall-gate``;
ALGORITHMS.md, "Recall"), keeps a candidate when its probability reaches
the threshold.

Every feature is a count share or a flag computed from text, never a
cosine, so one model serves the lexical and the semantic mode.
"""

from __future__ import annotations

import functools
import json
import math
import re
import threading
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final, NamedTuple

from ..errors import ConfigError
from .indexing import embedding_text
from .terms import comparable, contains_term, error_identifiers, is_tool_report, query_terms

__all__ = ["FEATURES", "GateModel", "QueryParts", "RepairParts", "features", "shipped_model"]

FEATURES: Final = (
    "coverage",
    "coverage_over_situation",
    "lesson",
    "error",
    "user",
    "situation",
    "report",
    "exact",
    "same_error",
    "prefer_in_query",
    "avoid_in_query",
    "conflict",
    "query_identifiers",
    "query_cjk",
    "lesson_cjk",
    "query_length",
    "other_language",
    "coverage_other_language",
    "error_other_language",
)
_WEIGHTS_FILE = "problem_gate.json"
# A token that reads as code (a flag, path, version, key=value): what a lesson prefers or avoids.
_TOKEN = re.compile(r"[A-Za-z0-9_\-./=<>:@+*]+")
_CODE_MARK = re.compile(r"[-_./=<>@]|\d")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_STRIP = ".,:;'\"()[]{}"
# Parsed repairs, by source text: the same repairs come back query after query.
_PARTS_MAX = 4_096
# A tool's report shows in its first lines (as in ``guidance``).
_REPORT_SCAN = 8_000


def _code_tokens(text: str) -> frozenset[str]:
    out = set()
    for raw in _TOKEN.findall(text):
        token = raw.strip(_STRIP).lower()
        if len(token) >= 3 and _CODE_MARK.search(token):
            out.add(token)
    return frozenset(out)


def _share(terms: tuple[str, ...], text: str) -> float:
    """The share of ``terms`` (each counted once) found in ``text``; 0 without terms."""
    if not terms:
        return 0.0
    return sum(1 for t in terms if t in text and contains_term(text, t)) / len(terms)


@dataclass(frozen=True, slots=True)
class QueryParts:
    """The query's side, read once per ``guidance_for``."""

    terms: tuple[str, ...]
    situation: tuple[str, ...]
    identifiers: frozenset[str]
    report: bool
    lowered: str
    cjk: bool
    length: float

    @classmethod
    def of(cls, tool: str | None, context: str | None, text: str) -> QueryParts:
        """``text``: the query, or the context when there is none."""
        qt = query_terms(text)
        st = query_terms(" ".join(part for part in (tool, context) if part))
        terms = qt.words + qt.short
        return cls(
            terms=terms,
            situation=st.words + st.short,
            identifiers=frozenset(error_identifiers(text)),
            report=is_tool_report(text[:_REPORT_SCAN]),
            lowered=f"{text} {context or ''}".lower(),
            cjk=_CJK.search(text) is not None,
            length=math.log1p(len(terms)),
        )


class RepairParts(NamedTuple):
    """A repair's problem, part by part, comparable (``terms.comparable``)."""

    problem: str
    lesson: str
    error: str
    user: str
    situation: str
    prefers: frozenset[str]
    avoids: frozenset[str]
    identifiers: frozenset[str]
    cjk: bool

    @property
    def compared(self) -> bool:
        """Whether the repair has a part beside its lesson (an error or the user's words) to compare."""
        return bool(self.error.strip() or self.user.strip())


_parts: dict[tuple[str, str | None, str | None], RepairParts] = {}
_parts_lock = threading.Lock()


def _lines(source_text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in source_text.split("\n"):
        key, _, value = line.partition(": ")
        out.setdefault(key, value)
    return out


def repair_parts(source_text: str, tool: str | None, context: str | None) -> RepairParts:
    """The parts of one repair's ``source_text`` (``indexing``'s line format), cached."""
    key = (source_text, tool, context)
    hit = _parts.get(key)
    if hit is not None:
        return hit
    lines = _lines(source_text)
    do, avoid = lines.get("do", ""), lines.get("avoid", "")
    failure = f"{lines.get('error', '')} {lines.get('trace', '')}"
    do_tokens, avoid_tokens = _code_tokens(do), _code_tokens(avoid)
    hit = RepairParts(
        problem=comparable(embedding_text(source_text)),
        lesson=comparable(f"{do} {avoid}"),
        error=comparable(failure),
        user=comparable(lines.get("user", "")),
        situation=comparable(f"{tool or ''} {context or ''}"),
        prefers=do_tokens - avoid_tokens,
        avoids=avoid_tokens - do_tokens,
        identifiers=frozenset(error_identifiers(failure)),
        cjk=_CJK.search(f"{do} {avoid}") is not None,
    )
    with _parts_lock:
        if len(_parts) >= _PARTS_MAX:
            _parts.clear()
        _parts[key] = hit
    return hit


def features(q: QueryParts, r: RepairParts, *, exact: bool, same_error: bool) -> tuple[float, ...]:
    """The gate's features of one (query, repair) pair, in ``FEATURES`` order."""
    coverage = _share(q.terms, r.problem)
    situation = _share(q.situation, r.situation)
    error = _share(q.terms, r.error)
    conflict = bool(q.identifiers) and bool(r.identifiers) and not (q.identifiers & r.identifiers)
    # A Chinese query of an English lesson (or the reverse) shares only its
    # identifiers and glossed words: its coverage is low on a lesson that
    # applies, so the model weighs coverage apart for such pairs.
    other = float(q.cjk != r.cjk)
    return (
        coverage,
        coverage - situation,
        _share(q.terms, r.lesson),
        error,
        _share(q.terms, r.user),
        situation,
        float(q.report),
        float(exact),
        float(same_error),
        float(any(t in q.lowered for t in r.prefers)),
        float(any(t in q.lowered for t in r.avoids)),
        float(conflict),
        float(bool(q.identifiers)),
        float(q.cjk),
        float(r.cjk),
        q.length,
        other,
        other * coverage,
        other * error,
    )


@dataclass(frozen=True, slots=True)
class GateModel:
    """A standardised logistic model over ``FEATURES`` and the threshold it keeps at."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    threshold: float

    def probability(self, x: tuple[float, ...]) -> float:
        z = self.intercept
        for value, m, s, c in zip(x, self.mean, self.scale, self.coef, strict=True):
            z += c * (value - m) / s
        # Clamped: exp of a large argument overflows.
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GateModel:
        """From the shape ``to_json`` writes; a clear ``ConfigError`` for any other."""
        try:
            if tuple(data["features"]) != FEATURES:
                raise ConfigError("problem_gate", data["features"], f"features must be {list(FEATURES)}")
            model = cls(
                mean=tuple(float(v) for v in data["mean"]),
                scale=tuple(float(v) or 1.0 for v in data["scale"]),
                coef=tuple(float(v) for v in data["coef"]),
                intercept=float(data["intercept"]),
                threshold=float(data["threshold"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                "problem_gate", type(exc).__name__, "not a problem-gate weights object"
            ) from exc
        if not len(model.mean) == len(model.scale) == len(model.coef) == len(FEATURES):
            raise ConfigError("problem_gate", len(model.coef), f"expected {len(FEATURES)} weights")
        return model

    def to_json(self) -> dict[str, Any]:
        return {
            "features": list(FEATURES),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "coef": list(self.coef),
            "intercept": self.intercept,
            "threshold": self.threshold,
        }


@functools.lru_cache(maxsize=1)
def shipped_model() -> GateModel:
    """The packaged weights (``problem_gate.json``), read once."""
    raw = resources.files(__package__).joinpath(_WEIGHTS_FILE).read_text(encoding="utf-8")
    return GateModel.from_json(json.loads(raw))
