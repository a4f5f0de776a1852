"""The ``memos-feedback`` command line, run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memos_feedback.queue import RepairQueue
from memos_feedback.repair import RepairInput
from memos_feedback.store import Store, open_store

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memos_feedback.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def seeded(store: Store) -> Store:
    store.traces.add("s1", agent_text="uv pip install worked", value=0.9)
    store.traces.add("s1", agent_text="pip failed: resolution impossible", value=-0.9)
    return store


def test_classify_plain_and_json() -> None:
    out = cli("classify", "use uv instead of pip")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("preference")
    data = json.loads(cli("classify", "不对，用 pnpm 而不是 npm", "--json").stdout)
    assert data["shape"] == "preference" and data["prefer"] == "pnpm" and data["avoid"] == "npm"
    assert data["triggers_repair"] is True


def test_run_once_then_review_repairs(seeded: Store, db_url: str) -> None:
    out = cli("run-once", "--db", db_url, "--session", "s1", "--context-hash", "abc123", "--tool", "pip")
    assert out.returncode == 0, out.stderr
    assert "persisted" in out.stdout
    listed = json.loads(cli("repairs", "list", "--db", db_url, "--json").stdout)
    assert len(listed) == 1 and listed[0]["context_hash"] == "abc123"
    repair_id = listed[0]["id"]
    assert cli("repairs", "list", "--db", db_url, "--context-hash", "other").stdout.strip() == "no repairs"
    shown = cli("repairs", "show", repair_id, "--db", db_url)
    assert shown.returncode == 0 and repair_id in shown.stdout
    assert cli("repairs", "validate", repair_id, "--db", db_url).returncode == 0
    assert seeded.repairs.get(repair_id).validated
    assert cli("repairs", "reject", repair_id, "--db", db_url).returncode == 0
    assert seeded.repairs.get(repair_id).rejected


def test_queue_commands(seeded: Store, db_url: str) -> None:
    queue = RepairQueue(seeded)
    job = queue.enqueue(RepairInput(trigger="manual", context_hash="q1", session_id="s1"))
    listed = json.loads(cli("queue", "list", "--db", db_url, "--json").stdout)
    assert [j["id"] for j in listed] == [job.job_id]
    assert job.job_id in cli("queue", "list", "--db", db_url, "--status", "pending").stdout
    stats = json.loads(cli("queue", "stats", "--db", db_url, "--json").stdout)
    assert stats["pending"] == 1 and stats["depth"] == 1
    assert cli("queue", "retry", job.job_id, "--db", db_url).returncode == 0
    assert cli("queue", "purge", job.job_id, "--db", db_url).returncode == 0
    assert queue.list() == []


def test_db_current_and_upgrade(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    before = cli("db", "current", "--db", url)
    assert before.returncode == 0 and before.stdout.startswith("empty")
    up = cli("db", "upgrade", "--db", url)
    assert up.returncode == 0, up.stderr
    store = open_store(url)
    head = store.revision()
    store.close()
    assert cli("db", "current", "--db", url).stdout.startswith(str(head))


def test_default_database_comes_from_the_environment(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'env.db'}"
    out = cli("repairs", "list", env={"MEMOS_FEEDBACK_DB_URL": url})
    assert out.returncode == 0 and out.stdout.strip() == "no repairs"
    assert (tmp_path / "env.db").exists()


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("bogus",),
        ("classify",),
        ("repairs",),
        ("queue", "list", "--status", "weird"),
        ("run-once", "--session", "s"),
    ],
)
def test_bad_usage_exits_2(args: tuple[str, ...]) -> None:
    out = cli(*args)
    assert out.returncode == 2
    assert "usage:" in out.stderr


def test_library_errors_exit_1_with_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'err.db'}"
    for args in (
        ("repairs", "show", "dr_missing", "--db", url),
        ("queue", "retry", "job_missing", "--db", url),
        ("repairs", "list", "--db", "notaurl://"),
    ):
        out = cli(*args)
        assert out.returncode == 1, (args, out.stderr)
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("memos-feedback: error:"), out.stderr
        assert "Traceback" not in out.stderr


def test_demo_runs_end_to_end() -> None:
    out = cli("demo")
    assert out.returncode == 0, out.stderr
    for expected in (
        "repair.triggered",
        "repair.persisted",
        "repair.attached",
        "feedback.classified",
        "feedback-not-actionable",
        "@repair {",
        "Prefer: pnpm instead of npm",
    ):
        assert expected in out.stdout
