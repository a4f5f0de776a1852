"""The ``memos-feedback`` command line, run as a real subprocess."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import memos_feedback
from memos_feedback.runtime.queue import RepairQueue
from memos_feedback.store import Store, create_store_engine, migrate, open_store
from memos_feedback.types import RepairInput

ROOT = Path(__file__).resolve().parents[2]


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    # The subprocess must import this checkout's package, whatever the venv has installed.
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **(extra or {})}


def cli(*args: str | bytes, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memos_feedback", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=_env(env),
    )


def one_line_error(out: subprocess.CompletedProcess[str], code: int = 1) -> str:
    """Assert the command failed with ``code`` and one ``error:`` line, no traceback; return it."""
    assert out.returncode == code, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr, out.stderr
    lines = [line for line in out.stderr.splitlines() if "error:" in line]
    assert len(lines) == 1, out.stderr
    if code == 1:
        assert out.stderr.strip().splitlines() == lines, out.stderr
        assert lines[0].startswith("memos-feedback: error: "), out.stderr
    return lines[0]


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
    sqlite3.connect(tmp_path / "cli.db").close()  # an empty file: no schema yet
    before = cli("db", "current", "--db", url)
    assert before.returncode == 0 and before.stdout.startswith("empty"), before.stderr
    up = cli("db", "upgrade", "--db", url)
    assert up.returncode == 0, up.stderr
    store = open_store(url)
    head = store.revision()
    store.close()
    assert cli("db", "current", "--db", url).stdout.startswith(str(head))


def test_default_database_comes_from_the_environment(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'env.db'}"
    assert cli("db", "upgrade", env={"MEMOS_FEEDBACK_DB_URL": url}).returncode == 0
    assert (tmp_path / "env.db").exists()
    out = cli("repairs", "list", env={"MEMOS_FEEDBACK_DB_URL": url})
    assert out.returncode == 0 and out.stdout.strip() == "no repairs", out.stderr


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


# -- issue 9, item 16: a CLI that never shows a traceback ------------------------


def test_version_and_a_real_description() -> None:
    version = cli("--version")
    assert version.returncode == 0
    assert version.stdout.strip() == f"memos-feedback {memos_feedback.__version__}"
    help_text = cli("--help").stdout
    assert "Close the feedback loop of LLM agents" in help_text
    assert "``" not in help_text and "Exit codes" not in help_text  # not the module docstring


def test_db_is_accepted_before_and_after_the_command(store: Store, db_url: str) -> None:
    store.repairs.insert(context_hash="c1", trigger="manual", preference="p", anti_pattern="a")
    before = cli("--db", db_url, "repairs", "list", "--json")
    after = cli("repairs", "list", "--json", "--db", db_url)
    assert before.returncode == 0 and after.returncode == 0, (before.stderr, after.stderr)
    assert json.loads(before.stdout) == json.loads(after.stdout) != []


@pytest.mark.parametrize("limit", ["-5", "0", "10001", str(10**23), "x", "1.5"])
@pytest.mark.parametrize("command", [("repairs", "list"), ("queue", "list")])
def test_limits_outside_1_to_max_are_usage_errors(
    tmp_path: Path, command: tuple[str, ...], limit: str
) -> None:
    out = cli(*command, f"--limit={limit}", "--db", f"sqlite:///{tmp_path / 'never.db'}")
    assert "--limit" in one_line_error(out, code=2)
    assert not (tmp_path / "never.db").exists()


@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf", "soon"])
def test_run_once_rejects_a_nonsense_timeout(tmp_path: Path, timeout: str) -> None:
    out = cli("run-once", "--session", "s", "--context-hash", "c", f"--timeout={timeout}")
    assert "--timeout" in one_line_error(out, code=2)


def test_run_once_that_times_out_says_so_in_one_line(seeded: Store, db_url: str) -> None:
    out = cli("run-once", "--db", db_url, "--session", "s1", "--context-hash", "t1", "--timeout", "0.001")
    assert "no result within 0.001 s" in one_line_error(out)


@pytest.mark.parametrize(
    "args",
    [
        ("repairs", "show", b"dr_\xff\xfe"),
        ("classify", b"use \xff instead"),
        ("queue", "retry", b"job_\xc3"),
        ("repairs", "list", "--db", b"sqlite:///\xff.db"),
    ],
)
def test_arguments_that_are_not_utf8_are_usage_errors(tmp_path: Path, args: tuple[str | bytes, ...]) -> None:
    out = subprocess.run(
        [os.fsencode(sys.executable), b"-m", b"memos_feedback", *(os.fsencode(a) for a in args)],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=120,
        cwd=tmp_path,
        env=_env({"MEMOS_FEEDBACK_DB_URL": f"sqlite:///{tmp_path / 'x.db'}"}),
    )
    assert "not valid UTF-8" in one_line_error(out, code=2)
    assert list(tmp_path.iterdir()) == []


def test_uncreatable_database_path_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    out = cli("db", "upgrade", "--db", f"sqlite:///{tmp_path / 'a-file' / 'sub' / 'x.db'}")
    assert "cannot create the folder" in one_line_error(out)


def test_unexpected_errors_are_one_line_unless_debugging(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'zh.db'}"
    with open_store(url) as s:
        s.repairs.insert(context_hash="zh", trigger="manual", preference="用 pnpm", anti_pattern="别用 npm")
    # A terminal that cannot print Chinese: print() raises UnicodeEncodeError.
    env = {"PYTHONIOENCODING": "ascii"}
    out = cli("repairs", "list", "--db", url, env=env)
    assert "unexpected UnicodeEncodeError" in one_line_error(out)
    assert "--debug" in out.stderr
    debug = cli("--debug", "repairs", "list", "--db", url, env=env)
    assert debug.returncode == 1 and "Traceback" in debug.stderr
    by_env = cli("repairs", "list", "--db", url, env={**env, "MEMOS_FEEDBACK_DEBUG": "1"})
    assert by_env.returncode == 1 and "Traceback" in by_env.stderr


def test_a_closed_pipe_ends_the_command_quietly() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "memos_feedback", "demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"memos-feedback demo")
    proc.stdout.close()  # like `memos-feedback demo | head -1`
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1
    assert stderr == ""


# -- issue 9, item 17: reading never creates, migrates or changes a database -----


READ_COMMANDS = [
    ("repairs", "list"),
    ("repairs", "show", "dr_x"),
    ("queue", "list"),
    ("queue", "stats"),
    ("db", "current"),
]


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
def test_read_commands_on_a_missing_database_create_nothing(tmp_path: Path, command: tuple[str, ...]) -> None:
    path = tmp_path / "typo" / "feedback.db"
    out = cli(*command, "--db", f"sqlite:///{path}")
    assert f"no database at {path}" in one_line_error(out)
    assert "memos-feedback db upgrade" in out.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
def test_read_commands_leave_another_programs_database_alone(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    out = cli(*command, "--db", f"sqlite:///{path}")
    if command == ("db", "current"):
        assert out.returncode == 0 and out.stdout.startswith("empty"), out.stderr
    else:
        assert "no memos-feedback schema" in one_line_error(out)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["notes"]
    conn.close()
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]


@pytest.mark.parametrize("command", READ_COMMANDS[:-1], ids=" ".join)
def test_read_commands_ask_for_an_upgrade_instead_of_migrating(db_url: str, command: tuple[str, ...]) -> None:
    engine = create_store_engine(db_url)
    try:
        migrate.upgrade(engine, "0003")
    finally:
        engine.dispose()
    out = cli(*command, "--db", db_url)
    line = one_line_error(out)
    assert "'0003'" in line and "run `memos-feedback db upgrade`" in line
    with open_store(db_url, read_only=True, migrate_to_head=False) as s:
        assert s.revision() == "0003"


@contextmanager
def read_only_folder(folder: Path) -> Iterator[list[str]]:
    """Make ``folder`` and its files read-only; yields a command prefix to run under it.

    Root ignores file modes, so as root the command runs in a private mount
    namespace where ``folder`` is bind-mounted read-only (``unshare``).
    """
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in folder.iterdir()}
        for p in modes:
            p.chmod(0o444)
        folder.chmod(0o555)
        try:
            yield []
        finally:
            folder.chmod(0o755)
            for p, mode in modes.items():
                p.chmod(mode)
        return
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("running as root without mount namespaces: cannot make a read-only folder")
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    yield ["unshare", "-m", "sh", "-c", script, str(folder)]


def cli_under(prefix: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "memos_feedback", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=_env(),
    )


def test_a_read_only_database_can_be_read(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    url = f"sqlite:///{folder / 'feedback.db'}"
    with open_store(url) as s:
        s.repairs.insert(context_hash="ro1", trigger="manual", preference="p", anti_pattern="a")
    with read_only_folder(folder) as prefix:
        listed = cli_under(prefix, "repairs", "list", "--json", "--db", url)
        assert listed.returncode == 0, listed.stderr
        assert [r["context_hash"] for r in json.loads(listed.stdout)] == ["ro1"]
        for command in READ_COMMANDS[2:]:
            out = cli_under(prefix, *command, "--db", url)
            assert out.returncode == 0, (command, out.stderr)
        written = cli_under(prefix, "repairs", "validate", json.loads(listed.stdout)[0]["id"], "--db", url)
        one_line_error(written)  # writing is refused, in one line


# -- issue 9, item 18: the demo's files --------------------------------------------


def test_demo_prints_no_path_it_deletes() -> None:
    out = cli("demo")
    assert out.returncode == 0, out.stderr
    assert "memos-feedback-demo-" not in out.stdout and "demo.db" not in out.stdout
    assert "--keep DIR" in out.stdout


def test_demo_keep_keeps_the_files_it_prints(tmp_path: Path) -> None:
    keep = tmp_path / "kept"
    out = cli("demo", "--keep", str(keep))
    assert out.returncode == 0, out.stderr
    assert str(keep / "demo.db") in out.stdout and str(keep / "audit.jsonl") in out.stdout
    assert (keep / "audit.jsonl").read_text(encoding="utf-8").count("\n") > 0
    with open_store(f"sqlite:///{keep / 'demo.db'}", read_only=True) as s:
        assert s.repairs.list() != []
    again = cli("demo", "--keep", str(keep))
    assert "already exists" in one_line_error(again)


# ---------------------------------------------------------------------------
# memos-feedback train: the same code as python -m memos_feedback.train
# ---------------------------------------------------------------------------
def test_train_check_reports_the_shipped_artefact_fresh() -> None:
    out = cli("train", "--check")
    assert out.returncode == 0, out.stderr
    assert "is up to date" in out.stdout


def test_train_recall_check_reports_the_relevance_gate_fresh_and_stale(tmp_path: Path) -> None:
    out = cli("train", "recall", "--check")
    assert out.returncode == 0, out.stderr
    assert "relevance_gate.json is up to date" in out.stdout
    stale = tmp_path / "gate.json"
    stale.write_text(json.dumps({"data_sha256": "0" * 64}), encoding="utf-8")
    out = cli("train", "recall", "--check", "--out", str(stale))
    assert out.returncode == 1
    assert "retrain with: memos-feedback train recall" in out.stdout


def test_train_check_reports_a_stale_artefact(tmp_path: Path) -> None:
    stale = tmp_path / "model.json"
    stale.write_text(json.dumps({"data_sha256": "0" * 64}), encoding="utf-8")
    out = cli("train", "--check", "--out", str(stale))
    assert out.returncode == 1
    assert "is stale" in out.stdout


def test_train_without_scikit_learn_is_one_line_naming_the_extra(tmp_path: Path) -> None:
    # A package named sklearn that fails to import stands in for a missing
    # scikit-learn; it is first on the path, so the real one is never reached.
    fake = tmp_path / "sklearn"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('no scikit-learn here')\n", encoding="utf-8")
    env = {"PYTHONPATH": os.pathsep.join((str(tmp_path), str(ROOT)))}
    out = cli("train", "--out", str(tmp_path / "model.json"), env=env)
    line = one_line_error(out)
    assert "pip install 'memos-feedback[train]'" in line
    assert not (tmp_path / "model.json").exists()
    module = subprocess.run(
        [sys.executable, "-m", "memos_feedback.devtools.train", "--out", str(tmp_path / "model.json")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=_env(env),
    )
    assert module.returncode == 2
    assert module.stderr.strip() == "error: training needs scikit-learn: pip install 'memos-feedback[train]'"


@pytest.mark.slow
def test_train_writes_the_artefact_the_module_writes(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    out = cli("train", "--out", str(tmp_path / "model.json"))
    assert out.returncode == 0, out.stderr
    fresh = json.loads((tmp_path / "model.json").read_text(encoding="utf-8"))
    shipped_path = ROOT / "memos_feedback" / "classify" / "data" / "classifier_model.json"
    shipped = json.loads(shipped_path.read_text(encoding="utf-8"))
    assert fresh["data_sha256"] == shipped["data_sha256"]
    assert fresh["evaluation"] == shipped["evaluation"]
    assert fresh["calibration"] == shipped["calibration"]
