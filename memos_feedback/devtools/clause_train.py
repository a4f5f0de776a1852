"""Fit the lesson clause scorer (``synthesis.clause_scorer``) and measure it leave one domain out.

    memos-feedback train --tier clauses [--out PATH] [--check]
    memos-feedback eval lessons --cv domain [FILE ...] [--json]

The examples are the recall corpus's cases with user feedback and a
reference (``expected.prefer_object`` / ``avoid_object``; schema in
``tests/data/RECALL.md``): each side's candidate clauses, found by the
rules (``clauses.side_candidates``), are labelled by whether they name the
reference's object (``lesson_match.object_overlap`` at ``MATCH_SHARE``).
The classifier's spans are the hint feature, as the template gets them.
A logistic regression per side (scikit-learn, extra ``[train]``) gives the
weights; the shipped ones are fitted on ``TRAINING_DOMAINS``.

**The figure of record** is ``--cv domain``: for each domain, weights
fitted on the others pick that domain's clauses; reported per side, the
share of cases whose picked clause names the reference's object, beside
the user's first clause and the best any candidate could do (the rules'
ceiling). It scores the clause a line is made from; ``eval lessons``
scores the written lines through the pipeline with the shipped weights.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..classify import classify_feedback
from ..errors import TrainingUnavailableError
from ..synthesis.clause_scorer import FEATURES, WEIGHTS_PATH, Candidate, candidate_features
from ..synthesis.clauses import side_candidates
from ..synthesis.template import clause_hints
from .labels import default_data_dir
from .lesson_match import MATCH_SHARE, object_overlap
from .lessons_eval import LessonCase, LessonDataError, load_lesson_cases
from .ngram_train import MISSING_SKLEARN

__all__ = [
    "HELD_OUT",
    "SideExample",
    "cross_validate",
    "data_sha256",
    "examples",
    "fit",
    "fitted_json",
    "format_cv",
    "main",
    "stale",
    "training_files",
]

# Two domains stay out of the shipped weights' data: nobody has read them,
# so the pipeline's figures on them are held out (tests/data/recall/README.md).
HELD_OUT: Final = ("docs_sites", "data_bi")
_SIDES: Final = ("prefer", "avoid")
_C: Final = 1.0


@dataclass(frozen=True, slots=True)
class SideExample:
    """One case's side: its candidates' features and which of them name the reference's object."""

    domain: str
    rows: tuple[tuple[float, ...], ...]
    labels: tuple[bool, ...]


def training_files(data_dir: Path | None = None) -> list[Path]:
    data = data_dir or default_data_dir()
    files = [p for p in sorted((data / "recall").glob("*.jsonl")) if p.stem not in HELD_OUT]
    return [*files, data / "recall_dev.jsonl"]


def examples(cases: Sequence[LessonCase]) -> dict[str, list[SideExample]]:
    """Per side, one example per case with feedback and a reference object on that side."""
    out: dict[str, list[SideExample]] = {side: [] for side in _SIDES}
    for case in cases:
        text, exp = case.repair["feedback"], case.expected
        if not text.strip() or exp is None:
            continue
        hints = dict(zip(_SIDES, clause_hints(classify_feedback(text), text), strict=True))
        found = side_candidates(text)
        for side in _SIDES:
            obj = exp.get(f"{side}_object", "")
            if obj:
                out[side].append(_example(case.domain, found[side], hints[side], obj))
    return out


def _example(domain: str, items: list[Candidate], hint: str | None, obj: str) -> SideExample:
    rows = tuple(tuple(r) for r in candidate_features(items, hint))
    labels = tuple((object_overlap(obj, c.clause) or 0.0) >= MATCH_SHARE for c in items)
    return SideExample(domain, rows, labels)


def fit(side_examples: Sequence[SideExample]) -> tuple[float, ...]:
    """Logistic-regression weights over ``FEATURES`` (the bias is the first feature)."""
    try:
        from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]
    except ImportError:
        raise TrainingUnavailableError(MISSING_SKLEARN) from None
    x = [row for e in side_examples for row in e.rows]
    y = [label for e in side_examples for label in e.labels]
    if len(set(y)) < 2:
        raise TrainingUnavailableError("the clause scorer needs candidates that match and ones that do not")
    model = LogisticRegression(C=_C, fit_intercept=False, max_iter=2000).fit(x, y)
    return tuple(round(float(w), 6) for w in model.coef_[0])


