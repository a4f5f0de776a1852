"""LangChain 1.x: ``FeedbackMiddleware`` inside a real ``create_agent`` with a scripted chat model."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.runtimes import require_runtime

require_runtime("langchain.agents", "langchain")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage  # noqa: E402
from langchain_core.tools import ToolException, tool  # noqa: E402

from memos_feedback.adapters.core import default_context_of  # noqa: E402
from memos_feedback.adapters.langchain import FeedbackCallbackHandler, FeedbackMiddleware  # noqa: E402
from memos_feedback.runtime.subscriber import FeedbackSubscriber  # noqa: E402
from tests.adapters.conftest import Boom, requests_made  # noqa: E402


class ScriptedChat(GenericFakeChatModel):
    """Plays scripted replies; remembers the messages of every call; tools bind to itself."""

    seen: list[list[BaseMessage]] = []  # noqa: RUF012 (replaced per instance below)

    def __init__(self, replies: list[AIMessage], **kw: Any) -> None:
        super().__init__(messages=iter(replies), **kw)
        object.__setattr__(self, "seen", [])

    def bind_tools(self, tools: Any, **kw: Any) -> ScriptedChat:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kw: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kw)

    def system_prompts(self) -> list[str]:
        return [
            m.text if isinstance(m, SystemMessage) else ""
            for m in (call[0] if call else None for call in self.seen)
            if m is not None
        ]


@tool
def install(package: str, manager: str, flags: str = "") -> str:
    """Install a package."""
    raise ToolException(f"{manager} ERR! ERESOLVE could not resolve {package} {flags}".strip())


install.handle_tool_error = True  # the tool turns its own errors into messages


@tool
def crash(path: str) -> str:
    """A tool that raises (not handled by the tool or the runtime)."""
    raise ValueError(f"no such file: {path}")


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


def _call(name: str, args: dict[str, Any], n: int) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": args, "id": f"call_{n}", "type": "tool_call"}]
    )


def _three_failures() -> list[AIMessage]:
    return [
        _call("install", {"package": "react", "manager": "npm"}, 1),
        _call("install", {"package": "react", "manager": "npm", "flags": "--force"}, 2),
        _call("install", {"package": "react", "manager": "npm", "flags": "--legacy-peer-deps"}, 3),
        AIMessage(content="giving up for now"),
    ]


def _the_repair(subscriber: FeedbackSubscriber) -> Any:
    assert subscriber.flush(timeout=10)
    repairs = subscriber.store.repairs.list()
    assert len(repairs) == 1, repairs
    return repairs[0]


def test_three_failures_repair_and_guidance_in_next_model_call(subscriber: FeedbackSubscriber) -> None:
    model = ScriptedChat(_three_failures())
    middleware = FeedbackMiddleware(subscriber, session_id="lc-1")
    agent = create_agent(
        model, tools=[install], system_prompt="You install packages.", middleware=[middleware]
    )

    out = agent.invoke({"messages": [{"role": "user", "content": "install react for the web app"}]})

    # The tool handled its own errors: the runtime only ever saw messages.
    errors = [m for m in out["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert len(errors) == 3
    repair = _the_repair(subscriber)
    assert repair.anti_pattern
    prompts = model.system_prompts()
    assert len(prompts) == 4
    assert prompts[0].startswith("You install packages.")
    assert repair.anti_pattern not in prompts[0]
    assert "<memory-context>" in prompts[3] and repair.anti_pattern in prompts[3]
    assert prompts[3].startswith("You install packages.")
    # Evidence: one failure trace per failed call, the burst's context is the default one.
    traces = subscriber.store.traces.list("lc-1")
    assert sum(1 for t in traces if t.tool_calls and t.tool_calls[0].error_code) == 3
    assert repair.context_hash
    assert default_context_of("install", {"package": "react", "manager": "npm", "flags": "-f"}) == (
        "install manager=npm package=react"
    )


def test_async_agent_records_and_injects(subscriber: FeedbackSubscriber) -> None:
    model = ScriptedChat(_three_failures())
    agent = create_agent(
        model, tools=[install], system_prompt="Async.", middleware=[FeedbackMiddleware(subscriber)]
    )
    config = {"configurable": {"thread_id": "thread-async"}}
    asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": "install react"}]}, config))
    repair = _the_repair(subscriber)
    assert (repair.preference or repair.anti_pattern) in model.system_prompts()[3]
    # The session is the run's thread id.
    assert len(subscriber.store.traces.list("thread-async")) == 3


def test_raised_validation_and_unknown_tool_failures_are_recorded(subscriber: FeedbackSubscriber) -> None:
    model = ScriptedChat(
        [
            _call("echo", {"wrong": 1}, 1),  # invalid arguments: the runtime makes an error message
            _call("no_such_tool", {"x": "y"}, 2),  # the model invented a tool
            _call("echo", {"text": "hi"}, 3),  # a success
            _call("crash", {"path": "/nope"}, 4),  # raised: the run fails
        ]
    )
    agent = create_agent(
        model, tools=[echo, crash], middleware=[FeedbackMiddleware(subscriber, session_id="lc-2")]
    )
    with pytest.raises(ValueError, match="no such file"):
        agent.invoke({"messages": [{"role": "user", "content": "do things"}]})
    failed = sorted(
        (t.tool_calls[0].name, t.tool_calls[0].error_code)
        for t in subscriber.store.traces.list("lc-2")
        if t.tool_calls and t.tool_calls[0].error_code
    )
    assert failed == [("crash", "ValueError"), ("echo", "error-message"), ("no_such_tool", "unknown-tool")]
    ok = [t for t in subscriber.store.traces.list("lc-2") if t.tool_calls and not t.tool_calls[0].error_code]
    assert [t.tool_calls[0].name for t in ok] == ["echo"]


def test_user_message_is_classified_once(subscriber: FeedbackSubscriber) -> None:
    triggers: list[str] = []
    subscriber.bus.on("repair.triggered", lambda event: triggers.append(getattr(event, "trigger", "")))
    model = ScriptedChat(
        [_call("echo", {"text": "a"}, 1), _call("echo", {"text": "b"}, 2), AIMessage("done")]
    )
    agent = create_agent(model, tools=[echo], middleware=[FeedbackMiddleware(subscriber, session_id="lc-3")])
    agent.invoke({"messages": [{"role": "user", "content": "use uv instead of pip"}]})
    assert len(model.seen) == 3
    # Three model calls, one classification: the preference was queued as one repair request.
    assert requests_made(subscriber) == 1
    assert subscriber.flush(timeout=10)
    assert triggers == ["user.preference"]  # and the worker ran it once


def test_adapter_errors_do_not_break_the_run(broken_subscriber: FeedbackSubscriber) -> None:
    def bad_context(tool: str, args: Any) -> str:
        raise Boom("bad context_of")

    model = ScriptedChat([*_three_failures()[:3], _call("echo", {"text": "x"}, 9), AIMessage("done")])
    middleware = FeedbackMiddleware(
        broken_subscriber, session_id="lc-4", context_of=bad_context, repair_wait=0.1
    )
    agent = create_agent(model, tools=[install, echo], system_prompt="Sys.", middleware=[middleware])
    out = agent.invoke({"messages": [{"role": "user", "content": "install react"}]})
    assert out["messages"][-1].content == "done"
    assert model.system_prompts() == ["Sys."] * 5
    # The tool results the model saw are the runtime's own.
    errors = [m for m in out["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert len(errors) == 3


def test_callback_handler_sees_errors_and_error_messages(subscriber: FeedbackSubscriber) -> None:
    handler = FeedbackCallbackHandler(subscriber, session_id="cb-1")
    config: Any = {"callbacks": [handler]}
    for n in range(3):
        call = {
            "name": "install",
            "args": {"package": "react", "manager": "npm"},
            "id": f"c{n}",
            "type": "tool_call",
        }
        msg = install.invoke(call, config)
        assert msg.status == "error"
    with pytest.raises(ValueError):
        crash.invoke({"path": "/x"}, config)
    echo.invoke({"text": "ok"}, config)
    repair = _the_repair(subscriber)
    assert (repair.preference or repair.anti_pattern) in handler.guidance()
    codes = sorted(t.tool_calls[0].error_code or "" for t in subscriber.store.traces.list("cb-1"))
    assert codes == ["", "ValueError", "error-message", "error-message", "error-message"]


def test_project_scopes_what_the_run_writes_and_reads(subscriber: FeedbackSubscriber) -> None:
    model = ScriptedChat(_three_failures())
    middleware = FeedbackMiddleware(subscriber, session_id="lc-p", project="shop-a")
    agent = create_agent(model, tools=[install], system_prompt="Sys.", middleware=[middleware])
    agent.invoke({"messages": [{"role": "user", "content": "install react"}]})
    repair = _the_repair(subscriber)
    assert repair.project == "shop-a"
    ask = {"tool_id": repair.tool_id, "context": repair.context, "query": "npm ERR! ERESOLVE"}
    assert [i.repair_id for i in subscriber.guidance_for(**ask, project="shop-a").items] == [repair.id]
    assert not subscriber.guidance_for(**ask, project="shop-b")
    assert (repair.preference or repair.anti_pattern) in model.system_prompts()[3]


def test_the_agents_turn_before_the_newest_user_message() -> None:
    from langchain_core.messages import HumanMessage

    from memos_feedback.adapters.langchain import agent_text_before_newest_user

    history = [
        HumanMessage(content="install react"),
        AIMessage(content="Ran npm install react."),
        ToolMessage(content="ok", tool_call_id="1"),
        HumanMessage(content="use pnpm"),
    ]
    assert agent_text_before_newest_user(history) == "Ran npm install react."
    assert agent_text_before_newest_user(history[:1]) is None
    assert agent_text_before_newest_user([*history, HumanMessage(content="again")]) is None
