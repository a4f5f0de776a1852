"""Outcome writes under SIGKILL, with real processes: nothing settled is lost, nothing settled twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from memos_feedback.outcomes.ledger import open_servings
from memos_feedback.signals import context_hash_of
from memos_feedback.store import Store, open_store
from memos_feedback.store.models import RepairOutcomeModel
from tests.support.outcome_child import CTX, SESSION, TOOL
from tests.support.procs import expect_line

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def child(mode: str, db_url: str, failpoints: str = "") -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MEMOS_FEEDBACK_FAILPOINTS=failpoints)
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.outcome_child", mode, db_url],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def outcome_kinds(store: Store) -> list[str]:
    with store.session() as s:
        return list(s.scalars(select(RepairOutcomeModel.kind)))


def serve_then_die(db_url: str, failpoint: str) -> None:
    proc = child("serve", db_url, failpoints=failpoint)
    expect_line(proc, "SERVED")
    assert proc.stdin is not None
    proc.stdin.write("settle\n")
    proc.stdin.flush()
    assert proc.wait(timeout=60) == -signal.SIGKILL


def resume(db_url: str) -> None:
    proc = child("resume", db_url)
    expect_line(proc, "DONE")
    assert proc.wait(timeout=60) == 0


@pytest.fixture
def crash_store(db_url: str) -> Store:
    store = open_store(db_url)
    store.repairs.insert(
        context_hash=context_hash_of(TOOL, CTX),
        trigger="manual",
        preference="Prefer: kubectl rollout",
        anti_pattern="Avoid: kubectl replace",
        tool_id=TOOL,
        context=CTX,
    )
    return store


def test_killed_before_the_commit_the_next_start_settles_once(crash_store: Store, db_url: str) -> None:
    serve_then_die(db_url, "outcomes.before_commit")
    assert outcome_kinds(crash_store) == [], "the uncommitted settlement was rolled back"
    assert [v.session_id for v in open_servings(crash_store, 0)] == [SESSION], "the serving stays open"
    resume(db_url)  # the restarted agent's next success settles it
    resume(db_url)  # and a later one does not settle it again
    assert outcome_kinds(crash_store) == ["held"]
    assert open_servings(crash_store, 0) == []
    crash_store.close()


def test_killed_after_the_commit_nothing_is_settled_twice(crash_store: Store, db_url: str) -> None:
    serve_then_die(db_url, "outcomes.after_commit")
    assert outcome_kinds(crash_store) == ["held"], "committed before the kill: kept"
    resume(db_url)
    assert outcome_kinds(crash_store) == ["held"]
    crash_store.close()
