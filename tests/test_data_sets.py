"""The labelled sets pass their checkers; a broken case is named, not skipped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / script), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_recall_sets_pass_their_checker() -> None:
    out = _run("check_recall.py")
    assert out.returncode == 0, out.stdout
    assert out.stdout.rstrip().endswith("0 problems")


def test_the_writers_feedback_sets_pass_their_checker() -> None:
    files = sorted(str(p) for p in (ROOT / "tests" / "data" / "classifier_writers").glob("*.jsonl"))
    assert len(files) >= 6
    out = _run("check_labels.py", *files)
    assert out.returncode == 0, out.stdout


def test_the_hold_out_sets_pass_their_checker() -> None:
    files = sorted(str(p) for p in (ROOT / "tests" / "data" / "holdout").glob("*.jsonl"))
    assert len(files) >= 2
    out = _run("check_labels.py", *files)
    assert out.returncode == 0, out.stdout


def test_a_broken_recall_case_is_reported(tmp_path: Path) -> None:
    case = {
        "id": "x-1",
        "lang": "en",
        "project": "p",
        "repair": {"tool_id": "shell.run", "context": "c", "trace": "", "feedback": ""},
        "queries": [
            {"tool_id": "t", "context": "c", "query": "q", "relevant": False, "kind": "same-tool-new-context"}
        ],
    }
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(case) + "\n" + json.dumps(case) + "\n", encoding="utf-8")
    out = _run("check_recall.py", str(path))
    assert out.returncode == 1
    assert "trace and feedback both empty" in out.stdout
    assert "needs 2 to 5 queries" in out.stdout
    assert "duplicate id 'x-1'" in out.stdout
