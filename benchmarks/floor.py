"""The floor: one worker job's exact statements replayed with plain ``sqlite3``.

    python -m benchmarks.floor [--jobs 1000]

The statements (and transactions) of one job — claim, the grouped reads,
the repair write with the job's done — are recorded from the library's own
worker path (``claim_many(1)`` then ``run_repair`` with the queue's
finalizer) through SQLAlchemy's cursor events. They are then replayed for
the other queued jobs on the raw ``sqlite3`` connection of the same file,
with the job id, repair id and context swapped in: what the database work
of a job costs with no Python library around it. Printed beside the
library's own cost per job on the same file, in the same run.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from typing import Any

from sqlalchemy import event

from benchmarks.hot_path import machine
from benchmarks.repair_probe import CONFIG, SESSION, seed
from memos_feedback.repair.deps import RepairDeps
from memos_feedback.repair.run import run_repair
from memos_feedback.runtime.queue import RepairQueue, input_from_payload
from memos_feedback.store import Store, open_store
from memos_feedback.store.engine import WRITE_OPTION
from memos_feedback.types import RepairInput

Statement = tuple[str, Any]
BLOCK = 100


def one_job(store: Store, queue: RepairQueue) -> dict[str, str] | None:
    """The library's worker path for one job; the job's id, context and repair id."""
    jobs = queue.claim_many("floor:1:x", 1)
    if not jobs:
        return None
    job = jobs[0]

    def finalize(conn: Any, repair_id: str) -> None:
        queue.complete_in(conn, job, "floor:1:x", "persisted", repair_id)

    result = run_repair(
        input_from_payload(job.payload), RepairDeps(store=store, config=CONFIG, finalize=finalize)
    )
    assert result.repair_id is not None, result
    return {"job": job.id, "context": job.context_hash, "repair": result.repair_id}


def record(store: Store, queue: RepairQueue) -> tuple[list[Statement], dict[str, str]]:
    """The statements of one job, BEGIN and COMMIT included, and its ids (``one_job``)."""
    seen: list[Statement] = []

    def on_execute(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        seen.append((statement, parameters))

    def on_commit(conn: Any) -> None:
        seen.append(("COMMIT", ()))

    def on_begin(conn: Any) -> None:
        # The store's begin hook runs BEGIN on the DBAPI connection itself
        # (no cursor event): IMMEDIATE when the store marked it a write.
        write = conn.get_execution_options().get(WRITE_OPTION, False)
        seen.append(("BEGIN IMMEDIATE" if write else "BEGIN", ()))

    event.listen(store.engine, "begin", on_begin)
    event.listen(store.engine, "before_cursor_execute", on_execute)
    event.listen(store.engine, "commit", on_commit)
    try:
        ids = one_job(store, queue)
    finally:
        event.remove(store.engine, "begin", on_begin)
        event.remove(store.engine, "before_cursor_execute", on_execute)
        event.remove(store.engine, "commit", on_commit)
    assert ids is not None
    return seen, ids


def swap(params: Any, old: dict[str, str], new: dict[str, str]) -> Any:
    if isinstance(params, (list, tuple)):
        return type(params)(swap(p, old, new) for p in params)
    if isinstance(params, str):
        for key, value in old.items():
            params = params.replace(value, new[key])
    return params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=1000)
    args = parser.parse_args()
    for line in machine():
        print(line)
    with tempfile.TemporaryDirectory(prefix="memos-floor-") as tmp:
        store = open_store(f"sqlite:///{tmp}/floor.db")
        seed(store)
        queue = RepairQueue(store, CONFIG)
        n = args.jobs
        queue.enqueue_many(
            [
                RepairInput(
                    trigger="manual", context_hash=f"fl{i:08x}", tool_id="pip.install", session_id=SESSION
                )
                for i in range(2 * n + 1)
            ]
        )
        statements, old = record(store, queue)
        transactions = sum(1 for s, _ in statements if s == "COMMIT")
        print(f"one job: {len(statements) - 2 * transactions} statements in {transactions} transactions")
        # The replay runs on a copy: two connections writing one file would
        # each drop their page cache whenever the other wrote.
        source = sqlite3.connect(f"{tmp}/floor.db")
        copy = sqlite3.connect(f"{tmp}/replay.db")
        source.backup(copy)
        source.close()
        copy.execute("PRAGMA journal_mode=WAL")
        copy.close()
        raw = sqlite3.connect(f"{tmp}/replay.db", isolation_level=None)
        # The pragmas the store sets on its own connections (store/engine.py).
        for pragma in ("synchronous=NORMAL", "wal_autocheckpoint=0", "foreign_keys=ON"):
            raw.execute(f"PRAGMA {pragma}")
        # Alternating blocks of BLOCK jobs: the library, then the replay
        # (whose replayed claim takes the next job in queue order), so both
        # see the same minutes of a shared machine.
        library: list[float] = []
        samples: list[float] = []
        done = 0
        while done < n:
            block = min(BLOCK, n - done)
            for _ in range(block):
                t0 = time.perf_counter()
                assert one_job(store, queue) is not None
                library.append((time.perf_counter() - t0) * 1e6)
            for i in range(done, done + block):
                new = dict(old, repair=f"dr_floor_{i:08d}")
                t0 = time.perf_counter()
                for k, (statement, params) in enumerate(statements):
                    rows = raw.execute(statement, swap(params, old, new)).fetchall()
                    if k == 1:  # the claim: RETURNING seq, id, context_hash, ...
                        new["job"], new["context"] = rows[0][1], rows[0][2]
                samples.append((time.perf_counter() - t0) * 1e6)
            done += block
        raw.close()
        store.close()
    floor_us = statistics.median(samples)
    library_us = statistics.median(library)
    print(f"library worker path, per job: {library_us:,.0f} us (median of {n})")
    print(f"plain sqlite3 replay, per job: {floor_us:,.0f} us (median of {n})")
    print(f"library / floor: {library_us / floor_us:.1f}x")


if __name__ == "__main__":
    main()