def _best(rows: Sequence[Sequence[float]], weights: Sequence[float]) -> int:
    scores = [sum(a * b for a, b in zip(r, weights, strict=True)) for r in rows]
    return max(range(len(rows)), key=lambda k: (scores[k], -k))


def cross_validate(side_examples: Sequence[SideExample]) -> dict[str, Any]:
    """Leave one domain out: per domain, the picked, the user's first and the best candidate's share."""
    domains = sorted({e.domain for e in side_examples})
    rows: dict[str, dict[str, float]] = {}
    for held in domains:
        weights = fit([e for e in side_examples if e.domain != held])
        mine = [e for e in side_examples if e.domain == held]
        rows[held] = {
            "cases": len(mine),
            "learned": _share([bool(e.rows) and e.labels[_best(e.rows, weights)] for e in mine]),
            "first": _share([bool(e.rows) and e.labels[0] for e in mine]),
            "ceiling": _share([any(e.labels) for e in mine]),
        }
    summary = {
        key: {
            "macro": sum(r[key] for r in rows.values()) / len(rows),
            "worst": min(r[key] for r in rows.values()),
            "worst_domain": min(rows, key=lambda d: rows[d][key]),
        }
        for key in ("learned", "first", "ceiling")
    }
    return {"domains": rows, "summary": summary}


def _share(hits: Sequence[bool]) -> float:
    return sum(hits) / len(hits) if hits else 0.0


def data_sha256(files: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def fitted_json(data_dir: Path | None = None) -> str:
    """The weights file fitted on ``training_files`` (what ``train --tier clauses`` writes)."""
    files = training_files(data_dir)
    by_side = examples(load_lesson_cases(files))
    payload = {
        "features": list(FEATURES),
        "weights": {side: list(fit(by_side[side])) for side in _SIDES},
        "trained_on": [p.name for p in files],
        "data_sha256": data_sha256(files),
    }
    return json.dumps(payload, indent=1) + "\n"


def stale(path: Path = WEIGHTS_PATH, data_dir: Path | None = None) -> bool:
    """Whether the weights at ``path`` were fitted on other data than the current files."""
    current = json.loads(path.read_text(encoding="utf-8")).get("data_sha256")
    return bool(current != data_sha256(training_files(data_dir)))


def format_cv(report: dict[str, dict[str, Any]]) -> str:
    lines = ["clause picked by the learned score, leave one domain out (share naming the reference's object)"]
    for side, rep in report.items():
        lines.append(f"{side}:  {'domain':<28} {'cases':>5} {'learned':>8} {'first':>6} {'ceiling':>8}")
        for name, r in rep["domains"].items():
            figures = f"{r['learned']:>8.3f} {r['first']:>6.3f} {r['ceiling']:>8.3f}"
            lines.append(f"        {name:<28} {r['cases']:>5} {figures}")
        s = rep["summary"]
        for pick in ("macro", "worst"):
            lines.append(
                f"        {pick:<28} {'':>5} {s['learned'][pick]:>8.3f} {s['first'][pick]:>6.3f} "
                f"{s['ceiling'][pick]:>8.3f}"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``eval lessons --cv domain``: the scorer's leave-one-domain-out figures."""
    parser = argparse.ArgumentParser(
        prog="memos-feedback eval lessons --cv domain",
        description="The lesson clause scorer, fitted and scored leave one domain out.",
    )
    parser.add_argument("--cv", choices=("domain",), required=True)
    parser.add_argument(
        "files", nargs="*", help="recall-set files, one domain each (default: the training set)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    files = [Path(f) for f in args.files] or training_files()
    if len({f.stem for f in files}) < 2:
        print("error: cross-validation by domain needs at least two domain files", file=sys.stderr)
        return 2
    try:
        by_side = examples(load_lesson_cases(files))
        report = {side: cross_validate(by_side[side]) for side in _SIDES}
    except (LessonDataError, OSError, UnicodeDecodeError, TrainingUnavailableError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else format_cv(report))
    return 0
