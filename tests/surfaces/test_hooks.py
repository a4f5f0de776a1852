"""``memos-feedback hook claude-code``: windows across hook processes, answers, never breaking the agent.

Each ``run_hook`` call opens and closes everything it uses, exactly as one
hook process does (the state between calls is the state directory and the
database); the tests that need a real process start one.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from memos_feedback.store import open_store
from memos_feedback.surfaces.claude_code import HookOptions, hook_project, last_agent_turn, run_hook
from tests.test_secrets_at_rest import TOKEN, _dump

REPO = Path(__file__).resolve().parents[2]


def _fail(session: str, command: str, n: int) -> dict[str, Any]:
    return {
        "hook_event_name": "PostToolUseFailure",
        "session_id": session,
        "cwd": "/home/u/shop",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": f"try {n}"},
        "error": "Exit code 1\ncat: /nope/notes.txt: No such file or directory",
    }


def _ok(session: str, command: str) -> dict[str, Any]:
    return {
        "hook_event_name": "PostToolUse",
        "session_id": session,
        "cwd": "/home/u/shop",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_response": {"stdout": "notes", "stderr": "", "interrupted": False},
    }


def _hook(event: dict[str, Any] | bytes, db: str, state: Path) -> dict[str, Any]:
    raw = event if isinstance(event, bytes) else json.dumps(event).encode()
    return run_hook(raw, HookOptions(db=db, state_dir=str(state), deadline=30.0, started=time.monotonic()))


def test_a_burst_across_hook_processes_writes_its_repair(db_url: str, tmp_path: Path) -> None:
    for n, flags in enumerate(("", "-n ", "-A ")):
        assert _hook(_fail("s1", f"cat {flags}/nope/notes.txt", n), db_url, tmp_path) == {}
    with open_store(db_url) as store:
        repairs = store.repairs.list()
        assert [(r.tool_id, r.context, r.trigger) for r in repairs] == [
            ("Bash", "Bash command=cat /nope/notes.txt", "failure-burst")
        ]
        traces = store.traces.list("s1")
        assert len(traces) == 3 and all("No such file" in t.agent_text for t in traces)
    _hook(_fail("s1", "cat -v /nope/notes.txt", 3), db_url, tmp_path)  # bursts again: one more trace only
    with open_store(db_url) as store:
        assert len(store.traces.list("s1")) == 4


def test_a_success_inside_the_window_means_no_burst(db_url: str, tmp_path: Path) -> None:
    _hook(_fail("s1", "cat /nope/notes.txt", 0), db_url, tmp_path)
    _hook(_ok("s1", "cat /nope/notes.txt"), db_url, tmp_path)
    _hook(_fail("s1", "cat /nope/notes.txt", 1), db_url, tmp_path)
    _hook(_fail("s1", "cat /nope/notes.txt", 2), db_url, tmp_path)
    # Another session's failures are its own window.
    _hook(_fail("s2", "cat /nope/notes.txt", 0), db_url, tmp_path)
    with open_store(db_url) as store:
        assert store.repairs.list() == []


def test_prompt_correction_is_queued_written_and_answered(db_url: str, tmp_path: Path) -> None:
    for n in range(3):
        _hook(_fail("s1", "cat /nope/notes.txt", n), db_url, tmp_path)
    answer = _hook(
        {
            "hook_event_name": "UserPromptSubmit",
            "session_id": "s1",
            "cwd": "/home/u/shop",
            "prompt": "use ls ~/notes instead of cat",
        },
        db_url,
        tmp_path,
    )
    block = answer["hookSpecificOutput"]["additionalContext"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert block.startswith("<memory-context>") and "ls" in block
    with open_store(db_url) as store:
        assert sorted(r.trigger for r in store.repairs.list()) == ["failure-burst", "user.preference"]
    start = _hook(
        {"hook_event_name": "SessionStart", "session_id": "s9", "cwd": "/home/u/shop"}, db_url, tmp_path
    )
    assert start["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "ls" in start["hookSpecificOutput"]["additionalContext"]


def test_nothing_to_say_and_bad_events_answer_empty(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'f.db'}"
    assert _hook({"hook_event_name": "SessionStart", "session_id": "s", "cwd": "/x"}, db, tmp_path) == {}
    assert _hook(b"not json", db, tmp_path) == {}
    assert _hook(b"[1, 2]", db, tmp_path) == {}
    assert _hook(b"{" + b" " * (1 << 20) + b"}", db, tmp_path) == {}
    assert _hook({"hook_event_name": "Stop"}, db, tmp_path) == {}
    assert _hook({"hook_event_name": "UserPromptSubmit", "prompt": 3}, db, tmp_path) == {}
    interrupted = {**_fail("s", "cat x", 0), "is_interrupt": True}
    assert _hook(interrupted, db, tmp_path) == {}


def _process(
    stdin: bytes, *flags: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "memos_feedback", "hook", "claude-code", *flags],
        input=stdin,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        timeout=60,
    )


def test_a_broken_database_answers_empty_and_exits_zero(tmp_path: Path) -> None:
    event = json.dumps({"hook_event_name": "SessionStart", "session_id": "s"}).encode()
    state = tmp_path / "state"
    proc = _process(event, "--db", "nosuchdriver://x", "--state-dir", str(state))
    assert proc.returncode == 0 and proc.stdout == b"{}\n" and proc.stderr == b""
    log = next(state.glob("hooks/*/hook.log")).read_text()
    assert "memos-feedback hook failed" in log


def test_a_hook_stuck_on_a_locked_database_answers_within_its_deadline(tmp_path: Path) -> None:
    path = tmp_path / "f.db"
    with open_store(f"sqlite:///{path}"):
        pass
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")  # a real lock: every other writer waits for the busy timeout
    try:
        event = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "use uv"})
        started = time.monotonic()
        proc = _process(
            event.encode(), "--db", f"sqlite:///{path}", "--state-dir", str(tmp_path), "--deadline", "1"
        )
        took = time.monotonic() - started
    finally:
        holder.rollback()
        holder.close()
    assert proc.returncode == 0 and proc.stdout == b"{}\n"
    assert took < 15, took  # the busy timeout alone is 30 s
    assert "deadline" in next(tmp_path.glob("hooks/*/hook.log")).read_text()


def test_project_and_the_agents_last_turn(tmp_path: Path) -> None:
    assert hook_project({"cwd": "/home/u/shop"}, None) == "shop"
    assert hook_project({"cwd": "/home/u/shop"}, "web") == "web"
    assert hook_project({}, None) is None
    transcript = tmp_path / "t.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "I will run npm install."}]}},
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Bash", "input": {}}]}},
    ]
    transcript.write_text("garbage\n" + "\n".join(json.dumps(x) for x in lines) + "\n")
    assert last_agent_turn(str(transcript)) == "I will run npm install."
    assert last_agent_turn(str(tmp_path / "missing.jsonl")) is None
    assert last_agent_turn(None) is None


def test_a_success_where_guidance_was_served_settles_that_it_held(db_url: str, tmp_path: Path) -> None:
    from memos_feedback.outcomes.report import list_with_outcomes

    for n in range(3):
        _hook(_fail("s1", "cat /nope/notes.txt", n), db_url, tmp_path)
    prompt = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": "s1",
        "cwd": "/home/u/shop",
        "prompt": "what next?",
    }
    assert _hook(prompt, db_url, tmp_path)["hookSpecificOutput"]["additionalContext"]
    _hook(_ok("s1", "cat /nope/notes.txt"), db_url, tmp_path)  # a new process settles the serving
    with open_store(db_url) as store:
        listed = list_with_outcomes(store, status=None, context_hash=None, limit=10)
        [counts] = [c for r, c in listed if r.trigger == "failure-burst"]
        assert counts.held == 1, listed


def test_a_hooks_repairs_belong_to_its_project(db_url: str, tmp_path: Path) -> None:
    for n in range(3):
        _hook(_fail("s1", "cat /nope/notes.txt", n), db_url, tmp_path)  # cwd /home/u/shop
    with open_store(db_url) as store:
        assert [r.project for r in store.repairs.list()] == ["shop"]

    def prompt(session: str, cwd: str) -> dict[str, Any]:
        event = {
            "hook_event_name": "UserPromptSubmit",
            "session_id": session,
            "cwd": cwd,
            "prompt": "cat notes",
        }
        return _hook(event, db_url, tmp_path)

    assert prompt("s2", "/home/u/shop")["hookSpecificOutput"]["additionalContext"]
    assert "hookSpecificOutput" not in prompt("s3", "/home/u/other")


def test_a_repair_is_injected_once_per_session_context(db_url: str, tmp_path: Path) -> None:
    """SessionStart then the first UserPromptSubmit: the same <memory-context> block is not sent twice."""
    for n in range(3):
        _hook(_fail("s0", "cat /nope/notes.txt", n), db_url, tmp_path)

    def context(event: str, session: str, **extra: Any) -> str:
        fields = {"hook_event_name": event, "session_id": session, "cwd": "/home/u/shop", **extra}
        answer = _hook(fields, db_url, tmp_path)
        return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))

    start = context("SessionStart", "s1", source="startup")
    assert start.startswith("<memory-context>") and "cat" in start
    assert context("UserPromptSubmit", "s1", prompt="read my notes with cat") == ""
    assert context("UserPromptSubmit", "s1", prompt="cat the notes again") == ""
    # Another session's context does not hold it: its first prompt gets it.
    assert context("UserPromptSubmit", "s2", prompt="read my notes with cat") == start
    # After compaction the block is gone from the context: SessionStart brings it back.
    assert context("SessionStart", "s1", source="compact") == start
    assert context("UserPromptSubmit", "s1", prompt="read my notes with cat") == ""


def _fail_with_secret(session: str, n: int) -> dict[str, Any]:
    url = f"https://x:{TOKEN}@github.com/acme/app.git"
    flags = ("", "-f ", "-fsS ")[n]
    return {
        "hook_event_name": "PostToolUseFailure",
        "session_id": session,
        "cwd": "/home/u/shop",
        "tool_name": "Bash",
        "tool_input": {"command": f"curl {flags}{url}"},  # the context holds the URL too
        "error": f"Exit code 22\ncurl: (22) The requested URL returned error: 403 for {url}",
    }


def test_no_secret_in_the_traces_or_the_state_files(db_url: str, tmp_path: Path) -> None:
    """Issue 44 finding 1: a burst whose command and error carry a token, through the real hook
    process: neither the traces (nor any table) nor the hook's state files keep the token."""
    state = tmp_path / "state"
    for n in range(3):
        proc = _process(
            json.dumps(_fail_with_secret("s1", n)).encode(), "--db", db_url, "--state-dir", str(state)
        )
        assert proc.returncode == 0 and proc.stdout == b"{}\n", proc
    with open_store(db_url) as store:
        traces = store.traces.list("s1")
        assert len(traces) == 3 and all("403" in t.agent_text for t in traces)
        assert [r.trigger for r in store.repairs.list()] == ["failure-burst"]
        assert TOKEN[4:20] not in _dump(store)  # nor any part of it
    files = [p for p in state.rglob("*") if p.is_file()]
    assert any(p.suffix == ".json" for p in files)
    for path in files:
        assert TOKEN[4:20].encode() not in path.read_bytes(), path


