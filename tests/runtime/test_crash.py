"""Crash tests with real processes: nothing triggered is lost, nothing is repaired twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memos_feedback.runtime.queue import RepairQueue
from memos_feedback.store import Store, open_store
from tests.support.chat_server import Behaviour, ChatServer
from tests.support.procs import expect_line

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
N_CORRECTIONS, N_BURSTS = 50, 10


def child(mode: str, db_url: str, llm_url: str, *extra: str, failpoints: str = "") -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MEMOS_FEEDBACK_FAILPOINTS=failpoints)
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.crash_child", mode, db_url, llm_url, *extra],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until(cond: object, timeout: float = 30) -> None:
    assert callable(cond)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


def seed(store: Store) -> None:
    store.traces.add("crash-session", agent_text="ran the service on port 9000, healthy", value=0.9)
    store.traces.add("crash-session", agent_text="error: connection refused on port 8000", value=-0.8)


def drain_and_check(db_url: str) -> None:
    with ChatServer() as ok:
        proc = child("drain", db_url, ok.base_url)
        expect_line(proc, "DRAINED", timeout=120)
        assert proc.wait(timeout=30) == 0
    store = open_store(db_url)
    try:
        jobs = RepairQueue(store).list(limit=1000)
        assert len(jobs) == N_CORRECTIONS + N_BURSTS, "every trigger has its job"
        assert {j.status for j in jobs} == {"done"}, "no job left pending, running or dead"
        repairs = store.repairs.list(limit=1000)
        persisted = [j for j in jobs if j.outcome == "persisted"]
        # One repair per trigger (distinct contexts, so no cooldown skips) ...
        assert len(persisted) == N_CORRECTIONS + N_BURSTS, [
            j.outcome for j in jobs if j.outcome != "persisted"
        ]
        # ... and never two: each job's repair exists once, each context once.
        assert len(repairs) == len(persisted)
        assert sorted(r.id for r in repairs) == sorted(j.repair_id for j in persisted if j.repair_id)
        assert len({r.context_hash for r in repairs}) == len(repairs)
        # Each repair is in recall's search index once (SQLite: FTS5), or
        # named once in its tail (a store's background thread indexes those).
        with store.engine.connect() as conn:
            indexed = list(conn.exec_driver_sql("SELECT repair_id FROM decision_repairs_fts").scalars())
            indexed += conn.exec_driver_sql("SELECT repair_id FROM decision_repairs_fts_pending").scalars()
            assert sorted(indexed) == sorted(r.id for r in repairs)
    finally:
        store.close()


def submit_then_kill(db_url: str, store: Store) -> None:
    """A child submits every trigger, then dies by SIGKILL while its LLM call hangs."""
    with ChatServer() as hanging:
        hanging.script(*[Behaviour.hang() for _ in range(10)])
        proc = child("submit", db_url, hanging.base_url, str(N_CORRECTIONS), str(N_BURSTS))
        expect_line(proc, "SUBMITTED")
        queue = RepairQueue(store)
        wait_until(lambda: queue.stats()["running"] == 1 and len(hanging.requests) >= 1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    assert queue.stats()["running"] == 1, "killed while a job was in flight"
    assert store.repairs.list() == []


def test_sigkill_mid_job_loses_nothing(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'crash.db'}"
    store = open_store(db_url)
    seed(store)
    submit_then_kill(db_url, store)
    store.close()
    drain_and_check(db_url)


def test_sigkill_between_insert_and_commit_repairs_once(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'crash.db'}"
    store = open_store(db_url)
    seed(store)
    submit_then_kill(db_url, store)
    with ChatServer() as ok:
        # The failpoint kills this child inside its first repair's transaction,
        # after the repair row and the job's done state were written.
        proc = child("drain", db_url, ok.base_url, failpoints="repair.before_commit")
        assert proc.wait(timeout=60) == -signal.SIGKILL
        assert len(ok.requests) >= 1
    assert store.repairs.list() == [], "the uncommitted repair was rolled back"
    assert RepairQueue(store).stats()["done"] == 0
    store.close()
    drain_and_check(db_url)
