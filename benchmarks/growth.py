"""Reads the CLI, metrics and the worker run regularly, at 1k, 10k and 100k rows.

    python -m benchmarks.growth [--db sqlite|postgresql] [--sizes 1000,10000,100000] [--explain]

For each size a fresh database gets that many pending jobs, done jobs,
repairs and policies (each policy with two episodes of its own), and these
are timed (median of many calls, in ms):

* ``queue.stats()`` — behind ``metrics()``, Prometheus and ``queue stats``;
* latest-N repairs: ``repairs.list(limit=20)`` with no context;
* policy lookup: ``policies.with_source_episodes`` for one repair's episodes;
* enqueue: ``queue.enqueue`` of one new job.

The last column is the 100k figure over the 1k figure (target: <= 2).
``--explain`` prints each statement's plan at the largest size, the index
it uses named (docs/SCALING.md quotes them). PostgreSQL (``--db
postgresql``) uses a fresh database on ``MEMOS_FEEDBACK_TEST_PG_URL``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import insert
from sqlalchemy.engine import Connection

from benchmarks.hot_path import machine
from benchmarks.scaling import fresh_database
from memos_feedback.runtime.queue import RepairQueue
from memos_feedback.store import Store, open_store
from memos_feedback.store.models import DecisionRepairModel, PolicyModel, RepairJobModel
from memos_feedback.types import RepairInput, now_ms

CHUNK = 5_000


@contextmanager
def database(backend: str) -> Iterator[str]:
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="memos-growth-") as tmp:
            yield f"sqlite:///{tmp}/growth.db"
    else:
        base = os.environ.get("MEMOS_FEEDBACK_TEST_PG_URL")
        if not base:
            raise SystemExit("--db postgresql needs MEMOS_FEEDBACK_TEST_PG_URL")
        with fresh_database(base) as url:
            yield url


def _chunks(rows: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    for i in range(0, len(rows), CHUNK):
        yield rows[i : i + CHUNK]


def fill(store: Store, n: int) -> None:
    """``n`` each of pending jobs, done jobs, repairs and policies (written in bulk, triggers firing)."""
    now = now_ms()
    jobs = [
        {
            "id": f"job_{status}_{i:07d}",
            "context_hash": f"{status}{i:07d}",
            "trigger": "manual",
            "payload": {"trigger": "manual", "context_hash": f"{status}{i:07d}"},
            "status": status,
            "attempts": 0 if status == "pending" else 1,
            "next_attempt_at": now + 3_600_000 if status == "pending" else now,
            "created_at": now - n + i,
            "updated_at": now - n + i,
            "outcome": "persisted" if status == "done" else None,
        }
        for status in ("pending", "done")
        for i in range(n)
    ]
    repairs = [
        {
            "id": f"dr_{i:07d}",
            "ts": now - n + i,
            "context_hash": f"ctx{i:07d}",
            "trigger": "manual",
            "preference": f"Prefer: option {i}",
            "anti_pattern": f"Avoid: option {i + 1}",
            "severity": "info",
            "confidence": 0.5,
            "high_value_trace_ids": [],
            "low_value_trace_ids": [],
            "validated": False,
            "rejected": False,
            "source_text": f"do: option {i}",
        }
        for i in range(n)
    ]
    policies = [
        {
            "id": f"po_{i:07d}",
            "title": f"policy {i}",
            "boundary": "host text",
            "status": "active",
            "source_episode_ids": [f"ep-{i:07d}-a", f"ep-{i:07d}-b"],
            "updated_at": now,
        }
        for i in range(n)
    ]
    for model, rows in ((RepairJobModel, jobs), (DecisionRepairModel, repairs), (PolicyModel, policies)):
        for chunk in _chunks(rows):
            with store.connection(write=True) as conn:
                conn.execute(insert(model.__table__), chunk)  # type: ignore[arg-type]
    if store.dialect == "postgresql":
        with store.engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("VACUUM ANALYZE")
    else:
        with store.connection(write=True) as conn:
            conn.exec_driver_sql("ANALYZE")


def timed(fn: Callable[[], object], calls: int) -> float:
    """Median ms of ``calls`` calls after a few warm-up calls."""
    for _ in range(5):
        fn()
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def measure(store: Store, n: int, calls: int) -> dict[str, float]:
    queue = RepairQueue(store)
    middle = n // 2
    counter = iter(range(10**9))
    return {
        "stats()": timed(queue.stats, calls),
        "latest 20 repairs": timed(lambda: store.repairs.list(limit=20), calls),
        "policy lookup": timed(
            lambda: store.policies.with_source_episodes([f"ep-{middle:07d}-a", "ep-none"]), calls
        ),
        "enqueue": timed(
            lambda: queue.enqueue(
                RepairInput(trigger="manual", context_hash=f"new{next(counter):09d}", session_id="s")
            ),
            calls,
        ),
    }


# The statements behind each read, for --explain (parameters inlined).
def _plans(conn: Connection, dialect: str, n: int) -> dict[str, list[str]]:
    middle = n // 2
    if dialect == "postgresql":
        episodes = f"ANY(ARRAY['ep-{middle:07d}-a','ep-none'])"
        prefix = "EXPLAIN "
    else:
        episodes = f'(SELECT value FROM json_each(\'["ep-{middle:07d}-a","ep-none"]\'))'
        episodes = "IN " + episodes
        prefix = "EXPLAIN QUERY PLAN "
    policy_match = f"= {episodes}" if dialect == "postgresql" else episodes
    statements = {
        "stats(): counters": "SELECT status, sum(n) FROM repair_job_counts GROUP BY status",
        "stats(): oldest pending": "SELECT min(created_at) FROM repair_jobs WHERE status = 'pending'",
        "latest 20 repairs": "SELECT id FROM decision_repairs ORDER BY ts DESC, id DESC LIMIT 20",
        "policy lookup": (
            "SELECT id FROM policies WHERE id IN (SELECT policy_id FROM policy_episodes "
            f"WHERE episode_id {policy_match}) AND status = 'active' ORDER BY id"
        ),
        "enqueue: known ids": "SELECT id, status, seq FROM repair_jobs WHERE id IN ('job_x')",
        "prune done": (
            "SELECT seq FROM repair_jobs WHERE status = 'done' AND updated_at < 0 "
            "ORDER BY updated_at LIMIT 500"
        ),
    }
    out = {}
    for name, sql in statements.items():
        rows = conn.exec_driver_sql(prefix + sql).all()
        out[name] = [str(r[-1]) for r in rows]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    for line in machine():
        print(line)
    results: dict[int, dict[str, float]] = {}
    plans: dict[str, list[str]] = {}
    for n in sizes:
        with database(args.db) as url:
            store = open_store(url)
            fill(store, n)
            results[n] = measure(store, n, args.calls)
            if args.explain and n == sizes[-1]:
                with store.engine.connect() as conn:
                    plans = _plans(conn, store.dialect, n)
            store.close()
        print(f"{n:>7} rows: " + ", ".join(f"{k} {v:.3f} ms" for k, v in results[n].items()), flush=True)
    first, last = sizes[0], sizes[-1]
    print(f"\n{args.db}: median ms per call ({args.calls} calls)")
    print(f"{'read':<20}" + "".join(f"{n:>10}" for n in sizes) + f"{'ratio':>8}")
    for key in results[first]:
        ratio = results[last][key] / results[first][key]
        print(f"{key:<20}" + "".join(f"{results[n][key]:>10.3f}" for n in sizes) + f"{ratio:>8.2f}")
    for name, lines in plans.items():
        print(f"\n{name}:")
        for line in lines:
            print(f"    {line}")
    if args.json:
        print(json.dumps({"backend": args.db, "results": results, "plans": plans}))


if __name__ == "__main__":
    main()
