"""The real Claude Code CLI (bundled in claude-agent-sdk), print mode, with `hook install`'s hooks.

Offline: each run's ``ANTHROPIC_BASE_URL`` points at its own fake Messages
API on 127.0.0.1 (tests/support/fake_messages_api.py), non-essential
traffic is off and ``HOME`` is a temp dir. The project is a temp directory
whose ``.claude/settings.json`` is written by ``memos-feedback hook install
claude-code --project``; every hook event is then a separate
``python -m memos_feedback hook claude-code`` process.

Session 1 runs a Bash command that fails three times (a burst, across three
hook processes), then the user corrects it in the same session (``--resume``).
Session 2 is new: its model request carries the guidance (the SessionStart
hook's ``additionalContext``), captured by its fake API.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memos_feedback.store import open_store
from tests.support.fake_messages_api import FakeMessagesAPI, text_block, tool_use_block
from tests.support.runtimes import require_runtime

sdk = require_runtime("claude_agent_sdk", "claude-agent")

CLI = Path(sdk.__file__).parent / "_bundled" / "claude"
REPO = Path(__file__).resolve().parents[2]
MISSING = "/nonexistent/memos-feedback-notes.txt"
COMMANDS = [f"cat {MISSING}", f"cat -n {MISSING}", f"cat -A {MISSING}"]
INSTALL = (sys.executable, "-m", "memos_feedback", "hook", "install", "claude-code", "--project")
FLAGS = ("--model", "claude-sonnet-4-5", "--max-turns", "8")
CORRECTION = "that file does not exist; use ls ~/notes instead of cat"


@pytest.fixture
def backend() -> str:
    return "sqlite"


def _env(api: FakeMessagesAPI, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "CLAUDE"))}
    env.update(
        ANTHROPIC_BASE_URL=api.url,
        ANTHROPIC_API_KEY="sk-ant-fake-key-for-a-local-server",
        HOME=str(home),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_ERROR_REPORTING="1",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p),
    )
    return env


def _claude(api: FakeMessagesAPI, home: Path, project: Path, prompt: str, *extra: str) -> dict[str, Any]:
    proc = subprocess.run(
        [str(CLI), "-p", prompt, "--output-format", "json", "--allowedTools", "Bash", *FLAGS, *extra],
        cwd=project,
        env=_env(api, home),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_hooks_carry_guidance_into_the_next_session(tmp_path: Path) -> None:
    if not CLI.is_file():
        pytest.skip(f"this claude-agent-sdk wheel bundles no CLI at {CLI}")
    home, project, state = tmp_path / "home", tmp_path / "shop", tmp_path / "state"
    home.mkdir()
    project.mkdir()
    db = f"sqlite:///{tmp_path / 'feedback.db'}"
    install = subprocess.run(
        [*INSTALL, "--db", db, "--state-dir", str(state)],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert "hooks installed" in install.stdout
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert set(settings["hooks"]) == {"SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure"}

    calls = [
        [tool_use_block(f"toolu_{n}", "Bash", {"command": c, "description": f"attempt {n}"})]
        for n, c in enumerate(COMMANDS)
    ]
    with FakeMessagesAPI([*calls, [text_block("done")]]) as api:
        first = _claude(api, home, project, "show me my notes file")
        assert first["result"] == "done", first
        session = first["session_id"]
        with open_store(db) as store:  # the burst became a repair although every hook process exited
            assert [r.trigger for r in store.repairs.list()] == ["failure-burst"]
        _claude(api, home, project, CORRECTION, "--resume", session)
        assert api.other_paths == []

    with open_store(db) as store:
        repairs = store.repairs.list()
        assert sorted(r.trigger for r in repairs) == ["failure-burst", "user.preference"]
        preference = next(r.preference for r in repairs if r.trigger == "user.preference")
        assert "ls" in preference

    with FakeMessagesAPI([[text_block("listed")]]) as api:
        second = _claude(api, home, project, "what is in my notes?")
        turns = api.scripted_requests()
    assert second["result"] == "listed" and second["session_id"] != session
    carried = json.dumps(turns[0])
    assert "<memory-context>" in carried and preference in carried
