"""Repair-path benchmarks: ``run_repair`` latency, queue enqueue latency, drain throughput.

    python -m benchmarks.repair_path [--quick] [--db URL] [--base DIR]

All on a SQLite WAL file in a temp dir (or ``--db``), template synthesis
(no LLM). Figures are medians over several runs; the machine and Python
version are printed first. Targets (docs/PERFORMANCE.md, issue 15):
``run_repair`` median ≤ 0.5 ms and p99 ≤ 2 ms, drain ≥ 1,000 repairs/s
with one worker.

``--base NAME=DIR`` (repeatable; or ``MEMOS_BENCH_BASE``): a checkout of an
earlier commit (``git worktree add /tmp/wt-base <commit>``) — the previous
commit, and the last accepted speed (the tag ``speed-baseline``). ``run_repair``
and the drain are then measured for every side, each run in a fresh process
(``benchmarks/repair_probe.py`` with that checkout on ``PYTHONPATH``), the
order rotating between rounds, and printed side by side with their ratio to
MemOS's figures: on a shared machine only figures from the same minutes compare.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from benchmarks.hot_path import machine
from memos_feedback.config import FeedbackConfig
from memos_feedback.events import FeedbackBus
from memos_feedback.repair.deps import RepairDeps
from memos_feedback.repair.run import run_repair
from memos_feedback.runtime.queue import RepairQueue
from memos_feedback.runtime.subscriber import attach_feedback_subscriber
from memos_feedback.store import Store, ToolCall, open_store
from memos_feedback.types import RepairInput

CONFIG = FeedbackConfig(use_llm=False, cooldown_ms=0)
ROOT = Path(__file__).resolve().parents[1]
PROBE = Path(__file__).resolve().parent / "repair_probe.py"
# The reference column (issue 15: MemOS's feedback module on this machine).
MEMOS = {"run_repair median ms": 0.22, "drain repairs/s": 665.0}
SESSION = "bench-session"


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


def fresh_store(url: str | None) -> tuple[Store, AbstractContextManager[object]]:
    tmp = tempfile.TemporaryDirectory(prefix="memos-bench-")
    store = open_store(url or f"sqlite:///{tmp.name}/bench.db")
    seed(store)
    return store, tmp


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_run_repair(n: int, url: str | None) -> tuple[float, float]:
    store, tmp = fresh_store(url)
    with tmp:
        deps = RepairDeps(store=store, config=CONFIG)
        samples = []
        for i in range(n):
            inp = RepairInput(
                trigger="manual", context_hash=f"rr{i:08x}", tool_id="pip.install", session_id=SESSION
            )
            t0 = time.perf_counter()
            result = run_repair(inp, deps)
            samples.append((time.perf_counter() - t0) * 1000)
            assert result.repair_id is not None, result
        store.close()
    return statistics.median(samples), percentile(samples, 0.99)


def bench_subscriber_drain(n: int, url: str | None) -> float:
    """Repairs per second through the durable queue (enqueue all, then drain).

    Completion is seen through the event bus (one terminal event per job),
    not by polling the database, which would compete with the worker.
    """
    store, tmp = fresh_store(url)
    with tmp:
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
                assert finished.acquire(timeout=60), "the queue stalled"
            elapsed = time.perf_counter() - t0
            assert sub.metrics()["dead"] == 0
        assert len(store.repairs.list(limit=n)) == n
        store.close()
    return n / elapsed


def bench_enqueue(total: int, threads: int, url: str | None) -> tuple[float, float, int]:
    """Enqueue latency (ms, p50 and p99) with ``threads`` concurrent producers."""
    store, tmp = fresh_store(url)
    with tmp:
        queue = RepairQueue(store, CONFIG)
        latencies: list[float] = []
        lock = threading.Lock()
        per = total // threads

        def produce(k: int) -> None:
            mine = []
            for i in range(per):
                inp = RepairInput(trigger="manual", context_hash=f"eq{k:02d}{i:06d}", session_id=SESSION)
                t0 = time.perf_counter()
                queue.enqueue(inp)
                mine.append((time.perf_counter() - t0) * 1000)
            with lock:
                latencies.extend(mine)

        workers = [threading.Thread(target=produce, args=(k,)) for k in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        stored = queue.stats()["pending"] or 0
        store.close()
    return statistics.median(latencies), percentile(latencies, 0.99), int(stored)


def bench_burst_to_row(samples: int, url: str | None) -> tuple[float, float]:
    """Milliseconds from the burst-firing ``record_tool_failure`` to its committed job row."""
    store, tmp = fresh_store(url)
    with tmp:
        queue = RepairQueue(store, CONFIG)
        latencies = []

        def jobs() -> int:
            stats = queue.stats()
            return sum(int(stats[k] or 0) for k in ("pending", "running", "done", "dead"))

        with attach_feedback_subscriber(store, config=CONFIG) as sub:
            for i in range(samples):
                before = jobs()
                for step in (1, 2):
                    sub.record_tool_failure("pip.install", f"ctx{i}", step, "E", SESSION)
                t0 = time.perf_counter()
                assert sub.record_tool_failure_now("pip.install", f"ctx{i}", 3, "E", SESSION) is not None
                while jobs() <= before:
                    time.sleep(0.0002)
                latencies.append((time.perf_counter() - t0) * 1000)
        store.close()
    return statistics.median(latencies), max(latencies)


def repeat(fn: Callable[[], float], runs: int) -> float:
    return statistics.median(fn() for _ in range(runs))


def probe(library: Path, kind: str, n: int, url: str | None) -> dict[str, float]:
    """One measurement in a fresh process, importing the library at ``library``."""
    env = dict(os.environ, PYTHONPATH=str(library))
    # -P: benchmarks/ is not put first on sys.path (its secrets.py would shadow the standard library's).
    args = [sys.executable, "-P", str(PROBE), kind, str(n), *([url] if url else [])]
    out = subprocess.run(args, env=env, cwd=library, capture_output=True, text=True, timeout=900, check=False)
    if out.returncode != 0:
        raise SystemExit(f"probe {kind} failed for {library}:\n{out.stderr}")
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def side_by_side(bases: dict[str, Path], n: int, runs: int, url: str | None) -> None:
    """run_repair and drain for this checkout and each base, alternating, medians of ``runs``.

    Each round runs every side once per figure, the order rotating from
    round to round, so that no side always runs first (or last) on a
    machine whose load drifts.
    """
    sides = {"this": ROOT, **bases}
    names = list(sides)
    got: dict[str, dict[str, list[float]]] = {name: {} for name in sides}
    for r in range(runs):
        order = names[r % len(names) :] + names[: r % len(names)]
        for kind in ("run_repair", "drain"):
            for name in order:
                for key, value in probe(sides[name], kind, n, url).items():
                    got[name].setdefault(key, []).append(value)
    rows = [
        ("run_repair median ms", "median_ms"),
        ("run_repair p99 ms", "p99_ms"),
        ("drain repairs/s", "repairs_per_s"),
    ]
    print(
        f"side by side ({runs} rounds x {n}, rotating; "
        + ", ".join(f"{k} = {v}" for k, v in bases.items())
        + ")"
    )
    width = max(14, *(len(name) + 2 for name in names))
    print(f"{'figure':<24}" + "".join(f"{name:>{width}}" for name in names) + f"{'MemOS':>8}")
    for label, key in rows:
        values = [statistics.median(got[name][key]) for name in names]
        memos = MEMOS.get(label)
        reference = "" if memos is None else f"{memos:>8.2f}"
        print(f"{label:<24}" + "".join(f"{v:>{width}.3f}" for v in values) + reference)
        if memos is not None:
            ratios = [v / memos for v in values]
            print(f"{'  ratio to MemOS':<24}" + "".join(f"{x:>{width - 1}.2f}x" for x in ratios))
    print("(ratio to MemOS: for ms, this/MemOS — at most 1.0x is as fast; for repairs/s, this/MemOS)")


def _bases(values: list[str]) -> dict[str, Path]:
    """``--base NAME=DIR`` (or a bare ``DIR``, named after it) as name -> checkout."""
    out: dict[str, Path] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep:
            name, path = Path(value).name, value
        out[name] = Path(path).resolve()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--db", help="database URL (default: a fresh SQLite file per run)")
    parser.add_argument(
        "--base",
        action="append",
        default=[os.environ["MEMOS_BENCH_BASE"]] if os.environ.get("MEMOS_BENCH_BASE") else [],
        help="NAME=DIR (or DIR): a checkout to compare with; repeat it (the previous commit and the "
        "last accepted speed, tag speed-baseline)",
    )
    args = parser.parse_args()
    n = 200 if args.quick else 1000
    runs = 3 if args.quick else 5
    for line in machine():
        print(line)
    if args.base:
        side_by_side(_bases(args.base), n, runs, args.db)
        print()
    rr = [bench_run_repair(n, args.db) for _ in range(runs)]
    print(
        f"run_repair (template, persist + attach): median {statistics.median(r[0] for r in rr):.2f} ms, "
        f"p99 {statistics.median(r[1] for r in rr):.2f} ms  ({runs} runs x {n})"
    )
    rate = repeat(lambda: bench_subscriber_drain(n, args.db), runs)
    print(f"subscriber drain (claim + run_repair + done): {rate:,.0f} repairs/s  ({runs} runs x {n} jobs)")
    b50, bmax = bench_burst_to_row(30 if args.quick else 100, args.db)
    print(
        f"burst -> committed job row: median {b50:.2f} ms, max {bmax:.2f} ms "
        "(bound: buffer_flush_ms=50 + one commit)"
    )
    total = 2000 if args.quick else 10_000
    eq = [bench_enqueue(total, 8, args.db) for _ in range(runs)]
    print(
        f"enqueue, 8 threads x {total // 8}: p50 {statistics.median(e[0] for e in eq):.2f} ms, "
        f"p99 {statistics.median(e[1] for e in eq):.2f} ms; stored {eq[0][2]} of {total}"
    )


if __name__ == "__main__":
    main()
