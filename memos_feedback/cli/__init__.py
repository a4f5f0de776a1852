"""``memos-feedback``: the command line.

Exit codes: 0 success, 2 bad usage (argparse, including arguments that are
out of range or not valid UTF-8), 1 any error, printed as one line
``memos-feedback: error: …`` on stderr without a traceback (``--debug`` or
``MEMOS_FEEDBACK_DEBUG=1`` adds the traceback of unexpected errors), 130
on Ctrl-C. A closed stdout (``memos-feedback demo | head -1``) ends the
command quietly, the way Python's documentation recommends.

Read commands (``repairs list|show``, ``queue list|stats``, ``db
current``) open the database read-only: they never create, migrate or
change it, so a mistyped ``--db`` is an error instead of a new database.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType

from ..errors import MemosFeedbackError
from ..text.logs import redact_library_logs
from ._commands import Commands, Handler, error

__all__ = ["DEBUG_ENV", "build_parser", "main"]

# Each module adds its commands with ``register(cli)``; the order is the
# order of ``memos-feedback --help``. Imported when the parser is built, so a
# hook (which builds only its own) loads none of the others.
COMMAND_MODULES = ("review", "ops", "redact", "maintain", "tail", "hook", "mcp_cmd")

PROG = "memos-feedback"
DEBUG_ENV = "MEMOS_FEEDBACK_DEBUG"
DESCRIPTION = (
    "Close the feedback loop of LLM agents: classify user feedback, review, delete and embed "
    "the decision repairs (preference / anti-pattern pairs) written into the database, show "
    "the guidance a runtime would inject, operate the durable repair queue and migrate the schema."
)
EPILOG = (
    "The database is --db URL (before or after the command), else MEMOS_FEEDBACK_DB_URL, "
    "else a SQLite file in the user data directory. Read commands never create or change it; "
    "`memos-feedback db upgrade` creates and migrates it. "
    "`memos-feedback COMMAND --help` tells more."
)


def _first_command(argv: Sequence[str]) -> str | None:
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "--db":
            skip = True
        elif not word.startswith("-"):
            return word
    return None


def build_parser(modules: Sequence[str] = COMMAND_MODULES) -> argparse.ArgumentParser:
    """The parser of the named command modules' commands (all of them unless told)."""
    from .. import __version__

    db_help = "database URL (default: MEMOS_FEEDBACK_DB_URL or a file in the user data dir)"
    # After the command, --db must not reset a value given before it:
    # SUPPRESS leaves the namespace alone unless the option is present.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", metavar="URL", default=argparse.SUPPRESS, help=db_help)

    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--db", metavar="URL", default=None, help=db_help)
    parser.add_argument(
        "--debug", action="store_true", help=f"show tracebacks of unexpected errors (or set {DEBUG_ENV}=1)"
    )
    cli = Commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"), common)
    for name in modules:
        module: ModuleType = importlib.import_module(f"{__name__}.{name}")
        module.register(cli)
    return parser


def _not_utf8(args: argparse.Namespace) -> str | None:
    """The first argument that is not valid UTF-8, or None.

    Python decodes argv with ``surrogateescape``: undecodable bytes become
    lone surrogates, which no database, JSON encoder or terminal accepts.
    """
    for name, value in vars(args).items():
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                shown = value.encode("utf-8", "backslashreplace").decode("ascii", "replace")
                return f"argument {name.replace('_', '-')} is not valid UTF-8: {shown}"
    return None


def _quiet_broken_pipe() -> int:
    # Python's documented recipe: point stdout at devnull so the flush at
    # interpreter exit does not raise (and print) BrokenPipeError again.
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    # A hook runs once per agent event: it builds only its own commands
    # (``train``'s options would load the classifier, ~100 ms).
    parser = build_parser(("hook",) if _first_command(raw) == "hook" else COMMAND_MODULES)
    args, extra = parser.parse_known_args(raw)
    if getattr(args, "command", None) == "eval" and "eval" in raw:
        # ``eval`` hands everything after it to its own parser, options first too
        # (``eval --cv writer``), which argparse's REMAINDER would refuse.
        args.rest = raw[raw.index("eval") + 1 :]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    problem = _not_utf8(args)
    if problem is not None:
        parser.error(problem)
    debug = args.debug or os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    handler: Handler = args.handler
    redact_library_logs()  # the edge: whatever a command logs carries no secret
    try:
        code = handler(args)
        sys.stdout.flush()  # a closed pipe shows up here, inside the handler below
        return code
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except KeyboardInterrupt:
        return 130
    except MemosFeedbackError as exc:
        error(str(exc))
        return 1
    except Exception as exc:
        if debug:
            traceback.print_exc()
        hint = "" if debug else f" (run with --debug or {DEBUG_ENV}=1 for the traceback)"
        error(f"unexpected {type(exc).__name__}: {exc}{hint}")
        return 1
