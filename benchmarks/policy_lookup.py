"""Finding the policies a repair came from, as the policy count grows.

    python -m benchmarks.policy_lookup [--db postgresql+psycopg://...] [--runs 5]

A repair attaches to every active policy whose ``source_episode_ids`` share
an id with its evidence. This compares the database doing the match
(``store.policies.with_source_episodes``: ``?|`` with a GIN index on
PostgreSQL, ``json_each`` on SQLite) with listing every active policy and
intersecting in Python (what the library did before migration 0004). Each
policy has five episode ids; a lookup asks for three ids that hit two
policies. Figures are the median of ``--runs`` runs of 200 lookups.
SQLite always; PostgreSQL when ``--db`` or ``MEMOS_FEEDBACK_TEST_PG_URL``
gives a server (a fresh database is made and dropped).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.hot_path import machine
from benchmarks.scaling import fresh_database
from memos_feedback.store import Store, open_store

SIZES = (100, 1_000, 10_000)
LOOKUPS = 200


def add_policies(store: Store, start: int, stop: int) -> None:
    # Through the public API, one row at a time; seeding is not measured.
    for i in range(start, stop):
        store.policies.add(f"p{i}", source_episode_ids=[f"ep{i * 5 + k}" for k in range(5)], id=f"p{i:06d}")


def per_lookup_us(fn: Callable[[], object], runs: int) -> float:
    medians = []
    for _ in range(runs):
        started = time.perf_counter()
        for _ in range(LOOKUPS):
            fn()
        medians.append((time.perf_counter() - started) / LOOKUPS * 1e6)
    return statistics.median(medians)


@contextmanager
def sqlite_url() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as d:
        yield f"sqlite:///{Path(d) / 'lookup.db'}"


def measure(url: str, runs: int) -> list[tuple[int, float, float]]:
    rows = []
    store = open_store(url)
    try:
        seeded = 0
        for size in SIZES:
            add_policies(store, seeded, size)
            seeded = size
            wanted = {"ep7", f"ep{(size - 1) * 5}", "ep-missing"}  # policies 1 and size-1

            def in_sql(wanted: set[str] = wanted) -> object:
                return store.policies.with_source_episodes(wanted)

            def in_python(wanted: set[str] = wanted) -> list[str]:
                active = store.policies.list(status="active")
                return [p.id for p in active if wanted.intersection(p.source_episode_ids)]

            assert [p.id for p in store.policies.with_source_episodes(wanted)] == in_python()
            rows.append((size, per_lookup_us(in_sql, runs), per_lookup_us(in_python, runs)))
    finally:
        store.close()
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=os.environ.get("MEMOS_FEEDBACK_TEST_PG_URL"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    print("\n".join(machine()))
    print("| backend | policies | database match (µs) | list + Python (µs) | ratio |")
    print("|---|---:|---:|---:|---:|")
    backends = [("sqlite", sqlite_url())]
    if args.db:
        backends.append(("postgresql", fresh_database(args.db)))
    for name, database in backends:
        with database as url:
            for size, sql_us, py_us in measure(url, args.runs):
                print(f"| {name} | {size:,} | {sql_us:,.0f} | {py_us:,.0f} | {py_us / sql_us:.1f}× |")


if __name__ == "__main__":
    main()
