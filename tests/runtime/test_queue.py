"""The durable repair queue: dedupe, retries with jitter, dead letters, stale jobs, restarts."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from freezegun import freeze_time

from memos_feedback.config import FeedbackConfig
from memos_feedback.errors import InvalidInputError, NotFoundError, RepairJobDeadError
from memos_feedback.events import FeedbackBus, FeedbackEvent
from memos_feedback.limits import USER_TEXT_CHAR_CAP
from memos_feedback.runtime.queue import (
    RepairQueue,
    backoff_ms,
    clean_input,
    input_from_payload,
    job_id_for,
    payload_of,
)
from memos_feedback.runtime.subscriber import FeedbackSubscriber, attach_feedback_subscriber
from memos_feedback.store import Store
from memos_feedback.synthesis.llm import OpenAIRepairLLM
from memos_feedback.types import ClassifiedFeedback, FailureRecord, RepairInput, Shape, now_ms
from tests.support.chat_server import Behaviour, ChatServer
from tests.support.freezing import threaded_freezegun, wait_for  # noqa: F401  (fixture)

SESSION = "s1"


def manual(ctx: str, **kw: Any) -> RepairInput:
    return RepairInput(trigger="manual", context_hash=ctx, session_id=SESSION, **kw)


@pytest.fixture
def seeded(store: Store) -> Store:
    store.traces.add(SESSION, agent_text="uv pip install worked", value=0.9)
    store.traces.add(SESSION, agent_text="pip failed: resolution impossible", value=-0.9)
    return store


@pytest.fixture
def events(bus: FeedbackBus) -> list[FeedbackEvent]:
    got: list[FeedbackEvent] = []
    lock = threading.Lock()

    def add(e: FeedbackEvent) -> None:
        with lock:
            got.append(e)

    bus.on_any(add)
    return got


@pytest.fixture
def subs() -> Iterator[list[FeedbackSubscriber]]:
    made: list[FeedbackSubscriber] = []
    yield made
    for sub in made:
        sub.close(timeout=10)


# -- ids, payloads, dedupe --------------------------------------------------------


def test_job_ids_are_content_addresses() -> None:
    a = RepairInput(
        trigger="user.preference", context_hash="h", user_text="Use  UV instead of pip", session_id="s"
    )
    b = RepairInput(
        trigger="user.preference", context_hash="h", user_text="use uv instead of pip ", session_id="s"
    )
    c = RepairInput(trigger="user.preference", context_hash="h", user_text="use poetry", session_id="s")
    assert job_id_for(a) == job_id_for(b) != job_id_for(c)
    f1 = (
        FailureRecord("t", "c", 1, ts=1),
        FailureRecord("t", "c", 2, ts=2),
        FailureRecord("t", "c", 3, ts=3),
    )
    f2 = (*f1[1:], FailureRecord("t", "c", 4, ts=4))
    burst1 = RepairInput(trigger="failure-burst", context_hash="h", failures=f1)
    burst2 = RepairInput(trigger="failure-burst", context_hash="h", failures=f2)
    assert job_id_for(burst1) != job_id_for(burst2), "a later window is a new situation"


def test_payload_round_trip_keeps_both_ends_of_a_megabyte_of_text(store: Store) -> None:
    text = "不对，" + "x" * 1_000_000 + " — use pnpm"
    inp = RepairInput(
        trigger="user.preference",
        context_hash="h",
        user_text=text,
        session_id="s",
        failures=(FailureRecord("t", "c", 1, "boom", 5, "s", "e", "tr"),),
    )
    queue = RepairQueue(store)
    job = queue.get(queue.enqueue(inp).job_id)
    stored = input_from_payload(job.payload)
    assert stored == clean_input(inp)
    assert stored.user_text is not None and len(stored.user_text) == USER_TEXT_CHAR_CAP
    assert stored.user_text.startswith("不对，xxx") and stored.user_text.endswith(" — use pnpm")
    assert input_from_payload(payload_of(inp)).user_text == text


def test_the_classification_travels_with_the_job(store: Store) -> None:
    said = ClassifiedFeedback(Shape.PREFERENCE, 0.9, prefer="pnpm", avoid="npm", text="不对，用 pnpm")
    inp = RepairInput(trigger="user.preference", context_hash="h", user_text=said.text, classified=said)
    queue = RepairQueue(store)
    job = queue.get(queue.enqueue(inp).job_id)
    assert job.payload["classified"] == {
        "shape": "preference", "confidence": 0.9, "prefer": "pnpm", "avoid": "npm",
        "correction": None, "constraint": None,
    }  # fmt: skip
    assert input_from_payload(job.payload).classified == said


def test_a_message_is_classified_once_and_announced_once(
    seeded: Store, bus: FeedbackBus, events: list[FeedbackEvent], subs: list[FeedbackSubscriber]
) -> None:
    sub = attach_feedback_subscriber(
        seeded, bus=bus, config=FeedbackConfig(use_llm=False), poll_interval=0.01
    )
    subs.append(sub)
    said, future = sub.submit_user_feedback("use uv instead of pip", SESSION)
    job = sub.queue.list()[0]
    # The subscriber's answer is in the job: the worker does not classify again.
    assert input_from_payload(job.payload).classified == said
    assert future.result(timeout=10).repair_id is not None
    classified = [e for e in events if e.kind == "feedback.classified"]
    assert [(e.shape, e.confidence) for e in classified] == [(said.shape.value, said.confidence)]


def test_a_classification_of_a_text_storing_changed_is_not_carried() -> None:
    text = "use pnpm " + "x" * USER_TEXT_CHAR_CAP  # over the cap: stored cut
    said = ClassifiedFeedback(Shape.PREFERENCE, 0.9, prefer="pnpm", text=text)
    inp = RepairInput(trigger="user.preference", context_hash="h", user_text=text, classified=said)
    cleaned = clean_input(inp)
    assert cleaned.user_text != text and cleaned.classified is None  # re-read from the stored text


@pytest.mark.parametrize(
    "bad",
    [{"shape": "nonsense", "confidence": 1.0}, {"shape": "positive", "confidence": "high"}, ["positive"],
     {"shape": "preference", "confidence": 1.0, "prefer": 3}],
)  # fmt: skip
def test_a_malformed_carried_classification_is_refused(bad: object) -> None:
    payload = payload_of(RepairInput(trigger="manual", context_hash="h", user_text="x"))
    with pytest.raises(InvalidInputError, match="payload does not describe a repair"):
        input_from_payload({**payload, "classified": bad})


def test_pending_duplicate_is_a_no_op_returning_the_same_job(store: Store) -> None:
    queue = RepairQueue(store)
    first = queue.enqueue(manual("h"))
    again = queue.enqueue(manual("h"))
    assert again.job_id == first.job_id and again.deduped and not first.deduped
    assert len(queue.list()) == 1


def test_ten_thousand_jobs_from_eight_threads_none_lost_none_duplicated(store: Store) -> None:
    queue = RepairQueue(store)
    results: list[Any] = []
    lock = threading.Lock()

    def produce(k: int) -> None:
        mine = []
        for i in range(1250):
            mine.append(queue.enqueue(manual(f"t{k}-{i}")))
            if i % 250 == 0:  # a duplicate now and then: must dedupe, not add
                mine.append(queue.enqueue(manual(f"t{k}-{i}")))
        with lock:
            results.extend(mine)

    threads = [threading.Thread(target=produce, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    fresh = [r for r in results if not r.deduped]
    assert len(fresh) == 10_000 and len({r.job_id for r in fresh}) == 10_000
    assert sum(r.deduped for r in results) == 8 * 5
    stats = queue.stats()
    assert stats["pending"] == 10_000 and stats["depth"] == 10_000
    ids = {j.id for j in queue.list(limit=10_000)}
    assert ids == {r.job_id for r in fresh}


def test_backoff_is_exponential_capped_and_jittered() -> None:
    cfg = FeedbackConfig()
    rng = random.Random(7)
    delays = [backoff_ms(a, cfg, rng) for a in range(1, 12)]
    for attempt, delay in enumerate(delays, start=1):
        base = min(1000 * 2 ** (attempt - 1), 300_000)
        assert base * 0.8 <= delay <= base * 1.2
    again = random.Random(7)
    assert delays == [backoff_ms(a, cfg, again) for a in range(1, 12)], "seeded jitter is reproducible"


# -- retries, dead letters, restarts ------------------------------------------------


def wait_status(queue: RepairQueue, job_id: str, status: str, attempts: int) -> None:
    wait_for(lambda: (j := queue.get(job_id)).status == status and j.attempts == attempts)


@pytest.mark.usefixtures("threaded_freezegun")
def test_transient_errors_retry_on_schedule_and_survive_a_restart(
    seeded: Store, bus: FeedbackBus, events: list[FeedbackEvent], subs: list[FeedbackSubscriber]
) -> None:
    cfg = FeedbackConfig()  # 1 s initial, x2, cap 5 min, ±20 %, 5 attempts
    expected_rng = random.Random(1234)
    with ChatServer() as server, freeze_time("2026-11-30 08:00:00") as frozen:
        server.script(*[Behaviour.error(429) for _ in range(5)])
        llm = OpenAIRepairLLM("m", base_url=server.base_url, api_key="k", timeout=5)
        t0 = now_ms()
        sub = attach_feedback_subscriber(
            seeded, llm=llm, bus=bus, config=cfg, rng=random.Random(1234), poll_interval=0.01
        )
        subs.append(sub)
        queue = sub.queue
        _, future = sub.submit_user_feedback("use uv instead of pip", SESSION)
        job_id = queue.list()[0].id

        wait_status(queue, job_id, "pending", 1)
        delay1 = backoff_ms(1, cfg, expected_rng)
        assert queue.get(job_id).next_attempt_at == t0 + delay1
        assert "HTTP 429" in (queue.get(job_id).last_error or "") or "429" in (
            queue.get(job_id).last_error or ""
        )

        # Restart before the retry is due: the schedule is in the database.
        sub.close(timeout=10)
        sub2 = attach_feedback_subscriber(
            seeded, llm=llm, bus=bus, config=cfg, rng=random.Random(1234), poll_interval=0.01
        )
        subs.append(sub2)
        frozen.tick((delay1 - 1) / 1000)
        for _ in range(20):  # 0.2 s of real time: nothing may run early
            assert queue.get(job_id).attempts == 1
            threading.Event().wait(0.01)
        # The new handle's jitter source starts over from the same seed.
        expected_rng = random.Random(1234)
        frozen.tick(0.001)
        due = t0 + delay1
        for attempt in range(2, 5):
            wait_status(queue, job_id, "pending", attempt)
            delay = backoff_ms(attempt, cfg, expected_rng)
            assert queue.get(job_id).next_attempt_at == due + delay
            due += delay
            frozen.move_to(datetime.fromtimestamp(due / 1000, tz=UTC))
        # Attempt 5 is the last: the 429 no longer retries, the template writes the repair.
        wait_status(queue, job_id, "done", 5)
        assert len(server.requests) == 5
    retrying = [e for e in events if e.kind == "repair.job.retrying"]
    assert [e.attempt for e in retrying] == [1, 2, 3, 4]  # type: ignore[attr-defined]
    assert queue.get(job_id).outcome == "persisted"
    repairs = seeded.repairs.list()
    assert len(repairs) == 1 and repairs[0].preference.startswith("Prefer: use uv")
    assert future.cancelled()  # it belonged to the first handle, closed while the job waited
    assert sub2.metrics()["retried"] == 3 and sub2.metrics()["done"] == 1


def test_permanent_error_goes_dead_at_once_and_can_be_retried(
    seeded: Store, bus: FeedbackBus, events: list[FeedbackEvent], subs: list[FeedbackSubscriber]
) -> None:
    queue = RepairQueue(seeded)
    job = queue.enqueue(manual("broken"))
    from sqlalchemy import update

    from memos_feedback.store.models import RepairJobModel

    with seeded.session(write=True) as s:
        s.execute(update(RepairJobModel).where(RepairJobModel.id == job.job_id).values(payload={"x": 1}))
    sub = attach_feedback_subscriber(
        seeded, bus=bus, config=FeedbackConfig(use_llm=False), poll_interval=0.01
    )
    subs.append(sub)
    wait_for(lambda: queue.get(job.job_id).status == "dead")
    dead = queue.get(job.job_id)
    assert dead.attempts == 1 and "payload does not describe a repair" in (dead.last_error or "")
    kinds = [e.kind for e in events]
    assert kinds.index("repair.job.failed") < kinds.index("repair.job.dead")
    # The operator fixes the payload and retries it.
    with seeded.session(write=True) as s:
        s.execute(
            update(RepairJobModel)
            .where(RepairJobModel.id == job.job_id)
            .values(payload=payload_of(manual("broken")))
        )
    assert queue.retry(job.job_id).status == "pending"
    wait_for(lambda: queue.get(job.job_id).status == "done")
    assert queue.get(job.job_id).attempts == 1


def test_stale_jobs_are_discarded_with_an_event(
    store: Store, bus: FeedbackBus, events: list[FeedbackEvent], subs: list[FeedbackSubscriber]
) -> None:
    queue = RepairQueue(store)
    with freeze_time("2026-11-01"):
        old = queue.enqueue(manual("old"))
    with freeze_time("2026-11-30"):
        fresh = queue.enqueue(manual("fresh"))
        sub = attach_feedback_subscriber(store, bus=bus, config=FeedbackConfig(use_llm=False))
        subs.append(sub)
    discarded = [e for e in events if e.kind == "repair.job.discarded"]
    assert [e.job_id for e in discarded] == [old.job_id]  # type: ignore[attr-defined]
    with pytest.raises(NotFoundError):
        queue.get(old.job_id)
    assert queue.get(fresh.job_id).id == fresh.job_id
    assert sub.metrics()["discarded"] == 1


def test_close_waits_for_the_job_in_flight_and_leaves_the_rest_pending(
    seeded: Store, subs: list[FeedbackSubscriber]
) -> None:
    with ChatServer() as server:
        server.script(Behaviour.delay(300))
        llm = OpenAIRepairLLM("m", base_url=server.base_url, api_key="k", timeout=5)
        cfg = FeedbackConfig(cooldown_ms=0)
        sub = attach_feedback_subscriber(seeded, llm=llm, config=cfg, poll_interval=0.01)
        futures = [sub.run_once(manual(f"c{i}")) for i in range(5)]
        wait_for(lambda: len(server.requests) >= 1)
        sub.close(timeout=10)
    assert futures[0].result(timeout=0).repair_id is not None
    assert all(f.cancelled() for f in futures[1:])
    stats = RepairQueue(seeded).stats()
    assert stats["done"] == 1 and stats["pending"] == 4 and stats["running"] == 0
    # The next start picks them up.
    sub2 = attach_feedback_subscriber(
        seeded, config=FeedbackConfig(use_llm=False, cooldown_ms=0), poll_interval=0.01
    )
    subs.append(sub2)
    wait_for(lambda: RepairQueue(seeded).stats()["done"] == 5)


def test_heartbeat_keeps_a_long_job_leased_against_another_worker(
    seeded: Store, subs: list[FeedbackSubscriber]
) -> None:
    """A model call that outlasts several leases is not taken over while its worker lives."""
    with ChatServer() as server:
        server.script(Behaviour.delay(3000))
        llm = OpenAIRepairLLM("m", base_url=server.base_url, api_key="k", timeout=10)
        cfg = FeedbackConfig(cooldown_ms=0, lease_ms=1000)
        busy = attach_feedback_subscriber(seeded, llm=llm, config=cfg, poll_interval=0.01)
        subs.append(busy)
        future = busy.run_once(manual("long"))
        wait_for(lambda: len(server.requests) == 1)
        # Another worker (its own owner) sweeps expired leases every 250 ms and
        # would run the job from the template if the lease ever lapsed.
        rival = attach_feedback_subscriber(
            seeded, config=FeedbackConfig(use_llm=False, cooldown_ms=0, lease_ms=1000), poll_interval=0.01
        )
        subs.append(rival)
        result = future.result(timeout=20)
    assert result.repair_id is not None
    [job] = RepairQueue(seeded).list()
    assert job.status == "done" and job.attempts == 1 and job.lease_owner == busy.owner
    assert len(server.requests) == 1


def test_futures_of_jobs_finished_by_another_process_are_settled(
    seeded: Store, subs: list[FeedbackSubscriber]
) -> None:
    """Done elsewhere → the result rebuilt from the rows; dead → an error; purged → cancelled."""
    queue = RepairQueue(seeded)
    with ChatServer() as server:
        server.script(Behaviour.hang())  # keeps this handle's only worker busy
        llm = OpenAIRepairLLM("m", base_url=server.base_url, api_key="k", timeout=30)
        cfg = FeedbackConfig(cooldown_ms=0)
        mine = attach_feedback_subscriber(seeded, llm=llm, config=cfg, poll_interval=0.01)
        subs.append(mine)
        mine.run_once(manual("busy"))
        wait_for(lambda: len(server.requests) == 1)

        # Done by another worker (another process: its own owner).
        done_future = mine.run_once(manual("done-elsewhere"))
        other = attach_feedback_subscriber(
            seeded, config=FeedbackConfig(use_llm=False, cooldown_ms=0), poll_interval=0.01
        )
        result = done_future.result(timeout=10)
        other.close(timeout=10)
        row = queue.get(job_id_of(queue, "done-elsewhere"))
        assert row.status == "done" and row.lease_owner == other.owner
        assert result.repair_id == row.repair_id is not None and not result.skipped
        repair = seeded.repairs.get(result.repair_id)
        assert result.draft is not None and result.draft.preference == repair.preference
        assert result.draft.anti_pattern == repair.anti_pattern and result.context_hash == "done-elsewhere"

        # Dead-lettered by another worker.
        dead_future = mine.run_once(manual("dead-elsewhere"))
        owner = "another-host:1:abcd1234"
        claimed = queue.claim(owner)
        assert claimed is not None and claimed.context_hash == "dead-elsewhere"
        queue.bury(claimed, owner, "ValueError: boom")
        error = dead_future.exception(timeout=10)
        assert isinstance(error, RepairJobDeadError)
        assert error.job_id == claimed.id and error.last_error == "ValueError: boom"

        # Purged by an operator before anyone ran it.
        purged_future = mine.run_once(manual("purged"))
        queue.purge(job_id_of(queue, "purged"))
        wait_for(purged_future.cancelled)


def job_id_of(queue: RepairQueue, context_hash: str) -> str:
    [job] = [j for j in queue.list(limit=1000) if j.context_hash == context_hash]
    return job.id


def test_operator_surface_errors(store: Store) -> None:
    queue = RepairQueue(store)
    with pytest.raises(NotFoundError):
        queue.retry("job_missing")
    with pytest.raises(NotFoundError):
        queue.purge("job_missing")
    with pytest.raises(InvalidInputError):
        queue.list(status="bogus")
    job = queue.enqueue(manual("x"))
    queue.purge(job.job_id)
    assert queue.list() == []


def test_metrics_report_counters_and_gauges(seeded: Store, subs: list[FeedbackSubscriber]) -> None:
    cfg = FeedbackConfig(use_llm=False, cooldown_ms=0)
    sub = attach_feedback_subscriber(seeded, config=cfg, poll_interval=0.01)
    subs.append(sub)
    futures = [sub.run_once(manual(f"m{i}")) for i in range(3)]
    sub.run_once(manual("m0"))  # may dedupe (pending) or run again (done): both counted
    for f in futures:
        f.result(timeout=10)
    assert sub.flush(timeout=10)
    m = sub.metrics()
    assert m["enqueued"] + m["deduped"] == 4
    assert m["done"] >= 3 and m["dead"] == 0 and m["depth"] == 0
    assert m["oldest_pending_age_ms"] is None
