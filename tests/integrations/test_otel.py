"""``FeedbackSpanProcessor`` on a real tracer provider: OpenInference LangChain spans and GenAI spans."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memos_feedback.runtime.subscriber import FeedbackSubscriber, attach_feedback_subscriber
from memos_feedback.store import Store, open_store
from tests.support.runtimes import require_runtime
from tests.test_secrets_at_rest import TOKEN, _dump

require_runtime("opentelemetry.sdk.trace", "otel")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import Status, StatusCode  # noqa: E402

from memos_feedback.integrations.otel import FeedbackSpanProcessor  # noqa: E402


@pytest.fixture
def subscriber(store: Store) -> Iterator[FeedbackSubscriber]:
    sub = attach_feedback_subscriber(store, poll_interval=0.01)
    try:
        yield sub
    finally:
        sub.close(timeout=10)


def _repairs(sub: FeedbackSubscriber, processor: FeedbackSpanProcessor) -> list[Any]:
    assert processor.force_flush(10_000)
    assert sub.flush(timeout=10)
    return sub.store.repairs.list()


def _genai_tool(tracer: Any, args: str, *, fail: bool, conversation: str = "conv-1") -> None:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "web_search",
        "gen_ai.tool.call.arguments": args,
        "gen_ai.conversation.id": conversation,
    }
    with tracer.start_as_current_span("execute_tool web_search", attributes=attributes) as span:
        if fail:
            span.set_attribute("error.type", "TimeoutError")
            span.set_status(Status(StatusCode.ERROR, "upstream search timed out after 30 s"))


def test_genai_execute_tool_spans_that_fail_three_times_write_a_repair(
    subscriber: FeedbackSubscriber,
) -> None:
    provider = TracerProvider()
    processor = FeedbackSpanProcessor(subscriber)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("test")
    # Retries change the numbers and the words after the second: one context.
    for args in (
        '{"query": "weather paris"}',
        '{"query": "weather paris", "page": 2}',
        '{"query": "weather paris today"}',
    ):
        _genai_tool(tracer, args, fail=True)
    with tracer.start_as_current_span("chat gpt-x", attributes={"gen_ai.operation.name": "chat"}):
        pass  # not a tool span: ignored
    repairs = _repairs(subscriber, processor)
    assert [(r.tool_id, r.context, r.trigger) for r in repairs] == [
        ("web_search", "web_search query=weather paris", "failure-burst")
    ]
    traces = subscriber.store.traces.list("conv-1")
    assert len(traces) == 3 and all("upstream search timed out" in t.agent_text for t in traces)
    provider.shutdown()


def test_a_token_in_a_failing_span_stays_out_of_the_traces(subscriber: FeedbackSubscriber) -> None:
    """Issue 44 finding 1: three failing tool spans (the OTel SDK) whose arguments and error carry
    a GitHub token make their traces and repair; no table keeps the token."""
    provider = TracerProvider()
    processor = FeedbackSpanProcessor(subscriber)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("test")
    url = f"https://x:{TOKEN}@github.com/acme/app.git"
    for n in range(3):
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "git",
            "gen_ai.tool.call.arguments": json.dumps({"remote": url, "attempt": n}),
            "gen_ai.conversation.id": "conv-secret",
        }
        with tracer.start_as_current_span("execute_tool git", attributes=attributes) as span:
            span.set_status(Status(StatusCode.ERROR, f"fatal: unable to access '{url}/': error: 403"))
    repairs = _repairs(subscriber, processor)
    assert [r.trigger for r in repairs] == ["failure-burst"]
    traces = subscriber.store.traces.list("conv-secret")
    assert len(traces) == 3 and all("403" in t.agent_text for t in traces)
    assert TOKEN[4:20] not in _dump(subscriber.store)  # nor any part of it
    provider.shutdown()


def test_a_success_between_failures_means_no_burst(subscriber: FeedbackSubscriber) -> None:
    provider = TracerProvider()
    processor = FeedbackSpanProcessor(subscriber)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("test")
    _genai_tool(tracer, '{"query": "weather paris"}', fail=True)
    _genai_tool(tracer, '{"query": "weather paris"}', fail=False)
    _genai_tool(tracer, '{"query": "weather paris"}', fail=True)
    _genai_tool(tracer, '{"query": "weather paris"}', fail=True)
    assert _repairs(subscriber, processor) == []
    provider.shutdown()


def test_bad_spans_never_raise_into_the_pipeline(subscriber: FeedbackSubscriber) -> None:
    provider = TracerProvider()

    def broken_context(tool: str, args: Any) -> str:
        raise RuntimeError("custom context_of is broken")

    processor = FeedbackSpanProcessor(subscriber, context_of=broken_context)
    provider.add_span_processor(processor)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    for _ in range(3):
        # A huge argument string, a non-JSON one, none at all: all handled.
        _genai_tool(tracer, "x" * 100_000, fail=True)
        with tracer.start_as_current_span(
            "execute_tool", attributes={"gen_ai.operation.name": "execute_tool"}
        ):
            pass
    assert processor.force_flush(10_000)
    assert len(exporter.get_finished_spans()) == 6  # the exporter after it saw every span
    repairs = _repairs(subscriber, processor)
    assert [r.context for r in repairs] == ["web_search input=" + "x" * 40]
    provider.shutdown()


def test_openinference_langchain_agent_whose_tool_fails_three_times(subscriber: FeedbackSubscriber) -> None:
    require_runtime("langchain.agents", "langchain")
    require_runtime("openinference.instrumentation.langchain", "otel")
    from langchain.agents import create_agent
    from langchain.agents.middleware import wrap_tool_call
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool
    from openinference.instrumentation import using_session
    from openinference.instrumentation.langchain import LangChainInstrumentor

    @tool
    def deploy(service: str, replicas: int = 1) -> str:
        """Deploy a service."""
        raise ConnectionError(f"registry unreachable while pushing {service}")

    @wrap_tool_call  # type: ignore[arg-type]
    def errors_as_messages(request: Any, handler: Any) -> Any:
        # The agent goes on after a failed tool, as production agents do; the
        # tool's own run (and so its span) still ends in an error.
        try:
            return handler(request)
        except ConnectionError as exc:
            return ToolMessage(content=f"error: {exc}", tool_call_id=request.tool_call["id"], status="error")

    class Scripted(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kw: Any) -> Scripted:  # type: ignore[override]
            return self

    calls = [
        AIMessage(
            content="", tool_calls=[{"name": "deploy", "args": args, "id": f"c{n}", "type": "tool_call"}]
        )
        for n, args in enumerate(
            [
                {"service": "web api", "replicas": 2},
                {"service": "web api", "replicas": 1},
                {"service": "web api now", "replicas": 1},
            ]
        )
    ]
    model = Scripted(messages=iter([*calls, AIMessage(content="could not deploy")]))
    provider = TracerProvider()
    processor = FeedbackSpanProcessor(subscriber)
    provider.add_span_processor(processor)
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        agent = create_agent(model, tools=[deploy], middleware=[errors_as_messages])
        with using_session("lc-otel-1"):
            out = agent.invoke({"messages": [{"role": "user", "content": "deploy the web api"}]})
    finally:
        instrumentor.uninstrument()
    assert out["messages"][-1].content == "could not deploy"
    repairs = _repairs(subscriber, processor)
    assert [(r.tool_id, r.context, r.trigger) for r in repairs] == [
        ("deploy", "deploy service=web api", "failure-burst")
    ]
    traces = subscriber.store.traces.list("lc-otel-1")
    assert len(traces) == 3 and all("registry unreachable" in t.agent_text for t in traces)
    provider.shutdown()


def test_own_spans_for_guidance_and_repair_runs_when_asked(subscriber: FeedbackSubscriber) -> None:
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    processor = FeedbackSpanProcessor(subscriber, emit_spans=True, tracer_provider=provider)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("test")
    for _ in range(3):
        _genai_tool(tracer, '{"query": "weather paris"}', fail=True)
    assert len(_repairs(subscriber, processor)) == 1
    found = processor.guidance_for(tool_id="web_search", context="web_search query=weather paris")
    assert found.items
    names = [s.name for s in exporter.get_finished_spans()]
    assert names.count("memos_feedback.repair") == 1 and names.count("memos_feedback.guidance_for") == 1
    guidance = next(s for s in exporter.get_finished_spans() if s.name == "memos_feedback.guidance_for")
    assert guidance.attributes is not None and guidance.attributes["memos_feedback.items"] == len(found.items)
    provider.shutdown()
    quiet = FeedbackSpanProcessor(subscriber)  # off by default: no tracer, no bus listener
    assert quiet.guidance_for(tool_id="web_search", context="web_search query=weather paris").items
    quiet.shutdown()


def test_spans_from_another_sdk_path_use_the_public_attributes(subscriber: FeedbackSubscriber) -> None:
    from opentelemetry.sdk.trace import ReadableSpan

    processor = FeedbackSpanProcessor(subscriber)
    for n in range(3):  # built by hand, as an exporter bridge would: a plain dict of attributes
        span = ReadableSpan(
            name="execute_tool web_search",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "web_search",
                "gen_ai.tool.call.arguments": json.dumps({"query": "weather paris", "page": n}),
                "error.type": "TimeoutError",
            },
        )
        processor.on_end(span)
    processor.on_end(ReadableSpan(name="no attributes at all"))
    repairs = _repairs(subscriber, processor)
    assert [(r.context, r.trigger) for r in repairs] == [("web_search query=weather paris", "failure-burst")]
    assert subscriber.store.traces.list("otel")[0].agent_text.startswith(
        "TimeoutError\n"
    )  # the message first
    processor.shutdown()


REPO = Path(__file__).resolve().parents[2]

# What the documented script's agent does: one search tool that times out three times.
_AGENT_RUNS = """
from opentelemetry.trace import Status, StatusCode

