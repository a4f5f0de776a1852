"""OpenAI Agents SDK: a real ``Runner`` with the SDK's own ``ScriptedModel``."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.support.runtimes import require_runtime

require_runtime("agents.testing", "openai-agents")

from agents import Agent, RunConfig, Runner, function_tool  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from memos_feedback.adapters.openai_agents import OpenAIAgentsFeedback  # noqa: E402
from memos_feedback.runtime.subscriber import FeedbackSubscriber, attach_feedback_subscriber  # noqa: E402
from memos_feedback.store import Store  # noqa: E402
from memos_feedback.synthesis.llm import OpenAIRepairLLM  # noqa: E402
from tests.adapters.conftest import Boom, requests_made  # noqa: E402
from tests.support.chat_server import Behaviour, ChatServer  # noqa: E402


@function_tool
def install(package: str, manager: str, flags: str = "") -> str:
    """Install a package."""
    raise RuntimeError(f"{manager} ERR! ERESOLVE could not resolve {package} {flags}".strip())


@function_tool
def echo(text: str) -> str:
    """Echo."""
    return text


def _failing_calls(tool: str = "install") -> list[Any]:
    return [
        [function_call(tool, {"package": "react", "manager": "npm"}, call_id="c1")],
        [function_call(tool, {"package": "react", "manager": "npm", "flags": "--force"}, call_id="c2")],
        [function_call(tool, {"package": "react", "manager": "npm", "flags": "--legacy"}, call_id="c3")],
        [assistant_message("giving up")],
    ]


def _run(agent: Agent[Any], feedback: OpenAIAgentsFeedback, text: str, **config: Any) -> Any:
    run_config = RunConfig(
        tool_error_formatter=feedback.tool_error_formatter, tracing_disabled=True, **config
    )
    return asyncio.run(Runner.run(agent, text, run_config=run_config, hooks=feedback.hooks))


def _the_repair(subscriber: FeedbackSubscriber) -> Any:
    assert subscriber.flush(timeout=10)
    repairs = subscriber.store.repairs.list()
    assert len(repairs) == 1, repairs
    return repairs[0]


def test_three_failures_repair_and_guidance_in_next_model_call(subscriber: FeedbackSubscriber) -> None:
    feedback = OpenAIAgentsFeedback(subscriber, session_id="oa-1")
    model = ScriptedModel(_failing_calls())
    agent = Agent(
        name="installer",
        instructions=feedback.with_guidance("You install packages."),
        tools=[install],
        model=model,
    )
    result = _run(agent, feedback, "install react for the web app")
    assert result.final_output == "giving up"
    repair = _the_repair(subscriber)
    prompts = [c.system_instructions or "" for c in model.calls]
    assert len(prompts) == 4
    assert prompts[0] == "You install packages."
    assert "<memory-context>" in prompts[3] and (repair.preference or repair.anti_pattern) in prompts[3]
    # The SDK's message to the model is unchanged (the formatter returned None).
    outputs = [i for i in result.new_items if i.type == "tool_call_output_item"]
    assert all("An error occurred while running the tool" in str(i.output) for i in outputs)
    traces = subscriber.store.traces.list("oa-1")
    assert len(traces) == 3 and all(t.tool_calls[0].error_code for t in traces)  # no "success" for them


def test_custom_failure_function_and_callable_instructions(subscriber: FeedbackSubscriber) -> None:
    feedback = OpenAIAgentsFeedback(subscriber)

    def raises(package: str, manager: str, flags: str = "") -> str:
        raise RuntimeError("registry unreachable")

    tool = function_tool(
        raises,
        name_override="install",
        failure_error_function=feedback.failure_error_function(lambda ctx, err: f"install failed: {err}"),
    )
    model = ScriptedModel(_failing_calls())

    async def instructions(ctx: Any, agent: Any) -> str:
        return f"Dynamic for {agent.name}."

    agent = Agent(name="dyn", instructions=feedback.with_guidance(instructions), tools=[tool], model=model)
    run_config = RunConfig(tracing_disabled=True)
    ctx = {"session_id": "from-context"}
    result = asyncio.run(
        Runner.run(agent, "install react", run_config=run_config, hooks=feedback.hooks, context=ctx)
    )
    outputs = [str(i.output) for i in result.new_items if i.type == "tool_call_output_item"]
    assert outputs == ["install failed: registry unreachable"] * 3  # the tool's own message, kept
    repair = _the_repair(subscriber)
    prompts = [c.system_instructions or "" for c in model.calls]
    assert prompts[0] == "Dynamic for dyn."
    assert (repair.preference or repair.anti_pattern) in prompts[3]
    assert len(subscriber.store.traces.list("from-context")) == 3


def test_unknown_tool_and_success_recorded(subscriber: FeedbackSubscriber) -> None:
    feedback = OpenAIAgentsFeedback(subscriber, session_id="oa-3")
    model = ScriptedModel(
        [
            [function_call("nope", {"x": "y"}, call_id="c1")],
            [function_call("echo", {"text": "hi"}, call_id="c2")],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="a", instructions="Sys.", tools=[echo], model=model)
    result = _run(agent, feedback, "say hi", tool_not_found_behavior="return_error_to_model")
    assert result.final_output == "done"
    rows = sorted(
        (t.tool_calls[0].name, t.tool_calls[0].error_code) for t in subscriber.store.traces.list("oa-3")
    )
    assert rows == [("echo", None), ("nope", "tool-not-found")]


def test_user_input_classified_once(subscriber: FeedbackSubscriber) -> None:
    triggers: list[str] = []
    subscriber.bus.on("repair.triggered", lambda event: triggers.append(getattr(event, "trigger", "")))
    feedback = OpenAIAgentsFeedback(subscriber, session_id="oa-4")
    model = ScriptedModel([[function_call("echo", {"text": "a"}, call_id="c1")], [assistant_message("ok")]])
    agent = Agent(name="a", instructions=feedback.with_guidance("Sys."), tools=[echo], model=model)
    _run(agent, feedback, "use uv instead of pip")
    assert len(model.calls) == 2
    # Two model calls (instructions and on_llm_start both see the input): one repair request.
    assert requests_made(subscriber) == 1
    assert subscriber.flush(timeout=10)
    assert triggers == ["user.preference"]  # and the worker ran it once


def test_adapter_errors_do_not_break_the_run(broken_subscriber: FeedbackSubscriber) -> None:
    def broken_session(ctx: Any) -> str:
        raise Boom("bad session_id callable")

    feedback = OpenAIAgentsFeedback(broken_subscriber, session_id=broken_session, repair_wait=0.1)
    model = ScriptedModel(
        [
            *_failing_calls()[:3],
            [function_call("echo", {"text": "x"}, call_id="c9")],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="a", instructions=feedback.with_guidance("Sys."), tools=[install, echo], model=model)
    result = _run(agent, feedback, "use uv instead of pip")
    assert result.final_output == "done"
    assert [c.system_instructions for c in model.calls] == ["Sys."] * 5
    outputs = [str(i.output) for i in result.new_items if i.type == "tool_call_output_item"]
    assert len(outputs) == 4 and outputs[-1] == "x"


def test_project_scopes_what_the_run_writes_and_reads(subscriber: FeedbackSubscriber) -> None:
    feedback = OpenAIAgentsFeedback(subscriber, session_id="oa-p", project="shop-a")
    model = ScriptedModel(_failing_calls())
    agent = Agent(name="a", instructions=feedback.with_guidance("Sys."), tools=[install], model=model)
    _run(agent, feedback, "install react")
    repair = _the_repair(subscriber)
    assert repair.project == "shop-a"
    ask = {"tool_id": repair.tool_id, "context": repair.context, "query": "npm ERR! ERESOLVE"}
    assert [i.repair_id for i in subscriber.guidance_for(**ask, project="shop-a").items] == [repair.id]
    assert not subscriber.guidance_for(**ask, project="shop-b")
    assert (repair.preference or repair.anti_pattern) in (model.calls[3].system_instructions or "")


def test_hooks_without_the_formatter_record_failures_as_failures(subscriber: FeedbackSubscriber) -> None:
    feedback = OpenAIAgentsFeedback(subscriber, session_id="oa-hooks")
    model = ScriptedModel(_failing_calls())
    agent = Agent(name="a", instructions=feedback.with_guidance("Sys."), tools=[install], model=model)
    run_config = RunConfig(tracing_disabled=True)  # no tool_error_formatter: the hooks alone
    result = asyncio.run(Runner.run(agent, "install react", run_config=run_config, hooks=feedback.hooks))
    outputs = [str(i.output) for i in result.new_items if i.type == "tool_call_output_item"]
    assert len(outputs) == 3 and all("An error occurred while running the tool" in o for o in outputs)
    traces = subscriber.store.traces.list("oa-hooks")
    assert len(traces) == 3 and all(t.tool_calls[0].error_code for t in traces)
    assert all(t.value < 0 for t in traces)
    repair = _the_repair(subscriber)  # the burst fired
    assert repair.trigger == "failure-burst"
    assert "succeeded" not in repair.anti_pattern
    assert (repair.preference or repair.anti_pattern) in (model.calls[3].system_instructions or "")


def test_a_result_that_only_looks_like_an_error_is_a_success(subscriber: FeedbackSubscriber) -> None:
    feedback = OpenAIAgentsFeedback(subscriber, session_id="oa-echo")
    model = ScriptedModel(
        [[function_call("echo", {"text": "error: disk full"}, call_id="c1")], [assistant_message("ok")]]
    )
    agent = Agent(name="a", instructions="Sys.", tools=[echo], model=model)
    asyncio.run(
        Runner.run(agent, "say it", run_config=RunConfig(tracing_disabled=True), hooks=feedback.hooks)
    )
    (trace,) = subscriber.store.traces.list("oa-echo")
    assert trace.tool_calls[0].error_code is None and trace.value > 0


def test_the_sdk_timeout_message_is_a_failure() -> None:
    from agents import RunContextWrapper
    from agents.tool import default_tool_timeout_error_message

    from memos_feedback.adapters.openai_agents import _sdk_failure

    ctx = RunContextWrapper(context=None)
    message = default_tool_timeout_error_message(tool_name="install", timeout_seconds=2.5)
    assert _sdk_failure(message, ctx) == message
    assert _sdk_failure("Tool 'install' finished in 2.5 seconds.", ctx) is None
    assert _sdk_failure(["not", "text"], ctx) is None


def test_a_correction_reaches_the_rest_of_its_session(store: Store) -> None:
    reply = '{"preference": "Use pnpm", "anti_pattern": "npm install", "severity": "warn", "confidence": 0.9}'
    with ChatServer(reply=reply) as server:
        server.script(Behaviour.delay(800, reply))  # the repair takes a while to write
        llm = OpenAIRepairLLM("m", base_url=server.base_url, api_key="k", timeout=10.0)
        with attach_feedback_subscriber(store, llm=llm, poll_interval=0.01) as sub:
            feedback = OpenAIAgentsFeedback(sub, session_id="oa-fix", repair_wait=30.0)
            first = ScriptedModel([_failing_calls()[0], [assistant_message("it failed")]])
            guided = feedback.with_guidance("Sys.")
            _run(
                Agent(name="a", instructions=guided, tools=[install, echo], model=first), feedback, "install"
            )
            second = ScriptedModel(
                [[function_call("echo", {"text": "retrying"}, call_id="c9")], [assistant_message("done")]]
            )
            agent = Agent(name="a", instructions=guided, tools=[install, echo], model=second)
            _run(agent, feedback, "no, use pnpm instead of npm for installs")
            prompts = [c.system_instructions or "" for c in second.calls]
            (repair,) = store.repairs.list()
            assert len(prompts) == 2 and all((repair.preference or repair.anti_pattern) in p for p in prompts)


def test_the_agents_turn_before_the_newest_user_input() -> None:
    from memos_feedback.adapters.openai_agents import _newest_turn

    items = [
        {"role": "user", "content": "install react"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Ran npm install react."}]},
        {"type": "function_call_output", "call_id": "1", "output": "ok"},
        {"role": "user", "content": "use pnpm"},
    ]
    assert _newest_turn(items) == ("use pnpm", "Ran npm install react.")
    assert _newest_turn(items[:1]) == ("install react", None)
    assert _newest_turn("just text") == ("just text", None)
