"""The one way to add a command, and what commands share.

Every command module has ``register(cli: Commands)``; ``cli.add`` adds a
command (``group=`` puts it under ``repairs``, ``queue`` or ``db``) and
returns its parser for the command's own options. Handlers take the parsed
arguments and return the exit code; they import what they need when they
run, so ``memos-feedback --help`` loads no database driver.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..limits import MAX_LIMIT

if TYPE_CHECKING:
    from ..store import Store

__all__ = [
    "Commands",
    "Handler",
    "epoch_ms",
    "error",
    "limit",
    "nonneg",
    "open_db",
    "positive",
    "print_json",
    "seconds",
]

Handler = Callable[[argparse.Namespace], int]


class Commands:
    """The command tree being built: top-level commands and named groups."""

    def __init__(self, subparsers: Any, common: argparse.ArgumentParser) -> None:
        self._top = subparsers
        self._common = common
        self._groups: dict[str, Any] = {}

    def add(
        self, name: str, handler: Handler, help: str, *, group: str | None = None
    ) -> argparse.ArgumentParser:
        """Add ``name`` (under ``group`` when given); returns its parser for its options."""
        parent = self._top if group is None else self._groups[group]
        p: argparse.ArgumentParser = parent.add_parser(
            name, parents=[self._common], help=help, description=help
        )
        p.set_defaults(handler=handler)
        return p

    def group(self, name: str, help: str) -> None:
        """Declare a group of commands (``memos-feedback NAME ACTION``); once per name."""
        if name in self._groups:
            raise ValueError(f"command group {name!r} is declared twice")
        parser = self._top.add_parser(name, help=help)
        self._groups[name] = parser.add_subparsers(dest=f"{name}_command", required=True, metavar="ACTION")


def error(message: str) -> None:
    """One line on stderr (whose ``backslashreplace`` prints even lone surrogates)."""
    line = " ".join(str(message).split()) or "unknown error"
    print(f"memos-feedback: error: {line}", file=sys.stderr)


def open_db(args: argparse.Namespace, *, read_only: bool = False, at_head: bool = True) -> Store:
    """The store of ``--db``; read commands pass ``read_only=True``."""
    from ..store import open_store

    return open_store(args.db, read_only=read_only, migrate_to_head=at_head)


def print_json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


# -- argument types (argparse turns their ArgumentTypeError into a usage error)


def limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not 1 <= value <= MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_LIMIT}, got {text}")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def nonneg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def positive(text: str) -> int:
    value = nonneg(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be >= 1")
    return value


def epoch_ms(text: str) -> int:
    """Epoch milliseconds, or an ISO 8601 date/time (UTC unless it says)."""
    stripped = text.strip()
    if stripped.isdigit():
        return int(stripped)
    try:
        when = datetime.fromisoformat(stripped)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected epoch milliseconds or an ISO 8601 date/time, got {text!r}"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)