tracer = provider.get_tracer("script")
retries = (
    '{"query": "weather paris"}', '{"query": "weather paris", "page": 2}', '{"query": "weather paris"}')
for args in retries:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "web_search",
        "gen_ai.tool.call.arguments": args,
        "gen_ai.conversation.id": "conv-script",
    }
    with tracer.start_as_current_span("execute_tool web_search", attributes=attributes) as span:
        span.set_status(Status(StatusCode.ERROR, "upstream search timed out after 30 s"))
"""


def _documented_setup() -> str:
    doc = (REPO / "docs" / "INTEGRATIONS.md").read_text(encoding="utf-8")
    section = doc.split("## OpenTelemetry span processor", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "no python block in the OpenTelemetry section"
    return found.group(1)


def test_the_documented_script_leaves_its_repair_in_the_store(tmp_path: Path) -> None:
    """The docs' snippet as a short script ending in provider.shutdown(): the repair is stored on exit."""
    snippet = _documented_setup()
    assert "provider.shutdown()" in snippet  # the docs say what to call
    assert "# ... the agent runs ..." in snippet
    script = tmp_path / "agent.py"
    script.write_text(snippet.replace("# ... the agent runs ...", _AGENT_RUNS), encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'f.db'}"
    env = {**os.environ, "PYTHONPATH": str(REPO), "MEMOS_FEEDBACK_DB_URL": url}
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    store = open_store(url)
    try:
        repairs = store.repairs.list()
        assert [(r.tool_id, r.trigger, r.session_id) for r in repairs] == [
            ("web_search", "failure-burst", "conv-script")
        ]
        assert "timed out" in repairs[0].anti_pattern
    finally:
        store.close()


