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
import json
import math
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import TimeoutError as FutureTimeoutError
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ..errors import MemosFeedbackError
from ..limits import MAX_LIMIT

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["DEBUG_ENV", "build_parser", "main"]

Handler = Callable[[argparse.Namespace], int]

PROG = "memos-feedback"
DEBUG_ENV = "MEMOS_FEEDBACK_DEBUG"
DESCRIPTION = (
    "Close the feedback loop of LLM agents: classify user feedback, review the decision "
    "repairs (preference / anti-pattern pairs) written into the database, operate the "
    "durable repair queue and migrate the schema."
)
EPILOG = (
    "The database is --db URL (before or after the command), else MEMOS_FEEDBACK_DB_URL, "
    "else a SQLite file in the user data directory. Read commands never create or change it; "
    "`memos-feedback db upgrade` creates and migrates it. "
    "`memos-feedback COMMAND --help` tells more."
)


def _print_json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def _store(args: argparse.Namespace, *, read_only: bool = False, at_head: bool = True) -> Store:
    """The store of ``--db``; read commands pass ``read_only=True``."""
    from ..store import open_store

    return open_store(args.db, read_only=read_only, migrate_to_head=at_head)


# -- argument types (argparse turns their ValueError into a usage error) -------


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not 1 <= value <= MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_LIMIT}, got {text}")
    return value


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


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


# -- commands -----------------------------------------------------------------


def cmd_classify(args: argparse.Namespace) -> int:
    from ..classify.classifier import classify_feedback

    fb = classify_feedback(args.text)
    data = {
        "shape": fb.shape.value,
        "confidence": round(fb.confidence, 3),
        "triggers_repair": fb.shape.triggers_repair,
        "prefer": fb.prefer,
        "avoid": fb.avoid,
        "correction": fb.correction,
        "constraint": fb.constraint,
    }
    if args.json:
        _print_json(data)
    else:
        extras = " ".join(f"{k}={v!r}" for k, v in data.items() if k not in ("shape", "confidence") and v)
        print(f"{fb.shape.value} ({fb.confidence:.2f}) {extras}".rstrip())
    return 0


def _repair_line(row: Any) -> str:
    flag = "validated" if row.validated else "rejected" if row.rejected else "new"
    return (
        f"{row.id}  {row.context_hash}  {row.trigger:<16} {row.severity:<4} "
        f"{row.confidence:.2f} {flag:<9} {row.preference}"
    )


def cmd_repairs_list(args: argparse.Namespace) -> int:
    # Outcomes (issue 11): status filter and served/held/recurred columns.
    from ..outcomes.report import list_line, list_with_outcomes, with_counts

    with _store(args, read_only=True) as store:
        rows = list_with_outcomes(store, status=args.status, context_hash=args.context_hash, limit=args.limit)
    if args.json:
        _print_json([with_counts(r, c) for r, c in rows])
    else:
        for row, counts in rows:
            print(list_line(row, counts))
        if not rows:
            print("no repairs")
    return 0


def cmd_repairs_show(args: argparse.Namespace) -> int:
    from ..outcomes.report import history_lines  # outcomes (issue 11)

    with _store(args, read_only=True) as store:
        row = store.repairs.get(args.id)
        entries, lines = history_lines(store, args.id)
    if args.json:
        _print_json({**asdict(row), "history": [asdict(e) for e in entries]})
    else:
        for key, value in asdict(row).items():
            print(f"{key:>20}: {value}")
        print(f"{'history':>20}: {len(entries)} event(s)")
        for line in lines:
            print(f"{'':>20}  {line}")
    return 0


def cmd_repairs_verdict(args: argparse.Namespace) -> int:
    from ..feed.actions import review_repair

    with _store(args) as store:
        row = review_repair(store, args.id, args.verdict)  # logs repair.reviewed (issue 13)
    print(_repair_line(row))
    return 0


