"""Recall measured out of domain: leave one domain out.

    memos-feedback eval recall --cv domain [FILE|DIR ...] [--mode lexical|semantic|both]
        [--embedder minilm|e5] [--curve] [--json]

Each file is a domain (default: every ``tests/data/recall/*.jsonl`` and
``tests/data/recall_dev.jsonl``), named after its stem. Every domain's
repairs are written through the public pipeline into a store of its own
and each query asks ``guidance_for`` with the shipped configuration, the
problem gate off (``recall_gate.served_queries``). Reported per domain,
then as the macro average and the worst domain:

* recall@5 (relevant queries whose own repair is among the first five),
  cross-language recall@5 (the ``cross-language`` kind alone);
* near-miss injection (``unrelated-near-miss``: the own repair is in the
  block) and far injection (``unrelated-far``), apart.

Three rows per domain: the **text gate** alone; the **problem gate fitted
on the other domains** (``recall_gate.fit``: logistic weights and the
threshold both chosen without the domain — what the gate does on a domain
nobody tuned it on); and, for the domains the shipped weights were never
fitted on (``recall_gate.HELD_OUT``), the **shipped gate** (the packaged
weights at the configured ``problem_gate_threshold``). The gate is always
fitted on the lexical mode's items, as the shipped weights are, and
scored on the mode's own. ``--curve`` prints each domain's recall@5
against near-miss injection as its fold's threshold rises.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from ..embeddings import Embedder
from ..errors import MemosFeedbackError
from ..recall.config import RecallConfig
from ..recall.problem_gate import shipped_model
from .labels import default_data_dir
from .ngram_train import MISSING_SKLEARN
from .recall_eval import RecallCase, RecallDataError, load_cases, packaged_embedder
from .recall_gate import HELD_OUT, THRESHOLDS, Served, fit, rates, served_queries

__all__ = ["CURVE", "cross_validate", "default_domain_files", "format_cv", "main", "report"]

# The thresholds the curve prints (every fifth of the grid the threshold is chosen on).
CURVE: Final = THRESHOLDS[::5]
Rates = dict[str, float | None]


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


def cross_validate(
    domains: Sequence[tuple[str, Sequence[RecallCase]]],
    *,
    embedder: Embedder | None = None,
    config: RecallConfig | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, list[Served]]:
    """Every domain written into a store of its own and queried with the problem gate off."""
    cfg = config or RecallConfig()
    results: dict[str, list[Served]] = {}
    with tempfile.TemporaryDirectory(prefix="memos-recall-cv-") as tmp:
        for name, cases in domains:
            url = f"sqlite:///{Path(tmp) / (name + '.db')}"
            results[name] = served_queries(name, cases, url, embedder, cfg)
            if log is not None:
                log(f"scored {name}")
    return results


def report(
    served: dict[str, list[Served]],
    mode: str,
    *,
    fit_on: dict[str, list[Served]] | None = None,
    config: RecallConfig | None = None,
) -> dict[str, Any]:
    """Per domain: the text gate, the gate fitted without it, the shipped gate where held out.

    ``fit_on``: the items each fold's gate is fitted on (default ``served``;
    the lexical mode's when ``served`` is another mode's).
    """
    cfg = config or RecallConfig()
    train = fit_on if fit_on is not None else served
    shipped = shipped_model()
    rows: dict[str, Any] = {}
    for name, queries in served.items():
        others = [q for other, qs in train.items() if other != name for q in qs]
        model = fit(others)
        row: dict[str, Any] = {
            "queries": len(queries),
            "text_gate": rates(queries, None, 0.0),
            "chosen_threshold": model.threshold,
            "fitted_without": rates(queries, model, model.threshold),
            "curve": [{"threshold": t, **rates(queries, model, t)} for t in CURVE],
        }
        if name in HELD_OUT:
            row["shipped"] = rates(queries, shipped, cfg.problem_gate_threshold)
        rows[name] = row
    out: dict[str, Any] = {
        "mode": mode,
        "domains": rows,
        "text_gate": _summary({n: r["text_gate"] for n, r in rows.items()}),
        "fitted_without": _summary({n: r["fitted_without"] for n, r in rows.items()}),
    }
    held = {n: r["shipped"] for n, r in rows.items() if "shipped" in r}
    if held:
        out["shipped_held_out"] = _summary(held)
    return out


# For each figure, whether a higher value is worse (the worst domain is its max).
_HIGHER_IS_WORSE: Final = {
    "recall_at_5": False,
    "cross_language": False,
    "near_miss_injection": True,
    "far_injection": True,
}


def _summary(rows: dict[str, Rates]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, worse_high in _HIGHER_IS_WORSE.items():
        values = {n: r[key] for n, r in rows.items() if r[key] is not None}
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


_COLUMNS: Final = (
    ("recall_at_5", 8),
    ("cross_language", 7),
    ("near_miss_injection", 6),
    ("far_injection", 6),
)
_TABLES: Final = (
    ("text gate alone", "text_gate"),
    ("problem gate fitted on the other domains (threshold chosen on them)", "fitted_without"),
    ("held out, never fitted on: the shipped gate", "shipped"),
)


def format_cv(rep: dict[str, Any], *, curve: bool = False) -> str:
    lines = [f"mode: {rep['mode']}   domains: {len(rep['domains'])} (leave one domain out)"]
    head = f"  {'':<30} {'recall@5':>8} {'x-lang':>7} {'near':>6} {'far':>6}"
    for title, key in _TABLES:
        present = {n: r for n, r in rep["domains"].items() if key in r}
        if not present:
            continue
        lines += [f"{title}:", head]
        for name, row in present.items():
            extra = f"  (t={row['chosen_threshold']:.2f})" if key == "fitted_without" else ""
            lines.append(
                f"  {name:<30} " + " ".join(f"{_num(row[key][k]):>{w}}" for k, w in _COLUMNS) + extra
            )
        summary = rep["shipped_held_out" if key == "shipped" else key]
        for pick in ("macro", "worst"):
            lines.append(f"  {pick:<30} " + " ".join(f"{_num(summary[k][pick]):>{w}}" for k, w in _COLUMNS))
    if curve:
        lines.append("curve of each domain's fold (threshold: recall@5 / near-miss injection):")
        for name, row in rep["domains"].items():
            points = [
                f"{p['threshold']:.2f}:{_num(p['recall_at_5']).strip()}/{_num(p['near_miss_injection']).strip()}"
                for p in row["curve"]
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
    try:
        import sklearn  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        print(f"error: fitting the problem gate: {MISSING_SKLEARN}", file=sys.stderr)
        return 2
    try:
        reports = _reports(domains, args.mode, args.embedder)
    except MemosFeedbackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(reports, ensure_ascii=False, indent=2))
    else:
        print("\n\n".join(format_cv(r, curve=args.curve) for r in reports))
    return 0


def _reports(
    domains: Sequence[tuple[str, Sequence[RecallCase]]], mode: str, embedder: str
) -> list[dict[str, Any]]:
    lexical = cross_validate(domains)
    reports = [report(lexical, "lexical")] if mode in ("lexical", "both") else []
    if mode in ("semantic", "both"):
        semantic = cross_validate(domains, embedder=_embedder(embedder))
        reports.append(report(semantic, f"semantic ({embedder})", fit_on=lexical))
    return reports


def _embedder(name: str) -> Embedder:
    if name == "e5":
        from ..embeddings.e5 import E5Embedder

        return E5Embedder()
    return packaged_embedder(None)
