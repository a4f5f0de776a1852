"""Claiming several jobs per transaction (``claim_many``) and giving unstarted ones back."""

from __future__ import annotations

import pytest

from memos_feedback.config import FeedbackConfig
from memos_feedback.errors import ConfigError, InvalidInputError
from memos_feedback.runtime.queue import RepairQueue
from memos_feedback.store import Store
from memos_feedback.types import RepairInput, now_ms

OWNER = "host:1:batch"


def job(context: str, user_text: str = "") -> RepairInput:
    return RepairInput(trigger="manual", context_hash=context, session_id="s", user_text=user_text or None)


def test_claim_many_takes_one_job_per_context_in_queue_order(store: Store) -> None:
    queue = RepairQueue(store)
    queue.enqueue_many([job("a", "1"), job("b"), job("a", "2"), job("c"), job("d")])
    taken = queue.claim_many(OWNER, 8)
    # The second job of context "a" waits for the first one.
    assert [j.context_hash for j in taken] == ["a", "b", "c", "d"]
    assert all(j.status == "running" and j.attempts == 1 and j.lease_owner == OWNER for j in taken)
    assert queue.claim_many(OWNER, 8) == []
    queue.complete(taken[0], OWNER, "skipped:test")
    again = queue.claim_many(OWNER, 8)
    assert [j.context_hash for j in again] == ["a"]


def test_one_claim_skips_what_the_one_job_claim_skips(store: Store) -> None:
    # The batch is one statement on SQLite: it must pass over a context with a
    # running job and one whose older job waits out a backoff, as claiming
    # one job at a time does, and hand the rest back in queue order.
    queue = RepairQueue(store)
    queue.enqueue_many([job("a", "1"), job("b", "1"), job("a", "2"), job("c"), job("b", "2"), job("d")])
    (a1,) = queue.claim_many(OWNER, 1)
    queue.schedule_retry(a1, OWNER, "boom", now_ms() + 3_600_000)  # a's first job: pending, not due
    (b1,) = queue.claim_many(OWNER, 1)  # b: running
    assert (a1.context_hash, b1.context_hash) == ("a", "b")
    first = queue.claim_many(OWNER, 1)
    rest = queue.claim_many(OWNER, 8)
    assert [j.context_hash for j in first + rest] == ["c", "d"]
    assert [j.seq for j in rest] == sorted(j.seq for j in rest)
    assert queue.claim_many(OWNER, 8) == []


def test_claim_many_returns_queue_order(store: Store) -> None:
    queue = RepairQueue(store)
    queue.enqueue_many([job(f"c{i}") for i in range(20)])
    taken = queue.claim_many(OWNER, 16)
    assert [j.context_hash for j in taken] == [f"c{i}" for i in range(16)]
    assert all(j.status == "running" and j.attempts == 1 for j in taken)


def test_claim_many_respects_its_limit(store: Store) -> None:
    queue = RepairQueue(store)
    queue.enqueue_many([job(f"c{i}") for i in range(5)])
    assert len(queue.claim_many(OWNER, 2)) == 2
    assert len(queue.claim_many(OWNER, 64)) == 3
    for bad in (0, 65, True, "2"):
        with pytest.raises(InvalidInputError):
            queue.claim_many(OWNER, bad)  # type: ignore[arg-type]


def test_release_returns_unstarted_jobs_without_counting_the_attempt(store: Store) -> None:
    queue = RepairQueue(store)
    queue.enqueue_many([job(f"c{i}") for i in range(3)])
    taken = queue.claim_many(OWNER, 3)
    # Another owner's release changes nothing.
    assert queue.release(taken, "host:2:other") == 0
    assert queue.release(taken[1:], OWNER) == 2
    rows = queue.get_many(j.id for j in taken)
    assert rows[taken[0].id].status == "running"
    for j in taken[1:]:
        row = rows[j.id]
        assert (row.status, row.attempts, row.lease_owner, row.lease_until) == ("pending", 0, None, None)
    stats = queue.stats()
    assert (stats["pending"], stats["running"]) == (2, 1)
    assert queue.release([], OWNER) == 0


def test_claim_batch_config_key() -> None:
    assert FeedbackConfig().claim_batch == 8
    assert FeedbackConfig.from_env({"MEMOS_FEEDBACK_CLAIM_BATCH": "1"}).claim_batch == 1
    for bad in (0, 65):
        with pytest.raises(ConfigError):
            FeedbackConfig(claim_batch=bad)


def test_subscriber_drains_with_batched_claims(store: Store) -> None:
    from memos_feedback.runtime.subscriber import attach_feedback_subscriber

    store.traces.add("s", agent_text="uv pip install worked", value=0.9)
    store.traces.add("s", agent_text="pip failed: resolution impossible", value=-0.9)
    config = FeedbackConfig(use_llm=False, cooldown_ms=0, claim_batch=4)
    with attach_feedback_subscriber(store, config=config, poll_interval=0.01) as sub:
        futures = [sub.run_once(job(f"ctx{i}")) for i in range(10)]
        results = [f.result(timeout=60) for f in futures]
    assert all(r.repair_id is not None for r in results)
    jobs = RepairQueue(store).list(limit=100)
    assert {(j.status, j.attempts) for j in jobs} == {("done", 1)}
    assert len(store.repairs.list(limit=100)) == 10
