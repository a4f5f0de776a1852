"""guidance_for latency at 1k / 10k / 100k repairs (docs/PERFORMANCE.md, "Recall").

    python -m benchmarks.guidance [--sizes 1000,10000] [--db URL] [--embeddings] [--queries 200]
    python -m benchmarks.guidance --base DIR [--sizes 1000,10000] [--rounds 3] [--db URL] [--embeddings]

``--base DIR`` (a checkout of an earlier commit, ``git worktree add DIR
<commit>``): medians of this checkout and DIR side by side, each round a
fresh process per checkout (``benchmarks/guidance_probe.py``), alternating
which goes first; SQLite unless ``--db`` (an empty PostgreSQL database,
emptied after each run; ``--base-db`` gives the base its own, needed once
this checkout has migrated ``--db`` past the base's newest revision),
lexical unless ``--embeddings``.

Repairs are bulk-inserted (the FTS5 triggers / trigram index maintain the
search index as in production) from a vocabulary of tools, errors and
lessons, so term frequencies look like a real store, plus one rarer
identifier each (a file or code a handful of repairs share); queries carry one. With --embeddings,
vectors come from the packaged model for a pool of texts, reused with
noise (embedding 100k texts would take the benchmark an hour on 2 cores).
Query embedding is timed separately and excluded from the guidance figure.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import insert

from memos_feedback.embeddings import pack
from memos_feedback.recall import guidance_for
from memos_feedback.recall.vectors import settle
from memos_feedback.store import open_store
from memos_feedback.store.models import DecisionRepairModel
from memos_feedback.types import new_id, now_ms

TOOLS = [
    "shell.run",
    "pip.install",
    "npm.install",
    "docker.build",
    "kubectl.apply",
    "http.request",
    "fs.edit",
]
ERRORS = [
    "externally-managed-environment",
    "ERESOLVE unable to resolve dependency tree",
    "connection refused port 5432",
    "exec format error",
    "ImagePullBackOff 403 Forbidden",
    "401 Unauthorized",
    "state lock ConditionalCheckFailed",
    "Missing sudo password",
    "CREATE INDEX CONCURRENTLY cannot run inside a transaction block",
    "grep: invalid option -- P",
    "bash\\r: No such file or directory",
    "OOMKilled exit code 137",
]
LESSONS = [
    "use uv add instead of pip install",
    "run nvm use first",
    "use the test db on 5433",
    "build with --platform",
    "pull from the eu-west-1 ECR",
    "send Authorization: Bearer",
    "wait for the CI plan to finish",
    "pass --ask-become-pass",
    "run it outside the migration transaction",
    "use rg instead of grep -P",
    "convert CRLF to LF",
    "raise the memory limit in values.yaml",
]


IDENTS = ["checkout_v", "orders_api_", "web/src/page", "TS", "ERR_WORKER_"]


def populate(url: str, n: int, rng: random.Random, vectors: list[Any] | None) -> None:
    import numpy as np

    with open_store(url) as store, store.session(write=True) as s:
        batch: list[dict[str, Any]] = []
        now = now_ms()
        for i in range(n):
            tool, err, lesson = rng.choice(TOOLS), rng.choice(ERRORS), rng.choice(LESSONS)
            # A rarer identifier, as real repairs carry (a file, a code): a handful share each.
            ident = f"{rng.choice(IDENTS)}{rng.randint(0, max(n // 20, 1))}"
            ctx = f"task {i % 997} in module{i % 89}/ step {rng.randint(1, 50)}"
            row: dict[str, Any] = dict(
                id=new_id("dr_"),
                ts=now - rng.randint(0, 6 * 86_400_000),
                context_hash=f"{i:016x}",
                tool_id=tool,
                context=ctx,
                trigger="user.correction",
                session_id=f"s{i % 500}",
                preference=f"Prefer: {lesson}",
                anti_pattern=f"Avoid: {err} case {i % 31}",
                severity="warn",
                confidence=0.6,
                high_value_trace_ids=[],
                low_value_trace_ids=[],
                validated=i % 5 == 0,
                rejected=i % 50 == 0,
                category="correction",
                project=f"p{i % 4}" if i % 3 else None,
                source_text=(
                    f"user: {lesson}\ndo: {lesson}\navoid: {err} in {ident}\ntool: {tool}\ncontext: {ctx}"
                ),
            )
            if vectors is not None:
                v = vectors[i % len(vectors)] + np.random.default_rng(i).normal(0, 0.02, 384).astype("f4")
                row["embedding"] = pack(v / np.linalg.norm(v))
                row["embedding_model"] = "all-MiniLM-L6-v2"
            batch.append(row)
            if len(batch) == 2_000:
                s.execute(insert(DecisionRepairModel), batch)
                batch = []
        if batch:
            s.execute(insert(DecisionRepairModel), batch)
    if url.startswith("postgresql"):
        # A live database is vacuumed and analysed by autovacuum (statistics, and
        # the GIN index's pending list merged); a freshly bulk-loaded one is not yet.
        with open_store(url) as store:
            auto = store.engine.execution_options(isolation_level="AUTOCOMMIT")
            with auto.connect() as conn:
                conn.exec_driver_sql("VACUUM ANALYZE decision_repairs")


class Precomputed:
    """An Embedder that hands out query vectors computed beforehand, in order."""

    model_name = "all-MiniLM-L6-v2"
    dimension = 384

    def __init__(self, vectors: Any) -> None:
        self.vectors = vectors
        self.k = 0

    def embed(self, texts: Any) -> Any:
        i = self.k % len(self.vectors)
        self.k += 1
        return self.vectors[i : i + 1]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def compare(
    base: str, sizes: list[int], rounds: int, db: str | None, embeddings: bool, base_db: str | None = None
) -> None:
    here = Path(__file__).resolve().parent.parent
    probe = here / "benchmarks" / "guidance_probe.py"

    def run(root: Path, n: int) -> float:
        env = {**os.environ, "PYTHONPATH": str(root)}
        url = base_db if root != here and base_db else db
        extra = (["--db", url] if url else []) + (["--embeddings"] if embeddings else [])
        # -P: the probe's own directory is not put first on sys.path, where
        # benchmarks/secrets.py would shadow the standard library's secrets.
        out = subprocess.run(
            [sys.executable, "-P", str(probe), str(n), *extra],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return float(out.stdout.strip().splitlines()[-1])

    for n in sizes:
        mine: list[float] = []
        theirs: list[float] = []
        for r in range(rounds):
            order = [(here, mine), (Path(base), theirs)]
            for root, sink in order if r % 2 == 0 else reversed(order):
                sink.append(run(root, n))
        label = f"{'postgresql' if db else 'sqlite':<10} {'semantic' if embeddings else 'lexical':<8}"
        print(
            f"{label} n={n:<7} this checkout median {statistics.median(mine):6.2f} ms {mine}"
            f"   base median {statistics.median(theirs):6.2f} ms {theirs}",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--db", help="PostgreSQL URL of an empty database (default: SQLite files)")
    ap.add_argument("--embeddings", action="store_true")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--base", help="checkout of an earlier commit to compare with")
    ap.add_argument("--base-db", help="PostgreSQL URL of the base's own empty database (default: --db)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if args.base:
        sizes = [int(x) for x in args.sizes.split(",")]
        compare(args.base, sizes, args.rounds, args.db, args.embeddings, args.base_db)
        return
    rng = random.Random(7)
    embedder = vectors = None
    if args.embeddings:
        from memos_feedback.embeddings import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder()
        vectors = list(embedder.embed([f"{lesson}; avoid {e}" for lesson in LESSONS for e in ERRORS]))
    for n in (int(x) for x in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            url = args.db or f"sqlite:///{Path(tmp) / 'bench.db'}"
            populate(url, n, rng, vectors)
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
                cached = embedder.embed([q for _, q, _ in queries]) if embedder is not None else None
                t0 = time.perf_counter()
                if embedder is not None:
                    embedder.embed([queries[0][1]])
                embed_ms = (time.perf_counter() - t0) * 1000

                fixed = Precomputed(cached) if cached is not None else None
                guidance_for(store, tool_id=queries[0][0], query=queries[0][1], project="p1", embedder=fixed)
                settle(300)  # the warm-up's background fit, if any: time the steady state
                times = []
                for tool, q, proj in queries:
                    start = time.perf_counter()
                    guidance_for(store, tool_id=tool, query=q, project=proj, embedder=fixed)
                    times.append((time.perf_counter() - start) * 1000)
                backend = "postgresql" if args.db else "sqlite"
                mode = "semantic" if embedder else "lexical"
                extra = f" (query embedding {embed_ms:.1f} ms, excluded)" if embedder else ""
                print(
                    f"{backend:<10} {mode:<8} n={n:<7} median {statistics.median(times):6.2f} ms"
                    f"  p99 {pct(times, 0.99):6.2f} ms{extra}",
                    flush=True,
                )
            if args.db:
                with open_store(url) as store, store.engine.begin() as conn:
                    conn.exec_driver_sql("TRUNCATE decision_repairs")


if __name__ == "__main__":
    main()