def test_a_state_file_an_older_version_wrote_is_redacted_when_read(tmp_path: Path) -> None:
    """Issue 44 finding 1: a session file holding a token in plain text (written before redaction)
    loses it on the next hook's read, without waiting the 7 days for pruning."""
    from memos_feedback.surfaces.hook_state import session_state

    root = tmp_path / "state"
    with session_state(root, "s1") as st:
        st.add("Bash", "curl x", False, "boom", keep=5)
    [path] = root.glob("sessions/*.json")
    old = json.loads(path.read_text())
    del old["v"]
    old["recent"][0][2] = f"Bash command=curl https://x:{TOKEN}@github.com"
    old["recent"][0][4] = f"403 for {TOKEN}"
    path.write_text(json.dumps(old))
    with session_state(root, "s1") as st:
        assert TOKEN not in repr(st.recent)
    assert TOKEN not in path.read_text()


def _state(state: Path) -> dict[str, Any]:
    [path] = state.glob("hooks/*/sessions/*.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _cut(event: dict[str, Any], db: str, state: Path) -> None:
    """The hook process, stalled before the database until its 2 s deadline ends it."""
    proc = _process(
        json.dumps(event).encode(),
        *("--db", db, "--state-dir", str(state), "--deadline", "2"),
        env={"MEMOS_FEEDBACK_FAILPOINTS": "hook.before_database=stall"},
    )
    assert proc.returncode == 0 and proc.stdout == b"{}\n", proc
    assert "ran past its 2.0 s deadline" in next(state.glob("hooks/*/hook.log")).read_text()


def test_a_burst_the_deadline_cut_is_queued_by_the_next_hook(db_url: str, tmp_path: Path) -> None:
    """Issue 44 finding 5: the hook that completes a burst is ended by its deadline before the job
    is queued; the state keeps the burst due, and the session's next hook (a success elsewhere)
    queues it and writes the repair, each failure's trace once."""
    state = tmp_path / "state"
    flags = ("--db", db_url, "--state-dir", str(state))
    for n in range(2):
        assert _process(json.dumps(_fail("s1", "cat /nope/notes.txt", n)).encode(), *flags).returncode == 0
    _cut(_fail("s1", "cat /nope/notes.txt", 2), db_url, state)
    with open_store(db_url) as store:
        assert store.repairs.list() == [] and store.traces.list("s1") == []
    left = _state(state)
    assert left["bursts_due"] == [3] and left["pending"] is True

    assert _process(json.dumps(_ok("s1", "ls /tmp")).encode(), *flags).stdout == b"{}\n"
    with open_store(db_url) as store:
        assert [(r.context, r.trigger) for r in store.repairs.list()] == [
            ("Bash command=cat /nope/notes.txt", "failure-burst")
        ]
        assert len(store.traces.list("s1")) == 3
    done = _state(state)
    assert done["bursts_due"] == [] and done["pending"] is False


def test_a_correction_the_deadline_cut_is_queued_by_the_next_hook(db_url: str, tmp_path: Path) -> None:
    """Issue 44 finding 5: a prompt's hook ended before its correction is queued holds it (redacted)
    in the state; the session's next hook queues it."""
    state = tmp_path / "state"
    with open_store(db_url) as store:  # a failed and a good step: the evidence a repair stands on
        store.traces.add("s1", agent_text="pnpm install: 312 packages installed", value=0.8)
        store.traces.add("s1", agent_text="npm ERR! ERESOLVE could not resolve", value=-0.7)
    prompt = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": "s1",
        "cwd": "/home/u/shop",
        "prompt": f"no, use pnpm instead of npm here (the token {TOKEN} is fine)",
    }
    _cut(prompt, db_url, state)
    held = _state(state)["prompts_due"]
    assert len(held) == 1 and "use pnpm instead of npm" in held[0]["text"] and TOKEN not in held[0]["text"]
    with open_store(db_url) as store:
        assert store.repairs.list() == []

    flags = ("--db", db_url, "--state-dir", str(state))
    assert _process(json.dumps(_ok("s1", "pnpm install")).encode(), *flags).stdout == b"{}\n"
    with open_store(db_url) as store:
        assert [(r.trigger, r.project) for r in store.repairs.list()] == [("user.preference", "shop")]
    assert _state(state)["prompts_due"] == []


