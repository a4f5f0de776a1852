"""Score guidance recall on a labelled file (schema: ``tests/data/RECALL.md``).

    memos-feedback eval recall FILE [--mode lexical|semantic|both] [--json]
    memos-feedback eval recall FILE --mode lexical|semantic --db URL

``--db`` names an empty database (PostgreSQL, say) for one mode: the cases'
repairs stay in it, so a second mode, or a second run, needs another one.
A database that already holds repairs is refused: they would compete with
the cases' own and the figures would mean nothing.

Every case's repair is written through the library's own pipeline into one
fresh store: its trace is stored as a failing step of a session, then the
user's feedback (classified, ``run_repair`` with the ``user.<shape>``
trigger) or, without feedback, a burst of three failures of the tool
(``FailureSignals`` → ``failure-burst``); synthesis is the template (no
LLM). Each query then goes through ``guidance_for`` with the case's project.

* recall@5 — relevant queries whose own repair is among the first five items;
* false-injection rate — unrelated queries whose own repair is returned at all.

Both overall, by ``kind``, by ``lang`` and on odd/even cases (a check that
the defaults were not fitted to one half).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..classify.classifier import classify_feedback
from ..config import FeedbackConfig
from ..embeddings import Embedder
from ..errors import InvalidInputError, MemosFeedbackError
from ..recall.config import RecallConfig
from ..recall.guidance import guidance_for
from ..repair.deps import RepairDeps
from ..repair.run import run_repair
from ..signals import FailureSignals, context_hash_of
from ..store import Store, open_store
from ..store.reads import repair_count
from ..types import REPAIR_SHAPE_VALUES, FailureRecord, RepairInput, ToolCall

__all__ = ["Rate", "RecallCase", "RecallReport", "evaluate_recall", "load_cases", "main", "packaged_embedder"]


class RecallDataError(ValueError):
    """A line of the cases file is not a valid case."""


class LessonCaseLike(Protocol):
    """What ``write_case_repair`` reads of a case (a recall or a lesson case)."""

    @property
    def id(self) -> str: ...
    @property
    def project(self) -> str | None: ...
    @property
    def repair(self) -> dict[str, str]: ...


@dataclass(frozen=True, slots=True)
class RecallCase:
    id: str
    lang: str
    project: str | None
    repair: dict[str, str]
    queries: tuple[dict[str, Any], ...]


@dataclass(slots=True)
class Rate:
    hits: int = 0
    total: int = 0

    @property
    def value(self) -> float | None:
        return self.hits / self.total if self.total else None

    def add(self, hit: bool) -> None:
        self.hits += int(hit)
        self.total += 1


@dataclass(slots=True)
class RecallReport:
    mode: str
    cases: int
    repairs_written: int
    recall_at_5: Rate = field(default_factory=Rate)
    false_injection: Rate = field(default_factory=Rate)
    by_kind: dict[str, Rate] = field(default_factory=dict)
    by_lang: dict[str, dict[str, Rate]] = field(default_factory=dict)
    by_half: dict[str, dict[str, Rate]] = field(default_factory=dict)
    not_written: list[str] = field(default_factory=list)
    misses: list[dict[str, Any]] = field(default_factory=list)
    median_ms: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        def rate(r: Rate) -> dict[str, Any]:
            return {"value": r.value, "hits": r.hits, "total": r.total}

        return {
            "mode": self.mode,
            "cases": self.cases,
            "repairs_written": self.repairs_written,
            "recall_at_5": rate(self.recall_at_5),
            "false_injection": rate(self.false_injection),
            "by_kind": {k: rate(v) for k, v in sorted(self.by_kind.items())},
            "by_lang": {k: {m: rate(r) for m, r in v.items()} for k, v in sorted(self.by_lang.items())},
            "by_half": {k: {m: rate(r) for m, r in v.items()} for k, v in sorted(self.by_half.items())},
            "not_written": self.not_written,
            "median_ms": self.median_ms,
            "misses": self.misses,
        }


def load_cases(path: str | Path) -> list[RecallCase]:
    cases: list[RecallCase] = []
    with open(path, encoding="utf-8") as fh:
        for n, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
                repair = obj["repair"]
                queries = tuple(obj["queries"])
                for key in ("tool_id", "context", "trace", "feedback"):
                    if not isinstance(repair.get(key), str):
                        raise KeyError(f"repair.{key}")
                for q in queries:
                    for key in ("tool_id", "context", "query", "kind"):
                        if not isinstance(q.get(key), str):
                            raise KeyError(f"queries[].{key}")
                    if not isinstance(q.get("relevant"), bool):
                        raise KeyError("queries[].relevant")
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise RecallDataError(f"line {n}: {exc}") from None
            cases.append(
                RecallCase(
                    str(obj.get("id", n)), str(obj.get("lang", "")), obj.get("project"), repair, queries
                )
            )
    return cases


def write_case_repair(
    store: Store, case: RecallCase | LessonCaseLike, deps: RepairDeps, *, session_prefix: str = "recall"
) -> str | None:
    """One case's repair through the pipeline; its id, or None when the pipeline skipped it.

    The user's feedback first (its shape is the trigger); when that writes
    nothing and the case has a trace, the failure again (a trace that
    carries the user's message, as an adapter writes it) and a burst of it.
    ``eval recall`` and ``eval lessons`` write their cases with this.
    """
    r = case.repair
    session = f"{session_prefix}-{case.id}"
    tool, ctx = r["tool_id"], r["context"]
    store.traces.add(
        session,
        agent_text=r["trace"] or f"{tool}: {ctx}",
        value=-0.6,
        tool_calls=[ToolCall(tool, error_code="failed" if r["trace"] else None)],
        episode_id=f"ep-{case.id}",
    )
    feedback = r["feedback"].strip()
    if feedback:
        shape = classify_feedback(feedback).shape.value
        trigger = "user." + shape if shape in REPAIR_SHAPE_VALUES else "manual"
        inp = RepairInput(
            trigger=trigger,
            context_hash=context_hash_of(tool, ctx),
            tool_id=tool,
            user_text=feedback,
            session_id=session,
            context=ctx,
            project=case.project,
        )
        result = run_repair(inp, deps)
        if result.repair_id is not None or not r["trace"]:
            return result.repair_id
    if feedback:
        # The failure came back after the message, as an adapter writes it:
        # a trace carrying the user's last words (the burst's repair reads them).
        store.traces.add(
            session,
            user_text=feedback,
            agent_text=r["trace"],
            value=-0.6,
            tool_calls=[ToolCall(tool, error_code="failed")],
            episode_id=f"ep-{case.id}",
        )
    signals = FailureSignals(deps.config)
    reason = next((ln.strip() for ln in r["trace"].splitlines() if ln.strip()), "")[:200]
    burst = None
    for step in range(deps.config.failure_threshold):
        burst = signals.record_failure(FailureRecord(tool, ctx, step, reason, None, session, f"ep-{case.id}"))
    if burst is None:
        return None
    inp = RepairInput(
        trigger="failure-burst",
        context_hash=burst.context_hash,
        tool_id=tool,
        session_id=session,
        failures=burst.occurrences,
        context=ctx,
        project=case.project,
    )
    return run_repair(inp, deps).repair_id


def evaluate_recall(
    cases: Sequence[RecallCase],
    store: Store,
    *,
    embedder: Embedder | None = None,
    config: RecallConfig | None = None,
    misses: bool = False,
) -> RecallReport:
    """Write every case's repair into ``store`` (empty), then score every query.

    Raises ``InvalidInputError`` when ``store`` holds repairs already.
    """
    with store.connection() as conn:
        held = repair_count(conn)
    if held:
        shown = store.engine.url.render_as_string(hide_password=True)
        raise InvalidInputError(f"recall evaluation needs an empty database; {shown} holds {held} repairs")
    cfg = config or RecallConfig()
    deps = RepairDeps(
        store=store, config=FeedbackConfig(use_llm=False, cooldown_ms=0), embedder=embedder, recall=cfg
    )
    own: dict[str, str | None] = {case.id: write_case_repair(store, case, deps) for case in cases}
    report = RecallReport(
        mode="semantic" if embedder is not None else "lexical",
        cases=len(cases),
        repairs_written=sum(1 for v in own.values() if v),
        not_written=[k for k, v in own.items() if not v],
    )
    timings: list[float] = []
    for n, case in enumerate(cases):
        half = "odd" if n % 2 == 0 else "even"  # d-001 is the first, an odd case
        for q in case.queries:
            started = time.perf_counter()
            found = guidance_for(
                store,
                tool_id=q["tool_id"],
                context=q["context"],
                query=q["query"],
                project=case.project,
                embedder=embedder,
                config=cfg,
            )
            timings.append((time.perf_counter() - started) * 1000)
            ids = [item.repair_id for item in found.items]
            target = own[case.id]
            metric = "recall_at_5" if q["relevant"] else "false_injection"
            hit = target is not None and (target in ids[:5] if q["relevant"] else target in ids)
            getattr(report, metric).add(hit)
            report.by_kind.setdefault(q["kind"], Rate()).add(hit)
            report.by_lang.setdefault(case.lang, {}).setdefault(metric, Rate()).add(hit)
            report.by_half.setdefault(half, {}).setdefault(metric, Rate()).add(hit)
            if misses and hit != q["relevant"]:
                report.misses.append(
                    {"case": case.id, "kind": q["kind"], "query": q["query"][:120], "returned": len(ids)}
                )
    timings.sort()
    report.median_ms = round(timings[len(timings) // 2], 2) if timings else 0.0
    return report


def _fmt(rate: Rate) -> str:
    return "n/a" if rate.value is None else f"{rate.value:.3f} ({rate.hits}/{rate.total})"


def format_report(report: RecallReport) -> str:
    lines = [
        f"mode: {report.mode}   cases: {report.cases}   repairs written: {report.repairs_written}"
        + (f" (skipped: {', '.join(report.not_written)})" if report.not_written else ""),
        f"recall@5:         {_fmt(report.recall_at_5)}",
        f"false injection:  {_fmt(report.false_injection)}",
        f"median guidance_for: {report.median_ms} ms (query embedding included)",
        "by kind (recall for relevant kinds, injection rate for unrelated ones):",
    ]
    lines += [f"  {k:<26} {_fmt(v)}" for k, v in sorted(report.by_kind.items())]
    for title, table in (("by lang", report.by_lang), ("by half", report.by_half)):
        lines.append(f"{title}:")
        for key, metrics in sorted(table.items()):
            rec, inj = metrics.get("recall_at_5", Rate()), metrics.get("false_injection", Rate())
            lines.append(f"  {key:<8} recall@5 {_fmt(rec):<18} false injection {_fmt(inj)}")
    for m in report.misses:
        lines.append(f"  miss {m['case']} {m['kind']:<24} returned={m['returned']} {m['query']}")
    return "\n".join(lines)


def packaged_embedder(model: str | None) -> Embedder:
    """The semantic mode's embedder: the sentence-transformers model packaged (or ``model``)."""
    from ..embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(model)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="memos-feedback eval recall", description="Score guidance recall on labelled JSONL."
    )
    parser.add_argument("cases", help="JSON Lines file, one case a line (tests/data/RECALL.md)")
    parser.add_argument("--mode", choices=("lexical", "semantic", "both"), default="both")
    parser.add_argument("--model", help="local sentence-transformers model directory (default: packaged)")
    parser.add_argument(
        "--db", help="URL of an EMPTY database, for one --mode (default: a temporary SQLite file per mode)"
    )
    parser.add_argument("--misses", action="store_true", help="list the queries scored wrong")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.db and args.mode == "both":
        parser.error("--db takes one mode (--mode lexical or --mode semantic), each its own empty database")
    try:
        cases = load_cases(args.cases)
    except (RecallDataError, OSError, UnicodeDecodeError) as exc:
        print(f"error: {args.cases}: {exc}", file=sys.stderr)
        return 2
    modes = ["lexical", "semantic"] if args.mode == "both" else [args.mode]
    reports: list[RecallReport] = []
    try:
        for mode in modes:
            embedder = packaged_embedder(args.model) if mode == "semantic" else None
            with tempfile.TemporaryDirectory() as tmp:
                url = args.db or f"sqlite:///{Path(tmp) / 'recall.db'}"
                with open_store(url) as store:
                    reports.append(evaluate_recall(cases, store, embedder=embedder, misses=args.misses))
    except MemosFeedbackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([r.as_dict() for r in reports], ensure_ascii=False, indent=2))
    else:
        print("\n\n".join(format_report(r) for r in reports))
    return 0
