"""Issue 43: the Claude Code hook stores a failure as the tool gave it, so the lesson quotes the error.

Through the real hook command, one process per event, as Claude Code runs it.
The failure used to be stored as ``"Bash failed (Bash command=cat …): Exit
code 1"``: the lesson quoted that wrapper and "No such file or directory"
was lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memos_feedback.store import open_store

REPO = Path(__file__).resolve().parents[2]


def _hook(event: dict[str, object], db: str, state: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "memos_feedback",
            "hook",
            "claude-code",
            "--db",
            db,
            "--state-dir",
            str(state),
        ],
        input=json.dumps(event).encode(),
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )


def test_the_hooks_lesson_quotes_the_error_not_the_wrapper(db_url: str, tmp_path: Path) -> None:
    for n in range(3):
        event = {
            "hook_event_name": "PostToolUseFailure",
            "session_id": "s-fail",
            "cwd": "/home/u/shop",
            "tool_name": "Bash",
            "tool_input": {"command": "cat /nope/notes.txt", "description": f"try {n}"},
            "error": "Exit code 1\ncat: /nope/notes.txt: No such file or directory",
        }
        proc = _hook(event, db_url, tmp_path)
        assert proc.returncode == 0 and proc.stdout == b"{}\n", proc.stderr
    with open_store(db_url) as store:
        traces = store.traces.list("s-fail")
        assert traces and all(
            t.agent_text.startswith("cat: /nope/notes.txt: No such file or directory") for t in traces
        )
        [repair] = store.repairs.list()
    assert repair.anti_pattern.startswith("Avoid: cat /nope/notes.txt")
    assert "No such file or directory" in repair.anti_pattern
    assert "Bash failed" not in repair.anti_pattern and "Exit code" not in repair.anti_pattern
