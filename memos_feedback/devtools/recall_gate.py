"""The problem gate's training: features of served items, a logistic fit, a threshold.

    memos-feedback train --tier recall-gate [--check]

For every query of every domain, ``guidance_for`` runs with the problem
gate off (``problem_gate_threshold=0``) and each item it returns is
described by ``recall.problem_gate.features``. The item that is the
query's own repair is an example: relevant queries' own repairs are
positives, near misses' and unrelated queries' are negatives (what
injection counts). The model is a standardised logistic regression
(scikit-learn, classes balanced); the threshold is chosen on the training
domains by ``choose_threshold``: the lowest probability at which their
macro near-miss injection is within ``NEAR_MISS_TARGET``, else the one with
the best recall@5 minus near-miss injection. The shipped weights are fitted
on every domain but ``HELD_OUT`` (those are scored only).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ..config import FeedbackConfig
from ..embeddings import Embedder
from ..errors import MemosFeedbackError
from ..recall.config import RecallConfig
from ..recall.guidance import guidance_for
from ..recall.problem_gate import GateModel, QueryParts, RepairParts, repair_parts
from ..recall.problem_gate import features as gate_features
from ..repair.deps import RepairDeps
from ..store import Store, open_store
from ..store.outcomes import get_repair
from ..store.reads import repair_count
from .labels import default_data_dir
from .recall_eval import RecallCase, load_cases, write_case_repair

__all__ = [
    "GATE_PATH",
    "HELD_OUT",
    "NEAR_MISS_TARGET",
    "THRESHOLDS",
    "Served",
    "choose_threshold",
    "fit",
    "kept",
    "rates",
    "served_queries",
    "stale",
    "trained_json",
    "training_files",
]

GATE_PATH: Final = Path(__file__).resolve().parent.parent / "recall" / "problem_gate.json"
# Scored, never fitted on: the two domains written last, by writers who saw nothing of the method.
HELD_OUT: Final = ("docs_sites", "data_bi")
# The bound on near-miss injection, the target a threshold is chosen for.
NEAR_MISS_TARGET: Final = 0.15
THRESHOLDS: Final = tuple(round(0.02 * i, 2) for i in range(50))
_TOP = 5


@dataclass(frozen=True, slots=True)
class Served:
    """One query: what it is, its own repair, and what ``guidance_for`` returned (ids, features)."""

    domain: str
    kind: str
    relevant: bool
    own: str | None
    ids: tuple[str, ...]
    rows: tuple[tuple[float, ...], ...]


def served_queries(
    domain: str,
    cases: Sequence[RecallCase],
    url: str,
    embedder: Embedder | None,
    config: RecallConfig,
) -> list[Served]:
    """Every query of one domain, written into an empty store at ``url`` and asked with the gate off."""
    cfg = dataclasses.replace(config, problem_gate_threshold=0.0)
    with open_store(url) as store:
        with store.connection() as conn:
            if repair_count(conn):
                raise MemosFeedbackError(f"{domain}: recall evaluation needs an empty database")
        deps = RepairDeps(
            store=store, config=FeedbackConfig(use_llm=False, cooldown_ms=0), embedder=embedder, recall=cfg
        )
        own = {case.id: write_case_repair(store, case, deps) for case in cases}
        repairs: dict[str, RepairParts] = {}
        out: list[Served] = []
        for case in cases:
            for q in case.queries:
                found = guidance_for(
                    store,
                    tool_id=q["tool_id"],
                    context=q["context"],
                    query=q["query"],
                    project=case.project,
                    embedder=embedder,
                    config=cfg,
                    limit=cfg.max_limit,  # the gate drops items; the first five are taken after
                )
                parts = QueryParts.of(q["tool_id"], q["context"], q["query"] or q["context"] or "")
                rows = tuple(
                    gate_features(
                        parts,
                        _parts(store, repairs, item.repair_id),
                        exact="exact context" in item.why,
                        same_error="same error" in item.why,
                    )
                    for item in found.items
                )
                ids = tuple(item.repair_id for item in found.items)
                out.append(Served(domain, q["kind"], bool(q["relevant"]), own[case.id], ids, rows))
    return out


def _parts(store: Store, cache: dict[str, RepairParts], repair_id: str) -> RepairParts:
    hit = cache.get(repair_id)
    if hit is None:
        with store.session(action="reading a repair's parts") as s:
            repair = get_repair(s, repair_id)
            if repair is None:  # pragma: no cover - the row was just returned
                raise MemosFeedbackError(f"repair {repair_id} vanished")
            hit = cache[repair_id] = repair_parts(repair.source_text or "", repair.tool_id, repair.context)
    return hit


def kept(query: Served, model: GateModel | None, threshold: float) -> list[str]:
    """The first five ids the gate keeps (``model`` None: the text gate alone)."""
    if model is None:
        return list(query.ids[:_TOP])
    return [i for i, row in zip(query.ids, query.rows, strict=True) if model.probability(row) >= threshold][
        :_TOP
    ]


def rates(queries: Sequence[Served], model: GateModel | None, threshold: float) -> dict[str, float | None]:
    """recall@5, cross-language recall@5, near-miss and far injection of ``queries``."""
    by: dict[str, list[bool]] = {
        "recall_at_5": [],
        "cross_language": [],
        "near_miss_injection": [],
        "far_injection": [],
    }
    for q in queries:
        hit = q.own is not None and q.own in kept(q, model, threshold)
        if q.relevant:
            by["recall_at_5"].append(hit)
            if q.kind == "cross-language":
                by["cross_language"].append(hit)
        else:
            by["near_miss_injection" if q.kind == "unrelated-near-miss" else "far_injection"].append(hit)
    return {k: (sum(v) / len(v) if v else None) for k, v in by.items()}


def _macro(rows: Sequence[dict[str, float | None]], key: str) -> float | None:
    values = [r[key] for r in rows if r[key] is not None]
    return sum(v for v in values if v is not None) / len(values) if values else None


def choose_threshold(by_domain: dict[str, list[Served]], model: GateModel) -> float:
    """The threshold chosen on these domains (module docstring)."""
    best, best_margin = THRESHOLDS[0], -2.0
    for t in THRESHOLDS:
        rows = [rates(qs, model, t) for qs in by_domain.values()]
        near, recall = _macro(rows, "near_miss_injection"), _macro(rows, "recall_at_5") or 0.0
        if near is not None and near <= NEAR_MISS_TARGET:
            return t
        margin = recall - (near or 0.0)
        if margin > best_margin:
            best, best_margin = t, margin
    return best


def fit(queries: Sequence[Served], *, c: float = 1.0) -> GateModel:
    """The logistic model on ``queries``' own-repair items, its threshold chosen on their domains."""
    from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]
    from sklearn.preprocessing import StandardScaler  # type: ignore[import-untyped]

    x, y = [], []
    for q in queries:
        if q.own is not None and q.own in q.ids:
            x.append(q.rows[q.ids.index(q.own)])
            y.append(int(q.relevant))
    if len(set(y)) < 2:
        raise MemosFeedbackError("the problem gate needs served items of relevant and unrelated queries")
    scaler = StandardScaler().fit(x)
    lr = LogisticRegression(C=c, class_weight="balanced", max_iter=2_000).fit(scaler.transform(x), y)
    model = GateModel(
        mean=tuple(float(v) for v in scaler.mean_),
        scale=tuple(float(v) or 1.0 for v in scaler.scale_),
        coef=tuple(float(v) for v in lr.coef_[0]),
        intercept=float(lr.intercept_[0]),
        threshold=0.0,
    )
    by_domain: dict[str, list[Served]] = {}
    for q in queries:
        by_domain.setdefault(q.domain, []).append(q)
    return dataclasses.replace(model, threshold=choose_threshold(by_domain, model))


