"""The n-gram tier of the feedback classifier: fitting, calibrating and its artefact.

``memos-feedback train --tier ngrams`` (``train.py``) writes it.

Reads the labelled JSON Lines files in ``TRAINING_FILES`` (the sets written
by the process that tuned the rules) and ``WRITER_FILES`` (six independent
writers, ``tests/data/classifier_writers/``), fits a multinomial logistic regression over
TF-IDF weighted character n-grams (``learned.ngrams``) with a fixed
configuration, and writes ``memos_feedback/data/classifier_model.json``:

* ``features``: n-gram -> ``[idf, weight per class]``; ``intercepts``;
  ``classes`` — floats rounded to six significant digits, keys sorted;
* ``data_sha256``: hash of the training files (name and bytes, in manifest
  order); ``tests/classify/test_learned.py`` recomputes it and fails when the shipped
  artefact is stale;
* ``calibration``: the reliability map of the combined classifier's
  confidence, fitted on leave-one-writer-out answers on the writers' lines
  (``CALIBRATION_FILES``);
* ``evaluation``: figures on hold-outs (``HOLDOUT_FILES``, none in the
  repository: the figures of record are ``memos-feedback eval --cv writer``).

The solver (Newton-CG to a tight tolerance) converges to the unique optimum
of the regularised loss, so the same data gives the same weights to well
within the rounding: training twice, or on another machine, writes the same
file up to the last rounded digit (``tests/classify/test_learned.py`` allows 1e-4).

scikit-learn is needed here only (``pip install 'memos-feedback[train]'``);
inference (``learned.py``) is pure Python.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ..classify.learned import FORMAT, NGRAM_RANGE, LearnedModel, analyze
from .labels import (
    CALIBRATION_FILES,
    HOLDOUT_FILES,
    TRAINING_FILES,
    WRITER_FILES,
    WRITERS_DIR,
    data_sha256,
    default_data_dir,
    load_records,
    training_records,
)

if TYPE_CHECKING:
    from ..classify.classifier import Combined

__all__ = [
    "ABSTAIN_TARGET",
    "MISSING_SKLEARN",
    "SEED",
    "choose_threshold",
    "fit_records",
    "fold_model",
    "lowo_rows",
    "model_doc",
    "round_weight",
    "to_json",
    "train",
]

# False triggers allowed on leave-one-writer-out answers when the abstention
# threshold is chosen: below the 2 % target, so that it still holds on a writer
# the threshold was not chosen on (fixed before any figure was read).
ABSTAIN_TARGET: Final = 0.015
ABSTAIN_GRID: Final = (0.0, *(round(0.3 + 0.025 * i, 3) for i in range(27)))
_REPAIR_LABELS: Final = frozenset(("negative", "correction", "constraint", "preference"))

SEED: Final = 14
C: Final = 10.0
# An n-gram seen in one message only says nothing about other writers, and
# would triple the artefact.
MIN_DF: Final = 2
DIGITS: Final = 6
SHAPES: Final = (
    "positive",
    "negative",
    "correction",
    "constraint",
    "preference",
    "confusion",
    "instruction",
    "unknown",
)


def round_weight(value: float) -> float:
    return float(f"{value:.{DIGITS}g}")


def fit_records(records: Sequence[dict[str, Any]], *, pair: bool = True) -> LearnedModel:
    """The learned tier fitted on labelled lines (no calibration); ``pair=False``: no pair features."""
    return _fit([model_doc(r, context=pair) for r in records], [r["shape"] for r in records])


def lowo_rows(
    data_dir: Path, writers: Sequence[str], held: Sequence[str] = (), *, pair: bool = True
) -> list[tuple[Combined, str]]:
    """Leave-one-writer-out answers of the combined classifier on ``writers`` (also without ``held``)."""
    from ..classify.classifier import combine_raw

    rows: list[tuple[Combined, str]] = []
    for name in writers:
        part = fit_records(training_records(data_dir, (*held, name)), pair=pair)
        for rec in load_records(data_dir, (name,)):
            rows.append((combine_raw(rec["text"], part, rec.get("agent_text")), rec["shape"]))
    return rows


def choose_threshold(rows: Sequence[tuple[Combined, str]], target: float = ABSTAIN_TARGET) -> float:
    """The lowest repair probability to trigger at that keeps false triggers within ``target``.

    ``rows`` are out-of-sample answers (``lowo_rows``); a false trigger is a
    repair shape on a message whose label calls for none.
    """
    negatives = [comb for comb, label in rows if label not in _REPAIR_LABELS]
    for threshold in ABSTAIN_GRID:
        false = sum(1 for c in negatives if c.shape.triggers_repair and c.repair >= threshold)
        if false <= target * len(negatives):
            return threshold
    return ABSTAIN_GRID[-1]


def _with_held_out_choices(model: LearnedModel, rows: Sequence[tuple[Combined, str]]) -> LearnedModel:
    from ..classify.classifier import fit_calibration

    meta = {**model.meta, "calibration": fit_calibration(rows), "abstain": choose_threshold(rows)}
    return LearnedModel(model.classes, model.intercepts, model.features, meta)


def fold_model(data_dir: Path, held: Sequence[Path], *, pair: bool = True) -> LearnedModel:
    """The model trained without the writers in ``held`` (for ``eval --cv writer``).

    Its calibration and abstention threshold come from leave-one-writer-out
    answers on the *other* writers only: the held-out ones influence nothing.
    """
    names = tuple(f"{WRITERS_DIR}/{p.name}" for p in held)
    model = fit_records(training_records(data_dir, names), pair=pair)
    inner = [w for w in WRITER_FILES if w not in names]
    return _with_held_out_choices(model, lowo_rows(data_dir, inner, names, pair=pair))


def model_text(text: str) -> str:
    """What the learned tier reads of a message: the classifier's prepared text."""
    from ..classify.classifier import prepared_text

    return prepared_text(text)


