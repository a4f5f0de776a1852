"""Train the relevance gate of recall (``recall/gate.py``) and write its artefact.

    memos-feedback train recall [--data-dir tests/data/recall] [--out PATH] [--check] [--lexical-only]

Every domain file of the data directory is written into a store of its own
through the library's pipeline (``recall_eval.write_cases``); every query
then asks ``guidance_for`` while the gate's features of every candidate are
recorded (``gate.using_gate(record=...)``). A candidate is a positive when
it is the query's own repair and the query is relevant; the own repair of an
unrelated query is a negative, and so, at a small weight, is every other
case's repair (it takes a slot in the block).

A logistic regression (scikit-learn, L2, lbfgs to a tight tolerance: the
unique optimum, so the same data gives the same weights) is fitted per
evidence scale. Its threshold is chosen out of sample: each domain's
probabilities come from a model fitted on the others (leave one domain
out), and the threshold is the lowest at which at most ``TARGET_INJECTION``
of the unrelated queries get their own repair.

``FoldFitter`` is the same fit for ``eval recall --cv domain``: for each
fold, on the training domains only, threshold by leave-one-out among them.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ..errors import TrainingUnavailableError
from ..recall.embeddings import Embedder
from ..recall.gate import FEATURES, FORMAT, GATE_PATH, GateModel, Recorder, RelevanceGate, using_gate
from ..recall.guidance import guidance_for
from ..store import open_store
from .recall_cv import Domain, load_domains
from .recall_eval import write_cases

__all__ = ["TARGET_INJECTION", "FoldFitter", "Rows", "collect", "fit_gate_model", "train_gate"]

TARGET_INJECTION: Final = 0.03
# Other cases' repairs: negatives, at this weight against a query's own repair (the gate is
# about own repair against near miss; chosen on web_shop and ml_training only).
OTHER_WEIGHT: Final = 0.02
# L2 strength (scikit-learn's C): the features are few and bounded, the data a few thousand rows.
C: Final = 1.0
MISSING_SKLEARN: Final = "training needs scikit-learn: pip install 'memos-feedback[train]'"


@dataclass(slots=True)
class Rows:
    """One domain's recorded candidates: features, label, weight; and its unrelated queries' own rows."""

    x: list[tuple[float, ...]] = field(default_factory=list)
    y: list[int] = field(default_factory=list)
    w: list[float] = field(default_factory=list)
    # For each unrelated query: the index of its own repair's row (None: never a candidate).
    unrelated_own: list[int | None] = field(default_factory=list)


def collect(domain: Domain, embedder: Embedder | None) -> Rows:
    """Every candidate's features for every query of ``domain`` (written: ``domain.store``)."""
    assert domain.store is not None
    record: Recorder = []
    rows = Rows()
    recording = _recording_gate(embedder)
    for case in domain.cases:
        own = domain.own.get(case.id)
        for qi, q in enumerate(case.queries):
            start = len(record)
            with using_gate(recording, record=record, key=(case.id, qi)):
                guidance_for(
                    domain.store,
                    tool_id=q["tool_id"],
                    context=q["context"],
                    query=q["query"],
                    project=case.project,
                    embedder=embedder,
                )
            own_row: int | None = None
            for _, cid, values in record[start:]:
                is_own = own is not None and cid == own
                if is_own:
                    own_row = len(rows.x)
                rows.x.append(values)
                rows.y.append(int(is_own and bool(q["relevant"])))
                rows.w.append(1.0 if is_own else OTHER_WEIGHT)
            if not q["relevant"]:
                rows.unrelated_own.append(own_row)
    return rows


def _recording_gate(embedder: Embedder | None) -> RelevanceGate:
    # Nothing passes (threshold above any probability): only the features are wanted.
    closed = GateModel(tuple(0.0 for _ in FEATURES), 0.0, 2.0)
    models = {"lexical": closed}
    if embedder is not None:
        models[f"semantic:{embedder.model_name}"] = closed
    return RelevanceGate(models)


def _fit(parts: Sequence[Rows]) -> tuple[tuple[float, ...], float]:
    try:
        import numpy as np
        from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]
    except ImportError:
        raise TrainingUnavailableError(MISSING_SKLEARN) from None
    x = np.array([v for p in parts for v in p.x], dtype=np.float64)
    y = np.array([v for p in parts for v in p.y], dtype=np.int64)
    w = np.array([v for p in parts for v in p.w], dtype=np.float64)
    model = LogisticRegression(C=C, solver="lbfgs", max_iter=10_000, tol=1e-10)
    model.fit(x, y, sample_weight=w)
    return tuple(_round(float(v)) for v in model.coef_[0]), _round(float(model.intercept_[0]))


def _round(value: float) -> float:
    return float(f"{value:.6g}")


def threshold_for(probabilities: Sequence[float | None], target: float = TARGET_INJECTION) -> float:
    """The lowest threshold at which at most ``target`` of these (own repair, unrelated query) get in.

    ``None``: the own repair was not a candidate, never injected.
    """
    got = sorted((p for p in probabilities if p is not None), reverse=True)
    allowed = int(target * len(probabilities))
    if allowed >= len(got):
        return 0.5 * got[-1] if got else 0.5
    upper = got[allowed - 1] if allowed else 1.0
    return _round((upper + got[allowed]) / 2)


