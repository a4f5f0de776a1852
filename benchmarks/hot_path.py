"""Hot-path micro-benchmarks for memos-feedback.

Run from the repository root::

    python -m benchmarks.hot_path           # full run, well under 2 minutes
    python -m benchmarks.hot_path --quick   # smaller sizes, under 20 seconds

Every timed figure is the median over several runs of N operations each
(``time.perf_counter_ns``), divided by N. The garbage collector is paused
while a run is timed (as ``timeit`` does), and the loop overhead is included
(a few tens of ns). Memory figures come from a fresh child process each, so
earlier benchmarks do not skew them.

The script is a list of small bench functions (``BENCHES``); to add one,
write ``def bench_x(s: Settings) -> list[Row]`` and decorate it with
``@bench``. ``bench_subscriber`` times the subscriber's
``record_tool_failure`` / ``record_tool_success`` in batches alternating
with a bare dict+deque baseline (``BareWindows``) and prints the ratio;
the work those calls hand to the enqueuer is timed on its own line.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memos_feedback.config import FeedbackConfig
from memos_feedback.signals import FailureSignals, context_hash_of
from memos_feedback.types import FailureRecord

REPO_ROOT = Path(__file__).resolve().parent.parent
DEV_SET = REPO_ROOT / "tests" / "data" / "feedback_dev.jsonl"
TOOL = "shell.exec"
CONTEXT_PREFIX = "pip install -r requirements.txt in /srv/app (attempt) #"


@dataclass(frozen=True)
class Settings:
    quick: bool
    ops: int  # operations per timed run
    repeats: int  # timed runs; the median is reported
    contexts: int  # the "1,000,000 contexts" of the memory and clear benches


@dataclass(frozen=True)
class Row:
    op: str
    ns_per_op: float | None  # None: not measured (see note)
    note: str = ""


Bench = Callable[[Settings], list[Row]]
BENCHES: list[Bench] = []


def bench(fn: Bench) -> Bench:
    BENCHES.append(fn)
    return fn


def timed(setup: Callable[[int], Any], run: Callable[[Any], object], ops: int, repeats: int) -> float:
    """Median ns/op: ``run(setup(i))`` timed ``repeats`` times, ``ops`` ops each."""
    samples: list[float] = []
    for i in range(repeats):
        data = setup(i)
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter_ns()
            run(data)
            elapsed = time.perf_counter_ns() - t0
        finally:
            gc.enable()
        samples.append(elapsed / ops)
    return statistics.median(samples)


def small_signals(bound: int = 10_000) -> FailureSignals:
    return FailureSignals(FeedbackConfig(max_tracked_contexts=bound))


# -- FailureSignals ----------------------------------------------------------------


@bench
def bench_failure_record(s: Settings) -> list[Row]:
    n = s.ops
    contexts = [CONTEXT_PREFIX + str(i) for i in range(1_000)]

    def run(_: object) -> None:
        for i in range(n):
            FailureRecord(TOOL, contexts[i % 1_000], i, "exit status 1", 0)

    return [Row("FailureRecord(...) construction", timed(lambda i: None, run, n, s.repeats), "validated")]


@bench
def bench_record_failure_no_burst(s: Settings) -> list[Row]:
    # 1,000 contexts round-robin: each sees a failure every 1,000 steps, so
    # its window (5 steps) holds one failure and never bursts; every call
    # also drops the previous failure out of the window.
    n, k = s.ops, 1_000
    sig = small_signals()
    contexts = [CONTEXT_PREFIX + str(i) for i in range(k)]

    def setup(r: int) -> list[FailureRecord]:
        base = r * n
        return [FailureRecord(TOOL, contexts[i % k], base + i, "exit status 1") for i in range(n)]

    def run(records: list[FailureRecord]) -> None:
        rf = sig.record_failure
        for rec in records:
            rf(rec)

    ns = timed(setup, run, n, s.repeats)
    assert sig.stats()["bursts"] == 0
    return [Row("record_failure, no burst", ns, f"{k:,} contexts round-robin")]


@bench
def bench_record_failure_burst(s: Settings) -> list[Row]:
    n = s.ops
    sig = small_signals()
    ctx = CONTEXT_PREFIX + "stuck"

    def setup(r: int) -> list[FailureRecord]:
        base = r * n
        return [FailureRecord(TOOL, ctx, base + i, "exit status 1") for i in range(n)]

    def run(records: list[FailureRecord]) -> None:
        rf = sig.record_failure
        for rec in records:
            rf(rec)

    ns = timed(setup, run, n, s.repeats)
    assert sig.stats()["bursts"] >= s.repeats * (n - 2)
    return [Row("record_failure, burst", ns, "same context every step; builds a FailureBurst of 5")]


@bench
def bench_record_failure_evicting(s: Settings) -> list[Row]:
    n = s.ops
    sig = small_signals(10_000)

    def setup(r: int) -> list[FailureRecord]:
        base = r * n
        return [FailureRecord(TOOL, CONTEXT_PREFIX + str(base + i), 1) for i in range(n)]

    def run(records: list[FailureRecord]) -> None:
        rf = sig.record_failure
        for rec in records:
            rf(rec)

    ns = timed(setup, run, n, s.repeats)
    return [Row("record_failure, new context at bound", ns, "LRU eviction on every call (bound 10,000)")]


@bench
def bench_record_success(s: Settings) -> list[Row]:
    n, k = s.ops, 1_000
    sig = small_signals()
    contexts = [CONTEXT_PREFIX + str(i) for i in range(k)]
    for i in range(k):  # give every context a failure to discard
        sig.record_failure(FailureRecord(TOOL, contexts[i], 0))

    def setup(r: int) -> list[tuple[str, int]]:
        base = r * n
        return [(contexts[i % k], base + i) for i in range(n)]

    def run(items: list[tuple[str, int]]) -> None:
        rs = sig.record_success
        for ctx, step in items:
            rs(TOOL, ctx, step)

    return [Row("record_success", timed(setup, run, n, s.repeats), f"{k:,} contexts round-robin")]


@bench
def bench_context_hash(s: Settings) -> list[Row]:
    rows = []
    for label, size in (("~60-char context", 0), ("4 KB context", 4_096)):
        n = s.ops if size == 0 else s.ops // 4
        contexts = [(CONTEXT_PREFIX + str(i)).ljust(size, "x") for i in range(1_000)]

        def run(_: object, n: int = n, contexts: list[str] = contexts) -> None:
            for i in range(n):
                context_hash_of(TOOL, contexts[i % 1_000])

        rows.append(Row(f"context_hash_of, {label}", timed(lambda i: None, run, n, s.repeats)))
    return rows


@bench
def bench_clear(s: Settings) -> list[Row]:
    total = s.contexts
    sig = FailureSignals(FeedbackConfig(max_tracked_contexts=total))
    t0 = time.perf_counter()
    hashes: list[str] = []
    for i in range(total):
        ctx = CONTEXT_PREFIX + str(i)
        sig.record_failure(FailureRecord(TOOL, ctx, 1))
        hashes.append(context_hash_of(TOOL, ctx))
    fill_s = time.perf_counter() - t0
    assert sig.stats()["states"] == total
    n = min(s.ops, total // (2 * s.repeats))

    def run(batch: list[str]) -> None:
        clear = sig.clear
        for h in batch:
            clear(h)

    hit = timed(lambda r: hashes[r * n : (r + 1) * n], run, n, s.repeats)
    miss = timed(lambda r: [h[::-1] for h in hashes[:n]], run, n, s.repeats)
    still = sig.stats()["states"]
    return [
        Row(f"clear(hash), {total:,} tracked", hit, f"hit; {still:,} still tracked at the end"),
        Row(f"clear(hash), {total:,} tracked, unknown hash", miss, "miss"),
        Row(
            f"fill {total:,} contexts (record_failure + hash)",
            fill_s * 1e9 / total,
            f"{fill_s:.1f} s in total, bound {total:,}",
        ),
    ]


# -- memory ----------------------------------------------------------------------


def _status_kb(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def rss_child(bound: int, count: int) -> None:
    """In a fresh process: record ``count`` distinct contexts, print RSS growth (JSON)."""
    gc.collect()
    before = _status_kb("VmRSS")
    sig = FailureSignals(FeedbackConfig(max_tracked_contexts=bound))
    t0 = time.perf_counter()
    rf = sig.record_failure
    for i in range(count):
        rf(FailureRecord(TOOL, CONTEXT_PREFIX + str(i), i, "exit status 1"))
    elapsed = time.perf_counter() - t0
    gc.collect()
    after = _status_kb("VmRSS")
    print(
        json.dumps(
            {
                "growth_kb": after - before,
                "peak_kb": _status_kb("VmHWM"),
                "states": sig.stats()["states"],
                "seconds": elapsed,
            }
        )
    )


@bench
def bench_memory(s: Settings) -> list[Row]:
    rows = []
    count = s.contexts
    for bound in (10_000, count):
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.hot_path", "--rss-child", str(bound), str(count)],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            rows.append(
                Row(f"RSS growth, bound {bound:,}", None, f"child failed: {proc.stderr.strip()[-200:]}")
            )
            continue
        data = json.loads(proc.stdout.strip().splitlines()[-1])
        mb = data["growth_kb"] / 1024
        rows.append(
            Row(
                f"RSS growth: {count:,} distinct contexts, bound {bound:,}",
                None,
                f"{mb:,.1f} MB ({data['states']:,} states kept, "
                f"{data['growth_kb'] * 1024 / max(data['states'], 1):,.0f} B/state, "
                f"{data['seconds'] * 1e9 / count:,.0f} ns/record)",
            )
        )
    return rows


# -- other hot paths ---------------------------------------------------------------


@bench
def bench_classifier(s: Settings) -> list[Row]:
    try:
        # Imported by name: the module is being written in parallel and may
        # be missing or mid-edit; any failure is reported, not raised.
        classify_feedback = importlib.import_module("memos_feedback.classify").classify_feedback
    except Exception as exc:  # missing or mid-edit: report and go on
        return [Row("classify_feedback", None, f"classifier: not available ({type(exc).__name__}: {exc})")]
    if not DEV_SET.exists():
        return [Row("classify_feedback", None, f"dev set not found at {DEV_SET}")]
    texts = [json.loads(line)["text"] for line in DEV_SET.read_text(encoding="utf-8").splitlines() if line]
    rounds = max(1, s.ops // (100 * len(texts)))  # ~2,000 messages per run (full)

    def run(_: object) -> None:
        for _round in range(rounds):
            for text in texts:
                classify_feedback(text)

    def per_message_median() -> float:
        # Each message timed alone (median of 7 calls); the median over messages.
        per_text = []
        for text in texts:
            calls = []
            for _ in range(7):
                t0 = time.perf_counter_ns()
                classify_feedback(text)
                calls.append(time.perf_counter_ns() - t0)
            per_text.append(statistics.median(calls))
        return statistics.median(per_text)

    try:
        ns = timed(lambda i: None, run, rounds * len(texts), s.repeats)
        gc.disable()
        try:
            median_ns = statistics.median(per_message_median() for _ in range(3))
        finally:
            gc.enable()
    except Exception as exc:
        return [Row("classify_feedback", None, f"classifier failed: {type(exc).__name__}: {exc}")]
    return [
        Row(
            "classify_feedback, dev set, median message",
            median_ns,
            f"{len(texts)} messages, each timed alone",
        ),
        Row("classify_feedback, dev set, mean per message", ns, "whole set per run, divided by its size"),
    ]


class BareWindows:
    """The baseline: a dict of bounded deques, about the least a Python host
    can do per failed step (no validation, no lock, no timestamp)."""

    __slots__ = ("windows",)

    def __init__(self) -> None:
        self.windows: dict[tuple[str, str], deque[tuple[int, str]]] = {}

    def record(self, tool_id: str, context: str, step: int, reason: str = "") -> None:
        key = (tool_id, context)
        window = self.windows.get(key)
        if window is None:
            window = self.windows[key] = deque(maxlen=5)
        window.append((step, reason))


Call = Callable[..., object]


def paired(
    calls: dict[str, Call],
    settle: Callable[[], object],
    batch: int,
    batches: int,
    contexts: list[str],
    *,
    reason: bool = True,
) -> tuple[dict[str, float], float]:
    """Median ns/call of each callable, timed in alternating batches of ``batch`` calls.

    Each call is ``fn(TOOL, context, step, "exit status 1")``, or without
    the reason when ``reason`` is False. After every batch ``settle()`` runs
    outside the clock (the subscriber's enqueuer work, done here so each
    batch starts with nothing pending: what a tool step costs the agent's
    thread when the enqueuer keeps up). Returns the medians and the median
    ns per step that ``settle`` took after the non-baseline batches.
    """
    k = len(contexts)
    samples: dict[str, list[float]] = {name: [] for name in calls}
    settled: list[float] = []
    step = 0
    for r in range(batches):
        names = list(calls)
        if r % 2:  # alternate the order, so neither always runs first
            names.reverse()
        for name in names:
            fn = calls[name]
            gc.disable()
            try:
                t0 = time.perf_counter_ns()
                if reason:
                    for i in range(step, step + batch):
                        fn(TOOL, contexts[i % k], i, "exit status 1")
                else:
                    for i in range(step, step + batch):
                        fn(TOOL, contexts[i % k], i)
                elapsed = time.perf_counter_ns() - t0
                t0 = time.perf_counter_ns()
                settle()
                settle_ns = time.perf_counter_ns() - t0
            finally:
                gc.enable()
            samples[name].append(elapsed / batch)
            if name != "bare":
                settled.append(settle_ns / batch)
            step += batch
    return {name: statistics.median(v) for name, v in samples.items()}, statistics.median(settled)


@bench
def bench_subscriber(s: Settings) -> list[Row]:
    """The subscriber's hot path beside a bare dict+deque, in the same run."""
    try:
        from memos_feedback.runtime.subscriber import attach_feedback_subscriber
        from memos_feedback.store import open_store
    except Exception as exc:
        note = f"subscriber: not available ({type(exc).__name__}: {exc})"
        return [Row("record_tool_failure / record_tool_success", None, note)]
    batch, batches = 1_000, (40 if s.quick else 200)
    contexts = [CONTEXT_PREFIX + str(i) for i in range(1_000)]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = open_store(f"sqlite:///{tmp}/bench.db")
            with attach_feedback_subscriber(store, config=FeedbackConfig(use_llm=False)) as handle:
                bare = BareWindows()
                sync = handle.sync_signals

                # 1,000 contexts round-robin: no burst. Failures and successes
                # in separate runs, each beside the baseline.
                failure = {"bare": bare.record, "failure": handle.record_tool_failure}
                f, f_apply = paired(failure, sync, batch, batches, contexts)
                success = {"bare": bare.record, "success": handle.record_tool_success}
                sx, s_apply = paired(success, sync, batch, batches, contexts, reason=False)
                # The old measurement: s.ops calls back to back, the enqueuer
                # free to take the GIL for its rounds meanwhile (a sustained
                # tight loop pays for both threads' work, at most up to the
                # backlog bound, past which it applies its own steps).
                record = handle.record_tool_failure
                n = s.ops

                def back_to_back(base: int) -> None:
                    for i in range(n):
                        record(TOOL, contexts[i % 1_000], base + i, "exit status 1")

                def fresh(r: int) -> int:
                    sync()
                    return 10_000_000 + r * n

                sustained = timed(fresh, back_to_back, n, s.repeats)
                sync()
                now, _ = paired(
                    {"bare": bare.record, "now": handle.record_tool_failure_now},
                    sync,
                    batch,
                    max(10, batches // 4),
                    contexts,
                )
            store.close()
    except Exception as exc:
        return [Row("record_tool_failure / record_tool_success", None, f"subscriber failed: {exc!r}")]
    ratio_f = f["failure"] / f["bare"]
    ratio_s = sx["success"] / sx["bare"]
    window = f"{batches} alternating batches of {batch:,}"
    return [
        Row("bare dict+deque record (baseline)", f["bare"], f"{window}; method call, dict get, deque append"),
        Row(
            "subscriber record_tool_failure, no burst",
            f["failure"],
            f"{ratio_f:.2f}x the baseline (target <= 2x); caller's thread",
        ),
        Row("  (baseline in the success run)", sx["bare"], ""),
        Row("subscriber record_tool_success", sx["success"], f"{ratio_s:.2f}x the baseline; caller's thread"),
        Row("  applying a recorded failure", f_apply, "enqueuer's thread (sync_signals): validate + window"),
        Row("  applying a recorded success", s_apply, "enqueuer's thread (sync_signals)"),
        Row(
            f"subscriber record_tool_failure, {s.ops:,} back to back",
            sustained,
            f"{sustained / f['bare']:.2f}x the baseline; past 10,000 pending steps the caller applies them",
        ),
        Row(
            "subscriber record_tool_failure_now, no burst",
            now["now"],
            f"{now['now'] / now['bare']:.2f}x its baseline ({now['bare']:,.0f} ns); the burst returned",
        ),
    ]


# -- main -------------------------------------------------------------------------


def machine() -> list[str]:
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    return [
        f"platform: {platform.platform()}",
        f"cpu: {cpu}; cores: {os.cpu_count()} ({usable} usable)",
        f"python: {platform.python_implementation()} {sys.version.split()[0]}",
    ]


def render(rows: Iterable[Row]) -> str:
    lines = ["| op | median ns/op | note |", "|---|---:|---|"]
    for row in rows:
        value = "—" if row.ns_per_op is None else f"{row.ns_per_op:,.0f}"
        lines.append(f"| {row.op} | {value} | {row.note} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hot_path", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (< 20 s)")
    parser.add_argument("--only", metavar="TEXT", help="run only the benches whose name contains TEXT")
    parser.add_argument("--rss-child", nargs=2, type=int, metavar=("BOUND", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_child:
        rss_child(*args.rss_child)
        return 0
    if args.quick:
        settings = Settings(quick=True, ops=20_000, repeats=5, contexts=200_000)
    else:
        # Runs stay at 20,000 ops: the records of a run are built before the
        # clock starts, and 200,000 of them (~40 MB) no longer fit in cache,
        # which measures memory latency rather than the call. More runs instead.
        settings = Settings(quick=False, ops=20_000, repeats=15, contexts=1_000_000)
    for line in machine():
        print(line)
    print(
        f"mode: {'quick' if settings.quick else 'full'}; {settings.ops:,} ops per run, "
        f"median of {settings.repeats} runs; {settings.contexts:,} contexts for clear/memory"
    )
    print()
    started = time.perf_counter()
    rows: list[Row] = []
    for fn in BENCHES:
        if args.only and args.only not in fn.__name__:
            continue
        t0 = time.perf_counter()
        new = fn(settings)
        for row in new:
            value = "" if row.ns_per_op is None else f"{row.ns_per_op:>10,.0f} ns/op"
            print(f"{row.op:<58} {value:>16}  {row.note}", flush=True)
        rows.extend(new)
        if time.perf_counter() - t0 > 60:
            print(f"  ({fn.__name__} took {time.perf_counter() - t0:.0f} s)")
    print(f"\ntotal {time.perf_counter() - started:.1f} s\n")
    print(render(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