Doc = tuple[str, tuple[str, ...]]


def model_doc(record: dict[str, Any], *, context: bool = True) -> Doc:
    """What the learned tier reads of a labelled line: its prepared text and the pair's features."""
    agent = record.get("agent_text") if context else None
    return _doc(record["text"], agent if isinstance(agent, str) else None)


@functools.lru_cache(maxsize=65536)
def _doc(text: str, agent: str | None) -> Doc:
    # Cached: leave-one-writer-out fits read the same lines dozens of times.
    from ..classify.context import pair_features

    prepared = model_text(text)
    return prepared, pair_features(prepared, agent) if agent is not None else ()


def _fit(texts: Sequence[Doc], labels: Sequence[str]) -> LearnedModel:
    from sklearn.feature_extraction.text import TfidfVectorizer  # type: ignore[import-untyped]
    from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]

    vectorizer = TfidfVectorizer(
        analyzer=analyze, sublinear_tf=True, norm="l2", smooth_idf=True, min_df=MIN_DF
    )
    matrix = vectorizer.fit_transform(texts)
    clf = LogisticRegression(C=C, solver="newton-cg", tol=1e-8, max_iter=500, random_state=SEED)
    clf.fit(matrix, list(labels))
    classes = [str(c) for c in clf.classes_]
    coef = clf.coef_
    idf = vectorizer.idf_
    features: dict[str, list[float]] = {}
    for gram, col in vectorizer.vocabulary_.items():
        features[str(gram)] = [round_weight(float(idf[col]))] + [
            round_weight(float(coef[k, col])) for k in range(len(classes))
        ]
    intercepts = tuple(round_weight(float(v)) for v in clf.intercept_)
    meta: dict[str, Any] = {"format": FORMAT}
    return LearnedModel(tuple(classes), intercepts, features, meta)


def to_json(model: LearnedModel) -> str:
    obj = dict(model.meta)
    obj["classes"] = list(model.classes)
    obj["intercepts"] = list(model.intercepts)
    obj["features"] = {g: list(row) for g, row in model.features.items()}
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"


def train(
    data_dir: Path | None = None, *, log: Callable[[str], None] = lambda _m: None
) -> tuple[LearnedModel, dict[str, Any]]:
    """Fit the model, calibrate the combination and score the hold-outs; returns (model, report)."""
    from ..classify import classifier as clf

    data_dir = data_dir or default_data_dir()
    started = time.perf_counter()
    records = training_records(data_dir)
    model = fit_records(records)
    log(f"fitted on {len(records)} messages, {len(model.features)} n-grams")

    # Leave-one-writer-out answers of the combined classifier on the writers' lines.
    calib_rows = lowo_rows(data_dir, CALIBRATION_FILES)
    calibration = clf.fit_calibration(calib_rows)
    abstain = choose_threshold(calib_rows)
    log(f"calibrated on {len(calib_rows)} out-of-fold answers; abstain below repair probability {abstain}")

    meta: dict[str, Any] = {
        "format": FORMAT,
        "analyzer": {"kind": "char_wb", "ngram_range": list(NGRAM_RANGE), "lowercase": True},
        "tfidf": {"sublinear_tf": True, "smooth_idf": True, "norm": "l2", "min_df": MIN_DF},
        "estimator": {"kind": "LogisticRegression", "C": C, "solver": "newton-cg", "seed": SEED},
        "training_files": list(TRAINING_FILES + WRITER_FILES),
        "holdout_files": list(HOLDOUT_FILES),
        "training_count": len(records),
        "data_sha256": data_sha256(data_dir),
        "calibration": calibration,
        "abstain": abstain,
        "abstain_target": ABSTAIN_TARGET,
    }
    model = LearnedModel(model.classes, model.intercepts, model.features, meta)

    # Hold-out figures of the combined classifier with this model.
    from .scoring import evaluate, load_labels

    evaluation: dict[str, Any] = {}
    for name in HOLDOUT_FILES:
        path = data_dir / name
        if not path.is_file():
            continue
        rep = evaluate(load_labels(path), classify=lambda t: clf.classify_with(t, model=model))
        evaluation[name] = {
            "count": rep.count,
            "trigger_accuracy": round(rep.trigger_accuracy, 4),
            "macro_f1": round(rep.macro_f1, 4),
            "extraction_exact": None if rep.extraction_exact is None else round(rep.extraction_exact, 4),
            "by_lang": {
                lang: {
                    "count": s.count,
                    "trigger_accuracy": round(s.trigger_accuracy, 4),
                    "macro_f1": round(s.macro_f1, 4),
                    "extraction_exact": None if s.extraction_exact is None else round(s.extraction_exact, 4),
                }
                for lang, s in rep.by_lang.items()
            },
        }
        log(
            f"{name}: trigger {rep.trigger_accuracy:.3f} macro-F1 {rep.macro_f1:.3f} "
            f"extraction {rep.extraction_exact or 0:.3f}"
        )
    meta["evaluation"] = evaluation
    model = LearnedModel(model.classes, model.intercepts, model.features, meta)
    return model, {"seconds": round(time.perf_counter() - started, 1)}


MISSING_SKLEARN: Final = "training needs scikit-learn: pip install 'memos-feedback[train]'"
