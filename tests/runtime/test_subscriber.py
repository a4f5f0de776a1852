"""The subscriber end to end on a real SQLite file: every terminal path (PIPELINE.md §6, §9)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from freezegun import freeze_time
from sqlalchemy import update

from memos_feedback.config import FeedbackConfig
from memos_feedback.errors import InvalidInputError
from memos_feedback.events import FeedbackBus, FeedbackEvent
from memos_feedback.runtime.enqueuer import burst_input as _burst_input
from memos_feedback.runtime.queue import RepairQueue, job_id_for
from memos_feedback.runtime.subscriber import FeedbackSubscriber, attach_feedback_subscriber
from memos_feedback.signals import FailureBurst, context_hash_of
from memos_feedback.store import Store, ToolCall
from memos_feedback.store.models import RepairJobModel
from memos_feedback.synthesis.llm import OpenAIRepairLLM
from memos_feedback.types import RepairInput
from tests.support.chat_server import Behaviour, ChatServer
from tests.support.freezing import threaded_freezegun, wait_for  # noqa: F401  (fixture)

SESSION = "s1"
EPISODE = "ep1"


class Feed:
    """Thread-safe event recorder."""

    def __init__(self, bus: FeedbackBus) -> None:
        self.events: list[FeedbackEvent] = []
        self._lock = threading.Lock()
        bus.on_any(self._add)

    def _add(self, event: FeedbackEvent) -> None:
        with self._lock:
            self.events.append(event)

    def kinds(self) -> list[str]:
        with self._lock:
            return [e.kind for e in self.events]

    def take(self) -> list[FeedbackEvent]:
        with self._lock:
            out, self.events = self.events, []
        return out


@pytest.fixture
def feed(bus: FeedbackBus) -> Feed:
    return Feed(bus)


@pytest.fixture
def make_sub(store: Store, bus: FeedbackBus) -> Iterator[Any]:
    subs: list[FeedbackSubscriber] = []

    def make(config: FeedbackConfig | None = None, **kw: Any) -> FeedbackSubscriber:
        sub = attach_feedback_subscriber(
            store, bus=bus, config=config or FeedbackConfig(use_llm=False), poll_interval=0.02, **kw
        )
        subs.append(sub)
        return sub

    yield make
    for sub in subs:
        sub.close(timeout=10)


def add_history(store: Store, session: str = SESSION, *, good: float = 0.8, bad: float = -0.7) -> None:
    store.traces.add(
        session,
        agent_text="ran pnpm install, 312 packages installed",
        reflection="pnpm install works in this repo",
        value=good,
        episode_id=EPISODE,
        tool_calls=[ToolCall("npm.install")],  # the same tool, when it worked
    )
    store.traces.add(
        session,
        agent_text="npm ERR! ERESOLVE could not resolve dependency tree",
        reflection="npm install fails on peer dependencies",
        value=bad,
        episode_id=EPISODE,
        tool_calls=[ToolCall("npm.install", error_code="ERESOLVE")],
    )


def burst(
    sub: FeedbackSubscriber, tool: str = "npm.install", ctx: str = "web/", session: str = SESSION
) -> None:
    # record_tool_failure only queues the step; sync_signals runs the
    # failure windows now, so the burst is counted before this returns.
    before = sub.signals.stats()["bursts"]
    for step in (1, 2, 3):
        sub.record_tool_failure(tool, ctx, step, "ERESOLVE", session, EPISODE)
    sub.sync_signals()
    assert sub.signals.stats()["bursts"] == before + 1, "three failures in a row make one burst"


def test_burst_persists_a_repair_and_attaches_it(store: Store, feed: Feed, make_sub: Any) -> None:
    policy = store.policies.add("installs", boundary="host text", source_episode_ids=[EPISODE])
    add_history(store)
    sub = make_sub()
    burst(sub)
    assert sub.flush(timeout=10)
    events = feed.take()
    assert [e.kind for e in events] == ["repair.triggered", "repair.persisted", "repair.attached"]
    triggered, persisted, attached = events
    assert triggered.trigger == "failure-burst" and triggered.failure_count == 3  # type: ignore[attr-defined]
    repairs = store.repairs.list()
    assert len(repairs) == 1 and repairs[0].id == persisted.repair_id  # type: ignore[attr-defined]
    assert repairs[0].context_hash == context_hash_of("npm.install", "web/")
    assert attached.policy_ids == (policy.id,)  # type: ignore[attr-defined]
    boundary = store.policies.get(policy.id).boundary
    assert boundary.startswith("host text\n@repair ")
    # Signals are cleared once the repair succeeded.
    assert sub.signals.peek("npm.install", "web/") is None


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("that didn't work, the build is still failing", "negative"),
        ("wrong port, it's 8080 not 8000", "correction"),
        ("looks good, but also handle empty input", "constraint"),
        ("use pnpm instead of npm", "preference"),
        ("不对，用 pnpm 而不是 npm", "preference"),
    ],
)
def test_each_triggering_shape_persists(
    store: Store, feed: Feed, make_sub: Any, text: str, shape: str
) -> None:
    add_history(store)
    sub = make_sub()
    classified, future = sub.submit_user_feedback(text, SESSION, episode_id=EPISODE)
    assert classified.shape.value == shape
    result = future.result(timeout=10)
    assert not result.skipped and result.repair_id is not None
    assert result.trigger == f"user.{shape}"
    assert feed.kinds() == ["feedback.classified", "repair.triggered", "repair.persisted"]
    row = store.repairs.get(result.repair_id)
    assert row.trigger == f"user.{shape}" and row.session_id == SESSION


def test_not_actionable_resolves_at_once_and_writes_nothing(store: Store, feed: Feed, make_sub: Any) -> None:
    sub = make_sub()
    classified, future = sub.submit_user_feedback("thanks!", SESSION)
    assert future.done()
    result = future.result()
    assert result.skipped and result.skipped_reason == "feedback-not-actionable"
    assert classified.shape.value == "positive"
    assert feed.kinds() == ["feedback.classified", "repair.skipped"]
    assert store.repairs.list() == [] and RepairQueue(store).list() == []


def test_no_session_skips(store: Store, feed: Feed, make_sub: Any) -> None:
    sub = make_sub()
    _, future = sub.submit_user_feedback("use uv instead of pip", None)
    result = future.result(timeout=10)
    assert result.skipped_reason == "no-session"
    assert feed.kinds() == ["feedback.classified", "repair.skipped"]
    assert store.repairs.list() == []


def test_value_delta_low_skips_an_unsolicited_repair(store: Store, feed: Feed, make_sub: Any) -> None:
    add_history(store, good=0.1, bad=-0.2)  # gap 0.3 < value_delta 0.5
    sub = make_sub()
    burst(sub)
    assert sub.flush(timeout=10)
    events = feed.take()
    assert [e.kind for e in events] == ["repair.skipped"]
    assert events[0].reason == "value-delta-low"  # type: ignore[attr-defined]
    assert store.repairs.list() == []
    # A failed repair leaves the burst's evidence in place.
    assert sub.signals.peek("npm.install", "web/") is not None


def test_insufficient_evidence_skips(store: Store, feed: Feed, make_sub: Any) -> None:
    sub = make_sub()
    burst(sub, session="empty-session")
    assert sub.flush(timeout=10)
    events = feed.take()
    assert [e.kind for e in events] == ["repair.triggered", "repair.skipped"]
    assert events[1].reason == "insufficient-evidence"  # type: ignore[attr-defined]


@pytest.mark.usefixtures("threaded_freezegun")
def test_cooldown_is_driven_by_the_clock(store: Store, feed: Feed, make_sub: Any) -> None:
    add_history(store)
    with freeze_time("2026-11-30 12:00:00") as frozen:
        sub = make_sub()
        burst(sub)
        assert sub.flush(timeout=10)
        assert [e.kind for e in feed.take()] == ["repair.triggered", "repair.persisted"]

        frozen.tick(59.9)
        burst(sub, ctx="web/")  # window still holds the failures; steps restart
        assert sub.flush(timeout=10)
        events = feed.take()
        assert [e.kind for e in events] == ["repair.skipped"]
        assert events[0].reason == "cooldown"  # type: ignore[attr-defined]

        frozen.tick(0.1)  # exactly 60 s after the first repair
        sub.record_tool_failure("npm.install", "web/", 4, "ERESOLVE", SESSION, EPISODE)
        assert sub.flush(timeout=10)
        assert [e.kind for e in feed.take()] == ["repair.triggered", "repair.persisted"]
    assert len(store.repairs.list()) == 2


@pytest.mark.usefixtures("threaded_freezegun")
def test_twenty_bursts_from_four_threads_write_one_repair(store: Store, make_sub: Any) -> None:
    add_history(store)
    # A wide window: every failure after the third fires a burst, whatever
    # order the four threads' steps arrive in.
    sub = make_sub(FeedbackConfig(use_llm=False, failure_window=100))
    bursts: list[FailureBurst] = []
    barrier = threading.Barrier(4)

    def fire(offset: int) -> None:
        barrier.wait()
        for i in range(6):
            step = 1 + offset + 4 * i  # the four threads interleave steps 1..24
            b = sub.record_tool_failure_now("npm.install", "web/", step, "E", SESSION, EPISODE)
            if b is not None:
                bursts.append(b)

    with freeze_time("2026-11-30 12:00:00"):
        # Hold the database's write lock while the bursts fire, so all of them
        # are queued before the first repair can run (and clear the signals).
        with store.session(write=True):
            threads = [threading.Thread(target=fire, args=(k,)) for k in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        assert sub.flush(timeout=30)
    assert len(bursts) == 24 - 2
    assert len({b.last_seen for b in bursts}) == 1, "all fired in the same millisecond"
    assert len(store.repairs.list()) == 1
    jobs = RepairQueue(store).list()
    # Bursts of one context are coalesced (in memory, then against the
    # pending job): 22 bursts, one or two jobs. A second job appears only
    # when a burst is stored while the first job runs (not pending); it
    # then finds the repair in cooldown. Never more.
    assert len({job_id_for(_burst_input(b)) for b in bursts}) == 22
    assert 1 <= len(jobs) <= 2
    assert sorted(j.outcome or "" for j in jobs).count("persisted") == 1


def test_a_job_that_raises_does_not_stop_the_next_hundred(store: Store, feed: Feed, make_sub: Any) -> None:
    add_history(store)
    queue = RepairQueue(store)
    bad = queue.enqueue(RepairInput(trigger="manual", context_hash="broken", session_id=SESSION))
    # A corrupt payload (a bug or a bad migration) makes the job raise.
    with store.session(write=True) as s:
        s.execute(update(RepairJobModel).where(RepairJobModel.id == bad.job_id).values(payload={"bogus": 1}))
    sub = make_sub(FeedbackConfig(use_llm=False, cooldown_ms=0))
    futures = [
        sub.run_once(RepairInput(trigger="manual", context_hash=f"ctx{i}", session_id=SESSION))
        for i in range(100)
    ]
    results = [f.result(timeout=60) for f in futures]
    assert all(r.repair_id is not None for r in results)
    assert queue.get(bad.job_id).status == "dead"
    assert "repair.job.failed" in feed.kinds() and "repair.job.dead" in feed.kinds()
    assert sub.metrics()["dead"] == 1
    assert len(store.repairs.list(limit=1000)) == 100


def test_a_claimed_batch_commits_each_outcome_with_its_own_job(
    store: Store, feed: Feed, make_sub: Any
) -> None:
    # Queued before the subscriber starts, so one claim takes them all and
    # (on SQLite) one group transaction runs them: a repair, a skip (no
    # session), a job that raises (corrupt payload) and another repair.
    add_history(store)
    queue = RepairQueue(store)
    inputs = [
        RepairInput(trigger="manual", context_hash="g-ok-1", session_id=SESSION),
        RepairInput(trigger="manual", context_hash="g-skip"),
        RepairInput(trigger="manual", context_hash="g-bad", session_id=SESSION),
        RepairInput(trigger="manual", context_hash="g-ok-2", session_id=SESSION),
    ]
    ids = [r.job_id for r in queue.enqueue_many(inputs)]
    with store.session(write=True) as s:
        s.execute(update(RepairJobModel).where(RepairJobModel.id == ids[2]).values(payload={"bogus": 1}))
    sub = make_sub(FeedbackConfig(use_llm=False, cooldown_ms=0, max_attempts=1))
    assert sub.drain(timeout=30)
    jobs = {j.id: j for j in queue.list()}
    assert [jobs[i].status for i in ids] == ["done", "done", "dead", "done"]
    assert jobs[ids[1]].outcome == "skipped:no-session"
    repairs = {r.context_hash: r.id for r in store.repairs.list()}
    assert sorted(repairs) == ["g-ok-1", "g-ok-2"]
    assert [jobs[i].repair_id for i in (ids[0], ids[3])] == [repairs["g-ok-1"], repairs["g-ok-2"]]
    if store.dialect == "sqlite":
        # Indexed for recall's search by one statement for the group, each once, as the
        # insert trigger would have (the same document); nothing left pending.
        with store.engine.connect() as conn:
            indexed = conn.exec_driver_sql(
                "SELECT f.repair_id FROM decision_repairs_fts f JOIN decision_repairs r ON r.id = f.repair_id"
                " AND f.doc = coalesce(r.source_text, r.preference || ' ' || r.anti_pattern)"
            ).scalars()
            assert sorted(indexed) == sorted(repairs.values())
            pending = conn.exec_driver_sql("SELECT count(*) FROM decision_repairs_fts_pending").scalar()
            assert pending == 0
    # The events follow their commits on the worker's thread.
    wait_for(lambda: feed.kinds().count("repair.job.dead") == 1)
    wait_for(lambda: feed.kinds().count("repair.persisted") == 2)
    assert feed.kinds().count("repair.skipped") == 1


def test_a_job_rolled_back_to_its_savepoint_leaves_nothing_to_index(store: Store) -> None:
    """A repair deferred to the group's index statement, then undone, is neither stored nor indexed."""
    if store.dialect != "sqlite":
        pytest.skip("group commit (savepoints, the deferred index) is SQLite's")
    from memos_feedback.repair.deps import RepairDeps
    from memos_feedback.repair.run import stage_repair
    from memos_feedback.store.search_index import index_deferred
    from memos_feedback.store.unit import RepairUnit
    from memos_feedback.store.unit import savepoint as _savepoint

    add_history(store)
    cfg = FeedbackConfig(use_llm=False, cooldown_ms=0)

    def refuse(conn: Any, repair_id: str) -> None:
        raise RuntimeError("the job's bookkeeping failed after the repair row")

    kept = RepairInput(trigger="manual", context_hash="sp-kept", session_id=SESSION)
    undone = RepairInput(trigger="manual", context_hash="sp-undone", session_id=SESSION)
    with store.connection(write=True) as conn:
        with _savepoint(conn):
            unit = RepairUnit(conn, defer_index=True)
            staged = stage_repair(unit, kept, RepairDeps(store=store, config=cfg))
        failing = RepairDeps(store=store, config=cfg, finalize=refuse)
        with pytest.raises(RuntimeError), _savepoint(conn):
            stage_repair(RepairUnit(conn, defer_index=True), undone, failing)
        assert index_deferred(conn) == 1
    written = staged.finish().repair_id
    assert [r.context_hash for r in store.repairs.list()] == ["sp-kept"]
    with store.engine.connect() as conn:
        assert list(conn.exec_driver_sql("SELECT repair_id FROM decision_repairs_fts").scalars()) == [written]
        assert conn.exec_driver_sql("SELECT count(*) FROM decision_repairs_fts_pending").scalar() == 0


