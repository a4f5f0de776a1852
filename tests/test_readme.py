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
    assert "@repair" in done.stdout and "Prefer: use pnpm instead of npm" in done.stdout
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


def _docs() -> dict[str, str]:
    """The three places that describe the no-code surfaces, by name."""
    return {
        "README.md": (ROOT / "README.md").read_text(encoding="utf-8"),
        "docs/INTEGRATIONS.md": (ROOT / "docs" / "INTEGRATIONS.md").read_text(encoding="utf-8"),
        "otel.py": (ROOT / "memos_feedback" / "integrations" / "otel.py").read_text(encoding="utf-8"),
    }


def test_the_span_processor_is_given_the_subscriber_everywhere() -> None:
    import inspect

    from tests.support.runtimes import require_runtime

    require_runtime("opentelemetry.sdk.trace", "otel")
    from memos_feedback.integrations.otel import FeedbackSpanProcessor

    assert next(iter(inspect.signature(FeedbackSpanProcessor).parameters)) == "subscriber"
    for name, text in _docs().items():
        given = set(re.findall(r"(?<!class )FeedbackSpanProcessor\((\w+)", text))
        assert given == {"subscriber"}, f"{name} calls it with {given}"
        assert "provider.shutdown()" in text, f"{name} does not say to shut the provider down"


def test_the_docs_agree_on_which_claude_cli_test_runs_in_ci() -> None:
    """The hook test with the real CLI is in `make test` (CI); the SDK adapter's is optional."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "not claude_cli" in " ".join(config["tool"]["pytest"]["ini_options"]["addopts"])
    in_ci, optional = "tests/surfaces/test_claude_code_cli.py", "tests/adapters/test_claude_cli.py"
    assert "claude_cli" not in (ROOT / in_ci).read_text(encoding="utf-8")
    assert "pytestmark = pytest.mark.claude_cli" in (ROOT / optional).read_text(encoding="utf-8")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert f"-m claude_cli {optional}" in makefile
    for name in ("README.md", "docs/INTEGRATIONS.md"):
        text = " ".join(_docs()[name].split())
        assert in_ci in text and optional in text, name
        # Each named next to what it is: CI for the hooks' test, `make test-claude-cli` for the other.
        assert re.search(re.escape(in_ci) + r"[^.]*(make test|CI)", text) or re.search(
            r"All in `make test`.*" + re.escape(in_ci), text
        ), name
        assert re.search(r"[Nn]ot in CI[^.]*" + re.escape(optional), text) or re.search(
            re.escape(optional) + r"[^.]*not in CI", text
        ), name
