"""One ``guidance_for`` latency figure, for ``benchmarks.guidance --base``.

    python benchmarks/guidance_probe.py N [QUERIES] [--db URL] [--embeddings]

Run by path with a checkout on ``PYTHONPATH``: the library (and the
store's vocabulary, ``benchmarks.guidance.populate``) come from that
checkout, so two commits are measured by the same procedure. Prints the
median milliseconds of QUERIES (default 300) ``guidance_for`` calls on a
fresh SQLite file of N repairs, or on the empty PostgreSQL database at
``--db`` (emptied again afterwards). ``--embeddings``: semantic, with
query vectors computed beforehand (excluded, as in ``benchmarks.guidance``).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path


def _settle() -> None:
    """Let the warm-up's background work (the projection's fit) finish before timing.

    A checkout from before that work moved off the caller's thread did it
    inside the warm-up call: both are then timed in the same steady state.
    """
    try:
        from memos_feedback.recall.vectors import settle
    except ImportError:
        return
    settle(300)


def main() -> None:
    from benchmarks.guidance import ERRORS, IDENTS, LESSONS, TOOLS, Precomputed, populate
    from memos_feedback.recall import guidance_for
    from memos_feedback.store import open_store

    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int)
    ap.add_argument("queries", type=int, nargs="?", default=300)
    ap.add_argument("--db")
    ap.add_argument("--embeddings", action="store_true")
    args = ap.parse_args()
    n = args.n
    rng = random.Random(7)
    embedder = vectors = None
    if args.embeddings:
        from memos_feedback.embeddings import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder()
        vectors = list(embedder.embed([f"{lesson}; avoid {e}" for lesson in LESSONS for e in ERRORS]))
    with tempfile.TemporaryDirectory() as tmp:
        url = args.db or f"sqlite:///{Path(tmp) / 'probe.db'}"
        populate(url, n, rng, vectors)
        try:
            with open_store(url) as store:
                queries = [
                    (
                        rng.choice(TOOLS),
                        f"{rng.choice(ERRORS)} in {rng.choice(IDENTS)}{rng.randint(0, max(n // 20, 1))}"
                        f" while {rng.choice(LESSONS)}",
                        f"p{rng.randint(0, 3)}",
                    )
                    for _ in range(args.queries)
                ]
                fixed = None
                if embedder is not None:
                    fixed = Precomputed(embedder.embed([q for _, q, _ in queries]))
                first = queries[0]
                guidance_for(store, tool_id=first[0], query=first[1], project="p1", embedder=fixed)
                _settle()
                if fixed is not None:
                    fixed.k = 0
                times = []
                for tool, query, project in queries:
                    start = time.perf_counter()
                    guidance_for(store, tool_id=tool, query=query, project=project, embedder=fixed)
                    times.append((time.perf_counter() - start) * 1000)
        finally:
            if args.db:
                with open_store(url) as store, store.engine.begin() as conn:
                    conn.exec_driver_sql("TRUNCATE decision_repairs")
    print(f"{statistics.median(times):.3f}")


if __name__ == "__main__":
    main()
