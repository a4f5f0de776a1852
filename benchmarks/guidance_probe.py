"""One ``guidance_for`` latency figure, for ``benchmarks.guidance --base``.

    python benchmarks/guidance_probe.py N [QUERIES]

Run by path with a checkout on ``PYTHONPATH``: the library (and the
store's vocabulary, ``benchmarks.guidance.populate``) come from that
checkout, so two commits are measured by the same procedure. Prints the
median milliseconds of QUERIES (default 300) lexical ``guidance_for``
calls on a fresh SQLite file of N repairs.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    from benchmarks.guidance import ERRORS, IDENTS, LESSONS, TOOLS, populate
    from memos_feedback.recall import guidance_for
    from memos_feedback.store import open_store

    n = int(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'probe.db'}"
        populate(url, n, rng, None)
        with open_store(url) as store:
            queries = [
                (
                    rng.choice(TOOLS),
                    f"{rng.choice(ERRORS)} in {rng.choice(IDENTS)}{rng.randint(0, max(n // 20, 1))}"
                    f" while {rng.choice(LESSONS)}",
                    f"p{rng.randint(0, 3)}",
                )
                for _ in range(count)
            ]
            guidance_for(store, tool_id=queries[0][0], query=queries[0][1], project="p1")
            times = []
            for tool, query, project in queries:
                start = time.perf_counter()
                guidance_for(store, tool_id=tool, query=query, project=project)
                times.append((time.perf_counter() - start) * 1000)
    print(f"{statistics.median(times):.3f}")


if __name__ == "__main__":
    main()
