"""Claude Agent SDK: ``feedback_hooks`` driven through the SDK's control protocol by a fake CLI.

``FakeCLI`` is a ``Transport`` playing the CLI's side: it answers
``initialize``, and when the prompt arrives it calls the registered hook
callbacks the way the CLI does (``control_request`` / ``hook_callback``),
collects the SDK's answers, then ends the turn with a ``result``. The
bundled CLI itself is not run here (docs/ADAPTERS.md).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from tests.support.runtimes import require_runtime

require_runtime("claude_agent_sdk", "claude-agent")

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, Transport, query  # noqa: E402

from memos_feedback.adapters.claude_agent import bash_exit_code, claude_context_of, feedback_hooks  # noqa: E402
from memos_feedback.runtime.subscriber import FeedbackSubscriber  # noqa: E402

SESSION = "cl-1"


def _base(event: str) -> dict[str, Any]:
    return {
        "hook_event_name": event,
        "session_id": SESSION,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/repo",
    }


def _bash_failure(command: str, n: int) -> dict[str, Any]:
    return {
        **_base("PostToolUseFailure"),
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": f"attempt {n} at installing"},
        "tool_use_id": f"tu_{n}",
        "error": "Exit code 1\nnpm ERR! ERESOLVE unable to resolve dependency tree",
    }


class FakeCLI(Transport):
    """The CLI's side of the control protocol, scripted (module docstring)."""

    def __init__(self, script: list[dict[str, Any]]) -> None:
        self.script = script
        self.hook_ids: dict[str, list[str]] = {}
        self.answers: list[dict[str, Any]] = []
        self._out: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._ready = False

    async def connect(self) -> None:
        self._ready = True

    def is_ready(self) -> bool:
        return self._ready

    async def write(self, data: str) -> None:
        for line in data.splitlines():
            if line.strip():
                await self._receive(json.loads(line))

    async def _receive(self, msg: dict[str, Any]) -> None:
        if msg["type"] == "control_request" and msg["request"]["subtype"] == "initialize":
            for event, matchers in (msg["request"].get("hooks") or {}).items():
                self.hook_ids[event] = [cid for m in matchers for cid in m["hookCallbackIds"]]
            await self._out.put(
                {
                    "type": "control_response",
                    "response": {"subtype": "success", "request_id": msg["request_id"], "response": {}},
                }
            )
        elif msg["type"] == "control_response":
            response = msg["response"]
            self._pending.pop(response["request_id"]).set_result(response)
        elif msg["type"] == "user":
            asyncio.get_running_loop().create_task(self._play())

    async def _hook(self, data: dict[str, Any]) -> dict[str, Any]:
        answers = []
        for n, callback_id in enumerate(self.hook_ids.get(data["hook_event_name"], [])):
            request_id = f"cli_{len(self.answers)}_{n}"
            future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            self._pending[request_id] = future
            await self._out.put(
                {
                    "type": "control_request",
                    "request_id": request_id,
                    "request": {
                        "subtype": "hook_callback",
                        "callback_id": callback_id,
                        "input": data,
                        "tool_use_id": data.get("tool_use_id"),
                    },
                }
            )
            answers.append(await future)
        merged: dict[str, Any] = {}
        for a in answers:
            assert a["subtype"] == "success", a
            merged.update(a["response"])
        return merged

    async def _play(self) -> None:
        for data in self.script:
            self.answers.append(await self._hook(data))
        await self._out.put(
            {
                "type": "result",
                "subtype": "success",
                "duration_ms": 1,
                "duration_api_ms": 1,
                "is_error": False,
                "num_turns": 1,
                "session_id": SESSION,
                "result": "done",
            }
        )
        await self._out.put(None)

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        while (msg := await self._out.get()) is not None:
            yield msg

    async def end_input(self) -> None:
        pass

    async def close(self) -> None:
        self._ready = False


def _run(subscriber: FeedbackSubscriber, script: list[dict[str, Any]], **options: Any) -> FakeCLI:
    cli = FakeCLI(script)

    async def main() -> list[Any]:
        opts = ClaudeAgentOptions(hooks=feedback_hooks(subscriber, **options))
        return [m async for m in query(prompt="install the web deps", options=opts, transport=cli)]

    messages = asyncio.run(asyncio.wait_for(main(), 60))
    assert any(isinstance(m, ResultMessage) and m.result == "done" for m in messages)
    return cli


def _context(answer: dict[str, Any]) -> str:
    return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))


