"""Reads that must not grow with the tables (migration 0006), on both backends.

Job counters against a direct count, retention pruning of done jobs, the
``policy_episodes`` side table against the policies it mirrors, and both
kept right across a migration of existing data. Speed itself is measured
in ``benchmarks/growth.py``; these tests check the answers.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from sqlalchemy import func, select, text

from memos_feedback.config import FeedbackConfig
from memos_feedback.errors import ConfigError, InvalidInputError
from memos_feedback.repair.attach import attach_repair_to_policies
from memos_feedback.runtime.queue import JOB_STATUSES, RepairQueue
from memos_feedback.store import PolicyRow, Store, migrate, open_store
from memos_feedback.store.models import RepairJobModel
from memos_feedback.types import DecisionRepairDraft, RepairInput, now_ms
from tests.cli.test_cli import cli

OWNER = "host:1:test"


def direct_counts(store: Store) -> dict[str, int]:
    """Jobs per status counted from the job table itself."""
    with store.session() as s:
        rows = s.execute(select(RepairJobModel.status, func.count()).group_by(RepairJobModel.status))
        counted = {status: int(n) for status, n in rows}
    return {status: counted.get(status, 0) for status in JOB_STATUSES}


def stats_counts(queue: RepairQueue) -> dict[str, int]:
    stats = queue.stats()
    return {status: int(stats[status] or 0) for status in JOB_STATUSES}


def manual(i: int) -> RepairInput:
    return RepairInput(trigger="manual", context_hash=f"ctx{i:04d}", session_id="s")


def pairs(store: Store) -> set[tuple[str, str]]:
    """(episode, policy) rows of the side table."""
    with store.connection() as conn:
        return {(e, p) for e, p in conn.execute(text("SELECT episode_id, policy_id FROM policy_episodes"))}


def expected_pairs(store: Store) -> set[tuple[str, str]]:
    """(episode, policy) pairs as the policies themselves list them."""
    return {(e, p.id) for p in store.policies.list() for e in p.source_episode_ids}


# -- job counters ---------------------------------------------------------------


def test_counters_follow_every_transition(store: Store) -> None:
    queue = RepairQueue(store, FeedbackConfig(cooldown_ms=0))
    rng = random.Random(15)
    assert stats_counts(queue) == direct_counts(store) == dict.fromkeys(JOB_STATUSES, 0)
    queue.enqueue_many([manual(i) for i in range(40)])
    for step in range(60):
        op = rng.choice(["claim", "claim", "done", "retry", "bury", "purge", "enqueue"])
        if op == "claim" or op in ("done", "retry", "bury"):
            job = queue.claim(OWNER)
            if job is not None and op == "done":
                queue.complete(job, OWNER, "skipped:test")
            elif job is not None and op == "retry":
                queue.schedule_retry(job, OWNER, "transient", now_ms())
            elif job is not None and op == "bury":
                queue.bury(job, OWNER, "permanent")
        elif op == "purge":
            jobs = queue.list(limit=100)
            if jobs:
                queue.purge(rng.choice(jobs).id)
        else:
            queue.enqueue(manual(100 + step))
        assert stats_counts(queue) == direct_counts(store), f"after step {step} ({op})"
    # Lease recovery, a dead job retried, and the same situation again after
    # its job finished (the old row is archived under a new id).
    assert queue.recover(now=now_ms() + 10 * queue.config.lease_ms) >= 0
    dead = queue.list(status="dead", limit=1)
    if dead:
        queue.retry(dead[0].id)
    done = queue.list(status="done", limit=1)
    if done:
        queue.enqueue(manual(int(done[0].context_hash.removeprefix("ctx"))))
    assert stats_counts(queue) == direct_counts(store)


def test_stats_depth_and_oldest_pending(store: Store) -> None:
    queue = RepairQueue(store)
    queue.enqueue_many([manual(i) for i in range(3)])
    job = queue.claim(OWNER)
    assert job is not None
    stats = queue.stats(now=now_ms() + 1_000)
    assert stats["pending"] == 2 and stats["running"] == 1 and stats["depth"] == 3
    assert stats["oldest_pending_age_ms"] is not None and stats["oldest_pending_age_ms"] >= 1_000


# -- retention ----------------------------------------------------------------------


def finish_all(queue: RepairQueue, n: int) -> None:
    for _ in range(n):
        job = queue.claim(OWNER)
        assert job is not None
        queue.complete(job, OWNER, "skipped:test")


def backdate_done(store: Store, ms: int) -> None:
    with store.connection(write=True) as conn:
        conn.execute(text("UPDATE repair_jobs SET updated_at = :t WHERE status = 'done'"), {"t": ms})


def test_prune_done_deletes_only_old_done_jobs_in_batches(store: Store) -> None:
    queue = RepairQueue(store)
    queue.enqueue_many([manual(i) for i in range(7)])
    finish_all(queue, 5)
    backdate_done(store, 1_000)
    finish_all(queue, 1)  # finished now: inside retention
    # one pending job stays pending
    assert queue.prune_done(2_000, batch=2, max_batches=1) == 2
    assert queue.prune_done(2_000, batch=2) == 3
    assert queue.prune_done(2_000, batch=2) == 0
    counts = direct_counts(store)
    assert counts == {"pending": 1, "running": 0, "done": 1, "dead": 0}
    assert stats_counts(queue) == counts


def test_prune_done_keeps_dead_jobs(store: Store) -> None:
    queue = RepairQueue(store)
    queue.enqueue(manual(1))
    job = queue.claim(OWNER)
    assert job is not None
    queue.bury(job, OWNER, "permanent")
    assert queue.prune_done(now_ms() + 10**9) == 0
    assert queue.get(job.id).status == "dead"


def test_prune_done_refuses_bad_arguments(store: Store) -> None:
    queue = RepairQueue(store)
    with pytest.raises(InvalidInputError):
        queue.prune_done("yesterday")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        queue.prune_done(1, batch=0)


def test_subscriber_housekeeping_prunes_old_done_jobs(store: Store) -> None:
    from memos_feedback.runtime.subscriber import attach_feedback_subscriber

    queue = RepairQueue(store)
    queue.enqueue_many([manual(i) for i in range(3)])
    finish_all(queue, 3)
    backdate_done(store, 1_000)
    config = FeedbackConfig(done_retention_ms=60_000, lease_ms=400)
    with attach_feedback_subscriber(store, config=config, poll_interval=0.01) as sub:
        assert sub.flush(timeout=10)
        deadline = now_ms() + 10_000
        while direct_counts(store)["done"] and now_ms() < deadline:
            sub._closing.wait(0.05)
    assert direct_counts(store)["done"] == 0


def test_retention_zero_keeps_done_jobs(store: Store) -> None:
    from memos_feedback.runtime.subscriber import attach_feedback_subscriber

    queue = RepairQueue(store)
    queue.enqueue(manual(1))
    finish_all(queue, 1)
    backdate_done(store, 1_000)
    with attach_feedback_subscriber(store, config=FeedbackConfig(done_retention_ms=0, lease_ms=400)) as sub:
        assert sub._prune_done() is False
    assert direct_counts(store)["done"] == 1


def test_done_retention_config_key() -> None:
    assert FeedbackConfig().done_retention_ms == 7 * 24 * 3_600_000
    assert FeedbackConfig.from_env({"MEMOS_FEEDBACK_DONE_RETENTION_MS": "0"}).done_retention_ms == 0
    with pytest.raises(ConfigError):
        FeedbackConfig(done_retention_ms=-1)


def test_cli_purge_done_before(db_url: str) -> None:
    with open_store(db_url) as store:
        queue = RepairQueue(store)
        queue.enqueue_many([manual(i) for i in range(3)])
        finish_all(queue, 2)
        backdate_done(store, 1_000)
    out = cli("queue", "purge", "--done-before", "1970-01-01T00:00:02", "--db", db_url)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2 done job(s) purged"
    out = cli("queue", "purge", "--done-before", "2000", "--db", db_url)
    assert out.stdout.strip() == "0 done job(s) purged"
    with open_store(db_url) as store:
        assert direct_counts(store) == {"pending": 1, "running": 0, "done": 0, "dead": 0}
    assert cli("queue", "purge", "--db", db_url).returncode == 2
    assert cli("queue", "purge", "job_x", "--done-before", "5", "--db", db_url).returncode == 2
    assert cli("queue", "purge", "--done-before", "soon", "--db", db_url).returncode == 2


# -- policy_episodes ------------------------------------------------------------------


def draft_for(*policy_ids: str, line: str = "uv") -> DecisionRepairDraft:
    return DecisionRepairDraft(
        context_hash="c",
        preference=f"Prefer: {line}",
        anti_pattern=f"Avoid: not {line}",
        severity="info",
        confidence=0.5,
        high_value_trace_ids=(),
        low_value_trace_ids=(),
        attach_to_policy_ids=policy_ids,
    )


def test_side_table_mirrors_policies_through_every_write(store: Store) -> None:
    a = store.policies.add("a", source_episode_ids=["e1", "e2", "e2"])
    b = store.policies.add("b", source_episode_ids=["e2"])
    store.policies.add("c")
    assert pairs(store) == expected_pairs(store) == {("e1", a.id), ("e2", a.id), ("e2", b.id)}
    # Attach and detach rewrite boundaries only: the pairs stay.
    attach_repair_to_policies(draft_for(a.id, b.id), store)
    repair = store.repairs.insert(
        context_hash="c", trigger="manual", preference="Prefer: uv", anti_pattern="Avoid: not uv"
    )
    store.repairs.reject(repair.id)
    assert pairs(store) == expected_pairs(store)
    store.policies.upsert(PolicyRow(a.id, "a", "", "active", ("e3",), 0))
    store.policies.upsert(PolicyRow("po_new", "n", "", "active", ("e1", "e3"), 0))
    assert pairs(store) == expected_pairs(store)
    with store.connection(write=True) as conn:
        conn.execute(text("DELETE FROM policies WHERE id = :id"), {"id": b.id})
    assert pairs(store) == expected_pairs(store)
    assert [p.id for p in store.policies.with_source_episodes(["e3"])] == sorted([a.id, "po_new"])
    assert store.policies.with_source_episodes(["e2"]) == []


def test_lookup_filters_status_and_dedupes(store: Store) -> None:
    a = store.policies.add("a", source_episode_ids=["e1", "e2"])
    store.policies.add("b", source_episode_ids=["e1"], status="retired")
    assert [p.id for p in store.policies.with_source_episodes(["e1", "e2", "e1"])] == [a.id]
    assert len(store.policies.with_source_episodes(["e1"], status=None)) == 2


# -- migration of existing data ----------------------------------------------------------


@pytest.fixture
def at_0005(db_url: str) -> Iterator[Store]:
    with open_store(db_url, migrate_to_head=False) as s:
        migrate.upgrade(s.engine, "0005")
        yield s


def test_0006_fills_counters_and_pairs_from_existing_rows(at_0005: Store) -> None:
    s = at_0005
    with s.engine.begin() as conn:
        for i, status in enumerate(["pending", "pending", "done", "dead", "running"]):
            conn.execute(
                text(
                    "INSERT INTO repair_jobs (id, context_hash, trigger, payload, status, attempts, "
                    "next_attempt_at, created_at, updated_at) "
                    "VALUES (:id, 'c', 'manual', '{}', :status, 0, 0, :t, :t)"
                ),
                {"id": f"job_{i}", "status": status, "t": 1_000 + i},
            )
        conn.execute(
            text(
                "INSERT INTO policies (id, title, boundary, status, source_episode_ids, updated_at) "
                "VALUES ('p1', 't', '', 'active', '[\"e1\", \"e2\"]', 0), "
                "('p2', 't', '', 'active', '[\"e2\"]', 0), ('p3', 't', '', 'active', '[]', 0)"
            )
        )
    migrate.upgrade(s.engine)
    queue = RepairQueue(s)
    assert stats_counts(queue) == direct_counts(s) == {"pending": 2, "running": 1, "done": 1, "dead": 1}
    assert pairs(s) == {("e1", "p1"), ("e2", "p1"), ("e2", "p2")}
    assert [p.id for p in s.policies.with_source_episodes(["e2"])] == ["p1", "p2"]
    # and the triggers keep them from here on
    queue.enqueue(manual(9))
    assert stats_counts(queue) == direct_counts(s)
    migrate.downgrade(s.engine, "0005")
    names = set(s.engine.dialect.get_table_names(s.engine.connect()))
    assert "repair_job_counts" not in names and "policy_episodes" not in names
    migrate.upgrade(s.engine)
    assert stats_counts(queue) == direct_counts(s)
    assert pairs(s) == expected_pairs(s)


# -- the WAL ----------------------------------------------------------------------------


def test_checkpointer_starts_a_long_wal_over(sqlite_url: str) -> None:
    from pathlib import Path

    from memos_feedback.store.checkpoint import RESTART_FRAMES, WalCheckpointer

    with open_store(sqlite_url) as store:
        path = Path(sqlite_url.removeprefix("sqlite:///"))
        wal = Path(f"{path}-wal")
        # Well past RESTART_FRAMES pages of WAL (4 KB pages).
        for i in range(24):
            store.traces.add("s", agent_text="x" * 1_000_000 + str(i))
        assert wal.stat().st_size > RESTART_FRAMES * 4096
        checkpointer = WalCheckpointer(str(path), interval=3600)
        try:
            checkpointer.checkpoint()
        finally:
            checkpointer.close()
        assert wal.stat().st_size < RESTART_FRAMES * 4096
        # and nothing was lost
        assert len(store.traces.list("s", limit=100)) == 24
