"""Every command's ``--help`` describes each of its arguments."""

from __future__ import annotations

import argparse

from memos_feedback.cli import build_parser
from tests.cli.test_cli import cli


def undescribed(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[str]:
    missing = []
    for action in parser._actions:  # argparse has no public walk of its tree
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                missing += undescribed(sub, (*path, name))
        elif not action.help and not isinstance(action, argparse._HelpAction):
            missing.append(" ".join((*path, "/".join(action.option_strings) or action.dest)))
    return missing


def test_every_argument_of_every_command_has_a_help_text() -> None:
    assert undescribed(build_parser()) == []


def test_guidance_help_describes_its_options() -> None:
    out = cli("guidance", "--help")
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line for line in out.stdout.splitlines() if line.strip().startswith("--")}
    for option in ("--tool", "--context", "--query", "--project", "--limit", "--json"):
        words = lines[option].split()
        assert len(words) > 2, f"{option} has no description: {lines[option]!r}"