def fit_gate_model(parts: Sequence[Rows]) -> GateModel:
    """Weights fitted on all ``parts``; the threshold from each part scored by a fit on the others.

    (A single part has no others: its threshold is then in sample.)
    """
    if len(parts) < 2:
        weights, bias = _fit(parts)
        model = GateModel(weights, bias, 0.0)
        scored = [None if r is None else model.probability(p.x[r]) for p in parts for r in p.unrelated_own]
        return GateModel(weights, bias, threshold_for(scored))
    out_of_fold: list[float | None] = []
    for i, held in enumerate(parts):
        weights, bias = _fit([p for j, p in enumerate(parts) if j != i])
        model = GateModel(weights, bias, 0.0)
        out_of_fold += [None if r is None else model.probability(held.x[r]) for r in held.unrelated_own]
    weights, bias = _fit(parts)
    return GateModel(weights, bias, threshold_for(out_of_fold))


class FoldFitter:
    """``eval recall --cv domain``'s fit: the gate of a fold, from its training domains only."""

    def __init__(self, embedder: Embedder | None) -> None:
        self._embedder = embedder
        self._rows: dict[str, Rows] = {}

    def __call__(self, training: Sequence[Domain], held: str) -> contextlib.AbstractContextManager[None]:
        for d in training:
            if d.name not in self._rows:
                self._rows[d.name] = collect(d, self._embedder)
        model = fit_gate_model([self._rows[d.name] for d in training])
        models = {"lexical": model}
        if self._embedder is not None:
            models[f"semantic:{self._embedder.model_name}"] = model
        return using_gate(RelevanceGate(models))


def data_sha256(paths: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@contextlib.contextmanager
def _written(domains: Sequence[Domain], embedder: Embedder | None) -> Iterator[None]:
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        for d in domains:
            d.store = stack.enter_context(open_store(f"sqlite:///{Path(tmp) / (d.name + '.db')}"))
            d.own = write_cases(d.cases, d.store, embedder=embedder)
        yield
        for d in domains:
            d.store = None


def train_gate(
    data_dir: Path, embedders: Sequence[Embedder | None], log: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """The artefact (a JSON-ready dict) trained on every domain of ``data_dir``."""
    started = time.monotonic()
    models: dict[str, dict[str, Any]] = {}
    for embedder in embedders:
        domains = load_domains(data_dir)
        with _written(domains, embedder):
            parts = [collect(d, embedder) for d in domains]
        model = fit_gate_model(parts)
        name = "lexical" if embedder is None else f"semantic:{embedder.model_name}"
        models[name] = {"weights": list(model.weights), "bias": model.bias, "threshold": model.threshold}
        if log is not None:
            log(f"{name}: {sum(len(p.y) for p in parts)} rows, threshold {model.threshold}")
    paths = sorted(data_dir.glob("*.jsonl"))
    return {
        "format": FORMAT,
        "features": list(FEATURES),
        "models": models,
        "data_sha256": data_sha256(paths),
        "data_files": [p.name for p in paths],
        "target_injection": TARGET_INJECTION,
        "seconds": round(time.monotonic() - started, 1),
    }


def to_json(artefact: dict[str, Any]) -> str:
    stable = {k: v for k, v in artefact.items() if k != "seconds"}
    return json.dumps(stable, indent=1, sort_keys=True) + "\n"


def default_data_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "tests" / "data" / "recall"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="recall domains (default: tests/data/recall)"
    )
    parser.add_argument("--out", type=Path, default=GATE_PATH, help="artefact path")
    parser.add_argument("--check", action="store_true", help="exit 1 when the artefact's data hash is stale")
    parser.add_argument(
        "--lexical-only", action="store_true", help="train the lexical model only (no embeddings extra)"
    )


def run(args: argparse.Namespace) -> int:
    """Train and write the artefact (``--check``: compare the data hash only)."""
    data_dir = args.data_dir or default_data_dir()
    if args.check:
        current = json.loads(Path(args.out).read_text(encoding="utf-8")).get("data_sha256")
        if current != data_sha256(sorted(data_dir.glob("*.jsonl"))):
            print(f"{args.out} is stale; retrain with: memos-feedback train recall")
            return 1
        print(f"{args.out} is up to date")
        return 0
    try:
        import sklearn  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        raise TrainingUnavailableError(MISSING_SKLEARN) from None
    embedders: list[Embedder | None] = [None]
    if not args.lexical_only:
        from ..recall.embeddings import SentenceTransformerEmbedder

        embedders.append(SentenceTransformerEmbedder())
    artefact = train_gate(data_dir, embedders, log=lambda m: print(m, flush=True))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(to_json(artefact), encoding="utf-8")
    print(f"wrote {out} in {artefact['seconds']} s")
    return 0
