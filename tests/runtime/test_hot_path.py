"""The deferred hot path: ``record_tool_*`` append raw steps, the enqueuer applies them.

What the agent's thread no longer does (validation, the failure window)
still happens, in order, before anything that depends on it: ``flush``,
``close``, ``record_tool_failure_now``, a user message or a served
guidance of the session.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memos_feedback.config import FeedbackConfig
from memos_feedback.events import FeedbackBus
from memos_feedback.outcomes import HELD
from memos_feedback.outcomes.ledger import history, open_servings
from memos_feedback.runtime.hot_path import _STEP_BACKLOG
from memos_feedback.runtime.queue import RepairQueue
from memos_feedback.runtime.subscriber import FeedbackSubscriber, attach_feedback_subscriber
from memos_feedback.signals import context_hash_of
from memos_feedback.store import Store, ToolCall
from tests.support.freezing import wait_for

SESSION = "s1"
EPISODE = "ep1"
TOOL = "npm.install"
# The enqueuer's own round never comes during a test with this period, so
# whatever is applied was applied by the call under test.
ASLEEP = FeedbackConfig(use_llm=False, buffer_flush_ms=600_000)


@pytest.fixture
def make_sub(store: Store) -> Iterator[Any]:
    subs: list[FeedbackSubscriber] = []

    def make(config: FeedbackConfig = ASLEEP) -> FeedbackSubscriber:
        sub = attach_feedback_subscriber(store, bus=FeedbackBus(), config=config, poll_interval=0.02)
        subs.append(sub)
        return sub

    yield make
    for sub in subs:
        sub.close(timeout=10)


def add_history(store: Store) -> None:
    """A good and a bad trace of the tool: enough evidence for a template repair."""
    store.traces.add(
        SESSION,
        agent_text="ran pnpm install, 312 packages installed",
        reflection="pnpm install works in this repo",
        value=0.8,
        episode_id=EPISODE,
        tool_calls=[ToolCall(TOOL)],
    )
    store.traces.add(
        SESSION,
        agent_text="npm ERR! ERESOLVE could not resolve dependency tree",
        reflection="npm install fails on peer dependencies",
        value=-0.7,
        episode_id=EPISODE,
        tool_calls=[ToolCall(TOOL, error_code="ERESOLVE")],
    )


def job_contexts(store: Store) -> set[str]:
    return {job.context_hash for job in RepairQueue(store).list(limit=10_000)}


def test_recording_only_queues_the_step(make_sub: Any) -> None:
    sub = make_sub()
    for step in (1, 2, 3):
        assert sub.record_tool_failure(TOOL, "web/", step, "ERESOLVE", SESSION, EPISODE) is None
    assert sub.signals.stats()["failures_recorded"] == 0
    sub.sync_signals()
    stats = sub.signals.stats()
    assert stats["failures_recorded"] == 3 and stats["bursts"] == 1


def test_flush_applies_the_steps_and_the_burst_becomes_a_repair(store: Store, make_sub: Any) -> None:
    add_history(store)
    sub = make_sub()
    for step in (1, 2, 3):
        sub.record_tool_failure(TOOL, "web/", step, "ERESOLVE", SESSION, EPISODE)
    assert sub.flush(timeout=60)
    assert [(r.tool_id, r.context) for r in store.repairs.list()] == [(TOOL, "web/")]


def test_the_enqueuer_applies_steps_on_its_own(store: Store, make_sub: Any) -> None:
    sub = make_sub(FeedbackConfig(use_llm=False, buffer_flush_ms=20))
    for step in (1, 2, 3):
        sub.record_tool_failure(TOOL, "web/", step, "ERESOLVE", SESSION, EPISODE)
    # No flush, no sync: the enqueuer's periodic round finds the steps.
    wait_for(lambda: job_contexts(store) == {context_hash_of(TOOL, "web/")}, seconds=30)


def test_steps_apply_in_the_order_they_were_recorded(make_sub: Any) -> None:
    sub = make_sub()
    sub.record_tool_failure(TOOL, "web/", 1, "E")
    sub.record_tool_failure(TOOL, "web/", 2, "E")
    sub.record_tool_success(TOOL, "web/", 3)
    sub.record_tool_failure(TOOL, "web/", 4, "E")
    sub.record_tool_failure(TOOL, "web/", 5, "E")
    sub.record_tool_failure(TOOL, "web/", 6, "E")
    sub.sync_signals()
    # Three failures after a success inside the window: no burst.
    window = sub.signals.peek(TOOL, "web/")
    assert window is not None and window.success_in_window
    assert [r.step for r in window.occurrences] == [4, 5, 6]
    assert sub.signals.stats()["bursts"] == 0


def test_record_tool_failure_now_returns_the_burst_after_earlier_steps(make_sub: Any) -> None:
    sub = make_sub()
    sub.record_tool_failure(TOOL, "web/", 1, "E")
    sub.record_tool_failure(TOOL, "web/", 2, "E")
    burst = sub.record_tool_failure_now(TOOL, "web/", 3, "E", SESSION, EPISODE)
    assert burst is not None and [r.step for r in burst.occurrences] == [1, 2, 3]
    assert burst.occurrences[-1].session_id == SESSION


def test_bad_steps_are_counted_and_skipped_without_stopping_the_good_ones(
    store: Store, make_sub: Any
) -> None:
    add_history(store)
    sub = make_sub()
    sub.record_tool_failure(TOOL, ["web/"], 1, "E")  # type: ignore[arg-type]
    sub.record_tool_success(TOOL, "web/", 1, session_id={})  # type: ignore[arg-type]
    sub.record_tool_failure(TOOL, "web/", True, "E")  # type: ignore[arg-type]
    sub.record_tool_failure("", "web/", 1, "E")
    for step in (1, 2, 3):
        sub.record_tool_failure(TOOL, "web/", step, "ERESOLVE", SESSION, EPISODE)
    assert sub.flush(timeout=60)
    assert sub.metrics()["ignored_calls"] == 4
    assert [r.context for r in store.repairs.list()] == ["web/"]


def test_close_stores_the_bursts_of_steps_it_never_saw_applied(store: Store, make_sub: Any) -> None:
    sub = make_sub()
    contexts = [f"ctx-{i}/" for i in range(5)]
    for ctx in contexts:
        for step in (1, 2, 3):
            sub.record_tool_failure(TOOL, ctx, step, "ERESOLVE", SESSION, EPISODE)
    sub.close(timeout=60)  # no flush: close() must apply and store them
    assert job_contexts(store) == {context_hash_of(TOOL, ctx) for ctx in contexts}


def test_a_correction_is_keyed_to_the_step_recorded_just_before(make_sub: Any) -> None:
    sub = make_sub()
    sub.record_tool_failure("pip.install", "requirements.txt", 1, "E", session_id="s9")
    feedback, future = sub.submit_user_feedback("wrong port, it's 8080 not 8000", "s9")
    assert feedback.shape.value == "correction"
    assert future.result(timeout=60).context_hash == context_hash_of("pip.install", "requirements.txt")


def test_a_caller_faster_than_the_enqueuer_applies_its_own_backlog(make_sub: Any) -> None:
    sub = make_sub()
    for i in range(_STEP_BACKLOG + 1):
        sub.record_tool_success(TOOL, f"ctx-{i % 100}", i)
    # Over the bound, the recording thread applied the steps itself.
    assert sub.signals.stats()["successes_recorded"] == _STEP_BACKLOG + 1


def test_a_step_recorded_before_a_serving_does_not_settle_it(store: Store, make_sub: Any) -> None:
    repair = store.repairs.insert(
        context_hash=context_hash_of(TOOL, "web/"),
        trigger="manual",
        preference="Prefer: pnpm install",
        anti_pattern="Avoid: npm install",
        tool_id=TOOL,
        context="web/",
    )
    sub = make_sub()
    sub.record_tool_success(TOOL, "web/", 1, session_id=SESSION)  # queued, not applied yet
    served = sub.guidance_for(tool_id=TOOL, context="web/", session_id=SESSION)
    assert [item.repair_id for item in served.items] == [repair.id]
    assert sub.flush(timeout=30)
    assert [v.session_id for v in open_servings(store, 0)] == [SESSION]  # still open
    sub.record_tool_success(TOOL, "web/", 2, session_id=SESSION)
    assert sub.flush(timeout=30)
    assert open_servings(store, 0) == []
    assert [e.event for e in history(store, repair.id)] == ["served", HELD]


def test_the_backlog_stays_bounded_while_the_enqueuer_is_applying_it(make_sub: Any) -> None:
    # The enqueuer wakes every millisecond and holds the lock while it
    # applies; a caller that records faster must not queue past the bound
    # because the lock was busy when it looked.
    sub = make_sub(FeedbackConfig(use_llm=False, buffer_flush_ms=1))
    steps = sub._steps
    calls, most = 200_000, 0
    for i in range(calls):
        sub.record_tool_failure(TOOL, f"ctx-{i % 50}", i, "E: boom")
        most = max(most, len(steps))
    assert most <= _STEP_BACKLOG, most
    sub.sync_signals()
    assert sub.signals.stats()["failures_recorded"] == calls
