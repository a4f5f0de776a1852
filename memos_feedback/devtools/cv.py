"""Leave-one-writer-out evaluation of the feedback classifier.

    memos-feedback eval --cv writer [--tier both|semantic|ngrams] [--data-dir tests/data] [--json] [--shipped]

Each file of ``tests/data/classifier_writers/`` was written by one writer
who saw only the shapes' definitions. For every writer in turn the learned
tier is trained (``ngram_train.fold_model``) on the always-training sets (``labels.TRAINING_FILES``,
written by the process that tuned the rules) plus the other writers, and
the combined classifier scores the left-out writer, once with the agent's
turn (``agent_text``) as context and once without. The figures of record are
the macro average over writers and the worst writer:

* trigger accuracy, macro-F1 and extraction exact match (``eval``'s definitions);
* false-trigger rate: of the messages whose labelled shape does not trigger a
  repair, the share the classifier sends to repair;
* missed: of the triggering messages, the share it does not send.

Per-language figures pool the left-out predictions of every writer.
``--shipped`` scores the shipped artefact on every writer instead (no
retraining: it is trained on all of them, so those figures are in-sample).

Abstention (``classifier.ABSTAIN``) is part of the classifier being scored:
each fold's model carries the threshold chosen by ``ngram_train.choose_threshold``
on leave-one-writer-out answers of *its* training writers only, so the
left-out writer never influences the threshold it is scored with.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from ..classify.classifier import Tier
from ..classify.learned import LearnedModel
from ..classify.semantic import SemanticTier
from ..errors import TrainingUnavailableError
from ..types import ClassifiedFeedback
from . import labels, ngram_train
from .scoring import LabelledMessage, SliceReport, load_labels, score_rows, trigger_rates

__all__ = ["WRITERS_DIR", "FoldScore", "cross_validate", "format_cv", "main", "writer_files"]

WRITERS_DIR: Final = "classifier_writers"
MODES: Final = ("context", "no_context", "context_no_abstain")
_TITLES: Final = {
    "context": "agent's turn given",
    "no_context": "agent's turn withheld",
    "context_no_abstain": "agent's turn given, abstention off",
}


def writer_files(data_dir: Path) -> list[Path]:
    """The writers' files, one group each, in name order."""
    return sorted((data_dir / WRITERS_DIR).glob("*.jsonl"))


@dataclass(frozen=True, slots=True)
class FoldScore:
    """One left-out writer's figures in one mode."""

    writer: str
    count: int
    trigger_accuracy: float
    macro_f1: float
    extraction_exact: float | None
    false_trigger_rate: float
    missed_rate: float
    by_lang: dict[str, SliceReport]


Rows = list[tuple[LabelledMessage, ClassifiedFeedback]]


def _fold_score(writer: str, rows: Rows) -> FoldScore:
    overall = score_rows(rows)
    false, missed = trigger_rates(rows)
    langs = sorted({lab.lang for lab, _ in rows if lab.lang})
    return FoldScore(
        writer,
        overall.count,
        overall.trigger_accuracy,
        overall.macro_f1,
        overall.extraction_exact,
        false,
        missed,
        {lang: score_rows([r for r in rows if r[0].lang == lang]) for lang in langs},
    )


def without_abstention(model: Tier) -> Tier:
    """The same tier with its abstention threshold removed."""
    if isinstance(model, SemanticTier):
        return SemanticTier(model.model.with_meta(abstain=None), model.embedder)
    meta = {k: v for k, v in model.meta.items() if k != "abstain"}
    return LearnedModel(model.classes, model.intercepts, model.features, meta)


def classify_rows(
    records: Sequence[LabelledMessage], model: Tier | None, *, context: bool, abstain: bool = True
) -> Rows:
    from ..classify.classifier import classify_with

    if model is not None and not abstain:
        model = without_abstention(model)
    return [
        (rec, classify_with(rec.text, agent_text=rec.agent_text if context else None, model=model))
        for rec in records
    ]


