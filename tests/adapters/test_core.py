"""What every adapter shares (``AdapterCore``), against a real subscriber and database.

No runtime package is needed here: these are the adapters' common rules —
the default context, ``context_of`` overrides, the per-session step
counter, and guidance cached per turn.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from memos_feedback.adapters.core import AdapterCore, default_context_of
from memos_feedback.events import FeedbackBus, FeedbackClassified
from memos_feedback.runtime.subscriber import FeedbackSubscriber, attach_feedback_subscriber
from memos_feedback.store import Store
from memos_feedback.synthesis.llm import OpenAIRepairLLM
from tests.support.chat_server import Behaviour, ChatServer


@contextmanager
def statements(sub: FeedbackSubscriber) -> Iterator[list[str]]:
    """The SQL statements this thread runs on the subscriber's engines inside the block.

    Only this thread's: the subscriber's worker polls the queue meanwhile.
    Recall's reads on PostgreSQL run on the store's recall pool: watched too.
    """
    seen: list[str] = []
    me = threading.get_ident()

    def note(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        if threading.get_ident() == me:
            seen.append(statement)

    engines = [e for e in (sub.store.engine, sub.store.recall_engine) if e is not None]
    for engine in engines:
        sa.event.listen(engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        for engine in engines:
            sa.event.remove(engine, "before_cursor_execute", note)


def test_default_context_keeps_the_stable_part_of_the_arguments() -> None:
    plain = default_context_of("bash", {"command": "npm install --force"})
    assert plain == "bash command=npm install"
    assert default_context_of("bash", {"command": "npm install --legacy-peer-deps", "timeout": 60}) == plain
    assert (
        default_context_of("bash", '{"command": "npm  install -g"}') == plain
    )  # JSON text, as the Agents SDK
    assert default_context_of("read", "not json at all") == "read input=not json"
    assert default_context_of("ping", None) == "ping"
    assert default_context_of("t", {"flags": "--a --b", "n": 3, "xs": ["a"]}) == "t"


def test_a_context_cut_short_is_redacted_before_the_cut() -> None:
    """Issue 44 finding 1: a word or a context the cap cuts is redacted first, so no part of a
    token (nor a URL's password cut off from its "@") is left for a later redaction to miss."""
    token = "ghp_" + "Zq7LmR2xWv9KpT4sNb8YcHd3FgJ6uE1oAi5B"
    ctx = default_context_of("bash", {"command": f"curl https://x:{token}@github.com/acme/app.git"})
    assert ctx == "bash command=curl https://x:[redacted]@github.com/acme/app"
    long_user = "https://release-bot-of-the-shop:S3cretPassw0rd@gitlab.example.com/x.git"
    assert "S3cret" not in default_context_of("git", {"remote": long_user})
    args = {f"a{n}": f"word{n} {long_user}" for n in range(6)}
    assert "S3cret" not in default_context_of("git", args)
    assert default_context_of("bash", {"command": "cat " + "x" * 60}) == "bash command=cat " + "x" * 40


def test_custom_context_of_decides_what_counts_as_one_burst(subscriber: FeedbackSubscriber) -> None:
    seen: list[tuple[str, Any]] = []

    def by_service(tool: str, args: Any) -> str:
        seen.append((tool, args))
        return f"deploy to {args['service']}"

    core = AdapterCore(subscriber, context_of=by_service)
    bursts = [
        core.tool_failed(
            "s", "kubectl", {"service": "api", "image": f"api:{n}", "cmd": f"apply -f v{n}.yaml"}, "x"
        )
        for n in range(3)
    ]
    assert bursts[:2] == [None, None] and bursts[2] is not None
    assert bursts[2].context == "deploy to api"
    assert [r.step for r in bursts[2].occurrences] == [1, 2, 3]
    assert len(seen) == 3
    assert subscriber.flush(timeout=10)
    assert [(r.tool_id, r.context) for r in subscriber.store.repairs.list()] == [("kubectl", "deploy to api")]


def test_step_counter_is_per_session(subscriber: FeedbackSubscriber) -> None:
    core = AdapterCore(subscriber, write_traces=False)
    core.tool_succeeded("a", "echo", {"text": "x"})
    core.tool_succeeded("a", "echo", {"text": "y"})
    core.tool_succeeded("b", "echo", {"text": "z"})
    assert core.next_step("a") == 3
    assert core.next_step("b") == 2
    assert core.next_step("c") == 1


def test_guidance_is_read_once_per_turn_and_refreshed_by_what_can_change_it(
    subscriber: FeedbackSubscriber,
) -> None:
    core = AdapterCore(subscriber)
    for n in range(3):
        core.tool_failed("s", "install", {"package": "react", "manager": "npm", "flags": f"-{n}"}, "ERESOLVE")
    first = core.guidance("s")  # waits for the burst's repair, then reads it
    repair = subscriber.store.repairs.list()[0]
    assert (repair.preference or repair.anti_pattern) in first

    with statements(subscriber) as sql:
        again = [core.guidance("s") for _ in range(10)]  # ten more model calls in the turn
    assert again == [first] * 10
    assert sql == []  # served from the cache: not one query

    with statements(subscriber) as sql:
        core.tool_failed("s", "install", {"package": "react", "manager": "npm"}, "ERESOLVE")
        core.guidance("s")
    reads = [s for s in sql if s.lstrip().upper().startswith("SELECT")]
    assert reads == []  # a failure in a context already failing changes nothing to recall
    assert any("INSERT INTO traces" in s for s in sql)  # only the failure's evidence row was written

    core.user_message("s", "why does npm keep failing")
    with statements(subscriber) as sql:
        after = core.guidance("s")
    assert any(s.lstrip().upper().startswith("SELECT") for s in sql)  # a new message: read again
    assert (repair.preference or repair.anti_pattern) in after


def test_a_correction_reaches_the_next_model_call_of_its_session(store: Store) -> None:
    # The model writing the repair takes its time: the next model call must wait for it.
    reply = '{"preference": "Use pnpm", "anti_pattern": "npm install", "severity": "warn", "confidence": 0.9}'
    with ChatServer(reply=reply) as server:
        server.script(Behaviour.delay(800, reply))
        llm = OpenAIRepairLLM("m", base_url=server.base_url, api_key="k", timeout=10.0)
        with attach_feedback_subscriber(store, llm=llm, poll_interval=0.01) as sub:
            core = AdapterCore(sub, repair_wait=30.0)
            core.tool_failed("s", "install", {"package": "react", "manager": "npm"}, "npm ERR! ERESOLVE")
            assert core.guidance("s") == ""  # one failure: nothing learned yet
            core.user_message("s", "no, use pnpm instead of npm for installs")
            block = core.guidance("s")  # the next model call waits for the correction's repair
            (repair,) = store.repairs.list()
            assert (repair.preference or repair.anti_pattern) in block
            assert [core.guidance("s") for _ in range(3)] == [block] * 3  # and the rest of the turn too


def test_a_repair_written_for_the_session_invalidates_its_cached_block(
    subscriber: FeedbackSubscriber,
) -> None:
    from memos_feedback.signals import context_hash_of
    from memos_feedback.types import RepairInput

    core = AdapterCore(subscriber)
    core.tool_failed("s", "install", {"package": "react", "manager": "npm"}, "npm ERR! ERESOLVE")
    context = default_context_of("install", {"package": "react", "manager": "npm"})
    assert core.guidance("s") == ""
    subscriber.store.traces.add("s", agent_text="npm ERR! ERESOLVE could not resolve", value=-0.7)
    # Written outside the session's own calls (the review UI's manual run).
    manual = RepairInput(
        trigger="manual",
        context_hash=context_hash_of("install", context),
        tool_id="install",
        context=context,
        session_id="s",
        user_text="use pnpm instead of npm",
    )
    result = subscriber.run_once(manual).result(timeout=30)
    assert result.repair_id is not None
    assert result.draft is not None and result.draft.preference in core.guidance("s")


def test_a_forgotten_adapter_leaves_no_listener_behind(subscriber: FeedbackSubscriber) -> None:
    import gc

    before = subscriber.bus.listener_count("repair.persisted")
    core = AdapterCore(subscriber)
    assert subscriber.bus.listener_count("repair.persisted") == before + 1
    del core
    gc.collect()
    assert subscriber.bus.listener_count("repair.persisted") == before


def test_the_agents_turn_goes_to_the_classifier(store: Store) -> None:
    bus = FeedbackBus()
    shapes: list[str] = []
    bus.on_any(lambda e: shapes.append(e.shape) if isinstance(e, FeedbackClassified) else None)
    sub = attach_feedback_subscriber(store, bus=bus, poll_interval=0.01)
    try:
        core = AdapterCore(sub, write_traces=False)
        # "the other one" names a choice only against the options the agent's turn offered.
        core.tool_succeeded("s", "cache", {"app": "web"}, "Redis or Memcached both work; I used Redis")
        assert "I used Redis" in core._session("s").last_agent_text
        core.user_message("s", "另一个")  # the runtime gave no reply: the newest tool outcome
        assert core._session("s").last_agent_text == ""  # used once: a later message gets no stale turn
        core.user_message("s", "the other one", agent_text="npm or pnpm? I went with npm.")
        assert sub.flush(timeout=10)
        assert shapes == ["preference", "preference"]
    finally:
        sub.close(timeout=10)
