"""The awaitable forms, ``asubmit_user_feedback`` and ``aguidance_for``, under a real asyncio loop."""

from __future__ import annotations

import asyncio
import inspect
import threading

from memos_feedback import FeedbackEvent, attach_feedback_subscriber
from memos_feedback.config import FeedbackConfig
from memos_feedback.events import FeedbackBus
from memos_feedback.runtime.subscriber import FeedbackSubscriber
from memos_feedback.store import Store


def test_the_awaitable_forms_run_off_the_loop_and_return_what_the_sync_forms_do(store: Store) -> None:
    # The evidence a repair rests on: one step that worked, one that failed.
    store.traces.add("s1", agent_text="pnpm install worked", value=0.9)
    store.traces.add("s1", agent_text="npm install failed: ERESOLVE", value=-0.9)
    bus = FeedbackBus()
    classified_on: list[int] = []

    def on_classified(_: FeedbackEvent) -> None:
        classified_on.append(threading.get_ident())

    bus.on("feedback.classified", on_classified)

    async def host() -> tuple[int, list[str], int]:
        loop_thread = threading.get_ident()
        ticks = 0

        async def ticker() -> None:  # runs only while the loop is free
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        ticking = asyncio.create_task(ticker())
        config = FeedbackConfig(use_llm=False, cooldown_ms=0)
        with attach_feedback_subscriber(store, bus=bus, config=config) as sub:
            feedback, future = await sub.asubmit_user_feedback(
                "no, use pnpm instead of npm", "s1", tool_id="shell", context="install the deps"
            )
            assert feedback.shape.triggers_repair
            result = await asyncio.wait_for(asyncio.wrap_future(future), timeout=60)
            assert result.repair_id is not None and not result.skipped
            guidance = await sub.aguidance_for(tool_id="shell", context="install the deps", session_id="s1")
            direct = sub.guidance_for(tool_id="shell", context="install the deps", record=False)
            assert [i.repair_id for i in guidance.items] == [i.repair_id for i in direct.items]
            assert guidance.render() == direct.render()
            # Several at once on one loop: each in its own thread, all answered.
            many = await asyncio.gather(*(sub.aguidance_for(tool_id="shell", query="pnpm") for _ in range(8)))
        ticking.cancel()
        assert all(result.repair_id in [i.repair_id for i in g.items] for g in many)
        return loop_thread, [i.repair_id for i in guidance.items], ticks

    loop_thread, served, ticks = asyncio.run(host())
    assert served, "the repair the correction made is served"
    assert classified_on and loop_thread not in classified_on, "the sync call ran in a worker thread"
    assert ticks > 0


def test_one_class_no_async_twin() -> None:
    assert inspect.iscoroutinefunction(FeedbackSubscriber.asubmit_user_feedback)
    assert inspect.iscoroutinefunction(FeedbackSubscriber.aguidance_for)
    # The awaitable forms take exactly the sync forms' parameters.
    for name in ("submit_user_feedback", "guidance_for"):
        sync = inspect.signature(getattr(FeedbackSubscriber, name))
        awaitable = inspect.signature(getattr(FeedbackSubscriber, f"a{name}"))
        assert awaitable.parameters == sync.parameters, name
    assert [c.__name__ for c in FeedbackSubscriber.__mro__] == ["FeedbackSubscriber", "object"]
