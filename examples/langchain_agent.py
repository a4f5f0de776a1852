"""LangChain 1.x: ``FeedbackMiddleware`` in ``create_agent``, offline (a scripted chat model).

    python examples/langchain_agent.py

The tool fails three times with varying flags; the third failure is a
burst, a repair is written, and the fourth model call's system prompt
carries it.
"""

from __future__ import annotations

import sys
from typing import Any

from _common import finish, show_prompt, start
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


def main() -> int:
    subscriber = start("langchain")
    model = ScriptedChat(
        messages=iter(
            [
                call(1, package="react", manager="npm"),
                call(2, package="react", manager="npm", flags="--force"),
                call(3, package="react", manager="npm", flags="--legacy-peer-deps"),
                AIMessage("npm keeps failing; I will follow the lesson above."),
            ]
        )
    )
    agent = create_agent(
        model,
        tools=[install],
        system_prompt="You set up JavaScript projects.",
        middleware=[FeedbackMiddleware(subscriber, session_id="example-langchain")],
    )
    agent.invoke({"messages": [{"role": "user", "content": "install react for the web app"}]})
    repairs = subscriber.store.repairs.list()
    carried = bool(repairs) and repairs[0].preference in PROMPTS[-1]
    return finish(subscriber, carried)


if __name__ == "__main__":
    sys.exit(main())