def test_concurrent_hooks_write_each_failure_once_and_lose_no_correction(db_url: str, tmp_path: Path) -> None:
    """Issue 44 finding 5: eight real hook processes at once (the default 10 s deadline): five
    parallel failures of one session and three corrections in sessions of their own. Each failure
    is one trace; after one more hook per session, every correction is a repair."""
    state = tmp_path / "state"
    flags = ("--db", db_url, "--state-dir", str(state))
    prompts = {f"p{n}": f"no, use pnpm instead of npm here ({n})" for n in range(3)}
    with open_store(db_url) as store:
        for session in prompts:  # the evidence each correction's repair stands on
            store.traces.add(session, agent_text="pnpm install: 312 packages installed", value=0.8)
            store.traces.add(session, agent_text="npm ERR! ERESOLVE could not resolve", value=-0.7)
    events = [_fail("s1", "cat /nope/notes.txt", n) for n in range(5)]
    events += [
        {"hook_event_name": "UserPromptSubmit", "session_id": s, "cwd": "/home/u/shop", "prompt": p}
        for s, p in prompts.items()
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    hooks = [
        subprocess.Popen(
            [sys.executable, "-m", "memos_feedback", "hook", "claude-code", *flags],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        for _ in events
    ]
    for proc, event in zip(hooks, events, strict=True):
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(event).encode())
        proc.stdin.close()
    for proc in hooks:
        assert proc.wait(60) == 0
        assert proc.stdout is not None and proc.stdout.read().startswith(b"{")
    for session in ("s1", *prompts):  # the next event of each session finishes what a cut hook left
        assert _process(json.dumps(_ok(session, "ls /tmp")).encode(), *flags).returncode == 0
    with open_store(db_url) as store:
        traces = store.traces.list("s1")
        assert len(traces) == 5 and len({t.id for t in traces}) == 5
        repairs = store.repairs.list()
        assert sorted((r.session_id, r.trigger) for r in repairs if r.trigger != "failure-burst") == [
            (s, "user.preference") for s in sorted(prompts)
        ]
        assert [r.context for r in repairs if r.trigger == "failure-burst"] == [
            "Bash command=cat /nope/notes.txt"
        ]