def cmd_run_once(args: argparse.Namespace) -> int:
    from ..config import FeedbackConfig
    from ..runtime.subscriber import attach_feedback_subscriber
    from ..types import RepairInput

    config = FeedbackConfig.from_env(base=FeedbackConfig(use_llm=False))
    inp = RepairInput(
        trigger="manual",
        context_hash=args.context_hash,
        tool_id=args.tool,
        session_id=args.session,
        user_text=args.text,
    )
    with _store(args) as store, attach_feedback_subscriber(store, config=config) as sub:
        try:
            result = sub.run_once(inp).result(timeout=args.timeout)
        except FutureTimeoutError:
            # The job is committed before run_once returns: it is not lost.
            raise MemosFeedbackError(
                f"no result within {args.timeout:g} s; the job stays queued (see `memos-feedback queue list`)"
            ) from None
    if result.skipped:
        print(f"skipped: {result.skipped_reason}")
    else:
        print(f"repair {result.repair_id} persisted")
        if result.draft is not None:
            print(f"  {result.draft.preference}\n  {result.draft.anti_pattern}")
    return 0


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    with _store(args) as store:
        shown = store.engine.url.render_as_string(hide_password=True)
        print(f"{shown}: at revision {store.revision()}")
    return 0


def cmd_db_current(args: argparse.Namespace) -> int:
    from ..store import migrate

    # Any revision is fine here: telling it is the point.
    with _store(args, read_only=True, at_head=False) as store:
        current = store.revision()
    head = migrate.head_revision()
    print(
        f"{current or 'empty'} (head {head}){'' if current == head else ' — run: memos-feedback db upgrade'}"
    )
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(use_llm=args.llm, workdir=args.keep)


def cmd_queue_list(args: argparse.Namespace) -> int:
    from ..runtime.queue import RepairQueue

    with _store(args, read_only=True) as store:
        jobs = RepairQueue(store).list(status=args.status, limit=args.limit)
    if args.json:
        _print_json([asdict(j) for j in jobs])
        return 0
    for j in jobs:
        err = f"  last_error={j.last_error[:60]!r}" if j.last_error else ""
        print(f"{j.id}  {j.status:<7} {j.trigger:<16} attempts={j.attempts} {j.outcome or ''}{err}")
    if not jobs:
        print("no jobs")
    return 0


def cmd_queue_retry(args: argparse.Namespace) -> int:

    from ..feed.actions import requeue_job

    with _store(args) as store:
        job = requeue_job(store, args.id)  # logs repair.job.requeued (issue 13)
    print(f"{job.id} pending again (attempts reset)")
    return 0


def cmd_queue_purge(args: argparse.Namespace) -> int:
    from ..feed.actions import purge_job
    from ..runtime.queue import RepairQueue

    if (args.id is None) == (args.done_before is None):
        _error("queue purge takes a job id or --done-before (one of the two)")
        return 2  # bad usage, like argparse's own errors
    with _store(args) as store:
        if args.done_before is not None:
            count = RepairQueue(store).prune_done(args.done_before)
            print(f"{count} done job(s) purged")
            return 0
        purge_job(store, args.id)  # logs repair.job.purged (issue 13)
    print(f"{args.id} purged")
    return 0


def _epoch_ms(text: str) -> int:
    """``--done-before``: epoch milliseconds, or an ISO 8601 date/time (UTC unless it says)."""
    from datetime import UTC, datetime

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


