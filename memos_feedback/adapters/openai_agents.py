"""OpenAI Agents SDK: failures from error formatters, successes from run hooks, guidance in instructions.

Extra ``[openai-agents]``. The SDK has no tool-error hook, so one
``OpenAIAgentsFeedback`` object offers the three places a failure shows up:

* ``tool_error_formatter`` — for ``RunConfig(tool_error_formatter=...)``:
  every ``function_tool`` that keeps the SDK's default failure function,
  and unknown tool names (with ``tool_not_found_behavior=
  "return_error_to_model"``). Approval rejections are not failures;
* ``failure_error_function(inner)`` — for ``function_tool(...,
  failure_error_function=...)`` on tools with their own failure message
  (the SDK does not call the formatter for those);
* ``hooks`` (a ``FeedbackRunHooks``) — for ``Runner.run(..., hooks=...)``:
  ``on_tool_end`` records a success unless that call was just recorded as
  a failure; ``on_llm_start`` gives the newest user input to the classifier.
  Wired alone (no formatter), a result that is the SDK's own failure
  message — ``default_tool_error_function``'s text, or its timeout
  message — is recorded as the failure it is (without the exception's
  text, which the SDK does not pass on). A tool with its own
  ``failure_error_function`` not wrapped by ``failure_error_function``
  returns text the hooks cannot tell from a result.

Both formatters return the SDK's own message to the model (``None`` from
the formatter; the inner or default failure function's text) unless
``message=`` is given. ``with_guidance(instructions)`` wraps an agent's
instructions (a string or a callable) so the guidance block is appended
before every model call.

The session is ``session_id`` (a string, or a callable of the run context)
when given; else a ``session_id`` key or attribute of the run's context
object; else one id per ``OpenAIAgentsFeedback``.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..runtime.subscriber import FeedbackSubscriber
from .core import AdapterCore, ContextOf, log_adapter_error, missing_extra, soft, with_block

# The runtime comes with the extra; without it, one clear line instead of a bare
# ModuleNotFoundError from deep inside the import.
try:
    from agents import Agent, RunContextWrapper, RunHooks, Tool
    from agents.run_config import ToolErrorFormatterArgs
    from agents.tool import default_tool_error_function
    from agents.tool_context import ToolContext
except ImportError as exc:
    raise missing_extra(__name__, "openai-agents", exc) from exc

__all__ = ["FeedbackRunHooks", "OpenAIAgentsFeedback"]

Instructions = str | Callable[[RunContextWrapper[Any], Agent[Any]], str | Awaitable[str]] | None
ErrorFunction = Callable[[RunContextWrapper[Any], Exception], str | Awaitable[str]]
_OUTPUT_CAP = 300
_FAILED_CALLS_KEPT = 1_000
# The SDK's messages for a failed call (agents.tool: default_tool_error_function,
# default_tool_timeout_error_message): what on_tool_end sees when no formatter ran.
_SDK_FAILURE = re.compile(r"Tool '[^'\n]{1,200}' timed out after [0-9.e+-]{1,32} seconds\.")


def _sdk_failure(result: object, ctx: RunContextWrapper[Any]) -> str | None:
    """The SDK's failure message when ``result`` is one (``on_tool_end`` without the formatter), else None."""
    if not isinstance(result, str) or len(result) > 400:
        return None
    try:
        default = default_tool_error_function(ctx, RuntimeError())
    except Exception:  # a future SDK's default may want more of the context
        default = None
    if result == default or _SDK_FAILURE.fullmatch(result):
        return result
    return None


