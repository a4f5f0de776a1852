"""LangChain 1.x: ``FeedbackMiddleware`` for ``create_agent``, ``FeedbackCallbackHandler`` for the rest.

Extra ``[langchain]``. docs/ADAPTERS.md explains the choices; in short:

* ``wrap_tool_call`` / ``awrap_tool_call`` see every tool call's outcome:
  an exception the tool raised (re-raised unchanged after recording) and a
  ``ToolMessage(status="error")`` the runtime or the tool made of a
  failure — invalid arguments, an unknown tool name, a tool with
  ``handle_tool_error`` — which callbacks alone miss. Anything else is a
  success. Interrupts (``GraphBubbleUp``) are neither.
* ``before_agent`` / ``before_model`` give the newest user message to the
  classifier, once per distinct text.
* ``wrap_model_call`` / ``awrap_model_call`` add the guidance block to the
  system message of that one model call (``request.override``); the
  agent's own system prompt is not changed.

The session is ``session_id`` when given, else the run's ``thread_id``
(``config["configurable"]["thread_id"]``), else one id per middleware.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from uuid import UUID

from ..runtime.subscriber import FeedbackSubscriber
from .core import AdapterCore, ContextOf, log_adapter_error, missing_extra, soft, with_block

# The runtime comes with the extra; without it, one clear line instead of a bare
# ModuleNotFoundError from deep inside the import.
try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
    from langchain.agents.middleware.types import ModelCallResult, ToolCallRequest
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
    from langgraph.errors import GraphBubbleUp
    from langgraph.runtime import Runtime
    from langgraph.types import Command
except ImportError as exc:
    raise missing_extra(__name__, "langchain", exc) from exc

__all__ = ["FeedbackCallbackHandler", "FeedbackMiddleware"]

_OUTPUT_CAP = 300


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    return "" if content is None else str(content)


def newest_user_text(messages: Sequence[Any]) -> str | None:
    """The text of the newest ``HumanMessage`` in ``messages``, if any."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return _text_of(message.content)
    return None


def agent_text_before_newest_user(messages: Sequence[Any]) -> str | None:
    """The text of the newest ``AIMessage`` before the newest ``HumanMessage``: the turn it answers."""
    seen_user = False
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            if seen_user:
                return None  # two user messages in a row: no agent turn between them
            seen_user = True
        elif seen_user and isinstance(message, AIMessage):
            text = _text_of(message.content)
            if text.strip():
                return text
    return None


def with_guidance_message(system: SystemMessage | None, block: str) -> SystemMessage:
    """``system`` with the guidance block appended (a text block when the content is a list)."""
    if system is None:
        return SystemMessage(content=block)
    if isinstance(system.content, list):
        return SystemMessage(content=[*system.content, {"type": "text", "text": block}])
    return SystemMessage(content=with_block(_text_of(system.content), block))


def _thread_id(config: Any) -> str | None:
    if not isinstance(config, dict):
        return None
    configurable = config.get("configurable")
    if isinstance(configurable, dict):
        tid = configurable.get("thread_id")
        if tid is not None and str(tid):
            return str(tid)
    return None


def _current_thread_id() -> str | None:
    try:
        from langgraph.config import get_config

        return _thread_id(get_config())
    except Exception:  # outside a runnable context
        return None


def _failed_tool_messages(result: Any) -> list[ToolMessage]:
    if isinstance(result, ToolMessage):
        return [result] if result.status == "error" else []
    if isinstance(result, Command) and isinstance(result.update, dict):
        msgs = result.update.get("messages") or []
        return [m for m in msgs if isinstance(m, ToolMessage) and m.status == "error"]
    return []


class FeedbackMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Records tool outcomes and user messages; puts guidance into each model call.

    ``context_of(tool_name, args)`` overrides the default tool-call context
    (``memos_feedback.adapters.core.default_context_of``); the other
    keyword arguments go to ``AdapterCore``.
    """

    def __init__(
        self,
        subscriber: FeedbackSubscriber,
        *,
        session_id: str | None = None,
        context_of: ContextOf | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        self.core = AdapterCore(subscriber, context_of=context_of, **options)
        self.session_id = session_id
        self._fallback_session = f"langchain-{uuid.uuid4().hex[:12]}"

    # -- session ----------------------------------------------------------------

    def _session(self, config: Any = None) -> str:
        if self.session_id:
            return self.session_id
        return _thread_id(config) or _current_thread_id() or self._fallback_session

    # -- user messages ------------------------------------------------------------

    @soft(None)
    def _feed_user(self, state: Any) -> None:
        messages = state.get("messages", []) if isinstance(state, dict) else []
        text = newest_user_text(messages)
        if text:
            self.core.user_message(self._session(), text, agent_text=agent_text_before_newest_user(messages))

    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        self._feed_user(state)
        return None

    async def abefore_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        await asyncio.to_thread(self._feed_user, state)
        return None

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        self._feed_user(state)
        return None

    async def abefore_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        await asyncio.to_thread(self._feed_user, state)
        return None

    # -- model calls ------------------------------------------------------------------

    @soft(None)
    def _guided(self, request: ModelRequest[Any], session: str) -> ModelRequest[Any] | None:
        block = self.core.guidance(session)
        if not block:
            return None
        return request.override(system_message=with_guidance_message(request.system_message, block))

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelCallResult[Any]:
        guided = self._guided(request, self._session())
        return handler(guided if guided is not None else request)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelCallResult[Any]:
        session = self._session()  # read the thread id in this task's context
        guided = await asyncio.to_thread(self._guided, request, session)
        return await handler(guided if guided is not None else request)

    # -- tool calls -----------------------------------------------------------------------

    def _call_session(self, request: ToolCallRequest) -> str:
        runtime = getattr(request, "runtime", None)
        return self._session(getattr(runtime, "config", None))

    @soft(None)
    def _record_exception(self, request: ToolCallRequest, exc: BaseException) -> None:
        call = request.tool_call
        self.core.tool_failed(
            self._call_session(request),
            str(call.get("name", "")),
            call.get("args", {}),
            f"{type(exc).__name__}: {exc}",
            error_code=type(exc).__name__,
        )

    @soft(None)
    def _record_result(self, request: ToolCallRequest, result: Any) -> None:
        call = request.tool_call
        name = str(call.get("name", ""))
        args = call.get("args", {})
        session = self._call_session(request)
        failed = _failed_tool_messages(result)
        if failed:
            reason = _text_of(failed[0].content)
            code = "unknown-tool" if request.tool is None else "error-message"
            self.core.tool_failed(session, name, args, reason, error_code=code)
            return
        output = _text_of(result.content) if isinstance(result, ToolMessage) else ""
        self.core.tool_succeeded(session, name, args, output[:_OUTPUT_CAP])

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        try:
            result = handler(request)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            self._record_exception(request, exc)
            raise
        self._record_result(request, result)
        return result

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        try:
            result = await handler(request)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            await asyncio.to_thread(self._record_exception, request, exc)
            raise
        await asyncio.to_thread(self._record_result, request, result)
        return result

    def guidance(self, session_id: str | None = None) -> str:
        """The guidance block the next model call of the session gets (``""`` when none)."""
        return self.core.guidance(session_id or self._session())


class FeedbackCallbackHandler(BaseCallbackHandler):
    """For LangChain code that does not use ``create_agent``: tool outcomes from callbacks.

    ``on_tool_error`` is a failure, so is ``on_tool_end`` with a
    ``ToolMessage(status="error")`` (a tool with ``handle_tool_error`` that
    was called with a tool call id); other ends are successes. Chat model
    starts feed the newest user message to the classifier. Callbacks
    cannot change a prompt: put ``handler.guidance()`` into yours.
    Validation errors of a tool called without a tool call id, and tool
    names the model invented, never reach a callback — use the middleware
    where you can.
    """

    raise_error = False
    run_inline = True

    def __init__(
        self,
        subscriber: FeedbackSubscriber,
        *,
        session_id: str | None = None,
        context_of: ContextOf | None = None,
        **options: Any,
    ) -> None:
        self.core = AdapterCore(subscriber, context_of=context_of, **options)
        self.session_id = session_id
        self._fallback_session = f"langchain-{uuid.uuid4().hex[:12]}"
        self._runs: dict[UUID, tuple[str, Any, str]] = {}

    def _session(self, metadata: dict[str, Any] | None) -> str:
        if self.session_id:
            return self.session_id
        tid = (metadata or {}).get("thread_id")
        return str(tid) if tid else self._fallback_session

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            name = str((serialized or {}).get("name") or kwargs.get("name") or "tool")
            self._runs[run_id] = (name, inputs if inputs is not None else input_str, self._session(metadata))
            while len(self._runs) > 10_000:  # runs that never ended
                self._runs.pop(next(iter(self._runs)))
        except Exception:
            log_adapter_error("FeedbackCallbackHandler.on_tool_start")

    def on_tool_end(
        self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        try:
            started = self._runs.pop(run_id, None)
            if started is None:
                return
            name, args, session = started
            failed = _failed_tool_messages(output)
            if failed:
                reason = _text_of(failed[0].content)
                self.core.tool_failed(session, name, args, reason, error_code="error-message")
                return
            text = _text_of(output.content) if isinstance(output, ToolMessage) else _text_of(output)
            self.core.tool_succeeded(session, name, args, text[:_OUTPUT_CAP])
        except Exception:
            log_adapter_error("FeedbackCallbackHandler.on_tool_end")

    def on_tool_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        try:
            started = self._runs.pop(run_id, None)
            if started is None:
                return
            name, args, session = started
            self.core.tool_failed(
                session, name, args, f"{type(error).__name__}: {error}", error_code=type(error).__name__
            )
        except Exception:
            log_adapter_error("FeedbackCallbackHandler.on_tool_error")

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            text = newest_user_text(messages[-1]) if messages else None
            if text:
                agent = agent_text_before_newest_user(messages[-1])
                self.core.user_message(self._session(metadata), text, agent_text=agent)
        except Exception:
            log_adapter_error("FeedbackCallbackHandler.on_chat_model_start")

    def guidance(self, session_id: str | None = None) -> str:
        """The guidance block for the session's next model call (``""`` when none)."""
        return self.core.guidance(session_id or self._session(None))
