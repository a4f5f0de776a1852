"""Recall measured out of domain: leave one domain out.

    memos-feedback eval recall --cv domain [FILE|DIR ...] [--mode lexical|semantic|both]
        [--embedder minilm|e5] [--curve] [--json]

Each file is a domain (default: every ``tests/data/recall/*.jsonl`` and
``tests/data/recall_dev.jsonl``), named after its stem. Every domain's
repairs are written through the public pipeline into a store of its own
(``recall_eval.write_case_repair``), and each query asks ``guidance_for``
with the shipped configuration. Reported per domain, then as the macro
average and the worst domain:

* recall@5 (relevant queries whose own repair is among the first five),
  cross-language recall@5 (the ``cross-language`` kind alone);
* near-miss injection (``unrelated-near-miss``: the own repair is in the
  block) and far injection (``unrelated-far``), apart.

**The curve.** The same queries, with a stricter gate on the items' final
score: for each threshold of ``THRESHOLDS``, items scoring below it are
dropped before the first five are taken (from up to ``max_limit`` items,
so the order is the shipped one). Per domain, recall@5 against near-miss
injection at every threshold. Then, for each domain in turn, a threshold is
**chosen on the other domains only** (the lowest whose macro near-miss
injection there is within ``NEAR_MISS_TARGET``, else the one with the best
recall@5 minus near-miss injection) and the left-out domain is scored at
it: that row is what such a gate would do on a domain nobody tuned it on.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ..config import FeedbackConfig
from ..embeddings import Embedder
from ..errors import MemosFeedbackError
from ..recall.config import RecallConfig
from ..recall.guidance import guidance_for
from ..repair.deps import RepairDeps
from ..store import open_store
from ..store.reads import repair_count
from .labels import default_data_dir
from .recall_eval import RecallCase, RecallDataError, load_cases, packaged_embedder, write_case_repair

__all__ = [
    "NEAR_MISS_TARGET",
    "THRESHOLDS",
    "DomainResult",
    "Figures",
    "QueryResult",
    "choose_threshold",
    "cross_validate",
    "default_domain_files",
    "figures",
    "format_cv",
    "main",
]

# Item-score thresholds the curve is drawn at (0.0: the shipped gate alone).
THRESHOLDS: Final = tuple(round(0.05 * i, 2) for i in range(25))
# The bound on near-miss injection, the target the threshold is chosen for.
NEAR_MISS_TARGET: Final = 0.15
_TOP = 5


@dataclass(frozen=True, slots=True)
class QueryResult:
    """One query of a domain: what it is and what ``guidance_for`` ranked (id, score), best first."""

    kind: str
    relevant: bool
    own: str | None
    ranked: tuple[tuple[str, float], ...]


@dataclass(frozen=True, slots=True)
class Figures:
    """A domain's figures at one threshold (None: no query of that kind)."""

    recall_at_5: float | None
    cross_language: float | None
    near_miss_injection: float | None
    far_injection: float | None


@dataclass(slots=True)
class DomainResult:
    name: str
    cases: int
    written: int
    queries: list[QueryResult] = field(default_factory=list)

    def at(self, threshold: float) -> Figures:
        return figures(self.queries, threshold)


def _returned(query: QueryResult, threshold: float) -> list[str]:
    return [rid for rid, score in query.ranked if score >= threshold][:_TOP]


def _rate(hits: list[bool]) -> float | None:
    return sum(hits) / len(hits) if hits else None


def figures(queries: Sequence[QueryResult], threshold: float = 0.0) -> Figures:
    """The four figures with items scoring below ``threshold`` dropped (0.0: the shipped gate)."""
    by: dict[str, list[bool]] = {"relevant": [], "cross": [], "near": [], "far": []}
    for q in queries:
        hit = q.own is not None and q.own in _returned(q, threshold)
        if q.relevant:
            by["relevant"].append(hit)
            if q.kind == "cross-language":
                by["cross"].append(hit)
        elif q.kind == "unrelated-near-miss":
            by["near"].append(hit)
        else:
            by["far"].append(hit)
    return Figures(_rate(by["relevant"]), _rate(by["cross"]), _rate(by["near"]), _rate(by["far"]))


