"""``memos-feedback``: the command line.

Exit codes: 0 success, 2 bad usage (argparse), 1 a library error, printed
as one line without a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from .errors import MemosFeedbackError

__all__ = ["main"]

Handler = Callable[[argparse.Namespace], int]


def _print_json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def _store(args: argparse.Namespace) -> Any:
    from .store import open_store

    return open_store(args.db)


# -- commands -----------------------------------------------------------------


def cmd_classify(args: argparse.Namespace) -> int:
    from .classifier import classify_feedback

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
    with _store(args) as store:
        rows = store.repairs.list(context_hash=args.context_hash, limit=args.limit)
    if args.json:
        _print_json([asdict(r) for r in rows])
    else:
        for row in rows:
            print(_repair_line(row))
        if not rows:
            print("no repairs")
    return 0


def cmd_repairs_show(args: argparse.Namespace) -> int:
    with _store(args) as store:
        row = store.repairs.get(args.id)
    if args.json:
        _print_json(asdict(row))
    else:
        for key, value in asdict(row).items():
            print(f"{key:>20}: {value}")
    return 0


def cmd_repairs_verdict(args: argparse.Namespace) -> int:
    with _store(args) as store:
        row = store.repairs.validate(args.id) if args.verdict == "validate" else store.repairs.reject(args.id)
    print(_repair_line(row))
    return 0


def cmd_run_once(args: argparse.Namespace) -> int:
    from .config import FeedbackConfig
    from .repair import RepairInput
    from .subscriber import attach_feedback_subscriber

    config = FeedbackConfig.from_env(base=FeedbackConfig(use_llm=False))
    inp = RepairInput(
        trigger="manual",
        context_hash=args.context_hash,
        tool_id=args.tool,
        session_id=args.session,
        user_text=args.text,
    )
    with _store(args) as store, attach_feedback_subscriber(store, config=config) as sub:
        result = sub.run_once(inp).result(timeout=args.timeout)
    if result.skipped:
        print(f"skipped: {result.skipped_reason}")
    else:
        print(f"repair {result.repair_id} persisted")
        if result.draft is not None:
            print(f"  {result.draft.preference}\n  {result.draft.anti_pattern}")
    return 0


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    with _store(args) as store:
        print(f"{store.url}: at revision {store.revision()}")
    return 0


def cmd_db_current(args: argparse.Namespace) -> int:
    from .store import create_store_engine, default_url, migrate

    url = args.db or default_url()
    engine = create_store_engine(url)
    try:
        current = migrate.current_revision(engine)
    finally:
        engine.dispose()
    head = migrate.head_revision()
    print(
        f"{current or 'empty'} (head {head}){'' if current == head else ' — run: memos-feedback db upgrade'}"
    )
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(use_llm=args.llm)


def cmd_queue_list(args: argparse.Namespace) -> int:
    from .queue import RepairQueue

    with _store(args) as store:
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
    from .queue import RepairQueue

    with _store(args) as store:
        job = RepairQueue(store).retry(args.id)
    print(f"{job.id} pending again (attempts reset)")
    return 0


def cmd_queue_purge(args: argparse.Namespace) -> int:
    from .queue import RepairQueue

    with _store(args) as store:
        RepairQueue(store).purge(args.id)
    print(f"{args.id} purged")
    return 0


def cmd_queue_stats(args: argparse.Namespace) -> int:
    from .queue import RepairQueue

    with _store(args) as store:
        stats = RepairQueue(store).stats()
    if args.json:
        _print_json(stats)
    else:
        for key, value in stats.items():
            print(f"{key:>22}: {value}")
    return 0


# -- parser -------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--db", metavar="URL", help="database URL (default: MEMOS_FEEDBACK_DB_URL or user data dir)"
    )

    parser = argparse.ArgumentParser(
        prog="memos-feedback", description=__doc__.splitlines()[0] if __doc__ else None
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, handler: Handler, help: str, parent: Any = sub) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = parent.add_parser(name, parents=[common], help=help)
        p.set_defaults(handler=handler)
        return p

    p = add("classify", cmd_classify, "classify one feedback message")
    p.add_argument("text")
    p.add_argument("--json", action="store_true")

    repairs = sub.add_parser("repairs", help="list and review decision repairs").add_subparsers(
        dest="repairs_command", required=True, metavar="ACTION"
    )
    p = add("list", cmd_repairs_list, "newest repairs first", repairs)
    p.add_argument("--context-hash")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--json", action="store_true")
    p = add("show", cmd_repairs_show, "one repair in full", repairs)
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    for verdict in ("validate", "reject"):
        p = add(verdict, cmd_repairs_verdict, f"{verdict} a repair", repairs)
        p.add_argument("id")
        p.set_defaults(verdict=verdict)

    p = add("run-once", cmd_run_once, "queue a manual repair and wait for it")
    p.add_argument("--session", required=True)
    p.add_argument("--context-hash", required=True)
    p.add_argument("--tool")
    p.add_argument("--text", help="user feedback text to classify with it")
    p.add_argument("--timeout", type=float, default=120.0)

    db = sub.add_parser("db", help="schema migrations").add_subparsers(
        dest="db_command", required=True, metavar="ACTION"
    )
    add("upgrade", cmd_db_upgrade, "migrate the database to the newest schema", db)
    add("current", cmd_db_current, "show the database's schema revision", db)

    queue = sub.add_parser("queue", help="inspect and operate the durable repair queue").add_subparsers(
        dest="queue_command", required=True, metavar="ACTION"
    )
    p = add("list", cmd_queue_list, "jobs in queue order", queue)
    p.add_argument("--status", choices=("pending", "running", "done", "dead"))
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--json", action="store_true")
    p = add("retry", cmd_queue_retry, "put a dead job back to pending, attempts reset", queue)
    p.add_argument("id")
    p = add("purge", cmd_queue_purge, "delete a job", queue)
    p.add_argument("id")
    p = add("stats", cmd_queue_stats, "counts per status, depth, oldest pending age", queue)
    p.add_argument("--json", action="store_true")

    p = add("demo", cmd_demo, "play a scripted agent session on a fresh temporary database")
    p.add_argument(
        "--llm", action="store_true", help="synthesize with the configured OpenAI-compatible endpoint"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except MemosFeedbackError as exc:
        print(f"memos-feedback: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
