"""Claude Agent SDK: ``feedback_hooks`` over the SDK's control protocol, offline.

    python examples/claude_agent_hooks.py

No CLI and no network: ``ScriptedCLI`` is a ``Transport`` that plays the
CLI's side — it registers the hooks, then reports three failed Bash runs
(``PostToolUseFailure``, exit code 1) the way the CLI does. The third is a
burst, a repair is written, and the hook's answer carries it as
``additionalContext``. The real CLI appends that to the failed tool result
the model reads on its next call (``make test-claude-cli`` checks this with
the CLI bundled in the SDK; docs/ADAPTERS.md). Then the user corrects the
agent ("use pnpm instead of npm"); in session 2, the ``UserPromptSubmit``
hook's answer to the first prompt already carries that correction.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

from _common import CORRECTION, LESSON, SECOND_TASK, burst_lesson, finish, session, start
from claude_agent_sdk import ClaudeAgentOptions, Transport, query

from memos_feedback.adapters.claude_agent import feedback_hooks

COMMANDS = ["npm install", "npm install --force", "npm install --legacy-peer-deps"]


class ScriptedCLI(Transport):
    """The CLI's side of one query of ``session``: the prompt, then (``failing``) three failed runs."""

    def __init__(self, session: str, failing: bool) -> None:
        self.session = session
        self.failing = failing
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
        base = {"session_id": self.session, "transcript_path": "/tmp/transcript.jsonl", "cwd": "/repo"}
        context = await self._hook({**base, "hook_event_name": "UserPromptSubmit", "prompt": prompt})
        print(f"  prompt {prompt!r}: hook answer {'carries guidance:' if context else '(nothing)'}")
        for line in context.splitlines():
            print(f"      {line}")
        for n, command in enumerate(COMMANDS if self.failing else [], start=1):
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
        result |= {"is_error": False, "num_turns": 1, "session_id": self.session, "result": "done"}
        await self._out.put(result)
        await self._out.put(None)


def run(subscriber: Any, session_id: str, prompt: str, *, failing: bool = False) -> ScriptedCLI:
    async def play(cli: ScriptedCLI) -> None:
        options = ClaudeAgentOptions(hooks=feedback_hooks(subscriber))
        async for _ in query(prompt=prompt, options=options, transport=cli):
            pass

    cli = ScriptedCLI(session_id, failing)
    asyncio.run(play(cli))
    return cli


def main() -> int:
    subscriber = start("claude-agent")
    session("session 1: the tool keeps failing")
    first = run(subscriber, "example-claude-1", "install the web dependencies", failing=True)
    burst = burst_lesson(subscriber)
    session(f"session 1: the user corrects the agent: {CORRECTION!r}")
    run(subscriber, "example-claude-1", CORRECTION)
    subscriber.flush(timeout=10)  # the correction's repair is written (the next session starts later)
    session("session 2: a new task")
    second = run(subscriber, "example-claude-2", SECOND_TASK)
    return finish(
        subscriber,
        {
            "the hook's answer after the burst carried its repair": burst in first.contexts[-1],
            "the next session's first prompt got the correction": LESSON in second.contexts[0],
        },
    )


if __name__ == "__main__":
    sys.exit(main())
