"""``memos-feedback hook install|uninstall claude-code``: merge, never clobber, remove exactly ours."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from memos_feedback.cli import main

REPO = Path(__file__).resolve().parents[2]

USERS_OWN: dict[str, Any] = {
    "model": "opus",
    "hooks": {
        "PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "prettier --write"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}


def _settings(project: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((project / ".claude" / "settings.json").read_text())
    return data


def test_install_merges_reinstall_replaces_uninstall_restores(
    tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(USERS_OWN))
    assert main(["hook", "install", "claude-code", "--db", "sqlite:////tmp/a.db"]) == 0
    first = _settings(tmp_path)
    assert first["model"] == "opus" and first["hooks"]["Stop"] == USERS_OWN["hooks"]["Stop"]
    post = first["hooks"]["PostToolUse"]
    assert post[0] == USERS_OWN["hooks"]["PostToolUse"][0] and len(post) == 2
    ours = post[1]["hooks"][0]
    assert (
        ours["type"] == "command"
        and "memos_feedback hook claude-code --db sqlite:////tmp/a.db" in ours["command"]
    )
    assert set(first["hooks"]) == {
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
    }

    assert (
        main(["hook", "install", "claude-code", "--db", "sqlite:////tmp/b.db"]) == 0
    )  # replaced, not doubled
    again = _settings(tmp_path)
    assert (
        len(again["hooks"]["PostToolUse"]) == 2
        and "b.db" in json.dumps(again)
        and "a.db" not in json.dumps(again)
    )

    capsys.readouterr()
    assert main(["hook", "uninstall", "claude-code", "--dry-run"]) == 0
    diff = capsys.readouterr().out
    assert diff.startswith("---") and "-" in diff and "memos_feedback" in diff
    assert _settings(tmp_path) == again  # a dry run writes nothing

    assert main(["hook", "uninstall", "claude-code"]) == 0
    assert _settings(tmp_path) == USERS_OWN
    assert main(["hook", "uninstall", "claude-code"]) == 0
    assert "no memos-feedback hooks" in capsys.readouterr().out


def test_dry_run_install_prints_the_diff_and_writes_nothing(
    tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["hook", "install", "claude-code", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "+++" in out and '"PostToolUseFailure"' in out
    assert not (tmp_path / ".claude").exists()


def test_user_scope_writes_home_settings(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main(["hook", "install", "claude-code", "--user"]) == 0
    assert "SessionStart" in json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]


def test_a_settings_file_that_is_not_json_is_an_error_and_left_alone(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{ not json")
    proc = subprocess.run(
        [sys.executable, "-m", "memos_feedback", "hook", "install", "claude-code"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "is not valid JSON" in proc.stderr
    assert (tmp_path / ".claude" / "settings.json").read_text() == "{ not json"


def test_db_before_the_command_reaches_the_hook_entries(
    tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["--db", "sqlite:////tmp/c.db", "hook", "install", "claude-code", "--dry-run"]) == 0
    assert "memos_feedback hook claude-code --db sqlite:////tmp/c.db" in capsys.readouterr().out


def _git_repo_with_subdirectory(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    sub = repo / "services" / "api"
    sub.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True, capture_output=True, timeout=60)
    return repo, sub


def test_local_scope_writes_settings_local_json_at_the_repository_root(
    tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    repo, sub = _git_repo_with_subdirectory(tmp_path)
    monkeypatch.chdir(sub)
    assert main(["hook", "install", "claude-code", "--local"]) == 0
    local = repo / ".claude" / "settings.local.json"
    assert "SessionStart" in json.loads(local.read_text())["hooks"]
    assert not (repo / ".claude" / "settings.json").exists(), "the committed file is left alone"
    assert not (sub / ".claude").exists()
    assert "note:" not in capsys.readouterr().out
    assert main(["hook", "uninstall", "claude-code", "--local"]) == 0
    assert not local.exists()


def test_project_scope_from_a_subdirectory_writes_at_the_repository_root(
    tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    repo, sub = _git_repo_with_subdirectory(tmp_path)
    monkeypatch.chdir(sub)
    assert main(["hook", "install", "claude-code"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{repo.resolve() / '.claude' / 'settings.json'}: hooks installed")
    assert "--local" in out  # the committed file names this machine's interpreter: say so
    assert "SessionStart" in _settings(repo)["hooks"]
    assert not (sub / ".claude").exists()


def test_uninstall_leaves_no_empty_file_where_none_was(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    user_settings = tmp_path / ".claude" / "settings.json"
    assert main(["hook", "uninstall", "claude-code", "--user"]) == 0
    assert not user_settings.exists()
    assert main(["hook", "install", "claude-code", "--user"]) == 0
    assert user_settings.exists()
    assert main(["hook", "uninstall", "claude-code", "--user"]) == 0
    assert not user_settings.exists(), "install then uninstall leaves no '{}' behind"


def test_install_and_uninstall_keep_the_files_indentation(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    for own in (
        json.dumps(USERS_OWN, indent=4) + "\n",
        json.dumps(USERS_OWN, indent="\t") + "\n",
        json.dumps(USERS_OWN),
    ):
        path.write_text(own)
        assert main(["hook", "install", "claude-code"]) == 0
        installed = path.read_text()
        if "\n" in own.strip():
            kept = [line for line in own.splitlines() if '"model"' in line or "prettier" in line]
            assert kept and all(line in installed.splitlines() for line in kept), installed
        else:
            assert "\n" not in installed.strip(), "a one-line file stays on one line"
        assert main(["hook", "uninstall", "claude-code"]) == 0
        assert path.read_text() == own, "uninstall gives the user's file back as it was"


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memos_feedback", "hook", *args, "claude-code"],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _strict(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_install_edits_in_place_keeping_mode_symlink_and_numbers(tmp_path: Path) -> None:
    """Issue 44 finding 3, through the real command: a 0600 settings file that is a symlink into
    a dotfiles folder, holding 1e999 and 1.50, stays 0600, stays a symlink, keeps its numbers
    as written (no "Infinity"), and uninstall gives the same text back."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "claude-settings.json"
    own = (
        '{\n  "env": {"ANTHROPIC_API_KEY": "sk-ant-x"},\n  "cleanupPeriodDays": 1e999,\n  "ratio": 1.50\n}\n'
    )
    target.write_text(own)
    target.chmod(0o600)
    link = tmp_path / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(target)

    proc = _cli(tmp_path, "install")
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert oct(target.stat().st_mode & 0o777) == "0o600"
    text = target.read_text()
    assert "1e999" in text and "1.50" in text and "Infinity" not in text
    assert "SessionStart" in _strict(text)["hooks"]
    assert [p.name for p in dotfiles.iterdir()] == [target.name], "no temporary file left"

    assert _cli(tmp_path, "uninstall").returncode == 0
    assert link.is_symlink() and oct(target.stat().st_mode & 0o777) == "0o600"
    assert _strict(target.read_text()) == _strict(own) and "1e999" in target.read_text()


def test_an_event_that_is_not_a_list_is_refused_and_the_file_left_alone(tmp_path: Path) -> None:
    """Issue 44 finding 3: install refuses, in one line and a non-zero exit, a settings file whose
    event holds something other than a list, instead of replacing it."""
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    own = json.dumps({"hooks": {"PostToolUse": {"matcher": "Write", "hooks": []}}}, indent=2)
    path.write_text(own)
    path.chmod(0o640)
    proc = _cli(tmp_path, "install")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert "'hooks.PostToolUse' is an object, not a list" in proc.stderr
    assert path.read_text() == own and oct(path.stat().st_mode & 0o777) == "0o640"
