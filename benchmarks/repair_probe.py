"""One measurement of the repair path, run as a script against whichever library is on PYTHONPATH.

    python benchmarks/repair_probe.py {run_repair|drain} N

Prints one JSON object. ``benchmarks.repair_path`` runs it for this
checkout and for a base checkout (``--base``), alternating, so both
figures come from the same minutes of the same machine. It imports only
the public API both versions share, and nothing of the ``benchmarks``
package (a base checkout's copy of that package would shadow this one).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import threading
import time

# The package root's names: both layouts (before and after the layering) export them.
from memos_feedback import (
    FeedbackBus,
    FeedbackConfig,
    RepairDeps,
    RepairInput,
    RepairQueue,
    Store,
    ToolCall,
    attach_feedback_subscriber,
    open_store,
    run_repair,
)

CONFIG = FeedbackConfig(use_llm=False, cooldown_ms=0)
SESSION = "bench-session"
WARMUP = 50


def seed(store: Store) -> None:
    policy_episode = "bench-ep"
    store.policies.add("bench policy", boundary="host text", source_episode_ids=[policy_episode])
    for i in range(12):
        store.traces.add(
            SESSION,
            agent_text=f"pip install failed: error {i}" if i % 2 else f"uv pip install ok {i}",
            reflection="uv resolves faster" if i % 2 == 0 else "pip resolver conflict",
            value=0.8 if i % 2 == 0 else -0.7,
            episode_id=policy_episode,
            tool_calls=[ToolCall("pip.install", "E1" if i % 2 else None)],
        )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def probe_run_repair(n: int, url: str) -> dict[str, float]:
    """``run_repair`` latency in ms (median, p99) over ``n`` calls after a warm-up."""
    store = open_store(url)
    seed(store)
    deps = RepairDeps(store=store, config=CONFIG)
    samples = []
    for i in range(WARMUP + n):
        inp = RepairInput(
            trigger="manual", context_hash=f"rr{i:08x}", tool_id="pip.install", session_id=SESSION
        )
        t0 = time.perf_counter()
        result = run_repair(inp, deps)
        if i >= WARMUP:
            samples.append((time.perf_counter() - t0) * 1000)
        assert result.repair_id is not None, result
    store.close()
    return {"median_ms": statistics.median(samples), "p99_ms": percentile(samples, 0.99)}


def probe_drain(n: int, url: str) -> dict[str, float]:
    """Repairs per second through the durable queue, one worker (enqueue all, then drain).

    Completion is seen through the event bus (one terminal event per job),
    not by polling the database, which would compete with the worker.
    """
    store = open_store(url)
    seed(store)
    queue = RepairQueue(store, CONFIG)
    queue.enqueue_many(
        [
            RepairInput(
                trigger="manual", context_hash=f"dr{i:08x}", tool_id="pip.install", session_id=SESSION
            )
            for i in range(n)
        ]
    )
    bus = FeedbackBus()
    finished = threading.Semaphore(0)
    bus.on("repair.persisted", lambda _e: finished.release())
    bus.on("repair.skipped", lambda _e: finished.release())
    t0 = time.perf_counter()
    with attach_feedback_subscriber(store, bus=bus, config=CONFIG, poll_interval=0.01) as sub:
        for _ in range(n):
            assert finished.acquire(timeout=120), "the queue stalled"
        elapsed = time.perf_counter() - t0
        assert sub.metrics()["dead"] == 0
    assert len(store.repairs.list(limit=n)) == n
    store.close()
    return {"repairs_per_s": n / elapsed}


def main() -> None:
    kind, n = sys.argv[1], int(sys.argv[2])
    url = sys.argv[3] if len(sys.argv) > 3 else None
    with tempfile.TemporaryDirectory(prefix="memos-probe-") as tmp:
        target = url or f"sqlite:///{tmp}/bench.db"
        result = probe_run_repair(n, target) if kind == "run_repair" else probe_drain(n, target)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