def data_sha256(files: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def training_files(data_dir: Path | None = None) -> list[Path]:
    """Every recall domain but ``HELD_OUT``, and the development set."""
    data = data_dir or default_data_dir()
    files = [p for p in sorted((data / "recall").glob("*.jsonl")) if p.stem not in HELD_OUT]
    return [*files, data / "recall_dev.jsonl"]


def stale(path: Path = GATE_PATH, data_dir: Path | None = None) -> bool:
    """Whether the weights at ``path`` were fitted on other data than the current files."""
    current = json.loads(path.read_text(encoding="utf-8")).get("data_sha256")
    return bool(current != data_sha256(training_files(data_dir)))


def trained_json(data_dir: Path | None = None, log: Callable[[str], None] | None = None) -> str:
    """The weights file fitted on ``training_files`` (what ``train --tier recall-gate`` writes)."""
    files = training_files(data_dir)
    queries: list[Served] = []
    with tempfile.TemporaryDirectory(prefix="memos-recall-gate-") as tmp:
        for path in files:
            url = f"sqlite:///{Path(tmp) / (path.stem + '.db')}"
            queries += served_queries(path.stem, load_cases(path), url, None, RecallConfig())
            if log is not None:
                log(f"served {path.stem}")
    model = fit(queries)
    if log is not None:
        log(f"fitted on {len(queries)} queries; threshold {model.threshold:.2f}")
    payload = {
        **model.to_json(),
        "trained_on": [p.name for p in files],
        "mode": "lexical",
        "held_out": list(HELD_OUT),
        "data_sha256": data_sha256(files),
    }
    return json.dumps(payload, indent=1) + "\n"
