"""Operating the database and the queue: ``db upgrade|current``,
``queue list|retry|purge|stats``, and ``demo``."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from ..limits import MAX_LIMIT
from ._commands import Commands, epoch_ms, error, limit, open_db, print_json

__all__ = ["register"]


def register(cli: Commands) -> None:
    cli.group("db", "schema migrations")
    cli.add("upgrade", cmd_db_upgrade, "create or migrate the database to the newest schema", group="db")
    cli.add("current", cmd_db_current, "show the database's schema revision (read-only)", group="db")

    cli.group("queue", "inspect and operate the durable repair queue")
    p = cli.add("list", cmd_queue_list, "jobs in queue order", group="queue")
    p.add_argument("--status", choices=("pending", "running", "done", "dead"), help="only jobs in this state")
    p.add_argument("--limit", type=limit, default=100, help=f"1..{MAX_LIMIT} (default 100)")
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p = cli.add("retry", cmd_queue_retry, "put a dead job back to pending, attempts reset", group="queue")
    p.add_argument("id", help="the job's id")
    p = cli.add(
        "purge", cmd_queue_purge, "delete a job, or every done job finished before a time", group="queue"
    )
    p.add_argument("id", nargs="?", help="the job's id (or give --done-before)")
    p.add_argument(
        "--done-before",
        type=epoch_ms,
        metavar="WHEN",
        help="delete done jobs that finished before WHEN (epoch ms or ISO 8601, UTC by default), "
        "in batches of 500",
    )
    p = cli.add("stats", cmd_queue_stats, "counts per status, depth, oldest pending age", group="queue")
    p.add_argument("--json", action="store_true", help="print them as JSON")

    p = cli.add("demo", cmd_demo, "play a scripted agent session on a fresh database")
    p.add_argument(
        "--llm", action="store_true", help="synthesize with the configured OpenAI-compatible endpoint"
    )
    p.add_argument(
        "--keep",
        metavar="DIR",
        help="keep the database and audit log in DIR (created if missing) and print their paths; "
        "by default they live in a temporary folder deleted at the end",
    )


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    with open_db(args) as store:
        shown = store.engine.url.render_as_string(hide_password=True)
        print(f"{shown}: at revision {store.revision()}")
    return 0


def cmd_db_current(args: argparse.Namespace) -> int:
    from ..store import migrate

    # Any revision is fine here: telling it is the point.
    with open_db(args, read_only=True, at_head=False) as store:
        current = store.revision()
    head = migrate.head_revision()
    print(
        f"{current or 'empty'} (head {head}){'' if current == head else ' — run: memos-feedback db upgrade'}"
    )
    return 0


def cmd_queue_list(args: argparse.Namespace) -> int:
    from ..runtime.queue import RepairQueue

    with open_db(args, read_only=True) as store:
        jobs = RepairQueue(store).list(status=args.status, limit=args.limit)
    if args.json:
        print_json([asdict(j) for j in jobs])
        return 0
    for j in jobs:
        err = f"  last_error={j.last_error[:60]!r}" if j.last_error else ""
        print(f"{j.id}  {j.status:<7} {j.trigger:<16} attempts={j.attempts} {j.outcome or ''}{err}")
    if not jobs:
        print("no jobs")
    return 0


def cmd_queue_retry(args: argparse.Namespace) -> int:

    from ..feed.actions import requeue_job

    with open_db(args) as store:
        job = requeue_job(store, args.id)  # also logged as repair.job.requeued
    print(f"{job.id} pending again (attempts reset)")
    return 0


def cmd_queue_purge(args: argparse.Namespace) -> int:
    from ..feed.actions import purge_job
    from ..runtime.queue import RepairQueue

    if (args.id is None) == (args.done_before is None):
        error("queue purge takes a job id or --done-before (one of the two)")
        return 2  # bad usage, like argparse's own errors
    with open_db(args) as store:
        if args.done_before is not None:
            count = RepairQueue(store).prune_done(args.done_before)
            print(f"{count} done job(s) purged")
            return 0
        purge_job(store, args.id)  # also logged as repair.job.purged
    print(f"{args.id} purged")
    return 0


def cmd_queue_stats(args: argparse.Namespace) -> int:
    from ..runtime.queue import RepairQueue

    with open_db(args, read_only=True) as store:
        stats = RepairQueue(store).stats()
    if args.json:
        print_json(stats)
    else:
        for key, value in stats.items():
            print(f"{key:>22}: {value}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(use_llm=args.llm, workdir=args.keep)
