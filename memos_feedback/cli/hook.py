"""``memos-feedback hook claude-code`` and ``hook install|uninstall claude-code``.

The hook itself reads one event on stdin and always exits 0 with a JSON
answer (``{}`` on any error, logged to ``hook.log`` in the hook state
directory); memos_feedback.surfaces.claude_code says what each event does.
The work is done by a warm helper process when one is listening
(memos_feedback.surfaces.hook_helper; ``--serve`` runs it), else here.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

from ._commands import Commands, seconds

__all__ = ["cmd_hook", "cmd_install", "cmd_uninstall", "register"]

_LOG_BYTES = 1 << 20


def _log_to_file(state_dir: str | None, db: str | None) -> None:
    from ..config import default_db_url as default_url
    from ..surfaces.hook_state import state_root

    root = state_root(state_dir, db or default_url())
    path = root / "hook.log"
    try:
        root.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > _LOG_BYTES:
            os.replace(path, path.with_suffix(".log.1"))  # one old file kept: the log stays bounded
        # Opened on the first record only: most events log nothing.
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8", delay=True)
    except OSError:
        handler = logging.NullHandler()  # stdout is the answer; stderr is the user's terminal
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
    top = logging.getLogger("memos_feedback")
    top.addHandler(handler)
    top.setLevel(logging.INFO)
    top.propagate = False


def _helper_flags(args: argparse.Namespace) -> list[str]:
    """The flags that decide what the hook does: the helper's key, and its command line."""
    flags: list[str] = []
    if args.db:
        flags += ["--db", args.db]
    if args.state_dir:
        flags += ["--state-dir", args.state_dir]
    if args.project_name:
        flags += ["--project-name", args.project_name]
    return flags


def _serve(args: argparse.Namespace, flags: list[str]) -> int:
    """``--serve``: the warm helper (memos_feedback.surfaces.hook_helper)."""
    from ..surfaces import hook_helper
    from ..surfaces.claude_code import HookOptions, run_hook, warm_up

    _log_to_file(args.state_dir, args.db)
    warm_up()

    def handle(raw: bytes, started: float, deadline: float) -> dict[str, object]:
        opts = HookOptions(
            db=args.db,
            state_dir=args.state_dir,
            project=args.project_name,
            deadline=deadline,
            started=started,
        )
        return run_hook(raw, opts)

    return hook_helper.serve(hook_helper.helper_socket(flags), handle)


def cmd_hook(args: argparse.Namespace) -> int:
    started = time.monotonic()
    # Only the standard library until the event is handled here: the
    # helper, when one is listening, has the rest imported already.
    from ..surfaces import hook_helper

    flags = _helper_flags(args)
    if args.serve:
        return _serve(args, flags)

    def compute() -> dict[str, object]:
        raw = sys.stdin.buffer.read(1 << 20 | 1) if sys.stdin is not None else b""
        if hook_helper.helper_enabled():
            path = hook_helper.helper_socket(flags)
            try:
                answer = hook_helper.ask_helper(path, raw, args.deadline, started)
            except hook_helper.HelperBroke as exc:
                _log_to_file(args.state_dir, args.db)
                hook_helper.logger.warning(
                    "the hook helper gave no answer (%s; the deadline is %.1f s); answered {}",
                    exc,
                    args.deadline,
                )
                return {}
            if answer is not None:
                return answer
            hook_helper.start_helper(flags)  # for the next event; this one is done here
        _log_to_file(args.state_dir, args.db)
        from ..surfaces.claude_code import HookOptions, run_hook

        opts = HookOptions(
            db=args.db,
            state_dir=args.state_dir,
            project=args.project_name,
            deadline=args.deadline,
            started=started,
        )
        return run_hook(raw, opts)

    hook_helper.answer_within(args.deadline, compute)
    return 0


def _scope_path(args: argparse.Namespace) -> Path:
    from ..surfaces.hook_install import settings_path

    return settings_path("user" if args.user else "local" if args.local else "project")


def cmd_install(args: argparse.Namespace) -> int:
    from ..surfaces.hook_install import hook_command, install

    extra = []
    if args.project_name:
        extra += ["--project-name", args.project_name]
    if args.state_dir:
        extra += ["--state-dir", args.state_dir]
    path = _scope_path(args)
    diff = install(path, hook_command(args.db, extra), dry_run=args.dry_run)
    if args.dry_run:
        print(diff or f"{path}: nothing to change", end="" if diff else "\n")
    else:
        print(f"{path}: {'hooks installed' if diff else 'already installed'}")
        if diff and not (args.user or args.local):
            print(
                "note: the hook command names this machine's Python; if this file is committed, use --local"
            )
    return 0


def cmd_uninstall(args: argparse.Namespace) -> int:
    from ..surfaces.hook_install import uninstall

    path = _scope_path(args)
    diff = uninstall(path, dry_run=args.dry_run)
    if args.dry_run:
        print(diff or f"{path}: nothing to change", end="" if diff else "\n")
    else:
        print(f"{path}: {'hooks removed' if diff else 'no memos-feedback hooks'}")
    return 0


def _scope(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--project", action="store_true", help=".claude/settings.json at the project's root (the default)"
    )
    where.add_argument(
        "--local",
        action="store_true",
        help=".claude/settings.local.json at the project's root (this machine's, not committed)",
    )
    where.add_argument("--user", action="store_true", help="~/.claude/settings.json")
    p.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    p.add_argument("agent", choices=["claude-code"], help="the agent whose settings to change")


def register(cli: Commands) -> None:
    cli.group("hook", "agent hooks: answer one hook event, or install / uninstall the hooks")
    p = cli.add(
        "claude-code",
        cmd_hook,
        "answer one Claude Code hook event (JSON on stdin, the answer on stdout; always exit 0)",
        group="hook",
    )
    p.add_argument(
        "--state-dir", metavar="DIR", help="where the session windows live (default: user state dir)"
    )
    p.add_argument(
        "--project-name", metavar="NAME", help="the project (default: the event's working directory)"
    )
    p.add_argument("--deadline", type=seconds, default=10.0, metavar="S", help="answer within S seconds")
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the warm helper
    p = cli.add("install", cmd_install, "merge the memos-feedback hooks into a settings.json", group="hook")
    _scope(p)
    p.add_argument("--state-dir", metavar="DIR", help="passed on to the hook")
    p.add_argument("--project-name", metavar="NAME", help="passed on to the hook")
    p = cli.add("uninstall", cmd_uninstall, "remove exactly the memos-feedback hooks", group="hook")
    _scope(p)