def test_a_long_traceback_in_the_status_keeps_its_exception_line(subscriber: FeedbackSubscriber) -> None:
    # Issue 43: OpenInference (LangChain) puts repr + the whole traceback in
    # the status; cut at the reason's cap it lost the exception's own line.
    require_runtime("langchain.agents", "langchain")
    require_runtime("openinference.instrumentation.langchain", "otel")
    from langchain_core.tools import tool
    from openinference.instrumentation import using_session
    from openinference.instrumentation.langchain import LangChainInstrumentor

    def push(layers: int) -> None:
        if layers == 0:
            raise ConnectionResetError(104, "Connection reset by peer")
        push(layers - 1)

    @tool
    def deploy(service: str) -> str:
        """Deploy a service."""
        try:
            push(12)
        except ConnectionResetError as exc:
            raise ConnectionError(f"registry unreachable while pushing {service}") from exc
        return "deployed"

    provider = TracerProvider()
    processor = FeedbackSpanProcessor(subscriber)
    provider.add_span_processor(processor)
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with using_session("lc-otel-tb"):
            for _ in range(3):
                with pytest.raises(ConnectionError):
                    deploy.invoke({"service": "web api"})
    finally:
        instrumentor.uninstrument()
    [repair] = _repairs(subscriber, processor)
    traces = subscriber.store.traces.list("lc-otel-tb")
    assert len(traces) == 3
    assert all(
        t.agent_text.startswith("ConnectionError: registry unreachable while pushing web api") for t in traces
    )
    assert "Traceback" not in traces[0].agent_text
    assert "registry unreachable while pushing web api" in repair.anti_pattern
    provider.shutdown()
