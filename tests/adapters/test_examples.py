"""Each example runs offline and shows the loop closing (exit status 0): a burst's repair
in the next model call, a correction, and a second session served that correction; and it
leaves no temporary directory behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.runtimes import require_runtime

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {
    "langchain_agent.py": ("langchain.agents", "langchain"),
    "openai_agents_agent.py": ("agents.testing", "openai-agents"),
    "claude_agent_hooks.py": ("claude_agent_sdk", "claude-agent"),
}


@pytest.mark.parametrize("script", sorted(EXAMPLES))
def test_example_runs(script: str, tmp_path: Path) -> None:
    require_runtime(*EXAMPLES[script])
    scratch = tmp_path / "tmp"  # the example's tempfile.mkdtemp() lands here
    scratch.mkdir()
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script)],
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(scratch)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "<memory-context>" in out.stdout
    lines = out.stdout.splitlines()
    assert "-- session 1: the user corrects the agent: 'no, use pnpm instead of npm'" in lines
    assert "-- session 2: a new task" in lines
    checks = [line for line in lines if line.startswith(("ok: ", "NOT: "))]
    assert len(checks) == 2 and all(c.startswith("ok: ") for c in checks), checks
    assert str(scratch) in out.stdout, "the database was in the temporary directory"
    assert list(scratch.iterdir()) == [], "the example removed its temporary directory"
