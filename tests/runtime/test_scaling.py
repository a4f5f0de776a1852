"""Many agent processes on one database (PIPELINE.md §6, §9; the PostgreSQL issue).

Real processes, each with its own worker, drain one queue: exactly one
repair per context per cooldown window, every job done exactly once, no
deadlock, and every policy's @repair block holds every repair attached to it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from memos_feedback.runtime.queue import JobRow, RepairQueue
from memos_feedback.store import Store, ToolCall, open_store
from memos_feedback.text.blocks import parse_repair_block
from tests.support.chat_server import Behaviour, ChatServer
from tests.support.pg import fresh_pg_database
from tests.support.procs import expect_line
from tests.support.stress_child import context_name, session_of

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CONTEXTS = 20
TRIGGERS = 200
COOLDOWN_MS = 600_000  # far longer than the test: one repair per context


@contextmanager
def database(backend: str, tmp_path: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.db'}"
    else:
        with fresh_pg_database() as url:
            yield url


def seed(store: Store) -> dict[str, list[int]]:
    """Traces per context; a shared policy and four policies of five contexts each."""
    for c in range(CONTEXTS):
        ctx, episode = context_name(c), f"ep-{c:02d}"
        store.traces.add(
            session_of(c),
            reflection=f"uv works for {ctx}",
            value=0.9,
            episode_id=episode,
            tool_calls=[ToolCall("pip.install")],
        )
        store.traces.add(
            session_of(c),
            reflection=f"pip failed for {ctx}",
            value=-0.9,
            episode_id=episode,
            tool_calls=[ToolCall("pip.install", "E1")],
        )
    members = {"shared": list(range(CONTEXTS))}
    members.update({f"group-{k}": [c for c in range(CONTEXTS) if c % 4 == k] for k in range(4)})
    for pid, contexts in members.items():
        store.policies.add(
            pid, boundary=f"policy {pid}", source_episode_ids=[f"ep-{c:02d}" for c in contexts], id=pid
        )
    return members


def spawn(url: str, index: int, expect: int, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable, "-m", "tests.support.stress_child", "--db", url, "--index", str(index),
            "--triggers", str(TRIGGERS), "--contexts", str(CONTEXTS), "--expect", str(expect),
            "--cooldown-ms", str(COOLDOWN_MS), *extra,
        ],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def check_invariants(
    store: Store, members: dict[str, list[int]], total: int, reclaimed: frozenset[str] = frozenset()
) -> None:
    jobs = RepairQueue(store).list(limit=total + 10)
    assert len(jobs) == total, "every trigger has exactly one job"
    assert {j.status for j in jobs} == {"done"}, "every job finished, none dead or left behind"
    # Only a job whose worker died is run again; every other job ran once.
    # (At least twice, not exactly: its second worker may in theory lose a
    # lease too on a starved machine — the finish is conditional on the lease.)
    assert {j.id for j in jobs if j.attempts != 1} == reclaimed
    assert all(j.attempts >= 2 for j in jobs if j.id in reclaimed)
    persisted = [j for j in jobs if j.outcome == "persisted"]
    repairs = store.repairs.list(limit=1000)
    assert len(repairs) == CONTEXTS, "exactly one repair per context within the cooldown"
    assert len({r.context_hash for r in repairs}) == CONTEXTS
    assert sorted(j.repair_id or "" for j in persisted) == sorted(r.id for r in repairs)
    assert all(j.outcome == "skipped:cooldown" for j in jobs if j.outcome != "persisted")
    by_context = {r.context: r for r in repairs}
    for pid, contexts in members.items():
        boundary = store.policies.get(pid).boundary
        host, block = parse_repair_block(boundary)
        assert host == f"policy {pid}" and block is not None
        for c in contexts:
            repair = by_context[context_name(c)]
            assert repair.preference in block.preference, (pid, c)
            assert repair.anti_pattern in block.anti_pattern, (pid, c)
        assert len(block.preference) == len({by_context[context_name(c)].preference for c in contexts})


@pytest.mark.parametrize(("backend", "processes"), [("postgresql", 8), ("sqlite", 4)])
def test_processes_share_one_queue(backend: str, processes: int, tmp_path: Path) -> None:
    with database(backend, tmp_path) as url:
        store = open_store(url)
        members = seed(store)
        total = processes * TRIGGERS
        with ExitStack() as stack:
            procs = [spawn(url, i, total) for i in range(processes)]
            for p in procs:
                stack.callback(p.kill)
            for p in procs:
                expect_line(p, "SUBMITTED", timeout=120)
            for p in procs:
                expect_line(p, "DONE", timeout=300)
                assert p.wait(timeout=30) == 0
        check_invariants(store, members, total)
        store.close()


def test_a_killed_worker_process_job_is_reclaimed(tmp_path: Path) -> None:
    processes = 8
    with database("postgresql", tmp_path) as url, ChatServer() as slow, ChatServer() as hanging:
        store = open_store(url)
        members = seed(store)
        total = processes * TRIGGERS
        # The others' model answers after 100 ms; the victim's never answers,
        # so it is certainly mid-job when it is killed.
        slow.script(*[Behaviour.delay(100) for _ in range(total)])
        hanging.script(*[Behaviour.hang() for _ in range(10)])
        # The victim's job comes back at once (its pid is dead on this host);
        # the lease only has to outlast a starved live worker's heartbeat. 8 s
        # did not always: under a loaded CI host a live worker lost its lease
        # and its job ran twice. Reclaiming the orphan does not wait for it.
        lease = ("--lease-ms", "60000")
        with ExitStack() as stack:
            # The victim starts alone, so the first job it claims is one that
            # calls the model (started together, it might only ever draw jobs
            # the cooldown skips without a model call).
            # Its request must still hang when it is killed: on a loaded host the
            # seven others can take longer to start than a 30 s LLM deadline,
            # and a victim whose request timed out retries and holds another job.
            victim = spawn(url, 0, total, "--llm-url", hanging.base_url, "--llm-timeout", "600", *lease)
            stack.callback(victim.kill)
            expect_line(victim, "SUBMITTED", timeout=120)
            queue = RepairQueue(store)
            deadline = time.monotonic() + 60
            mine: list[JobRow] = []
            # Its job is claimed a moment before its LLM request arrives: wait for both.
            while not (mine and hanging.requests) and time.monotonic() < deadline:
                mine = [j for j in queue.list(status="running") if f":{victim.pid}:" in (j.lease_owner or "")]
                time.sleep(0.005)
            assert mine and len(hanging.requests) >= 1, "the victim never held a job"
            procs = [spawn(url, i, total, "--llm-url", slow.base_url, *lease) for i in range(1, processes)]
            for p in procs:
                stack.callback(p.kill)
            for p in procs:
                expect_line(p, "SUBMITTED", timeout=120)
            os.kill(victim.pid, signal.SIGKILL)
            victim.wait(timeout=10)
            for p in procs:
                expect_line(p, "DONE", timeout=300)
                assert p.wait(timeout=30) == 0
        orphan = queue.get(mine[0].id)
        assert orphan.status == "done" and f":{victim.pid}:" not in (orphan.lease_owner or "")
        check_invariants(store, members, total, reclaimed=frozenset({orphan.id}))
        store.close()