def cross_validate(
    data_dir: Path,
    *,
    fit: Callable[[Sequence[Path]], Tier | None] | None = None,
    log: Callable[[str], None] = lambda _m: None,
) -> dict[str, Any]:
    """Leave-one-writer-out: per mode, per writer figures, their mean and worst, pooled per language.

    ``fit(held_out_paths)`` returns the model trained without those writers
    (default: ``ngram_train.fold_model``); with ``fit=None`` and the shipped model
    wanted, pass ``fit=lambda _p: shipped``.
    """

    fit = fit or (lambda held: ngram_train.fold_model(data_dir, held))
    files = writer_files(data_dir)
    rows: dict[str, dict[str, Rows]] = {m: {} for m in MODES}
    for path in files:
        model = fit([path])
        records = load_labels(path)
        for mode in MODES:
            rows[mode][path.stem] = classify_rows(
                records, model, context=mode != "no_context", abstain=mode != "context_no_abstain"
            )
        ctx = _fold_score(path.stem, rows["context"][path.stem])
        log(
            f"{path.stem}: trigger {ctx.trigger_accuracy:.3f} macro-F1 {ctx.macro_f1:.3f} "
            f"extraction {ctx.extraction_exact or 0:.3f} false {ctx.false_trigger_rate:.3f}"
        )
    return {mode: summarise(rows[mode]) for mode in MODES}


def summarise(by_writer: dict[str, Rows]) -> dict[str, Any]:
    folds = [_fold_score(w, r) for w, r in by_writer.items()]
    pooled: Rows = [row for r in by_writer.values() for row in r]
    langs = sorted({lab.lang for lab, _ in pooled if lab.lang})
    by_lang: dict[str, dict[str, Any]] = {}
    for lang in langs:
        part = [r for r in pooled if r[0].lang == lang]
        false, missed = trigger_rates(part)
        by_lang[lang] = {**asdict(score_rows(part)), "false_trigger_rate": false, "missed_rate": missed}

    def mean(name: str) -> float:
        values = [getattr(f, name) for f in folds if getattr(f, name) is not None]
        return sum(values) / len(values) if values else 0.0

    worst = min(folds, key=lambda f: f.trigger_accuracy) if folds else None
    return {
        "writers": [
            {k: v for k, v in asdict(f).items() if k != "by_lang"}
            | {"by_lang": {lang: asdict(s) for lang, s in f.by_lang.items()}}
            for f in folds
        ],
        "mean": {
            name: mean(name)
            for name in (
                "trigger_accuracy",
                "macro_f1",
                "extraction_exact",
                "false_trigger_rate",
                "missed_rate",
            )
        },
        "worst": None
        if worst is None
        else {
            "writer": worst.writer,
            "trigger_accuracy": worst.trigger_accuracy,
            "macro_f1": min(f.macro_f1 for f in folds),
            "extraction_exact": min((f.extraction_exact or 0.0) for f in folds),
            "false_trigger_rate": max(f.false_trigger_rate for f in folds),
        },
        "by_lang": by_lang,
    }


def _f(value: float | None) -> str:
    return "  n/a" if value is None else f"{value:.3f}"


