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
from typing import IO

import pytest
from sqlalchemy import text

from memos_feedback.events import RepairSkipped
from memos_feedback.feed import FeedStore
from memos_feedback.runtime.queue import RepairQueue
from memos_feedback.store import Store, open_store
from memos_feedback.types import RepairInput

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SESSION = "feed-session"


# Runs the CLI as a terminal would: a shell without job control starts a
# background command (a CI script's ``... &``) with SIGINT ignored, the
# child inherits that, and Python then installs no KeyboardInterrupt.
_AS_AT_A_TERMINAL = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv[0] = 'memos_feedback'; runpy.run_module('memos_feedback', run_name='__main__')"
)


def cli(*args: str, failpoints: str = "", faulthandler: bool = False) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MEMOS_FEEDBACK_FAILPOINTS=failpoints)
    if faulthandler:
        env["PYTHONFAULTHANDLER"] = "1"
    command = ["-c", _AS_AT_A_TERMINAL] if faulthandler else ["-m", "memos_feedback"]
    return subprocess.Popen(
        [sys.executable, *command, *args],
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
    """Collects a child's stdout lines and its stderr on threads.

    Reading never blocks the test, and the child never blocks on a full
    pipe (stderr is read too, for the failure message).
    """

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._errors: list[str] = []
        self._threads = [
            threading.Thread(target=self._read, args=(proc.stdout, self.lines), daemon=True),
            threading.Thread(target=self._read, args=(proc.stderr, self._errors), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    @staticmethod
    def _read(stream: IO[str] | None, into: list[str]) -> None:
        assert stream is not None
        for line in stream:
            into.append(line.rstrip("\n"))

    @property
    def stderr(self) -> str:
        return "\n".join(self._errors)

    def join(self, timeout: float = 10) -> None:
        """Wait until the child's pipes are read to their end (call after it exited)."""
        for thread in self._threads:
            thread.join(timeout)

    def wait_for(self, cond: object, timeout: float = 60) -> None:
        assert callable(cond)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if cond(self.lines):
                return
            time.sleep(0.02)
        raise AssertionError(f"not seen in time; lines so far: {self.lines}")


# What one repair of a user's correction logs, in order.
ONE_REPAIR = ["feedback.classified", "repair.triggered", "repair.persisted"]


def test_tail_shows_another_process_repairs_in_order_exactly_once(db_url: str) -> None:
    store = open_store(db_url)
    try:
        seed(store)
        start = FeedStore(store).last_seq()
        # It stops by itself after the events two repairs log: an event
        # shown twice, or out of order, displaces one of them below.
        count = str(len(ONE_REPAIR) * 2)
        tail = cli("--db", db_url, "tail", "--json", "--since", str(start), "--count", count)
        out = Lines(tail)
        try:
            for ctx in ("aa00000000000001", "aa00000000000002"):
                args = ["run-once", "--session", SESSION, "--context-hash", ctx, "--tool", "config"]
                run = cli("--db", db_url, *args, "--text", "wrong port, it's 9000 not 8000")
                stdout, stderr = run.communicate(timeout=120)
                assert run.returncode == 0, stderr
                assert "persisted" in stdout
            assert tail.wait(timeout=60) == 0, out.stderr
        finally:
            if tail.poll() is None:
                tail.kill()
                tail.wait()
        out.join()
        shown = [json.loads(line) for line in out.lines]
        table = FeedStore(store).read(start)
        assert [e["seq"] for e in shown] == [r.seq for r in table], "in commit order, each exactly once"
        assert [e["kind"] for e in shown] == ONE_REPAIR * 2
        repair_ids = sorted(r.id for r in store.repairs.list())
        assert sorted(e["repair_id"] for e in shown if e["kind"] == "repair.persisted") == repair_ids
    finally:
        store.close()


def test_ctrl_c_stops_tail(db_url: str) -> None:
    # What a person at a terminal does: SIGINT ends ``tail`` with 130. If
    # it does not, the child's threads are dumped (faulthandler) into the
    # failure message. (That dump showed why this once failed: the suite
    # ran in the background of a shell, SIGINT ignored, and so was the child.)
    with open_store(db_url) as store:
        FeedStore(store).log(
            [RepairSkipped(context_hash="aa00000000000003", trigger="manual", reason="cooldown")]
        )
    tail = cli("--db", db_url, "tail", "--json", "--since", "0", faulthandler=True)
    out = Lines(tail)
    try:
        out.wait_for(lambda lines: len(lines) == 1)  # started, and following the log
        tail.send_signal(signal.SIGINT)
        try:
            code = tail.wait(timeout=60)
        except subprocess.TimeoutExpired:
            tail.send_signal(signal.SIGABRT)  # faulthandler writes every thread's stack
            tail.wait(timeout=30)
            out.join()
            raise AssertionError(f"tail ignored SIGINT for 60 s; its threads:\n{out.stderr}") from None
    finally:
        if tail.poll() is None:
            tail.kill()
            tail.wait()
    assert code == 130, out.stderr


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
