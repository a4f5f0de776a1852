"""Subscriber tool-step cost with and without ``session_id``, beside a bare baseline.

    PYTHONPATH=/path/to/old/checkout python -m benchmarks.hot_path_sessions old
    PYTHONPATH=.                     python -m benchmarks.hot_path_sessions new

``benchmarks.hot_path`` times ``record_tool_failure``/``record_tool_success``
without a session; outcomes (ALGORITHMS.md, "Outcomes") add work only when
a session id is given, so this times both. Each call is timed in batches of
1,000 that alternate with a bare dict+deque baseline (``BareWindows``) in
the same process, so the printed ratio is a same-run figure. Between
batches, outside the clock, ``sync_signals()`` applies what the calls
queued (a checkout without it applies on the caller's thread anyway).
Prints, per call, the fastest and the median batch (ns per call, loop
included) and the median ratio to the baseline; 200 batches each, for
sessions that have no open serving. Run old and new checkouts in
alternating processes to compare them.
"""

from __future__ import annotations

import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

from benchmarks.hot_path import BareWindows
from memos_feedback.config import FeedbackConfig
from memos_feedback.runtime.subscriber import attach_feedback_subscriber
from memos_feedback.store import open_store

BATCH, K, BATCHES = 1_000, 1_000, 200
CONTEXTS = [f"ctx-{i}" for i in range(K)]
SESSIONS = [f"s-{i}" for i in range(50)]


def run(fn: Callable[[int], object]) -> int:
    gc.disable()
    try:
        start = time.perf_counter_ns()
        fn(0)
        return time.perf_counter_ns() - start
    finally:
        gc.enable()


def main(label: str) -> None:
    bare = BareWindows().record
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{tmp}/bench.db")
        with attach_feedback_subscriber(store, config=FeedbackConfig(use_llm=False)) as h:
            f, s = h.record_tool_failure, h.record_tool_success
            settle: Callable[[], object] = getattr(h, "sync_signals", lambda: None)
            step = 0

            def batch(call: Callable[[int], object]) -> float:
                nonlocal step
                base = step
                step += BATCH
                elapsed = run(lambda _: call(base))
                settle()
                return elapsed / BATCH

            # Contexts round-robin over 1,000: no burst, as in benchmarks.hot_path.
            calls: dict[str, Callable[[int], object]] = {
                "failure": lambda b: [f("bash", CONTEXTS[i % K], b + i, "exit 1") for i in range(BATCH)],
                "success": lambda b: [s("bash", CONTEXTS[i % K], b + i) for i in range(BATCH)],
                "failure+session": lambda b: [
                    f("sh", CONTEXTS[i % K], b + i, "exit 1", SESSIONS[i % 50]) for i in range(BATCH)
                ],
                "success+session": lambda b: [
                    s("sh", CONTEXTS[i % K], b + i, SESSIONS[i % 50]) for i in range(BATCH)
                ],
            }

            def baseline(b: int) -> object:
                return [bare("bash", CONTEXTS[i % K], b + i, "exit 1") for i in range(BATCH)]

            figures = {}
            for name, call in calls.items():
                mine, base = [], []
                for r in range(BATCHES):
                    pair = [(mine, call), (base, baseline)]
                    for out, fn in pair if r % 2 else reversed(pair):
                        out.append(batch(fn))
                ratio = statistics.median(m / b for m, b in zip(mine, base, strict=True))
                figures[name] = (round(min(mine)), round(statistics.median(mine)), ratio)
                figures[f"bare({name})"] = (round(min(base)), round(statistics.median(base)), 1.0)
        store.close()
    print(label, " ".join(f"{k}={lo}/{med}({r:.2f}x)" for k, (lo, med, r) in figures.items()))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "run")
