"""Claude Agent SDK: ``feedback_hooks(subscriber)`` for ``ClaudeAgentOptions(hooks=...)``.

Extra ``[claude-agent]``. The hooks:

* ``PostToolUseFailure`` — records the failure (a user interrupt is not
  one) and returns the guidance block as ``additionalContext``, which the
  CLI shows the model with the failed tool result;
* ``PostToolUse`` — records a success; a ``Bash`` result that reports a
  non-zero exit code (an ``exit_code``/``exitCode``/``returnCode`` field,
  or output starting ``Exit code N``) is a failure instead, recorded and
  answered like one;
* ``UserPromptSubmit`` — gives the prompt to the classifier and returns
  the guidance block as ``additionalContext``.

The session is the CLI's ``session_id`` from the hook input. The default
tool-call context leaves out ``description`` (Claude writes a new one for
every retry of a Bash command) and is otherwise
``memos_feedback.adapters.core.default_context_of``. Every callback answers
``{}`` rather than raise when anything goes wrong.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from ..runtime.subscriber import FeedbackSubscriber
from ..text.tool_context import EXIT_LINE, bash_exit_code, claude_context_of, response_text
from .core import AdapterCore, ContextOf, log_adapter_error, missing_extra

# The runtime comes with the extra; without it, one clear line instead of a bare
# ModuleNotFoundError from deep inside the import.
try:
    from claude_agent_sdk import HookContext, HookInput, HookJSONOutput, HookMatcher
except ImportError as exc:
    raise missing_extra(__name__, "claude-agent", exc) from exc

__all__ = ["bash_exit_code", "claude_context_of", "feedback_hooks"]

_REASON_CAP = 500


def _answer(event: str, block: str) -> HookJSONOutput:
    if not block:
        return {}
    output: Any = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": block}}
    return output  # type: ignore[no-any-return]


class _ClaudeHooks:
    def __init__(self, core: AdapterCore) -> None:
        self.core = core

    def _failure(self, data: Mapping[str, Any], reason: str, code: str) -> str:
        session = str(data.get("session_id") or "claude")
        self.core.tool_failed(
            session, str(data.get("tool_name") or "tool"), data.get("tool_input"), reason, error_code=code
        )
        return self.core.guidance(session)

    def post_tool_use_failure(self, data: Mapping[str, Any]) -> HookJSONOutput:
        if data.get("is_interrupt"):
            return {}
        error = str(data.get("error") or "tool failed")
        m = EXIT_LINE.match(error)
        code = f"exit {m.group(1)}" if m else "error"
        return _answer("PostToolUseFailure", self._failure(data, error[:_REASON_CAP], code))

    def post_tool_use(self, data: Mapping[str, Any]) -> HookJSONOutput:
        tool = str(data.get("tool_name") or "tool")
        response = data.get("tool_response")
        if tool == "Bash":
            exit_code = bash_exit_code(response)
            if exit_code:
                reason = f"Exit code {exit_code}\n{response_text(response)}"[:_REASON_CAP]
                return _answer("PostToolUse", self._failure(data, reason, f"exit {exit_code}"))
        session = str(data.get("session_id") or "claude")
        self.core.tool_succeeded(session, tool, data.get("tool_input"), response_text(response)[:300])
        return {}

    def user_prompt_submit(self, data: Mapping[str, Any]) -> HookJSONOutput:
        session = str(data.get("session_id") or "claude")
        prompt = data.get("prompt")
        if isinstance(prompt, str):
            self.core.user_message(session, prompt)
        return _answer("UserPromptSubmit", self.core.guidance(session))

    async def dispatch(
        self, data: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        try:
            if not isinstance(data, Mapping):
                return {}
            event = data.get("hook_event_name")
            handler = {
                "PostToolUseFailure": self.post_tool_use_failure,
                "PostToolUse": self.post_tool_use,
                "UserPromptSubmit": self.user_prompt_submit,
            }.get(str(event))
            if handler is None:
                return {}
            return await asyncio.to_thread(handler, data)
        except Exception:
            log_adapter_error(
                f"claude hook {data.get('hook_event_name') if isinstance(data, Mapping) else '?'}"
            )
            return {}


def feedback_hooks(
    subscriber: FeedbackSubscriber,
    *,
    context_of: ContextOf | None = None,
    timeout: float | None = None,
    **options: Any,
) -> dict[Any, list[HookMatcher]]:
    """The ``hooks`` mapping for ``ClaudeAgentOptions`` (module docstring).

    Merge it with hooks of your own per event (lists concatenate).
    ``timeout`` goes to each ``HookMatcher``; the other keyword arguments
    to ``AdapterCore``.
    """
    hooks = _ClaudeHooks(AdapterCore(subscriber, context_of=context_of or claude_context_of, **options))
    return {
        event: [HookMatcher(matcher=None, hooks=[hooks.dispatch], timeout=timeout)]
        for event in ("PostToolUseFailure", "PostToolUse", "UserPromptSubmit")
    }