def cmd_queue_stats(args: argparse.Namespace) -> int:
    from ..runtime.queue import RepairQueue

    with _store(args, read_only=True) as store:
        stats = RepairQueue(store).stats()
    if args.json:
        _print_json(stats)
    else:
        for key, value in stats.items():
            print(f"{key:>22}: {value}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    # The very code of ``python -m memos_feedback.train``; without scikit-learn
    # it raises TrainingUnavailableError, printed as one line by ``main``.
    from ..devtools.train import run

    return run(args)


# -- parser -------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
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
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, handler: Handler, help: str, parent: Any = sub) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = parent.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(handler=handler)
        return p

    p = add("classify", cmd_classify, "classify one feedback message (needs no database)")
    p.add_argument("text")
    p.add_argument("--json", action="store_true")

    repairs = sub.add_parser("repairs", help="list and review decision repairs").add_subparsers(
        dest="repairs_command", required=True, metavar="ACTION"
    )
    p = add("list", cmd_repairs_list, "newest repairs first", repairs)
    p.add_argument("--context-hash")
    p.add_argument("--status", choices=("active", "stale", "superseded"), help="only repairs of this status")
    p.add_argument("--limit", type=_limit, default=100, help=f"1..{MAX_LIMIT} (default 100)")
    p.add_argument("--json", action="store_true")
    p = add("show", cmd_repairs_show, "one repair in full", repairs)
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    for verdict in ("validate", "reject"):
        p = add(verdict, cmd_repairs_verdict, f"{verdict} a repair", repairs)
        p.add_argument("id")
        p.set_defaults(verdict=verdict)

    from .recall import add_parsers as add_recall_parsers
    from .recall import cmd_repairs_embed

    p = add("embed", cmd_repairs_embed, "backfill repair embeddings (extra [embeddings])", repairs)
    p.add_argument("--model", help="a local sentence-transformers model directory (default: packaged)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--all", action="store_true", help="re-embed every repair, not only missing ones")
    add_recall_parsers(sub, common, only=("guidance",))
    p = add("run-once", cmd_run_once, "queue a manual repair and wait for it")
    p.add_argument("--session", required=True)
    p.add_argument("--context-hash", required=True)
    p.add_argument("--tool")
    p.add_argument("--text", help="user feedback text to classify with it")
    p.add_argument("--timeout", type=_timeout, default=120.0, help="seconds to wait (default 120)")

    db = sub.add_parser("db", help="schema migrations").add_subparsers(
        dest="db_command", required=True, metavar="ACTION"
    )
    add("upgrade", cmd_db_upgrade, "create or migrate the database to the newest schema", db)
    add("current", cmd_db_current, "show the database's schema revision (read-only)", db)

    queue = sub.add_parser("queue", help="inspect and operate the durable repair queue").add_subparsers(
        dest="queue_command", required=True, metavar="ACTION"
    )
    p = add("list", cmd_queue_list, "jobs in queue order", queue)
    p.add_argument("--status", choices=("pending", "running", "done", "dead"))
    p.add_argument("--limit", type=_limit, default=100, help=f"1..{MAX_LIMIT} (default 100)")
    p.add_argument("--json", action="store_true")
    p = add("retry", cmd_queue_retry, "put a dead job back to pending, attempts reset", queue)
    p.add_argument("id")
    p = add("purge", cmd_queue_purge, "delete a job, or every done job finished before a time", queue)
    p.add_argument("id", nargs="?")
    p.add_argument(
        "--done-before",
        type=_epoch_ms,
        metavar="WHEN",
        help="delete done jobs that finished before WHEN (epoch ms or ISO 8601, UTC by default), "
        "in batches of 500",
    )
    p = add("stats", cmd_queue_stats, "counts per status, depth, oldest pending age", queue)
    p.add_argument("--json", action="store_true")

    p = add(
        "train",
        cmd_train,
        "retrain the classifier's learned tier from tests/data (extra [train]); "
        "same as python -m memos_feedback.train",
    )
    from ..devtools.train import add_arguments as add_train_arguments

    add_train_arguments(p)

    # Issue 13: event log, sweeps and the web UI live in memos_feedback/feed and memos_feedback/web.
    from .tail import add_parsers as add_feed_parsers

    add_feed_parsers(add, _timeout)

    p = add("demo", cmd_demo, "play a scripted agent session on a fresh database")
    p.add_argument(
        "--llm", action="store_true", help="synthesize with the configured OpenAI-compatible endpoint"
    )
    p.add_argument(
        "--keep",
        metavar="DIR",
        help="keep the database and audit log in DIR (created if missing) and print their paths; "
        "by default they live in a temporary folder deleted at the end",
    )
    return parser


def _error(message: str) -> None:
    """One line on stderr (whose ``backslashreplace`` prints even lone surrogates)."""
    line = " ".join(str(message).split()) or "unknown error"
    print(f"{PROG}: error: {line}", file=sys.stderr)


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
    parser = build_parser()
    args = parser.parse_args(argv)
    problem = _not_utf8(args)
    if problem is not None:
        parser.error(problem)
    debug = args.debug or os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    handler: Handler = args.handler
    try:
        code = handler(args)
        sys.stdout.flush()  # a closed pipe shows up here, inside the handler below
        return code
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except KeyboardInterrupt:
        return 130
    except MemosFeedbackError as exc:
        _error(str(exc))
        return 1
    except Exception as exc:
        if debug:
            traceback.print_exc()
        hint = "" if debug else f" (run with --debug or {DEBUG_ENV}=1 for the traceback)"
        _error(f"unexpected {type(exc).__name__}: {exc}{hint}")
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
