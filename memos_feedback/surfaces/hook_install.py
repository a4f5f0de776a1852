"""``memos-feedback hook install|uninstall claude-code``: the hook entries in Claude Code's settings.

Claude Code reads hooks from three files, and each scope writes one:

* ``--project`` (the default): ``.claude/settings.json`` of the project,
  the file a team commits;
* ``--local``: ``.claude/settings.local.json`` of the project, this
  machine's own, meant to stay out of git (Claude Code git-ignores the one
  it creates; add it to ``.gitignore`` when this command made it);
* ``--user``: ``~/.claude/settings.json``.

The project is the root of the git repository the command runs in (the
nearest directory upwards holding ``.git``), else the working directory:
Claude Code looks for ``.claude/`` at the root, so one written in a
subdirectory would never be read.

Each event gets one matcher group
``{"matcher": "*", "hooks": [{"type": "command", "command": …, "timeout": …}]}``
whose command runs this interpreter's ``memos_feedback hook claude-code``
(an absolute path, so no ``PATH`` is needed — and a path only this machine
has, which is why ``--local`` exists).

Install merges: the file's other keys, other events and other hooks are
kept as they are, and an earlier memos-feedback entry is replaced rather
than doubled; the file keeps its indentation (two spaces, four, a tab, or
all on one line). Uninstall removes exactly the entries whose command is a
memos-feedback hook (and the groups and events it leaves empty), nothing
else; a file left holding nothing at all is deleted rather than left as
``{}``. ``--dry-run`` prints the unified diff instead of writing. A file
that is not a JSON object, or whose ``hooks`` or an event's value there is
not what Claude Code reads (an object, a list), is an error, never
overwritten.

The file is edited in place: a symlink (a dotfiles checkout) is written
through, to its target, never replaced by a file (nor deleted: emptied, it
holds ``{}``); the target keeps its mode (settings with API keys in ``env``
are often 0600); the new text replaces the old atomically (a temporary file
beside the target, then ``os.replace``). Numbers keep their spelling:
``1e999`` stays ``1e999`` (Python's ``json`` would write ``Infinity``, which
is not JSON), ``1.50`` stays ``1.50``.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError

__all__ = [
    "HOOK_MARK",
    "SCOPES",
    "hook_command",
    "install",
    "planned",
    "project_root",
    "settings_path",
    "uninstall",
]

# What marks a command as ours: the interpreter may differ between installs.
HOOK_MARK = "memos_feedback hook claude-code"
_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure")
_TOOL_EVENTS = frozenset({"PostToolUse", "PostToolUseFailure"})
HOOK_TIMEOUT_S = 30


SCOPES = ("project", "local", "user")


def project_root(cwd: Path | None = None) -> Path:
    """The git repository's root above ``cwd`` (a ``.git`` directory or file), else ``cwd`` itself."""
    start = (cwd or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():  # a file in a worktree or a submodule
            return folder
    return start


def settings_path(scope: str, cwd: Path | None = None) -> Path:
    """The settings file of ``scope``: ``project``, ``local`` (at the project root) or ``user``."""
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    if scope not in SCOPES:
        raise InvalidInputError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    name = "settings.local.json" if scope == "local" else "settings.json"
    return project_root(cwd) / ".claude" / name


def hook_command(db: str | None, extra: list[str] | None = None) -> str:
    """The shell command of each entry: this interpreter, ``-m memos_feedback hook claude-code``, flags."""
    words = [sys.executable, "-m", "memos_feedback", "hook", "claude-code"]
    if db:
        words += ["--db", db]
    words += extra or []
    return " ".join(shlex.quote(w) for w in words)


def _ours(entry: Any) -> bool:
    return isinstance(entry, dict) and HOOK_MARK in str(entry.get("command", ""))


@dataclass(frozen=True, slots=True)
class _Number:
    """A non-integer number (or NaN, Infinity) as the file spells it: written back as it was."""

    text: str


_JSON_KINDS = {dict: "an object", str: "a string", bool: "a boolean", type(None): "null"}


def _load(path: Path, installing: bool) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not text.strip():
        return {}
    try:
        data = json.loads(text, parse_float=_Number, parse_constant=_Number)
    except ValueError as exc:
        raise InvalidInputError(f"{path} is not valid JSON ({exc}); fix or move it first") from None
    if not isinstance(data, dict):
        raise InvalidInputError(f"{path} is not a JSON object; fix or move it first")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInputError(f"{path}: 'hooks' is not an object; fix it first")
    for event in _EVENTS if installing else ():
        if event in hooks and not isinstance(hooks[event], list):
            kind = _JSON_KINDS.get(type(hooks[event]), "a number")
            raise InvalidInputError(f"{path}: 'hooks.{event}' is {kind}, not a list; fix it first")
    return data


def _without_ours(settings: dict[str, Any]) -> dict[str, Any]:
    out = dict(settings)
    hooks = dict(out.get("hooks") or {})
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                entries = [e for e in group["hooks"] if not _ours(e)]
                if not entries and len(entries) != len(group["hooks"]):
                    continue  # the group held only our entries
                group = {**group, "hooks": entries}
            kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if hooks:
        out["hooks"] = hooks
    else:
        out.pop("hooks", None)
    return out


def _with_ours(settings: dict[str, Any], command: str) -> dict[str, Any]:
    out = _without_ours(settings)
    hooks = dict(out.get("hooks") or {})
    for event in _EVENTS:
        entry = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}
        group: dict[str, Any] = {"hooks": [entry]}
        if event in _TOOL_EVENTS:
            group = {"matcher": "*", **group}
        hooks[event] = [*hooks.get(event, []), group]  # a list: ``_load`` refuses anything else
    out["hooks"] = hooks
    return out


