"""Recall measured out of domain: leave-one-domain-out cross-validation.

    memos-feedback eval recall --cv domain DIR [--mode lexical|semantic|both] [--json]
    memos-feedback eval recall --cv domain DIR --mode lexical --db 'postgresql://.../recall_{domain}'

``DIR`` holds one JSON Lines file per domain (``tests/data/recall/``). Each
domain's repairs are written into a store of its own (a temporary SQLite
file, or the empty database ``--db`` names once ``{domain}`` is filled in).
Then, for each domain in turn, whatever is fitted (the relevance gate:
``recall_train.FoldFitter``) is fitted on the other domains only, and the
domain left out is scored with it. The figures of record are the macro
average over domains and the worst domain, per mode, kind and language.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..recall.config import RecallConfig
from ..recall.embeddings import Embedder
from ..store import Store, open_store
from .recall_eval import Rate, RecallCase, RecallReport, load_cases, score_queries, write_cases

__all__ = ["CVReport", "Domain", "Fit", "cross_validate", "format_cv", "load_domains"]


@dataclass(slots=True)
class Domain:
    """One domain's cases, the store holding their repairs, and each case's repair id."""

    name: str
    cases: list[RecallCase]
    store: Store | None = None
    own: dict[str, str | None] = field(default_factory=dict)


# Given the training domains (written) and the name of the one left out: a
# context inside which ``guidance_for`` uses what was fitted on them.
Fit = Callable[[Sequence[Domain], str], contextlib.AbstractContextManager[object]]


def load_domains(directory: str | Path) -> list[Domain]:
    """Every ``*.jsonl`` file of ``directory`` as a domain named after the file, sorted by name."""
    paths = sorted(Path(directory).glob("*.jsonl"))
    if len(paths) < 2:
        raise ValueError(f"{directory}: cross-validation by domain needs at least two *.jsonl files")
    return [Domain(p.stem, load_cases(p)) for p in paths]


@dataclass(slots=True)
class CVReport:
    mode: str
    domains: dict[str, RecallReport]

    def _values(self, pick: Callable[[RecallReport], float | None]) -> dict[str, float]:
        out = {}
        for name, report in self.domains.items():
            value = pick(report)
            if value is not None:
                out[name] = value
        return out

    def summary(self, pick: Callable[[RecallReport], float | None], worst_is_high: bool) -> dict[str, Any]:
        """Macro average over domains and the worst domain of one figure."""
        values = self._values(pick)
        if not values:
            return {"macro": None, "worst": None, "worst_domain": None}
        worst = (max if worst_is_high else min)(values, key=lambda k: values[k])
        return {
            "macro": round(sum(values.values()) / len(values), 4),
            "worst": round(values[worst], 4),
            "worst_domain": worst,
        }

    def table(self) -> dict[str, dict[str, Any]]:
        """Every reported figure: name -> macro, worst, worst domain."""
        rows: dict[str, dict[str, Any]] = {
            "recall@5": self.summary(lambda r: r.recall_at_5.value, False),
            "false injection": self.summary(lambda r: r.false_injection.value, True),
            "items per unrelated query": self.summary(lambda r: r.mean_unrelated_items, True),
            "unrelated-far empty block": self.summary(lambda r: r.far_empty.value, False),
        }
        kinds = sorted({k for r in self.domains.values() for k in r.by_kind})
        for kind in kinds:
            unrelated = kind.startswith("unrelated")
            rows[f"kind {kind}"] = self.summary(_kind(kind), unrelated)
        langs = sorted({lang for r in self.domains.values() for lang in r.by_lang})
        for lang in langs:
            rows[f"lang {lang} recall@5"] = self.summary(_lang(lang, "recall_at_5"), False)
            rows[f"lang {lang} false injection"] = self.summary(_lang(lang, "false_injection"), True)
        return rows

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "summary": self.table(),
            "domains": {name: r.as_dict() for name, r in self.domains.items()},
        }


def _kind(kind: str) -> Callable[[RecallReport], float | None]:
    return lambda r: r.by_kind.get(kind, Rate()).value


def _lang(lang: str, metric: str) -> Callable[[RecallReport], float | None]:
    return lambda r: r.by_lang.get(lang, {}).get(metric, Rate()).value


@contextlib.contextmanager
def _stores(domains: Sequence[Domain], db: str | None) -> Iterator[None]:
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        for d in domains:
            url = db.replace("{domain}", d.name) if db else f"sqlite:///{Path(tmp) / (d.name + '.db')}"
            d.store = stack.enter_context(open_store(url))
        yield
        for d in domains:
            d.store = None


def cross_validate(
    domains: Sequence[Domain],
    *,
    embedder: Embedder | None = None,
    fit: Fit | None = None,
    config: RecallConfig | None = None,
    db: str | None = None,
    misses: bool = False,
    log: Callable[[str], None] | None = None,
) -> CVReport:
    """Leave one domain out: fit on the others (``fit``; None fits nothing), score it.

    ``db``: a database URL with ``{domain}`` in it, naming one EMPTY database per domain.
    """
    mode = "semantic" if embedder is not None else "lexical"
    reports: dict[str, RecallReport] = {}
    with _stores(domains, db):
        for d in domains:
            assert d.store is not None
            d.own = write_cases(d.cases, d.store, embedder=embedder, config=config)
        for held in domains:
            assert held.store is not None
            training = [d for d in domains if d is not held]
            scope = fit(training, held.name) if fit is not None else contextlib.nullcontext()
            with scope:
                report = score_queries(
                    held.cases, held.store, held.own, embedder=embedder, config=config, misses=misses
                )
            reports[held.name] = report
            if log is not None:
                log(
                    f"{mode} {held.name}: recall@5 {report.recall_at_5.value:.3f} "
                    f"false injection {report.false_injection.value:.3f}"
                )
    return CVReport(mode, reports)


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def format_cv(report: CVReport) -> str:
    lines = [
        f"mode: {report.mode}   domains: {len(report.domains)} (leave one domain out)",
        f"  {'figure':<38} {'macro':>7} {'worst':>7}  worst domain",
    ]
    for name, row in report.table().items():
        lines.append(
            f"  {name:<38} {_num(row['macro']):>7} {_num(row['worst']):>7}  {row['worst_domain'] or ''}"
        )
    lines.append("  per domain:")
    for name, r in report.domains.items():
        lines.append(
            f"    {name:<32} recall@5 {_num(r.recall_at_5.value)}  false injection "
            f"{_num(r.false_injection.value)}  items/unrelated {_num(r.mean_unrelated_items)}  "
            f"median {r.median_ms} ms"
        )
        lines += [f"      miss {m['case']} {m['kind']:<24} {m['returned']} {m['query']}" for m in r.misses]
    return "\n".join(lines)
