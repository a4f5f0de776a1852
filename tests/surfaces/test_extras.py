"""The new surfaces behind their extras: `import memos_feedback` loads neither; a missing one is one line."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_plain_import_and_the_hook_load_no_extra() -> None:
    out = _run(
        """
        import sys
        import memos_feedback, memos_feedback.cli, memos_feedback.surfaces.claude_code
        import memos_feedback.surfaces.hook_install, memos_feedback.surfaces.mcp_server
        loaded = sorted(m for m in ("mcp", "opentelemetry", "sqlalchemy") if m in sys.modules)
        assert not loaded, loaded
        print("ok")
        """
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_otel_without_its_extra_is_one_line() -> None:
    out = _run(
        """
        import sys
        sys.modules["opentelemetry"] = None
        try:
            import memos_feedback.integrations.otel
        except ImportError as exc:
            print(exc)
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == (
        "memos_feedback.integrations.otel needs the [otel] extra (opentelemetry is not installed): "
        "pip install 'memos-feedback[otel]'\n"
    )


def test_mcp_command_without_its_extra_is_one_line(tmp_path: Path) -> None:
    out = _run(
        """
        import sys
        sys.modules["mcp"] = None
        from memos_feedback.cli import main
        sys.exit(main(sys.argv[1:]))
        """,
        "mcp",
        "--db",
        f"sqlite:///{tmp_path / 'f.db'}",
    )
    assert out.returncode == 1
    assert out.stderr == (
        "memos-feedback: error: memos-feedback mcp needs the [mcp] extra (mcp is not installed): "
        "pip install 'memos-feedback[mcp]'\n"
    )
    assert not (tmp_path / "f.db").exists()  # nothing started before the check
