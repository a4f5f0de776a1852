"""``import memos_feedback`` (and the adapters package itself) imports no agent runtime."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNTIMES = ("langchain", "langchain_core", "langgraph", "agents", "claude_agent_sdk")


def test_plain_import_loads_no_runtime() -> None:
    code = textwrap.dedent(
        f"""
        import sys
        import memos_feedback, memos_feedback.adapters, memos_feedback.adapters.core
        loaded = sorted(m for m in {RUNTIMES!r} if m in sys.modules)
        assert not loaded, loaded
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_extras_are_declared() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {"langchain", "openai-agents", "claude-agent"} <= set(extras)
    assert not any(dep.startswith(("langchain", "openai-agents", "claude-agent")) for dep in extras["dev"])


ADAPTERS = {
    "langchain": ("langchain", "langchain"),
    "openai_agents": ("agents", "openai-agents"),
    "claude_agent": ("claude_agent_sdk", "claude-agent"),
}


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_missing_runtime_is_one_line_naming_the_extra(adapter: str) -> None:
    runtime, extra = ADAPTERS[adapter]
    # ``sys.modules[name] = None`` makes Python refuse the import, as if the
    # package were not installed (whether or not it is).
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules[{runtime!r}] = None
        try:
            import memos_feedback.adapters.{adapter}
        except ImportError as exc:
            from memos_feedback.errors import MissingExtraError
            assert isinstance(exc, MissingExtraError) and exc.extra == {extra!r}, repr(exc)
            print(exc)
        else:
            print("imported")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    message = out.stdout.strip()
    assert message == (
        f"memos_feedback.adapters.{adapter} needs the [{extra}] extra ({runtime} is not installed): "
        f"pip install 'memos-feedback[{extra}]'"
    )
