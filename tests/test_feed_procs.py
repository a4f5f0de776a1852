"""The event log across real processes: ``tail`` against another process's repairs,
a SIGKILL inside the repair transaction, and ``sweep`` draining what a killed process left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from memos_feedback.feed import FeedStore
from memos_feedback.queue import RepairQueue
from memos_feedback.repair import RepairInput
from memos_feedback.store import Store, open_store

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SESSION = "feed-session"


def cli(*args: str, failpoints: str = "") -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MEMOS_FEEDBACK_FAILPOINTS=failpoints)
    return subprocess.Popen(
        [sys.executable, "-m", "memos_feedback.cli", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def seed(store: Store) -> None:
    store.traces.add(SESSION, agent_text="ran the service on port 9000, healthy", value=0.9)
    store.traces.add(SESSION, agent_text="error: connection refused on port 8000", value=-0.8)


def enqueue(store: Store, n: int) -> None:
    RepairQueue(store).enqueue_many(
        [
            RepairInput(trigger="manual", context_hash=f"c0{i:06x}", tool_id="config", session_id=SESSION)
            for i in range(n)
        ]
    )


class Lines:
    """Collects a child's stdout lines on a thread (reading never blocks the test)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, cond: object, timeout: float = 60) -> None:
        assert callable(cond)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if cond(self.lines):
                return
            time.sleep(0.02)
        raise AssertionError(f"not seen in time; lines so far: {self.lines}")


def test_tail_shows_another_process_repairs_in_order_exactly_once(db_url: str) -> None:
    store = open_store(db_url)
    try:
        seed(store)
        start = FeedStore(store).last_seq()
        tail = cli("--db", db_url, "tail", "--json", "--since", str(start))
        out = Lines(tail)
        try:
            for ctx in ("aa00000000000001", "aa00000000000002"):
                args = ["run-once", "--session", SESSION, "--context-hash", ctx, "--tool", "config"]
                run = cli("--db", db_url, *args, "--text", "wrong port, it's 9000 not 8000")
                stdout, stderr = run.communicate(timeout=120)
                assert run.returncode == 0, stderr
                assert "persisted" in stdout
            out.wait_for(lambda ls: sum('"repair.persisted"' in line for line in ls) == 2)
            time.sleep(0.5)  # anything repeated would show up now
        finally:
            tail.send_signal(signal.SIGINT)
            tail.wait(timeout=30)
        shown = [json.loads(line) for line in out.lines]
        table = FeedStore(store).read(start)
        assert [e["seq"] for e in shown] == [r.seq for r in table], "in commit order, each exactly once"
        one_repair = ["feedback.classified", "repair.triggered", "repair.persisted"]
        assert [e["kind"] for e in shown] == one_repair * 2
        repair_ids = sorted(r.id for r in store.repairs.list())
        assert sorted(e["repair_id"] for e in shown if e["kind"] == "repair.persisted") == repair_ids
    finally:
        store.close()


def persisted_events(store: Store) -> list[str]:
    return [r.repair_id or "" for r in FeedStore(store).read(0, kinds=["repair.persisted"], limit=10_000)]


def test_sigkill_in_the_repair_transaction_logs_nothing_then_sweep_drains(db_url: str) -> None:
    store = open_store(db_url)
    try:
        seed(store)
        enqueue(store, 12)
        # The failpoint kills the sweeper after the repair row, the job's done
        # state and the repair.persisted event are inserted, before commit.
        killed = cli("--db", db_url, "sweep", "--workers", "1", failpoints="events.before_commit")
        assert killed.wait(timeout=120) == -signal.SIGKILL
        assert store.repairs.list() == [], "the repair rolled back"
        assert persisted_events(store) == [], "and so did its event"
        stats = RepairQueue(store).stats()
        # The sweeper claims a batch (claim_batch) per transaction: those stay running.
        assert stats["running"] >= 1, "the killed process left its claimed jobs running"
        assert stats["running"] + stats["pending"] == 12

        sweep = cli("--db", db_url, "sweep", "--workers", "2", "--timeout", "120")
        stdout, stderr = sweep.communicate(timeout=180)
        assert sweep.returncode == 0, stderr
        assert "swept: 12 done" in stdout, stdout
        stats = RepairQueue(store).stats()
        assert stats["pending"] == stats["running"] == stats["dead"] == 0
        repairs = sorted(r.id for r in store.repairs.list(limit=100))
        assert len(repairs) == 12
        assert sorted(persisted_events(store)) == repairs, "every committed repair has exactly one event"
    finally:
        store.close()


def test_sweep_times_out_with_exit_1_when_a_job_is_not_due(db_url: str) -> None:
    store = open_store(db_url)
    try:
        seed(store)
        enqueue(store, 1)
        far = int(time.time() * 1000) + 600_000  # a retry backoff ten minutes out
        with store.session(write=True) as s:
            s.execute(text("UPDATE repair_jobs SET next_attempt_at = :t"), {"t": far})
        sweep = cli("--db", db_url, "sweep", "--timeout", "1")
        stdout, stderr = sweep.communicate(timeout=60)
        assert sweep.returncode == 1
        assert "pending 1→1" in stdout
        assert "timeout after 1 s" in stderr
    finally:
        store.close()
