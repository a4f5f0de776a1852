"""Subscriber tool-step cost with and without ``session_id``, for side-by-side runs.

    PYTHONPATH=/path/to/old/checkout python -m benchmarks.hot_path_sessions old
    PYTHONPATH=.                     python -m benchmarks.hot_path_sessions new

``benchmarks.hot_path`` times ``record_tool_failure``/``record_tool_success``
without a session; outcomes (ALGORITHMS.md, "Outcomes") add work only when
a session id is given, so this times both. Run the two checkouts in
alternating processes: on a shared machine that is the only comparison
worth reading. Prints the fastest and the median of 15 runs of 20,000 calls
(ns per call, loop included), for sessions that have no open serving.
"""

from __future__ import annotations

import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

from memos_feedback.config import FeedbackConfig
from memos_feedback.store import open_store
from memos_feedback.subscriber import attach_feedback_subscriber

N, K, REPEATS = 20_000, 1_000, 15
CONTEXTS = [f"ctx-{i}" for i in range(K)]
SESSIONS = [f"s-{i}" for i in range(50)]


def timed(fn: Callable[[int], object]) -> tuple[int, int]:
    out = []
    for r in range(REPEATS):
        gc.disable()
        start = time.perf_counter_ns()
        fn(r * N)
        out.append((time.perf_counter_ns() - start) / N)
        gc.enable()
    return round(min(out)), round(statistics.median(out))


def main(label: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{tmp}/bench.db")
        with attach_feedback_subscriber(store, config=FeedbackConfig(use_llm=False)) as h:
            f, s = h.record_tool_failure, h.record_tool_success
            # Contexts round-robin over 1,000: no burst, as in benchmarks.hot_path.
            figures = {
                "failure": timed(lambda b: [f("bash", CONTEXTS[i % K], b + i, "exit 1") for i in range(N)]),
                "success": timed(lambda b: [s("bash", CONTEXTS[i % K], b + i) for i in range(N)]),
                "failure+session": timed(
                    lambda b: [f("sh", CONTEXTS[i % K], b + i, "exit 1", SESSIONS[i % 50]) for i in range(N)]
                ),
                "success+session": timed(
                    lambda b: [s("sh", CONTEXTS[i % K], b + i, SESSIONS[i % 50]) for i in range(N)]
                ),
            }
        store.close()
    print(label, " ".join(f"{k}={lo}/{med}" for k, (lo, med) in figures.items()))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "run")