def test_run_once_and_bad_hot_path_input(store: Store, make_sub: Any) -> None:
    add_history(store)
    sub = make_sub()
    sub.record_tool_failure(None, "x", 1)  # type: ignore[arg-type]
    sub.record_tool_success("t", "x", "one")  # type: ignore[arg-type]
    assert sub.record_tool_failure_now(None, "x", 1) is None  # type: ignore[arg-type]
    sub.sync_signals()  # the bad steps are counted and skipped, not raised
    assert sub.metrics()["ignored_calls"] == 3
    result = sub.run_once(RepairInput(trigger="manual", context_hash="abc", session_id=SESSION)).result(10)
    assert result.repair_id is not None


def test_closed_subscriber_refuses_work(store: Store, make_sub: Any) -> None:
    from memos_feedback.errors import SubscriberClosedError

    sub = make_sub()
    sub.close()
    with pytest.raises(SubscriberClosedError):
        sub.submit_user_feedback("use uv", SESSION)


def test_llm_path_through_the_subscriber(store: Store, feed: Feed, make_sub: Any) -> None:
    add_history(store)
    reply = (
        '{"preference": "Use pnpm for installs", "anti_pattern": "Running npm here", '
        '"severity": "warn", "confidence": 0.9}'
    )
    with ChatServer(reply=reply) as server:
        llm = OpenAIRepairLLM("m", base_url=server.base_url, api_key="k", timeout=3.0)
        # Retries off (max_attempts=1): a failing model falls back to the template at once.
        sub = make_sub(FeedbackConfig(use_llm=True, cooldown_ms=0, max_attempts=1), llm=llm)
        _, ok = sub.submit_user_feedback("use pnpm instead of npm", SESSION)
        drafted = ok.result(timeout=10).draft
        assert drafted is not None and drafted.preference == "Use pnpm for installs"
        assert drafted.confidence == 0.9

        server.script(Behaviour.hang())  # never answers: the client times out
        _, slow = sub.submit_user_feedback("use uv instead of pip", SESSION)
        fallback = slow.result(timeout=10).draft
        assert fallback is not None and fallback.preference.startswith("Prefer: use uv")
        assert "repair.job.failed" not in feed.kinds()