def _indent_of(text: str) -> int | str | None:
    """The indentation the file uses: its first indented line's, ``None`` for a one-line file.

    Rewriting a user's file with another indentation would turn a three-line
    change into a diff of the whole file.
    """
    body = text.strip()
    if not body:
        return 2  # a new file
    if "\n" not in body:
        return None
    for line in body.splitlines()[1:]:
        lead = line[: len(line) - len(line.lstrip(" \t"))]
        if lead:
            return lead if "\t" in lead else len(lead)
    return 2


def _dumps(data: dict[str, Any], old: str) -> str:
    indent = _indent_of(old)
    # Each _Number goes out as a string holding a mark, and the quoted mark is
    # then swapped for the number's own text (json writes no raw text itself).
    nonce = os.urandom(8).hex()
    numbers: dict[str, str] = {}

    def mark(value: object) -> str:
        if not isinstance(value, _Number):
            raise TypeError(f"{type(value).__name__} is not JSON")
        raw = f"\x00{nonce}:{len(numbers)}"
        numbers[json.dumps(raw)] = value.text  # as json writes it: "\u0000…", quotes and all
        return raw

    text = json.dumps(data, indent=indent, ensure_ascii=False, default=mark)
    for key, number in numbers.items():
        text = text.replace(key, number, 1)
    return text + "\n" if (old.endswith("\n") or not old) else text


def planned(path: Path, command: str | None) -> tuple[str, str]:
    """(the file's text now, its text after installing ``command`` — or uninstalling, when None).

    The text after is ``""`` when uninstalling leaves the file with nothing in it.
    """
    before = _load(path, installing=command is not None)
    after = _with_ours(before, command) if command is not None else _without_ours(before)
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if after == before and old:
        return old, old
    if command is None and not after:
        return old, ""
    return old, _dumps(after, old)


def _write_in_place(path: Path, text: str) -> None:
    """``text`` as the file's content: through a symlink to its target, its mode kept, atomically."""
    target = Path(os.path.realpath(path))  # a dotfiles symlink stays a symlink
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = None  # a new file: the umask's mode, as any editor's
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        # Created private, so the settings are never readable by others in between.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _apply(path: Path, command: str | None, dry_run: bool) -> str:
    old, new = planned(path, command)
    diff = "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), str(path), str(path)
        )
    )
    if dry_run or old == new:
        return diff
    if not new and command is None:  # nothing of the user's was in it: no "{}" left behind
        if not path.is_symlink():
            path.unlink()
            return diff
        new = "{}\n"  # a symlink's target is the user's file: emptied, not deleted
    _write_in_place(path, new)
    return diff


def install(path: Path, command: str, *, dry_run: bool = False) -> str:
    """Merge the hook entries into ``path``; returns the diff (written unless ``dry_run``)."""
    return _apply(path, command, dry_run)


def uninstall(path: Path, *, dry_run: bool = False) -> str:
    """Remove the memos-feedback entries from ``path``; returns the diff."""
    if not path.exists():
        return ""
    return _apply(path, None, dry_run)
