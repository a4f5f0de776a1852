"""OpenAI Agents SDK: error formatter + run hooks + ``with_guidance``, offline (``ScriptedModel``).

    python examples/openai_agents_agent.py

The tool raises three times with varying flags; the SDK turns each error
into a message for the model, the formatter records it; the third is a
burst, a repair is written, and the fourth model call's instructions
carry it.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from typing import Any

from _common import finish, show_prompt, start
from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from memos_feedback.adapters.openai_agents import FeedbackRunHooks, OpenAIAgentsFeedback

CALLS = itertools.count(1)


class PrintingHooks(FeedbackRunHooks):
    """The adapter's run hooks, plus a print of each model call's instructions as it starts."""

    async def on_llm_start(
        self, context: Any, agent: Any, system_prompt: str | None, input_items: Any
    ) -> None:
        show_prompt(next(CALLS), system_prompt or "")
        await super().on_llm_start(context, agent, system_prompt, input_items)


@function_tool
def install(package: str, manager: str, flags: str = "") -> str:
    """Install a package."""
    print(f"  tool: {manager} install {package} {flags} -> fails")
    raise RuntimeError(f"{manager} ERR! ERESOLVE unable to resolve dependency tree for {package}")


def main() -> int:
    subscriber = start("openai-agents")
    feedback = OpenAIAgentsFeedback(subscriber, session_id="example-openai-agents")
    model = ScriptedModel(
        [
            [function_call("install", {"package": "react", "manager": "npm"}, call_id="c1")],
            [
                function_call(
                    "install", {"package": "react", "manager": "npm", "flags": "--force"}, call_id="c2"
                )
            ],
            [
                function_call(
                    "install", {"package": "react", "manager": "npm", "flags": "--legacy"}, call_id="c3"
                )
            ],
            [assistant_message("npm keeps failing; I will follow the lesson above.")],
        ]
    )
    agent = Agent(
        name="installer",
        instructions=feedback.with_guidance("You set up JavaScript projects."),
        tools=[install],
        model=model,
    )
    config = RunConfig(tool_error_formatter=feedback.tool_error_formatter, tracing_disabled=True)
    hooks = PrintingHooks(feedback)
    asyncio.run(Runner.run(agent, "install react for the web app", run_config=config, hooks=hooks))
    prompts = [c.system_instructions or "" for c in model.calls]  # what the model really got
    repairs = subscriber.store.repairs.list()
    carried = bool(repairs) and repairs[0].preference in prompts[-1]
    return finish(subscriber, carried)


if __name__ == "__main__":
    sys.exit(main())