def test_a_burst_reaches_the_table_without_any_further_call(store: Store, make_sub: Any) -> None:
    """The hot path only buffers; the enqueuer stores the burst on its own."""
    cfg = FeedbackConfig(use_llm=False)
    sub = make_sub(cfg)
    queue = RepairQueue(store)
    burst(sub)
    wait_for(lambda: queue.stats()["depth"] == 1 or queue.stats()["done"] == 1, seconds=5)
    assert len(queue.list()) == 1


def test_the_agents_turn_is_the_classifiers_context(store: Store, feed: Feed, make_sub: Any) -> None:
    add_history(store)
    sub = make_sub()
    # "use pnpm" alone names nothing to avoid; the agent's turn says what it replaces.
    bare, _ = sub.submit_user_feedback("use pnpm", SESSION)
    classified, future = sub.submit_user_feedback(
        "use pnpm", SESSION, episode_id=EPISODE, agent_text="Ran npm install in web/."
    )
    assert bare.avoid is None
    assert classified.shape.value == "preference" and classified.avoid == "npm"
    future.result(timeout=10)
    with pytest.raises(InvalidInputError, match="agent_text must be a str"):
        sub.submit_user_feedback("use pnpm", SESSION, agent_text=b"npm")  # type: ignore[arg-type]
