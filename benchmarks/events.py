"""Cost of the durable event log on the repair drain (issue 13).

    python -m benchmarks.events [--jobs N] [--rounds R] [--pg ADMIN_URL]

Two figures, each with the event log off and on, alternating the two in
one run so both see the same machine state, each on a fresh database:
``run_repair`` alone (median latency of one call, one thread: the least
noisy figure), and a whole drain of the same backlog of repair jobs
through ``FeedbackSubscriber`` (``events_log=False`` against the default).
A drain ends when every job's terminal event was announced and, with the
log on, every buffered event is written. Prints per-round times, the
medians and the overhead (target: at most +20 %, docs/PERFORMANCE.md).

``--pg`` runs on PostgreSQL too: a throwaway database per round is
created through that server URL and dropped afterwards.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from benchmarks.hot_path import machine
from benchmarks.repair_path import SESSION, seed
from memos_feedback.config import FeedbackConfig
from memos_feedback.events import FeedbackBus
from memos_feedback.feed import FeedStore
from memos_feedback.repair.deps import RepairDeps
from memos_feedback.repair.run import run_repair
from memos_feedback.runtime.queue import RepairQueue
from memos_feedback.runtime.subscriber import attach_feedback_subscriber
from memos_feedback.store import open_store
from memos_feedback.types import RepairInput


@contextmanager
def sqlite_db() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="memos-bench-events-") as tmp:
        yield f"sqlite:///{tmp}/bench.db"


@contextmanager
def pg_db(admin_url: str) -> Iterator[str]:
    name = f"memos_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def drain_seconds(url: str, n: int, log: bool) -> tuple[float, int]:
    """Seconds to drain ``n`` jobs; and how many events the log holds after."""
    config = FeedbackConfig(use_llm=False, cooldown_ms=0, events_log=log)
    with open_store(url) as store:
        seed(store)
        RepairQueue(store, config).enqueue_many(
            [
                RepairInput(trigger="manual", context_hash=f"ev{i:08x}", tool_id="pip", session_id=SESSION)
                for i in range(n)
            ]
        )
        bus = FeedbackBus()
        finished = threading.Semaphore(0)
        bus.on("repair.persisted", lambda _e: finished.release())
        bus.on("repair.skipped", lambda _e: finished.release())
        t0 = time.perf_counter()
        with attach_feedback_subscriber(store, bus=bus, config=config, poll_interval=0.01) as sub:
            for _ in range(n):
                assert finished.acquire(timeout=120), "the queue stalled"
            if sub.events is not None:
                sub.events.flush()
            elapsed = time.perf_counter() - t0
        events = len(FeedStore(store).read(0, limit=10_000))
    return elapsed, events


MakeDb = Callable[[], AbstractContextManager[str]]


def compare_run_repair(name: str, make_db: MakeDb, n: int, rounds: int) -> None:
    """Median ms of one ``run_repair`` (persist + attach) with and without the log's writes.

    Two databases side by side; calls alternate between them one by one, so
    load from elsewhere on the machine lands on both alike.
    """
    config = FeedbackConfig(use_llm=False, cooldown_ms=0)
    samples: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(rounds):
        with make_db() as url_off, make_db() as url_on, open_store(url_off) as off, open_store(url_on) as on:
            deps = {}
            for log, store in ((False, off), (True, on)):
                seed(store)
                feed = FeedStore(store, config) if log else None
                bus = FeedbackBus()
                if feed is not None:
                    bus.on_any(feed.buffer)
                deps[log] = RepairDeps(store=store, config=config, bus=bus, events=feed)
            for i in range(n):
                inp = RepairInput(trigger="manual", context_hash=f"rr{i:08x}", session_id=SESSION)
                for log in (False, True) if i % 2 == 0 else (True, False):
                    t0 = time.perf_counter()
                    assert run_repair(inp, deps[log]).repair_id is not None
                    samples[log].append((time.perf_counter() - t0) * 1000)
    m_off, m_on = statistics.median(samples[False]), statistics.median(samples[True])
    print(f"{name}: run_repair, {rounds} x {n} calls each, alternating")
    delta = f"{m_on - m_off:+.3f} ms ({100 * (m_on / m_off - 1):+.1f} %)"
    print(f"  median log off {m_off:.3f} ms, log on {m_on:.3f} ms: {delta}")


def compare(name: str, make_db: MakeDb, n: int, rounds: int) -> None:
    off: list[float] = []
    on: list[float] = []
    logged = 0
    for r in range(rounds):
        # Alternate which goes first, so drift in machine load hits both.
        order = (False, True) if r % 2 == 0 else (True, False)
        for log in order:
            with make_db() as url:
                seconds, events = drain_seconds(url, n, log)
            (on if log else off).append(seconds)
            if log:
                logged = events
    m_off, m_on = statistics.median(off), statistics.median(on)
    print(f"{name}: {n} jobs, {rounds} rounds each")
    for label, times, m in (("log off", off, m_off), ("log on ", on, m_on)):
        each = ", ".join(f"{s:.3f}" for s in times)
        print(f"  {label}: {each} s  median {m:.3f} s ({n / m:,.0f} jobs/s)")
    print(f"  overhead: {100 * (m_on / m_off - 1):+.1f} %  ({logged} events logged per drain)")
    # Each round's pair ran back to back; the median of their ratios is less
    # sensitive to load that drifts across the run than the ratio of medians.
    paired = statistics.median(b / a for a, b in zip(off, on, strict=True))
    print(f"  overhead, median of per-round ratios: {100 * (paired - 1):+.1f} %")


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pg", metavar="ADMIN_URL", help="also run on PostgreSQL (throwaway databases)")
    args = parser.parse_args()
    for line in machine():
        print(line)
    compare_run_repair("SQLite", sqlite_db, args.jobs, args.rounds)
    compare("SQLite", sqlite_db, args.jobs, args.rounds)
    if args.pg:
        admin = args.pg
        compare_run_repair("PostgreSQL", lambda: pg_db(admin), args.jobs, args.rounds)
        compare("PostgreSQL", lambda: pg_db(admin), args.jobs, args.rounds)


if __name__ == "__main__":
    main()
