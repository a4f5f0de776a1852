"""Throughput of 1, 2, 4 and 8 worker processes draining one PostgreSQL queue.

    python -m benchmarks.scaling --db postgresql+psycopg://... [--runs 3] [--quick]

(``--db`` defaults to ``MEMOS_FEEDBACK_TEST_PG_URL``; ``make test-postgres``
or ``scripts/pg-cluster.sh start DIR`` gives one.) For every process count
and path, a fresh database gets N jobs on distinct contexts while P worker
processes (``tests/support/stress_child.py``, one worker thread each) wait;
the figure is N / seconds until every job is done, median of ``--runs``.

* template path: no LLM — bound by this machine's CPU;
* LLM path: a loopback chat-completions server that answers after 100 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from benchmarks.hot_path import machine
from memos_feedback.runtime.queue import RepairQueue
from memos_feedback.store import ToolCall, open_store
from memos_feedback.types import RepairInput
from tests.support.chat_server import ChatServer

ROOT = Path(__file__).resolve().parents[1]
SESSION = "scale-session"


@contextmanager
def fresh_database(base_url: str) -> Iterator[str]:
    base = make_url(base_url)
    name = f"memos_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def one_run(base_url: str, processes: int, jobs: int, llm_url: str | None) -> float:
    with fresh_database(base_url) as url, ExitStack() as stack:
        store = open_store(url)
        store.traces.add(SESSION, reflection="uv works", value=0.9, tool_calls=[ToolCall("pip.install")])
        store.traces.add(
            SESSION, reflection="pip failed", value=-0.9, tool_calls=[ToolCall("pip.install", "E")]
        )
        args = ["--db", url, "--expect", str(jobs), "--cooldown-ms", "0"]
        if llm_url:
            args += ["--llm-url", llm_url]
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "tests.support.stress_child", "--index", str(i), *args],
                cwd=ROOT,
                env=dict(os.environ, PYTHONPATH=str(ROOT)),
                stdout=subprocess.PIPE,
                text=True,
            )
            for i in range(processes)
        ]
        for p in procs:
            stack.callback(p.kill)
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "READY"
        queue = RepairQueue(store)
        inputs = [
            RepairInput(
                trigger="manual", context_hash=f"sc{i:06d}", tool_id="pip.install", session_id=SESSION
            )
            for i in range(jobs)
        ]
        t0 = time.perf_counter()
        queue.enqueue_many(inputs)
        while (queue.stats()["done"] or 0) < jobs:
            time.sleep(0.05)  # a light poll: the database is shared with the workers
        elapsed = time.perf_counter() - t0
        for p in procs:
            p.wait(timeout=60)
        assert len(store.repairs.list(limit=jobs)) == jobs
        store.close()
    return jobs / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", default=os.environ.get("MEMOS_FEEDBACK_TEST_PG_URL"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="fewer jobs, one run")
    args = parser.parse_args()
    if not args.db:
        sys.exit("need --db or MEMOS_FEEDBACK_TEST_PG_URL (a PostgreSQL server)")
    runs = 1 if args.quick else args.runs
    for line in machine():
        print(line)
    with ChatServer() as server:
        from tests.support.chat_server import Behaviour

        def llm_url() -> str:
            server.script(*[Behaviour.delay(100) for _ in range(2000)])
            return server.base_url

        for label, jobs, url_fn in (
            ("template", 150 if args.quick else 400, lambda: None),
            ("llm 100 ms", 60 if args.quick else 200, llm_url),
        ):
            base_rate = None
            for processes in (1, 2, 4, 8):
                rates = [one_run(args.db, processes, jobs, url_fn()) for _ in range(runs)]
                rate = statistics.median(rates)
                base_rate = base_rate or rate
                print(
                    f"{label:<11} processes={processes}  {rate:7.1f} jobs/s  "
                    f"x{rate / base_rate:4.2f}  (runs: {', '.join(f'{r:.1f}' for r in rates)}; {jobs} jobs)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
