"""A worker process for the multi-process tests and the scaling benchmark.

    python -m tests.support.stress_child --db URL --index I [--triggers N --contexts C]
        [--expect TOTAL] [--llm-url URL] [--lease-ms MS] [--cooldown-ms MS] [--workers W]

It wires a subscriber (its own worker threads) to the shared database,
submits ``--triggers`` failure bursts spread over ``--contexts`` contexts
(committed before it prints ``SUBMITTED``), prints ``READY`` when it
submits nothing, then keeps processing until ``--expect`` jobs are finished
across all processes, and prints ``DONE``.
"""

from __future__ import annotations

import argparse
import sys
import time

from memos_feedback.config import FeedbackConfig
from memos_feedback.runtime.queue import RepairQueue
from memos_feedback.runtime.subscriber import attach_feedback_subscriber
from memos_feedback.signals import context_hash_of
from memos_feedback.store import open_store
from memos_feedback.synthesis.llm import OpenAIRepairLLM
from memos_feedback.types import FailureRecord, RepairInput

__all__ = ["context_name", "main", "session_of"]


def context_name(c: int) -> str:
    return f"ctx-{c:02d}"


def session_of(c: int) -> str:
    return f"sess-{c:02d}"


def burst_input(index: int, i: int, contexts: int) -> RepairInput:
    c = (index * 7 + i) % contexts
    tool, ctx = "pip.install", context_name(c)
    # Steps and times unique per (process, trigger): every trigger is a distinct job.
    # "manual", not "failure-burst": bursts of one context coalesce into its
    # pending job, and this test counts one job per trigger.
    base = (index * 100_000 + i) * 10
    failures = tuple(
        FailureRecord(tool, ctx, base + k, "E", 1_000 + base + k, session_of(c)) for k in range(3)
    )
    return RepairInput(
        trigger="manual",
        context_hash=context_hash_of(tool, ctx),
        tool_id=tool,
        session_id=session_of(c),
        failures=failures,
        context=ctx,
    )


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--db", required=True)
    p.add_argument("--index", type=int, required=True)
    p.add_argument("--triggers", type=int, default=0)
    p.add_argument("--contexts", type=int, default=20)
    p.add_argument("--expect", type=int, required=True)
    p.add_argument("--llm-url")
    p.add_argument("--llm-timeout", type=float, default=30.0)
    p.add_argument("--lease-ms", type=int, default=120_000)
    p.add_argument("--cooldown-ms", type=int, default=60_000)
    p.add_argument("--workers", type=int, default=1)
    args = p.parse_args(argv)

    store = open_store(args.db)
    config = FeedbackConfig(
        use_llm=args.llm_url is not None, lease_ms=args.lease_ms, cooldown_ms=args.cooldown_ms
    )
    llm = None
    if args.llm_url:
        llm = OpenAIRepairLLM("m", base_url=args.llm_url, api_key="k", timeout=args.llm_timeout)
    queue = RepairQueue(store, config)
    sub = attach_feedback_subscriber(store, llm=llm, config=config, workers=args.workers, poll_interval=0.02)
    if args.triggers:
        for i in range(args.triggers):
            sub.run_once(burst_input(args.index, i, args.contexts))
        print("SUBMITTED", flush=True)
    else:
        print("READY", flush=True)
    while True:
        stats = queue.stats()
        if (stats["done"] or 0) + (stats["dead"] or 0) >= args.expect:
            break
        time.sleep(0.25)  # a light poll: the workers are what is measured
    sub.close(timeout=30)
    store.close()
    print("DONE", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
