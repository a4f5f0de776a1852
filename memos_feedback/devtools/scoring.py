"""Scoring the feedback classifier against labelled lines (``eval`` prints, ``cv`` and training reuse).

Figures, as ``feedback-shapes.md`` ("How a classifier is scored") defines them:

* trigger accuracy: share of messages whose "triggers a repair" bit (the
  shape's ``triggers_repair``) is predicted right;
* macro F1: unweighted mean of the per-shape F1. A shape that has neither
  labels nor predictions in the scored set (possible in a small per-language
  slice) is left out of the mean instead of counting as 0 or 1;
* extraction exact match: over the messages whose label has at least one of
  ``prefer`` / ``avoid`` / ``correction`` / ``constraint``, the share where
  *every labelled field* equals the prediction after trimming, case-folding
  and removing surrounding quotes and punctuation. A field the label does
  not have is not compared: the spec only requires fields "where the message
  contains them", so an extra guess is not an error here.

A line may carry ``agent_text`` (the agent's previous turn); it is passed to
the classifier as context unless ``--no-context`` is given
(``tests/data/feedback_context_pairs.jsonl``).

``reliability(records)`` returns the reliability table ``eval calibration``
prints; ``evaluate(records)`` returns the figures as an ``EvalReport``.
A malformed line raises ``EvalDataError`` with its number.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..classify.classifier import classify_feedback
from ..types import EXTRACTED_FIELDS, ClassifiedFeedback, Shape

__all__ = [
    "CONFIDENCE_BINS",
    "EvalDataError",
    "EvalReport",
    "LabelledMessage",
    "Misclassified",
    "ReliabilityBin",
    "ShapeScore",
    "SliceReport",
    "evaluate",
    "expected_calibration_error",
    "load_labels",
    "normalize_span",
    "reliability",
    "score_rows",
    "trigger_rates",
]

_SHAPES = tuple(s.value for s in Shape)
_QUOTE_CHARS = "`\"'“”‘’「」『』«»"


class EvalDataError(ValueError):
    """A line of the labels file is not a valid labelled message."""

    def __init__(self, line: int, reason: str) -> None:
        self.line = line
        self.reason = reason
        super().__init__(f"line {line}: {reason}")


@dataclass(frozen=True, slots=True)
class LabelledMessage:
    id: str
    text: str
    shape: str
    lang: str
    fields: dict[str, str]
    agent_text: str | None = None


@dataclass(frozen=True, slots=True)
class ShapeScore:
    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True, slots=True)
class SliceReport:
    """Headline figures for one slice of the data (one language)."""

    count: int
    trigger_accuracy: float
    macro_f1: float
    extraction_exact: float | None
    extraction_count: int


@dataclass(frozen=True, slots=True)
class Misclassified:
    id: str
    expected: str
    got: str
    text: str


@dataclass(frozen=True, slots=True)
class EvalReport:
    count: int
    trigger_accuracy: float
    macro_f1: float
    per_shape: dict[str, ShapeScore]
    extraction_exact: float | None  # None when no message has a labelled field
    extraction_count: int
    by_lang: dict[str, SliceReport]
    errors: list[Misclassified] = field(default_factory=list)
    extraction_misses: list[dict[str, Any]] = field(default_factory=list)
    # Of the messages whose label calls for no repair, the share sent to repair;
    # of those whose label calls for one, the share not sent.
    false_trigger_rate: float = 0.0
    missed_rate: float = 0.0


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------
def _parse_line(raw: str, line: int) -> LabelledMessage:
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise EvalDataError(line, f"not valid JSON ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise EvalDataError(line, "expected a JSON object")
    text = obj.get("text")
    if not isinstance(text, str):
        raise EvalDataError(line, "'text' must be a string")
    shape = obj.get("shape")
    if shape not in _SHAPES:
        raise EvalDataError(line, f"'shape' must be one of {', '.join(_SHAPES)}, got {shape!r}")
    fields: dict[str, str] = {}
    for name in EXTRACTED_FIELDS:
        value = obj.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise EvalDataError(line, f"{name!r} must be a string")
        fields[name] = value
    lang = obj.get("lang", "")
    ident = obj.get("id", f"line-{line}")
    agent_text = obj.get("agent_text")
    if agent_text is not None and not isinstance(agent_text, str):
        raise EvalDataError(line, "'agent_text' must be a string")
    return LabelledMessage(
        id=str(ident), text=text, shape=shape, lang=str(lang or ""), fields=fields, agent_text=agent_text
    )


def load_labels(path: str | Path) -> list[LabelledMessage]:
    """Read a labels file; blank lines are skipped, bad ones raise ``EvalDataError``."""
    records: list[LabelledMessage] = []
    with open(path, encoding="utf-8") as fh:
        for line_no, raw in enumerate(fh, start=1):
            if raw.strip():
                records.append(_parse_line(raw, line_no))
    return records


# ---------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------
def normalize_span(value: str | None) -> str:
    """Trim, case-fold and strip surrounding quotes and punctuation."""
    if value is None:
        return ""
    text = value.strip().casefold()
    start, end = 0, len(text)
    while start < end and _is_edge(text[start]):
        start += 1
    while end > start and _is_edge(text[end - 1]):
        end -= 1
    return text[start:end]


def _is_edge(ch: str) -> bool:
    return ch.isspace() or ch in _QUOTE_CHARS or unicodedata.category(ch).startswith("P")


def _triggers(shape: str) -> bool:
    return Shape(shape).triggers_repair


def _macro_f1(pairs: Sequence[tuple[str, str]]) -> tuple[float, dict[str, ShapeScore]]:
    per_shape: dict[str, ShapeScore] = {}
    f1s: list[float] = []
    for shape in _SHAPES:
        tp = sum(1 for exp, got in pairs if exp == shape and got == shape)
        predicted = sum(1 for _, got in pairs if got == shape)
        support = sum(1 for exp, _ in pairs if exp == shape)
        precision = tp / predicted if predicted else 0.0
        recall = tp / support if support else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_shape[shape] = ShapeScore(precision, recall, f1, support)
        if predicted or support:
            f1s.append(f1)
    return (sum(f1s) / len(f1s) if f1s else 0.0), per_shape


def _extraction_ok(label: LabelledMessage, got: ClassifiedFeedback) -> bool:
    return all(
        normalize_span(getattr(got, name)) == normalize_span(value) for name, value in label.fields.items()
    )


def _slice(rows: Sequence[tuple[LabelledMessage, ClassifiedFeedback]]) -> SliceReport:
    pairs = [(lab.shape, got.shape.value) for lab, got in rows]
    trig = sum(1 for exp, got in pairs if _triggers(exp) == _triggers(got))
    macro, _ = _macro_f1(pairs)
    with_fields = [(lab, got) for lab, got in rows if lab.fields]
    exact = sum(1 for lab, got in with_fields if _extraction_ok(lab, got))
    return SliceReport(
        count=len(rows),
        trigger_accuracy=trig / len(rows) if rows else 0.0,
        macro_f1=macro,
        extraction_exact=exact / len(with_fields) if with_fields else None,
        extraction_count=len(with_fields),
    )


def trigger_rates(rows: Sequence[tuple[LabelledMessage, ClassifiedFeedback]]) -> tuple[float, float]:
    """(false-trigger rate over non-trigger labels, missed rate over trigger labels)."""
    neg = [got for lab, got in rows if not _triggers(lab.shape)]
    pos = [got for lab, got in rows if _triggers(lab.shape)]
    false = sum(1 for got in neg if got.shape.triggers_repair) / len(neg) if neg else 0.0
    missed = sum(1 for got in pos if not got.shape.triggers_repair) / len(pos) if pos else 0.0
    return false, missed


def score_rows(rows: Sequence[tuple[LabelledMessage, ClassifiedFeedback]]) -> SliceReport:
    """The headline figures of (label, answer) pairs."""
    return _slice(rows)


def _run(
    classify: Callable[..., ClassifiedFeedback], rec: LabelledMessage, context: bool
) -> ClassifiedFeedback:
    if context and rec.agent_text is not None:
        return classify(rec.text, rec.agent_text)
    return classify(rec.text)


def evaluate(
    records: Iterable[LabelledMessage],
    classify: Callable[..., ClassifiedFeedback] = classify_feedback,
    *,
    context: bool = True,
) -> EvalReport:
    """Run ``classify`` over labelled messages and compute the scoring figures.

    A message with ``agent_text`` is classified as ``classify(text, agent_text)``
    when ``context`` is true, else as ``classify(text)``.
    """
    rows = [(rec, _run(classify, rec, context)) for rec in records]
    pairs = [(lab.shape, got.shape.value) for lab, got in rows]
    overall = _slice(rows)
    false, missed = trigger_rates(rows)
    _, per_shape = _macro_f1(pairs)
    langs = sorted({lab.lang for lab, _ in rows if lab.lang})
    by_lang = {lang: _slice([r for r in rows if r[0].lang == lang]) for lang in langs}
    errors = [
        Misclassified(lab.id, lab.shape, got.shape.value, lab.text)
        for lab, got in rows
        if lab.shape != got.shape.value
    ]
    misses = [
        {
            "id": lab.id,
            "expected": lab.fields,
            "got": {name: getattr(got, name) for name in EXTRACTED_FIELDS if getattr(got, name) is not None},
        }
        for lab, got in rows
        if lab.fields and not _extraction_ok(lab, got)
    ]
    return EvalReport(
        count=overall.count,
        trigger_accuracy=overall.trigger_accuracy,
        macro_f1=overall.macro_f1,
        per_shape=per_shape,
        extraction_exact=overall.extraction_exact,
        extraction_count=overall.extraction_count,
        by_lang=by_lang,
        errors=errors,
        extraction_misses=misses,
        false_trigger_rate=false,
        missed_rate=missed,
    )


# ---------------------------------------------------------------------------
# Calibration: reported confidence against observed accuracy
# ---------------------------------------------------------------------------
# Upper edges of the confidence bins; the finer bins at the top are where most
# answers fall, the coarse low ones are where the LLM tier is consulted.
CONFIDENCE_BINS: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)


@dataclass(frozen=True, slots=True)
class ReliabilityBin:
    """One row of a reliability table: answers whose confidence is in [low, high)."""

    low: float
    high: float
    count: int
    mean_confidence: float
    accuracy: float


def reliability(
    records: Iterable[LabelledMessage],
    classify: Callable[..., ClassifiedFeedback] = classify_feedback,
    *,
    bins: Sequence[float] = CONFIDENCE_BINS,
) -> list[ReliabilityBin]:
    """Bin the answers by reported confidence; per bin, mean confidence and shape accuracy.

    Empty bins are left out. The top bin includes 1.0.
    """
    groups: list[list[tuple[float, bool]]] = [[] for _ in bins]
    for rec in records:
        got = _run(classify, rec, True)
        index = next((i for i, hi in enumerate(bins) if got.confidence < hi), len(bins) - 1)
        groups[index].append((got.confidence, got.shape.value == rec.shape))
    out: list[ReliabilityBin] = []
    for i, rows in enumerate(groups):
        if rows:
            out.append(
                ReliabilityBin(
                    low=bins[i - 1] if i else 0.0,
                    high=bins[i],
                    count=len(rows),
                    mean_confidence=sum(c for c, _ in rows) / len(rows),
                    accuracy=sum(1 for _, ok in rows if ok) / len(rows),
                )
            )
    return out


def expected_calibration_error(table: Sequence[ReliabilityBin]) -> float:
    """Bin-weighted mean |mean confidence - accuracy| (0 is perfectly calibrated)."""
    total = sum(b.count for b in table)
    return sum(b.count * abs(b.mean_confidence - b.accuracy) for b in table) / total if total else 0.0