def format_cv(result: dict[str, Any]) -> str:
    head = f"{'writer':<30} {'n':>4} {'trigger':>7} {'macroF1':>7} {'extract':>7} {'false':>6} {'missed':>6}"
    lines: list[str] = []
    for mode in MODES:
        res = result[mode]
        lines += [
            f"== {mode.replace('_', ' ')} ({_TITLES[mode]})",
            head,
        ]
        for w in res["writers"]:
            lines.append(
                f"{w['writer']:<30} {w['count']:>4} {_f(w['trigger_accuracy']):>7} {_f(w['macro_f1']):>7} "
                f"{_f(w['extraction_exact']):>7} {_f(w['false_trigger_rate']):>6} {_f(w['missed_rate']):>6}"
            )
        m, worst = res["mean"], res["worst"]
        lines.append(
            f"{'mean':<30} {'':>4} {_f(m['trigger_accuracy']):>7} {_f(m['macro_f1']):>7} "
            f"{_f(m['extraction_exact']):>7} {_f(m['false_trigger_rate']):>6} {_f(m['missed_rate']):>6}"
        )
        if worst:
            lines.append(
                f"{'worst (' + worst['writer'][:22] + ')':<30} {'':>4} {_f(worst['trigger_accuracy']):>7} "
                f"{_f(worst['macro_f1']):>7} {_f(worst['extraction_exact']):>7} "
                f"{_f(worst['false_trigger_rate']):>6}"
            )
        for lang, s in res["by_lang"].items():
            lines.append(
                f"{'lang ' + lang:<30} {s['count']:>4} {_f(s['trigger_accuracy']):>7} {_f(s['macro_f1']):>7} "
                f"{_f(s['extraction_exact']):>7} {_f(s['false_trigger_rate']):>6} {_f(s['missed_rate']):>6}"
            )
        lines.append("")
    return "\n".join(lines).rstrip()


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="memos-feedback eval --cv writer", description="Leave-one-writer-out evaluation."
    )
    parser.add_argument("--cv", choices=["writer"], required=True, help="the grouping (one file a writer)")
    parser.add_argument("--data-dir", type=Path, default=None, help="labelled data (default: tests/data)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--no-pair", action="store_true", help="train the folds without the pair's features (for comparison)"
    )
    parser.add_argument(
        "--shipped", action="store_true", help="score the shipped artefact on every writer (in-sample)"
    )
    parser.add_argument(
        "--tier",
        choices=("both", "semantic", "ngrams"),
        default="both",
        help="which tier to score (default: both, the semantic one first; it needs the e5 extra)",
    )
    args = parser.parse_args(argv)

    data_dir = args.data_dir or labels.default_data_dir()
    if not args.shipped:
        try:
            import sklearn  # type: ignore[import-untyped]  # noqa: F401
        except ImportError:
            raise TrainingUnavailableError(ngram_train.MISSING_SKLEARN) from None
    tiers = ("semantic", "ngrams") if args.tier == "both" else (args.tier,)
    log: Callable[[str], None] = (lambda _m: None) if args.json else print
    results = {tier: _run_tier(tier, data_dir, args, log) for tier in tiers}
    if args.json:
        print(json.dumps(results, ensure_ascii=False, indent=2))
    else:
        print("\n\n".join(f"#### {tier} tier\n{format_cv(res)}" for tier, res in results.items()))
    return 0


def _run_tier(
    tier: str, data_dir: Path, args: argparse.Namespace, log: Callable[[str], None]
) -> dict[str, Any]:

    log(f"#### {tier} tier")
    if tier == "ngrams":
        fit: Callable[[Sequence[Path]], Tier | None] = lambda held: ngram_train.fold_model(  # noqa: E731
            data_dir, held, pair=not args.no_pair
        )
        if args.shipped:
            from ..classify.learned import shipped_model

            fit = lambda _held: shipped_model()  # noqa: E731
        return cross_validate(data_dir, fit=fit, log=log)
    from ..embeddings.e5 import E5_EXTRA_HINT, e5_available

    if not e5_available():
        raise TrainingUnavailableError(f"the semantic tier needs the e5 extra: {E5_EXTRA_HINT}")
    if args.shipped:
        from ..classify.semantic import shipped_semantic

        return cross_validate(data_dir, fit=lambda _held: shipped_semantic(), log=log)
    from .semantic_train import fold_semantic, warmed_cache

    with warmed_cache(data_dir, log) as cache:
        return cross_validate(data_dir, fit=lambda held: fold_semantic(data_dir, held, cache), log=log)