def _item_text(item: Any) -> str | None:
    content = item.get("content") if isinstance(item, Mapping) else getattr(item, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            text = part.get("text") if isinstance(part, Mapping) else getattr(part, "text", None)
            if isinstance(text, str):
                texts.append(text)
        return "\n".join(texts) or None
    return None


def _role(item: Any) -> Any:
    return item.get("role") if isinstance(item, Mapping) else getattr(item, "role", None)


def _newest_turn(items: Any) -> tuple[str | None, str | None]:
    """The newest user message's text and the assistant's text just before it (the turn it answers)."""
    if isinstance(items, str):
        return items, None
    if not isinstance(items, list):
        return None, None
    for i in range(len(items) - 1, -1, -1):
        if _role(items[i]) != "user":
            continue
        user = _item_text(items[i])
        for earlier in reversed(items[:i]):
            role = _role(earlier)
            if role == "user":
                break
            if role == "assistant" and (agent := _item_text(earlier)) and agent.strip():
                return user, agent
        return user, None
    return None, None


class OpenAIAgentsFeedback:
    """One subscriber wired into the OpenAI Agents SDK (module docstring).

    ``context_of(tool_name, args)`` overrides the default tool-call context
    (``args`` is the parsed JSON arguments); the other keyword arguments go
    to ``AdapterCore``.
    """

    def __init__(
        self,
        subscriber: FeedbackSubscriber,
        *,
        session_id: str | Callable[[RunContextWrapper[Any]], str | None] | None = None,
        context_of: ContextOf | None = None,
        **options: Any,
    ) -> None:
        self.core = AdapterCore(subscriber, context_of=context_of, **options)
        self.session_id = session_id
        self._fallback_session = f"openai-agents-{uuid.uuid4().hex[:12]}"
        self._failed_calls: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self.hooks = FeedbackRunHooks(self)

    # -- session and bookkeeping ----------------------------------------------

    def session_of(self, ctx: RunContextWrapper[Any] | None) -> str:
        """The session a run context belongs to (module docstring)."""
        try:
            if callable(self.session_id):
                got = self.session_id(ctx) if ctx is not None else None
                if got:
                    return str(got)
            elif self.session_id:
                return self.session_id
            user = getattr(ctx, "context", None)
            sid = user.get("session_id") if isinstance(user, Mapping) else getattr(user, "session_id", None)
            if sid:
                return str(sid)
        except Exception:
            log_adapter_error("OpenAIAgentsFeedback.session_of")
        return self._fallback_session

    def _mark_failed(self, call_id: str | None) -> None:
        if not call_id:
            return
        with self._lock:
            self._failed_calls[call_id] = None
            while len(self._failed_calls) > _FAILED_CALLS_KEPT:
                self._failed_calls.popitem(last=False)

    def _was_failed(self, call_id: str | None) -> bool:
        if not call_id:
            return False
        with self._lock:
            return self._failed_calls.pop(call_id, 0) is None

    @soft(None)
    def _record_failure(
        self,
        ctx: RunContextWrapper[Any] | None,
        tool_name: str,
        call_id: str | None,
        error: BaseException | None,
    ) -> None:
        args = ctx.tool_arguments if isinstance(ctx, ToolContext) else None
        if error is None:
            reason, code = f"tool {tool_name!r} not found", "tool-not-found"
        else:
            reason, code = f"{type(error).__name__}: {error}", type(error).__name__
        self._mark_failed(call_id)
        self.core.tool_failed(self.session_of(ctx), tool_name, args, reason, error_code=code)

    # -- the two failure entry points --------------------------------------------

    async def tool_error_formatter(self, args: ToolErrorFormatterArgs[Any]) -> str | None:
        """``RunConfig(tool_error_formatter=feedback.tool_error_formatter)``; keeps the SDK's message."""
        if args.kind in ("tool_exception", "tool_not_found"):
            await asyncio.to_thread(
                self._record_failure, args.run_context, args.tool_name, args.call_id, args.error
            )
        return None

    def failure_error_function(
        self, inner: ErrorFunction | None = None, *, message: str | None = None
    ) -> Callable[[RunContextWrapper[Any], Exception], Awaitable[str]]:
        """A ``failure_error_function`` for ``function_tool`` that records the failure.

        The model gets ``message`` when given, else what ``inner`` (default:
        the SDK's ``default_tool_error_function``) returns.
        """

        async def on_failure(ctx: RunContextWrapper[Any], error: Exception) -> str:
            tool_name = ctx.tool_name if isinstance(ctx, ToolContext) else "tool"
            call_id = ctx.tool_call_id if isinstance(ctx, ToolContext) else None
            await asyncio.to_thread(self._record_failure, ctx, tool_name, call_id, error)
            if message is not None:
                return message
            result = (inner or default_tool_error_function)(ctx, error)
            if inspect.isawaitable(result):
                result = await result
            return str(result)

        return on_failure

    # -- user input and guidance ------------------------------------------------------

    @soft(None)
    def _feed_user(self, ctx: RunContextWrapper[Any] | None, items: Any) -> None:
        text, agent = _newest_turn(items)
        if text:
            self.core.user_message(self.session_of(ctx), text, agent_text=agent)

    def _block(self, ctx: RunContextWrapper[Any]) -> str:
        # The turn's input is known before the first model call's instructions.
        self._feed_user(ctx, getattr(ctx, "turn_input", None))
        return self.core.guidance(self.session_of(ctx))

    def with_guidance(
        self, instructions: Instructions
    ) -> Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str]]:
        """Wrap an agent's instructions: the guidance block is appended before every model call."""

        async def guided(ctx: RunContextWrapper[Any], agent: Agent[Any]) -> str:
            base: Any = instructions
            if callable(instructions):
                base = instructions(ctx, agent)
                if inspect.isawaitable(base):
                    base = await base
            try:
                block = await asyncio.to_thread(self._block, ctx)
            except Exception:
                log_adapter_error("OpenAIAgentsFeedback.with_guidance")
                block = ""
            return with_block(base if isinstance(base, str) else None, block)

        return guided

    def guidance(self, session_id: str | None = None) -> str:
        """The guidance block for the session's next model call (``""`` when none)."""
        return self.core.guidance(session_id or self.session_of(None))


class FeedbackRunHooks(RunHooks[Any]):
    """``Runner.run(..., hooks=feedback.hooks)``: successes and the user's input."""

    def __init__(self, feedback: OpenAIAgentsFeedback) -> None:
        self.feedback = feedback

    async def on_llm_start(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        system_prompt: str | None,
        input_items: list[Any],
    ) -> None:
        await asyncio.to_thread(self.feedback._feed_user, context, input_items)

    @soft(None)
    def _record_end(self, context: RunContextWrapper[Any], tool: Tool, result: object) -> None:
        if not isinstance(context, ToolContext):
            return  # not a function tool: no arguments, no call id
        if self.feedback._was_failed(context.tool_call_id):
            return
        failure = _sdk_failure(result, context)
        if failure is not None:
            # Hooks wired without the formatter: the SDK's failure text is a failure, not a success.
            self.feedback.core.tool_failed(
                self.feedback.session_of(context),
                context.tool_name,
                context.tool_arguments,
                failure,
                error_code="tool-error",
            )
            return
        self.feedback.core.tool_succeeded(
            self.feedback.session_of(context),
            context.tool_name,
            context.tool_arguments,
            str(result)[:_OUTPUT_CAP],
        )

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: object
    ) -> None:
        await asyncio.to_thread(self._record_end, context, tool, result)
