"""Claude Agent SDK: ``feedback_hooks`` over the SDK's control protocol, offline.

    python examples/claude_agent_hooks.py

No CLI and no network: ``ScriptedCLI`` is a ``Transport`` that plays the
CLI's side — it registers the hooks, then reports three failed Bash runs
(``PostToolUseFailure``, exit code 1) the way the CLI does. The third is a
burst, a repair is written, and the hook's answer carries it as
``additionalContext``. The real CLI appends that to the failed tool result
the model reads on its next call (``make test-claude-cli`` checks this with
the CLI bundled in the SDK; docs/ADAPTERS.md).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

from _common import finish, start
from claude_agent_sdk import ClaudeAgentOptions, Transport, query

from memos_feedback.adapters.claude_agent import feedback_hooks

SESSION = "example-claude"
COMMANDS = ["npm install", "npm install --force", "npm install --legacy-peer-deps"]


class ScriptedCLI(Transport):
    def __init__(self) -> None:
        self.hook_ids: dict[str, list[str]] = {}
        self.contexts: list[str] = []
        self._out: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._answers: dict[str, asyncio.Future[dict[str, Any]]] = {}

    async def connect(self) -> None:
        pass

    def is_ready(self) -> bool:
        return True

    async def end_input(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        while (msg := await self._out.get()) is not None:
            yield msg

    async def write(self, data: str) -> None:
        for line in filter(str.strip, data.splitlines()):
            msg = json.loads(line)
            if msg["type"] == "control_request" and msg["request"]["subtype"] == "initialize":
                for event, matchers in (msg["request"].get("hooks") or {}).items():
                    self.hook_ids[event] = [i for m in matchers for i in m["hookCallbackIds"]]
                reply = {"subtype": "success", "request_id": msg["request_id"], "response": {}}
                await self._out.put({"type": "control_response", "response": reply})
            elif msg["type"] == "control_response":
                self._answers.pop(msg["response"]["request_id"]).set_result(msg["response"]["response"])
            elif msg["type"] == "user":
                asyncio.get_running_loop().create_task(self._play(msg["message"]["content"]))

    async def _hook(self, data: dict[str, Any]) -> str:
        context = ""
        for callback_id in self.hook_ids.get(data["hook_event_name"], []):
            request_id = f"r{len(self._answers)}-{callback_id}-{len(self.contexts)}"
            self._answers[request_id] = asyncio.get_running_loop().create_future()
            request = {
                "subtype": "hook_callback",
                "callback_id": callback_id,
                "input": data,
                "tool_use_id": None,
            }
            await self._out.put({"type": "control_request", "request_id": request_id, "request": request})
            answer = await self._answers[request_id]
            context += answer.get("hookSpecificOutput", {}).get("additionalContext", "")
        self.contexts.append(context)
        return context

    async def _play(self, prompt: str) -> None:
        base = {"session_id": SESSION, "transcript_path": "/tmp/transcript.jsonl", "cwd": "/repo"}
        await self._hook({**base, "hook_event_name": "UserPromptSubmit", "prompt": prompt})
        for n, command in enumerate(COMMANDS, start=1):
            print(f"  Bash: {command} -> exit code 1")
            context = await self._hook(
                {
                    **base,
                    "hook_event_name": "PostToolUseFailure",
                    "tool_name": "Bash",
                    "tool_input": {"command": command, "description": f"attempt {n}"},
                    "tool_use_id": f"tu{n}",
                    "error": "Exit code 1\nnpm ERR! ERESOLVE unable to resolve dependency tree",
                }
            )
            print(
                f"    hook answer: {'additionalContext for the next model call:' if context else '(nothing)'}"
            )
            for line in context.splitlines():
                print(f"      {line}")
        result = {"type": "result", "subtype": "success", "duration_ms": 1, "duration_api_ms": 1}
        result |= {"is_error": False, "num_turns": 1, "session_id": SESSION, "result": "done"}
        await self._out.put(result)
        await self._out.put(None)


async def run(cli: ScriptedCLI, options: ClaudeAgentOptions) -> None:
    async for _ in query(prompt="install the web dependencies", options=options, transport=cli):
        pass


def main() -> int:
    subscriber = start("claude-agent")
    cli = ScriptedCLI()
    asyncio.run(run(cli, ClaudeAgentOptions(hooks=feedback_hooks(subscriber))))
    repairs = subscriber.store.repairs.list()
    carried = bool(repairs) and repairs[0].preference in cli.contexts[-1]
    return finish(subscriber, carried)


if __name__ == "__main__":
    sys.exit(main())
