"""OpenAI Agents SDK: error formatter + run hooks + ``with_guidance``, offline (``ScriptedModel``).

    python examples/openai_agents_agent.py

The tool raises three times with varying flags; the SDK turns each error
into a message for the model, the formatter records it; the third is a
burst, a repair is written, and the fourth model call's instructions
carry it.
"""

from __future__ import annotations

import asyncio
import sys

from _common import finish, show_prompt, start
from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from memos_feedback.adapters.openai_agents import OpenAIAgentsFeedback


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
    asyncio.run(Runner.run(agent, "install react for the web app", run_config=config, hooks=feedback.hooks))
    prompts = [c.system_instructions or "" for c in model.calls]
    for n, prompt in enumerate(prompts, start=1):
        show_prompt(n, prompt)
    repairs = subscriber.store.repairs.list()
    carried = bool(repairs) and repairs[0].preference in prompts[-1]
    return finish(subscriber, carried)


if __name__ == "__main__":
    sys.exit(main())
