"""LangChain 1.x: ``FeedbackMiddleware`` in ``create_agent``, offline (a scripted chat model).

    python examples/langchain_agent.py

Session 1: the tool fails three times with varying flags; the third
failure is a burst, a repair is written, and the fourth model call's system
prompt carries it. Then the user corrects the agent ("use pnpm instead of
npm"). Session 2: its first model call already carries that correction.
"""

from __future__ import annotations

import sys
from typing import Any

from _common import CORRECTION, LESSON, SECOND_TASK, burst_lesson, finish, session, show_prompt, start
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.tools import ToolException, tool

from memos_feedback.adapters.langchain import FeedbackMiddleware


class ScriptedChat(GenericFakeChatModel):
    """Scripted replies; prints the system prompt of every call."""

    def bind_tools(self, tools: Any, **kw: Any) -> ScriptedChat:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kw: Any) -> Any:
        system = messages[0].text if messages and isinstance(messages[0], SystemMessage) else ""
        PROMPTS.append(system)
        show_prompt(len(PROMPTS), system)
        return super()._generate(messages, *args, **kw)


PROMPTS: list[str] = []


@tool
def install(package: str, manager: str, flags: str = "") -> str:
    """Install a package."""
    print(f"  tool: {manager} install {package} {flags} -> fails")
    raise ToolException(f"{manager} ERR! ERESOLVE unable to resolve dependency tree for {package}")


install.handle_tool_error = True  # the error goes back to the model as a message


def call(n: int, **args: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "install", "args": args, "id": f"c{n}", "type": "tool_call"}])


def agent_for(subscriber: Any, session_id: str, replies: list[AIMessage]) -> Any:
    return create_agent(
        ScriptedChat(messages=iter(replies)),
        tools=[install],
        system_prompt="You set up JavaScript projects.",
        middleware=[FeedbackMiddleware(subscriber, session_id=session_id)],
    )


def main() -> int:
    subscriber = start("langchain")
    session("session 1: the tool keeps failing")
    replies = [
        call(1, package="react", manager="npm"),
        call(2, package="react", manager="npm", flags="--force"),
        call(3, package="react", manager="npm", flags="--legacy-peer-deps"),
        AIMessage("npm keeps failing; I will follow the lesson above."),
    ]
    first = agent_for(subscriber, "example-langchain-1", replies)
    state = first.invoke({"messages": [{"role": "user", "content": "install react for the web app"}]})
    after_burst, burst = PROMPTS[-1], burst_lesson(subscriber)
    session(f"session 1: the user corrects the agent: {CORRECTION!r}")
    first = agent_for(subscriber, "example-langchain-1", [AIMessage("Understood: pnpm from now on.")])
    first.invoke({"messages": [*state["messages"], {"role": "user", "content": CORRECTION}]})
    subscriber.flush(timeout=10)  # the correction's repair is written (the next session starts later)
    session("session 2: a new task")
    second = agent_for(subscriber, "example-langchain-2", [AIMessage("I will use pnpm.")])
    second.invoke({"messages": [{"role": "user", "content": SECOND_TASK}]})
    return finish(
        subscriber,
        {
            "the model call after the burst carried its repair": burst in after_burst,
            "the next session's first model call carried the correction": LESSON in PROMPTS[-1],
        },
    )


if __name__ == "__main__":
    sys.exit(main())
