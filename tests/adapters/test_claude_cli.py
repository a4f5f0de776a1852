"""The Claude Agent SDK's bundled CLI, run for real against a fake Messages API on 127.0.0.1.

Optional, not in CI (marker ``claude_cli``, excluded by default; run it with
``make test-claude-cli``). The protocol tests in test_claude_agent.py stop
at the SDK/CLI boundary; this one shows that the CLI version the SDK ships
fires ``PostToolUseFailure`` for a failing Bash command and hands the hook's
``additionalContext`` to the model on the next call.

Offline: ``ANTHROPIC_BASE_URL`` points at tests/support/fake_messages_api.py,
non-essential traffic (telemetry, update checks, error reports) is switched
off, and ``HOME`` is a temp dir so no user settings are read or written.
The Bash commands the script asks for are harmless ``cat`` calls on a file
that does not exist.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_messages_api import FakeMessagesAPI, text_block, tool_use_block
from tests.support.runtimes import require_runtime

pytestmark = pytest.mark.claude_cli

sdk = require_runtime("claude_agent_sdk", "claude-agent")

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query  # noqa: E402

from memos_feedback.adapters.claude_agent import feedback_hooks  # noqa: E402
from memos_feedback.runtime.subscriber import FeedbackSubscriber  # noqa: E402

CLI = Path(sdk.__file__).parent / "_bundled" / "claude"
MISSING = "/nonexistent/memos-feedback-notes.txt"
# Three retries of one command: the flags change, the context ("Bash command=cat <file>") does not.
COMMANDS = [f"cat {MISSING}", f"cat -n {MISSING}", f"cat -A {MISSING}"]


@pytest.fixture
def backend() -> str:
    """SQLite only: this test is about the CLI, and must not ride along with ``-m postgres``."""
    return "sqlite"


def _script() -> list[list[dict[str, Any]]]:
    calls = [
        [tool_use_block(f"toolu_{n}", "Bash", {"command": command, "description": f"attempt {n}"})]
        for n, command in enumerate(COMMANDS)
    ]
    return [*calls, [text_block("done")]]


def _offline_env(api: FakeMessagesAPI, home: Path) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": api.url,
        "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-a-local-server",
        "HOME": str(home),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }


def test_bundled_cli_carries_guidance_after_three_bash_failures(
    subscriber: FeedbackSubscriber, tmp_path: Path
) -> None:
    if not CLI.is_file():
        pytest.skip(f"this claude-agent-sdk wheel bundles no CLI at {CLI}")
    home = tmp_path / "home"
    home.mkdir()
    with FakeMessagesAPI(_script()) as api:
        options = ClaudeAgentOptions(
            hooks=feedback_hooks(subscriber),
            cli_path=str(CLI),
            env=_offline_env(api, home),
            cwd=str(tmp_path),
            allowed_tools=["Bash"],
            setting_sources=[],
            model="claude-sonnet-4-5",
            max_turns=8,
        )

        async def main() -> list[Any]:
            return [m async for m in query(prompt="show me my notes file", options=options)]

        messages = asyncio.run(asyncio.wait_for(main(), 180))
        turns = api.scripted_requests()

    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert results and results[-1].result == "done", messages
    assert subscriber.flush(timeout=10)
    repairs = subscriber.store.repairs.list()
    assert [(r.tool_id, r.context) for r in repairs] == [("Bash", f"Bash command=cat {MISSING}")]
    preference = repairs[0].preference
    assert preference
    # The model was called four times: the prompt, then once after each failed Bash call.
    assert len(turns) == 4
    last_user = [json.dumps(t["messages"][-1]) for t in turns]
    assert all("Exit code 1" in text for text in last_user[1:])
    assert not any(preference in text for text in last_user[:3])
    # The call after the third failure carries the repair, from the hook's additionalContext.
    assert "<memory-context>" in last_user[3] and preference in last_user[3]
    assert api.other_paths == []  # nothing but the Messages API was asked for
    session = str(results[-1].session_id)
    assert len(subscriber.store.traces.list(session)) == 3
