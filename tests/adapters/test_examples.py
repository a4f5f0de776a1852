"""Each example runs offline and shows the loop closing (exit status 0)."""

from __future__ import annotations

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
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "the next model call carried the repair" in out.stdout
    assert "<memory-context>" in out.stdout
