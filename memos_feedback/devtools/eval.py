"""Score the feedback classifier against a labelled JSON Lines file.

    memos-feedback eval LABELS.jsonl [--errors N] [--by-lang] [--json] [--no-context]
    memos-feedback eval recall CASES.jsonl [--mode lexical|semantic|both] [--json]
    memos-feedback eval recall --cv domain [FILE|DIR ...] [...]   (``recall_cv.py``: leave one domain out)
    memos-feedback eval calibration [LABELS.jsonl ...] [--json]
    memos-feedback eval --cv writer [--json] [--shipped]      (``cv.py``: leave one writer out)
    memos-feedback eval lessons CASES.jsonl [...] [--show] [--json]

The figures (trigger accuracy, macro F1, extraction exact match) are
defined in ``scoring.py``, as ``feedback-shapes.md`` ("How a classifier is
scored") defines them.

A line may carry ``agent_text`` (the agent's previous turn); it is passed to
the classifier as context unless ``--no-context`` is given
(``tests/data/feedback_context_pairs.jsonl``).

``calibration`` prints a reliability table: the classifier's reported
confidence in bins (``CONFIDENCE_BINS``) against the observed shape accuracy
in each bin, per file (default: the untouched hold-outs of
``devtools.labels.HOLDOUT_FILES``), with the expected calibration error
(bin-weighted mean |confidence - accuracy|). ``reliability(records)``
returns the same rows.

``evaluate(records)`` returns the same figures as an ``EvalReport`` for tests.
A malformed line is reported with its number and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from ..classify.classifier import classify_feedback
from ..errors import TrainingUnavailableError
from ..types import ClassifiedFeedback
from .scoring import (
    EvalDataError,
    EvalReport,
    ReliabilityBin,
    evaluate,
    expected_calibration_error,
    load_labels,
    reliability,
)

__all__ = ["main"]


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
        from .labels import HOLDOUT_FILES, default_data_dir

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
    if args_in[:1] == ["recall"] and any(a == "--cv" or a.startswith("--cv=") for a in args_in):
        from .recall_cv import main as recall_cv_main

        return recall_cv_main(args_in[1:])
    if args_in[:1] == ["recall"]:
        # Guidance recall has its own scorer (recall_eval.py).
        from .recall_eval import main as recall_main

        return recall_main(args_in[1:])
    if args_in[:1] == ["lessons"] and any(a == "--cv" or a.startswith("--cv=") for a in args_in):
        from .clause_train import main as clause_cv_main

        return clause_cv_main(args_in[1:])
    if args_in[:1] == ["lessons"]:
        from .lessons_eval import main as lessons_main

        return lessons_main(args_in[1:])
    if args_in[:1] == ["calibration"]:
        return _calibration_main(args_in[1:])
    if any(a == "--cv" or a.startswith("--cv=") for a in args_in):
        from .cv import main as cv_main

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
