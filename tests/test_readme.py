"""The README's Usage snippets, run in order as one program: every name they use is defined in them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def usage_snippets() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Usage\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


def test_the_usage_snippets_run_as_written(tmp_path: Path) -> None:
    snippets = usage_snippets()
    assert len(snippets) >= 3
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(snippets)],
        cwd=tmp_path,  # the snippets' sqlite:///agent.db lands here
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "@repair" in done.stdout and "Prefer: pnpm instead of npm" in done.stdout
    # The second session is served the first one's lesson, and settles it.
    assert done.stdout.count("<memory-context>") == 1 and "repair.outcome" in done.stdout
    assert ".shape.shape" not in "".join(snippets)


def test_one_name_for_the_subscriber_in_every_snippet() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    code = "\n".join(re.findall(r"```python\n(.*?)```", text, re.DOTALL))
    assert "as subscriber" in code
    adapters = r"(?:FeedbackMiddleware|OpenAIAgentsFeedback|feedback_hooks)\((\w+)"
    assert set(re.findall(adapters, code)) == {"subscriber"}
    assert not re.search(r"\bfeedback\.(record_|submit_|guidance_for)", code), "one name: `subscriber`"