def _macro(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def choose_threshold(domains: Sequence[DomainResult]) -> float:
    """The threshold for a domain none of ``domains`` is: chosen on their figures only."""
    best, best_margin = THRESHOLDS[0], -2.0
    for t in THRESHOLDS:
        rows = [d.at(t) for d in domains]
        near = _macro([r.near_miss_injection for r in rows])
        recall = _macro([r.recall_at_5 for r in rows]) or 0.0
        if near is not None and near <= NEAR_MISS_TARGET:
            return t
        margin = recall - (near or 0.0)
        if margin > best_margin:
            best, best_margin = t, margin
    return best


def default_domain_files() -> list[Path]:
    data = default_data_dir()
    return [*sorted((data / "recall").glob("*.jsonl")), data / "recall_dev.jsonl"]


def _domain_files(paths: Sequence[str]) -> list[Path]:
    if not paths:
        return default_domain_files()
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        files += sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    return files


def _score_domain(
    name: str, cases: Sequence[RecallCase], url: str, embedder: Embedder | None, config: RecallConfig
) -> DomainResult:
    with open_store(url) as store:
        with store.connection() as conn:
            if repair_count(conn):
                raise MemosFeedbackError(f"{name}: recall evaluation needs an empty database")
        deps = RepairDeps(
            store=store, config=FeedbackConfig(use_llm=False, cooldown_ms=0), embedder=embedder, recall=config
        )
        own = {case.id: write_case_repair(store, case, deps) for case in cases}
        result = DomainResult(name, len(cases), sum(1 for v in own.values() if v))
        for case in cases:
            for q in case.queries:
                found = guidance_for(
                    store,
                    tool_id=q["tool_id"],
                    context=q["context"],
                    query=q["query"],
                    project=case.project,
                    embedder=embedder,
                    config=config,
                    limit=config.max_limit,  # the curve drops items; the first five are taken after
                )
                ranked = tuple((item.repair_id, item.score) for item in found.items)
                result.queries.append(QueryResult(q["kind"], bool(q["relevant"]), own[case.id], ranked))
    return result


def cross_validate(
    domains: Sequence[tuple[str, Sequence[RecallCase]]],
    *,
    embedder: Embedder | None = None,
    config: RecallConfig | None = None,
    log: Callable[[str], None] | None = None,
) -> list[DomainResult]:
    """Every domain written into a store of its own and queried (the curve is computed from these)."""
    cfg = config or RecallConfig()
    results: list[DomainResult] = []
    with tempfile.TemporaryDirectory(prefix="memos-recall-cv-") as tmp:
        for name, cases in domains:
            url = f"sqlite:///{Path(tmp) / (name + '.db')}"
            results.append(_score_domain(name, cases, url, embedder, cfg))
            if log is not None:
                log(f"scored {name}")
    return results


def report(results: Sequence[DomainResult], mode: str) -> dict[str, Any]:
    """Per domain at the shipped gate and at the threshold chosen without it; macro and worst of each."""
    rows: dict[str, Any] = {}
    for held in results:
        others = [d for d in results if d is not held]
        chosen = choose_threshold(others) if others else THRESHOLDS[0]
        rows[held.name] = {
            "cases": held.cases,
            "written": held.written,
            "shipped": _as_dict(held.at(0.0)),
            "chosen_threshold": chosen,
            "at_chosen": _as_dict(held.at(chosen)),
            "curve": [{"threshold": t, **_as_dict(held.at(t))} for t in THRESHOLDS],
        }
    return {
        "mode": mode,
        "domains": rows,
        "shipped": _summary([r["shipped"] for r in rows.values()], list(rows)),
        "at_chosen": _summary([r["at_chosen"] for r in rows.values()], list(rows)),
    }


def _as_dict(f: Figures) -> dict[str, float | None]:
    return {
        "recall_at_5": f.recall_at_5,
        "cross_language": f.cross_language,
        "near_miss_injection": f.near_miss_injection,
        "far_injection": f.far_injection,
    }


# For each figure, whether a higher value is worse (the worst domain is its max).
_HIGHER_IS_WORSE: Final = {
    "recall_at_5": False,
    "cross_language": False,
    "near_miss_injection": True,
    "far_injection": True,
}


def _summary(rows: Sequence[dict[str, float | None]], names: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, worse_high in _HIGHER_IS_WORSE.items():
        values = {n: r[key] for n, r in zip(names, rows, strict=True) if r[key] is not None}
        if not values:
            out[key] = {"macro": None, "worst": None, "worst_domain": None}
            continue
        worst = (max if worse_high else min)(values, key=lambda n: values[n] or 0.0)
        out[key] = {
            "macro": round(sum(v or 0.0 for v in values.values()) / len(values), 4),
            "worst": values[worst],
            "worst_domain": worst,
        }
    return out


def _num(value: object) -> str:
    return "  n/a" if value is None else f"{float(value):.3f}"  # type: ignore[arg-type]


def format_cv(rep: dict[str, Any], *, curve: bool = False) -> str:
    lines = [f"mode: {rep['mode']}   domains: {len(rep['domains'])} (leave one domain out)"]
    head = f"  {'':<30} {'recall@5':>8} {'x-lang':>7} {'near':>6} {'far':>6}"
    for title, key in (("shipped gate", "shipped"), ("threshold chosen on the other domains", "at_chosen")):
        lines += [f"{title}:", head]
        for name, row in rep["domains"].items():
            f = row[key]
            extra = f"  (t={row['chosen_threshold']:.2f})" if key == "at_chosen" else ""
            lines.append(
                f"  {name:<30} {_num(f['recall_at_5']):>8} {_num(f['cross_language']):>7} "
                f"{_num(f['near_miss_injection']):>6} {_num(f['far_injection']):>6}{extra}"
            )
        s = rep[key]
        for label, pick in (("macro", "macro"), ("worst", "worst")):
            lines.append(
                f"  {label:<30} "
                + " ".join(
                    f"{_num(s[k][pick]):>{w}}"
                    for k, w in (
                        ("recall_at_5", 8),
                        ("cross_language", 7),
                        ("near_miss_injection", 6),
                        ("far_injection", 6),
                    )
                )
            )
    if curve:
        lines.append("curve (threshold: recall@5 / near-miss injection):")
        for name, row in rep["domains"].items():
            points = [
                f"{p['threshold']:.2f}:{_num(p['recall_at_5']).strip()}/{_num(p['near_miss_injection']).strip()}"
                for p in row["curve"][::2]
            ]
            lines.append(f"  {name}: " + " ".join(points))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="memos-feedback eval recall --cv domain", description="Recall scored leave one domain out."
    )
    parser.add_argument("--cv", choices=("domain",), required=True)
    parser.add_argument("paths", nargs="*", help="domain files or directories of them (default: tests/data)")
    parser.add_argument("--mode", choices=("lexical", "semantic", "both"), default="both")
    parser.add_argument(
        "--embedder",
        choices=("minilm", "e5"),
        default="minilm",
        help="the semantic mode's model: the packaged all-MiniLM-L6-v2 (English) or multilingual-e5-small "
        "(extra [e5])",
    )
    parser.add_argument("--curve", action="store_true", help="print each domain's curve too")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        domains = [(p.stem, load_cases(p)) for p in _domain_files(args.paths)]
    except (RecallDataError, OSError, UnicodeDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if len(domains) < 2:
        print("error: cross-validation by domain needs at least two domain files", file=sys.stderr)
        return 2
    modes = ["lexical", "semantic"] if args.mode == "both" else [args.mode]
    reports = []
    try:
        for mode in modes:
            embedder = _embedder(args.embedder) if mode == "semantic" else None
            results = cross_validate(domains, embedder=embedder)
            reports.append(report(results, f"{mode} ({args.embedder})" if embedder is not None else mode))
    except MemosFeedbackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(reports, ensure_ascii=False, indent=2))
    else:
        print("\n\n".join(format_cv(r, curve=args.curve) for r in reports))
    return 0


def _embedder(name: str) -> Embedder:
    if name == "e5":
        from ..embeddings.e5 import E5Embedder

        return E5Embedder()
    return packaged_embedder(None)
