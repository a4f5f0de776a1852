"""Score the feedback classifier against a labelled JSON Lines file.

    memos-feedback eval LABELS.jsonl [--errors N] [--by-lang] [--json] [--no-context]
    memos-feedback eval recall CASES.jsonl [--mode lexical|semantic|both] [--json]
    memos-feedback eval calibration [LABELS.jsonl ...] [--json]
    memos-feedback eval --cv writer [--json] [--shipped]      (``cv.py``: leave one writer out)
    memos-feedback eval lessons CASES.jsonl [...] [--show] [--json]

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

``calibration`` prints a reliability table: the classifier's reported
confidence in bins (``CONFIDENCE_BINS``) against the observed shape accuracy
in each bin, per file (default: the untouched hold-outs of
``devtools.train.HOLDOUT_FILES``), with the expected calibration error
(bin-weighted mean |confidence - accuracy|). ``reliability(records)``
returns the same rows.

``evaluate(records)`` returns the same figures as an ``EvalReport`` for tests.
A malformed line is reported with its number and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
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
    "main",
    "normalize_span",
    "reliability",
    "score_rows",
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


def _calibration_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="memos-feedback eval calibration",
        description="Reliability table: reported confidence against observed shape accuracy.",
    )
    parser.add_argument(
        "labels", nargs="*", help="JSON Lines files (default: the untouched hold-outs in tests/data)"
    )
    parser.add_argument("--json", action="store_true", help="print the table as JSON")
    args = parser.parse_args(argv)
    paths = [Path(p) for p in args.labels]
    if not paths:
        from .train import HOLDOUT_FILES, default_data_dir

        paths = [default_data_dir() / name for name in HOLDOUT_FILES]
    tables: dict[str, list[ReliabilityBin]] = {}
    for path in paths:
        try:
            tables[path.name] = reliability(load_labels(path))
        except EvalDataError as exc:
            print(f"error: {path}: {exc}", file=sys.stderr)
            return 2
        except (OSError, UnicodeDecodeError) as exc:
            print(f"error: cannot read {path}: {exc}", file=sys.stderr)
            return 2
    if args.json:
        payload = {
            name: {"bins": [asdict(b) for b in table], "ece": round(expected_calibration_error(table), 4)}
            for name, table in tables.items()
        }
        print(json.dumps(payload, indent=2))
        return 0
    print(f"{'file':<24} {'confidence':<11} {'n':>5} {'mean conf':>9} {'accuracy':>8}")
    for name, table in tables.items():
        for b in table:
            span = f"{b.low:.2f}-{b.high:.2f}"
            print(f"{name:<24} {span:<11} {b.count:>5} {b.mean_confidence:>9.3f} {b.accuracy:>8.3f}")
        total, ece = sum(b.count for b in table), expected_calibration_error(table)
        print(f"{name:<24} {'ECE':<11} {total:>5} {ece:>9.3f}")
    return 0


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------
def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _shorten(text: str, width: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def format_report(report: EvalReport, *, by_lang: bool = False, errors: int = 0) -> str:
    lines = [
        f"messages:               {report.count}",
        f"trigger accuracy:       {_pct(report.trigger_accuracy)}",
        f"macro F1 (8 shapes):    {_pct(report.macro_f1)}",
        f"extraction exact match: {_pct(report.extraction_exact)} (over {report.extraction_count} messages)",
        f"false triggers:         {_pct(report.false_trigger_rate)} (of the messages calling for no repair)",
        f"missed:                 {_pct(report.missed_rate)} (of the messages calling for one)",
        "",
        f"{'shape':<12} {'precision':>9} {'recall':>7} {'f1':>6} {'support':>8}",
    ]
    for shape, s in report.per_shape.items():
        lines.append(f"{shape:<12} {s.precision:>9.3f} {s.recall:>7.3f} {s.f1:>6.3f} {s.support:>8}")
    if by_lang:
        lines += ["", f"{'lang':<8} {'n':>5} {'trigger':>8} {'macroF1':>8} {'extract':>8}"]
        for lang, sl in report.by_lang.items():
            lines.append(
                f"{lang:<8} {sl.count:>5} {_pct(sl.trigger_accuracy):>8} {_pct(sl.macro_f1):>8} "
                f"{_pct(sl.extraction_exact):>8}"
            )
    if errors > 0 and report.errors:
        lines += ["", f"misclassified ({len(report.errors)}, showing up to {errors}):"]
        for err in report.errors[:errors]:
            lines.append(f"  {err.id:<12} expected {err.expected:<11} got {err.got:<11} {_shorten(err.text)}")
    return "\n".join(lines)


def _tier_classifier(tier: str) -> Callable[..., ClassifiedFeedback] | None:
    """``classify_feedback`` with the named tier, or None when that tier cannot run here."""
    if tier == "default":
        return classify_feedback
    from ..classify.classifier import Tier, classify_with
    from ..classify.learned import shipped_model
    from ..classify.semantic import shipped_semantic

    model: Tier | None = shipped_semantic() if tier == "semantic" else shipped_model()
    if model is None and tier == "semantic":
        return None
    return lambda text, agent_text=None: classify_with(text, agent_text=agent_text, model=model)


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in[:1] == ["recall"]:
        # Guidance recall has its own scorer (memos_feedback/recall/evaluate.py).
        from .recall_eval import main as recall_main

        return recall_main(args_in[1:])
    if args_in[:1] == ["lessons"]:
        from .lessons_eval import main as lessons_main

        return lessons_main(args_in[1:])
    if args_in[:1] == ["calibration"]:
        return _calibration_main(args_in[1:])
    if any(a == "--cv" or a.startswith("--cv=") for a in args_in):
        from .cv import main as cv_main
        from .train import TrainingUnavailableError

        try:
            return cv_main(args_in)
        except TrainingUnavailableError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    parser = argparse.ArgumentParser(
        prog="memos-feedback eval", description="Score the feedback classifier on labelled JSONL."
    )
    parser.add_argument("labels", help="JSON Lines file: one {id, text, shape, lang, ...} object a line")
    parser.add_argument(
        "--errors", type=int, default=0, metavar="N", help="list up to N misclassified messages"
    )
    parser.add_argument("--by-lang", action="store_true", help="add per-language figures")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--no-context", action="store_true", help="ignore the agent_text of labelled pairs")
    parser.add_argument(
        "--tier",
        choices=("default", "semantic", "ngrams"),
        default="default",
        help="the tier to score (default: the one classify_feedback uses here)",
    )
    args = parser.parse_args(args_in)
    try:
        records = load_labels(args.labels)
    except EvalDataError as exc:
        print(f"error: {args.labels}: {exc}", file=sys.stderr)
        return 2
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: cannot read {args.labels}: {exc}", file=sys.stderr)
        return 2
    classify = _tier_classifier(args.tier)
    if classify is None:
        print(
            "error: the semantic tier needs the e5 extra: pip install 'memos-feedback[e5]'", file=sys.stderr
        )
        return 2
    report = evaluate(records, classify, context=not args.no_context)
    if args.json:
        payload = asdict(report)
        payload["errors"] = payload["errors"][: max(args.errors, 0)]
        if not args.by_lang:
            payload.pop("by_lang")
        print(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        print(format_report(report, by_lang=args.by_lang, errors=args.errors))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
