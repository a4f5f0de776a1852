"""What the optional reading judge costs a ``guidance_for`` (docs/PERFORMANCE.md, "The reading judge").

    python -m benchmarks.guidance_judge [--cases tests/data/recall_dev.jsonl] [--embeddings] [--rounds 3]

The recall dev set's repairs are written as ``eval recall`` writes them
(``write_case_repair``: the library's own pipeline, template synthesis)
into a fresh SQLite file; every query then runs through ``guidance_for``
twice, without a judge and with one pointed at a local chat server that
answers at once (``tests.support.chat_server.ChatServer``, always
``{"applies": [1]}``), alternating which goes first. Reported: the share of
calls that sent a request, candidates per request, prompt characters per
request (≈ tokens / 4), and the latency the judge added (with it minus
without it, per call; the median of ``--rounds`` for each call), over
the calls that sent a request and over all. Not the judge's accuracy:
there is no model here.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memos_feedback.config import FeedbackConfig
from memos_feedback.devtools.recall_eval import load_cases, packaged_embedder, write_case_repair
from memos_feedback.recall import RecallConfig, RelevanceJudge, guidance_for
from memos_feedback.repair.deps import RepairDeps
from memos_feedback.store import Store, open_store
from memos_feedback.synthesis.llm import OpenAIRepairLLM
from tests.support.chat_server import Behaviour, ChatServer

DEV = Path(__file__).resolve().parent.parent / "tests" / "data" / "recall_dev.jsonl"


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def timed(
    store: Store, q: dict[str, Any], project: str | None, embedder: Any, judge: Any
) -> tuple[float, str]:
    started = time.perf_counter()
    found = guidance_for(
        store,
        tool_id=q["tool_id"],
        context=q["context"],
        query=q["query"],
        project=project,
        embedder=embedder,
        judge=judge,
        config=RecallConfig(),
    )
    return (time.perf_counter() - started) * 1000, found.judge


def run(cases_path: Path, embeddings: bool, rounds: int) -> None:
    cases = load_cases(cases_path)
    embedder = packaged_embedder(None) if embeddings else None
    with tempfile.TemporaryDirectory() as tmp, open_store(f"sqlite:///{Path(tmp) / 'j.db'}") as store:
        deps = RepairDeps(
            store=store,
            config=FeedbackConfig(use_llm=False, cooldown_ms=0),
            embedder=embedder,
            recall=RecallConfig(),
        )
        for case in cases:
            write_case_repair(store, case, deps)
        calls = [(q, case.project) for case in cases for q in case.queries]
        with ChatServer() as server:
            server.default = Behaviour.ok('{"applies": [1]}')
            judge = RelevanceJudge(OpenAIRepairLLM("judge", base_url=server.base_url, api_key="k"))
            # Warm both paths (imports, the SDK's client, the search index's first reads).
            for q, project in calls[:5]:
                timed(store, q, project, embedder, None)
                timed(store, q, project, embedder, judge)
            seen = len(server.requests)
            added: list[list[float]] = [[] for _ in calls]
            asked = [False] * len(calls)
            outcomes: dict[str, int] = {}
            for r in range(rounds):
                for i, (q, project) in enumerate(calls):
                    order = (None, judge) if (i + r) % 2 == 0 else (judge, None)
                    got = {j is None: timed(store, q, project, embedder, j) for j in order}
                    plain, (with_judge, outcome) = got[True][0], got[False]
                    added[i].append(with_judge - plain)
                    now = len(server.requests)
                    asked[i] = now > seen
                    seen = now
                    if r == 0:
                        outcomes[outcome] = outcomes.get(outcome, 0) + 1
            requests = server.requests
        report(requests, calls, asked, added, outcomes, rounds, embeddings)


def report(
    requests: list[Any],
    calls: list[Any],
    asked: list[bool],
    added: list[list[float]],
    outcomes: dict[str, int],
    rounds: int,
    embeddings: bool,
) -> None:
    first = requests[-sum(asked) :] if any(asked) else []  # the last round's requests
    lessons = [len(json.loads(r.user_text())["lessons"]) for r in first]
    chars = [sum(len(m["content"]) for m in r.messages()) for r in first]
    per_call = [statistics.median(a) for a in added]
    with_request = [d for d, a in zip(per_call, asked, strict=True) if a]
    print(f"python {platform.python_version()} on {platform.machine()}, {rounds} round(s)")
    print(f"mode: {'semantic' if embeddings else 'lexical'}   calls: {len(calls)}   outcomes: {outcomes}")
    print(f"calls that sent a request: {sum(asked)}/{len(calls)} ({sum(asked) / len(calls):.0%})")
    if lessons:
        print(
            f"candidates per request: mean {statistics.mean(lessons):.2f}, max {max(lessons)}; "
            f"distribution {dict(sorted((n, lessons.count(n)) for n in set(lessons)))}"
        )
        print(
            f"prompt characters per request: median {statistics.median(chars):.0f}, "
            f"p90 {pct(chars, 0.9):.0f}, max {max(chars)} "
            f"(≈ {statistics.median(chars) / 4:.0f} tokens median)"
        )
    if with_request:
        print(
            f"added latency, calls with a request: median {statistics.median(with_request):.2f} ms, "
            f"p90 {pct(with_request, 0.9):.2f} ms"
        )
    print(
        f"added latency, all calls: median {statistics.median(per_call):.2f} ms, "
        f"p90 {pct(per_call, 0.9):.2f} ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=str(DEV))
    ap.add_argument("--embeddings", action="store_true", help="semantic mode (the packaged model)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(f"{sys.executable}", flush=True)
    run(Path(args.cases), args.embeddings, args.rounds)


if __name__ == "__main__":
    main()