def test_three_bash_failures_repair_and_guidance_through_the_protocol(subscriber: FeedbackSubscriber) -> None:
    script = [
        {**_base("UserPromptSubmit"), "prompt": "install the web deps"},
        _bash_failure("npm install", 1),
        _bash_failure("npm install --force", 2),
        _bash_failure("npm install --legacy-peer-deps", 3),
        {**_base("UserPromptSubmit"), "prompt": "next: add react-query to web/"},
    ]
    cli = _run(subscriber, script)
    assert subscriber.flush(timeout=10)
    repairs = subscriber.store.repairs.list()
    assert len(repairs) == 1
    repair = repairs[0]
    assert repair.tool_id == "Bash" and repair.context == "Bash command=npm install"
    # Before the burst: nothing to say. Right after it: the repair, as additionalContext.
    assert [_context(a) for a in cli.answers[:3]] == ["", "", ""]
    assert (repair.preference or repair.anti_pattern) in _context(cli.answers[3])
    assert cli.answers[3]["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
    # and the next prompt carries it too
    assert (repair.preference or repair.anti_pattern) in _context(cli.answers[4])
    assert len(subscriber.store.traces.list(SESSION)) == 3


def test_bash_non_zero_exit_in_post_tool_use_is_a_failure(subscriber: FeedbackSubscriber) -> None:
    hooks = feedback_hooks(subscriber)
    callback = hooks["PostToolUse"][0].hooks[0]

    def bash(command: str, response: Any) -> dict[str, Any]:
        data = {**_base("PostToolUse"), "tool_name": "Bash", "tool_input": {"command": command}}
        return {**data, "tool_response": response, "tool_use_id": "t"}

    async def main() -> list[Any]:
        return [
            await callback(
                bash("pytest -x", {"stdout": "", "stderr": "boom", "exitCode": 2}), "t", {"signal": None}
            ),
            await callback(bash("pytest -q", "Exit code 1\nFAILED test_x"), "t", {"signal": None}),
            await callback(
                bash("ls", {"stdout": "a b", "stderr": "", "interrupted": False}), "t", {"signal": None}
            ),
            await callback(
                {
                    **_base("PostToolUse"),
                    "tool_name": "Read",
                    "tool_input": {"file_path": "/a"},
                    "tool_response": "x",
                },
                "t",
                {"signal": None},
            ),
        ]

    assert asyncio.run(main()) == [{}, {}, {}, {}]
    rows = sorted(
        (t.tool_calls[0].name, t.tool_calls[0].error_code or "")
        for t in subscriber.store.traces.list(SESSION)
    )
    assert rows == [("Bash", ""), ("Bash", "exit 1"), ("Bash", "exit 2"), ("Read", "")]
    assert bash_exit_code({"exit_code": 0}) == 0 and bash_exit_code({"stdout": "ok"}) is None
    assert claude_context_of("Bash", {"command": "npm i --force", "description": "x"}) == "Bash command=npm i"


def test_interrupt_is_not_a_failure(subscriber: FeedbackSubscriber) -> None:
    callback = feedback_hooks(subscriber)["PostToolUseFailure"][0].hooks[0]
    data = {**_bash_failure("sleep 100", 1), "is_interrupt": True}
    assert asyncio.run(callback(data, "tu_1", {"signal": None})) == {}
    assert subscriber.store.traces.list(SESSION) == []


def test_adapter_errors_do_not_break_the_run(broken_subscriber: FeedbackSubscriber) -> None:
    script = [
        {**_base("UserPromptSubmit"), "prompt": "use uv instead of pip"},
        *(_bash_failure("npm install", n) for n in range(3)),
        {
            **_base("PostToolUse"),
            "tool_name": "Read",
            "tool_input": {"file_path": "/a"},
            "tool_response": "x",
        },
    ]
    cli = _run(broken_subscriber, script, repair_wait=0.1)
    assert cli.answers == [{}, {}, {}, {}, {}]
    callback = feedback_hooks(broken_subscriber)["UserPromptSubmit"][0].hooks[0]
    assert asyncio.run(callback("not a mapping", None, {"signal": None})) == {}  # type: ignore[arg-type]


def test_project_scopes_what_the_run_writes_and_reads(subscriber: FeedbackSubscriber) -> None:
    script = [_bash_failure("npm install", n) for n in (1, 2, 3)]
    cli = _run(subscriber, script, project="shop-a")
    assert subscriber.flush(timeout=10)
    (repair,) = subscriber.store.repairs.list()
    assert repair.project == "shop-a"
    ask = {"tool_id": repair.tool_id, "context": repair.context, "query": "npm ERR! ERESOLVE"}
    assert [i.repair_id for i in subscriber.guidance_for(**ask, project="shop-a").items] == [repair.id]
    assert not subscriber.guidance_for(**ask, project="shop-b")
    assert (repair.preference or repair.anti_pattern) in _context(cli.answers[2])
