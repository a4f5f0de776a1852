"""OpenAI Agents SDK: error formatter + run hooks + ``with_guidance``, offline (``ScriptedModel``).

    python examples/openai_agents_agent.py

Session 1: the tool raises three times with varying flags; the SDK turns
each error into a message for the model, the formatter records it; the
third is a burst, a repair is written, and the fourth model call's
instructions carry it. Then the user corrects the agent ("use pnpm instead
of npm"). Session 2: its first model call already carries that correction.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from typing import Any

from _common import CORRECTION, LESSON, SECOND_TASK, burst_lesson, finish, session, show_prompt, start
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


def run(subscriber: Any, session_id: str, model: ScriptedModel, text: str) -> list[str]:
    """One run of a session; the instructions each model call really got."""
    feedback = OpenAIAgentsFeedback(subscriber, session_id=session_id)
    agent = Agent(
        name="installer",
        instructions=feedback.with_guidance("You set up JavaScript projects."),
        tools=[install],
        model=model,
    )
    config = RunConfig(tool_error_formatter=feedback.tool_error_formatter, tracing_disabled=True)
    asyncio.run(Runner.run(agent, text, run_config=config, hooks=PrintingHooks(feedback)))
    return [c.system_instructions or "" for c in model.calls]


def main() -> int:
    subscriber = start("openai-agents")
    session("session 1: the tool keeps failing")
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
    after_burst = run(subscriber, "example-openai-agents-1", model, "install react for the web app")[-1]
    burst = burst_lesson(subscriber)
    session(f"session 1: the user corrects the agent: {CORRECTION!r}")
    understood = ScriptedModel([[assistant_message("Understood: pnpm from now on.")]])
    run(subscriber, "example-openai-agents-1", understood, CORRECTION)
    subscriber.flush(timeout=10)  # the correction's repair is written (the next session starts later)
    session("session 2: a new task")
    fresh = ScriptedModel([[assistant_message("I will use pnpm.")]])
    first_call = run(subscriber, "example-openai-agents-2", fresh, SECOND_TASK)[0]
    return finish(
        subscriber,
        {
            "the model call after the burst carried its repair": burst in after_burst,
            "the next session's first model call carried the correction": LESSON in first_call,
        },
    )


if __name__ == "__main__":
    sys.exit(main())
