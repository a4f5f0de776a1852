"""``memos-feedback tail``, ``sweep`` and ``serve``.

``tail`` prints events as they commit, like ``tail -f``: one line each (or
one JSON object with ``--json``), in commit order, each exactly once.
``sweep`` runs the queue to empty and exits.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from typing import TYPE_CHECKING

from ..errors import MemosFeedbackError
from ._commands import Commands, nonneg, positive, seconds

if TYPE_CHECKING:  # the handlers import the store when they run: `--help` and the hooks stay light
    from ..store.event_log import EventRecord

__all__ = ["cmd_sweep", "cmd_tail", "format_line", "register"]

# Payload fields already shown in the fixed columns of a text line.
_SHOWN = ("context_hash", "repair_id", "job_id")


def format_line(r: EventRecord) -> str:
    """``seq  time  kind  ids  key=value…`` with values JSON-quoted (one line, always)."""
    when = dt.datetime.fromtimestamp(r.ts / 1000, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    when = when[:-4] + "Z"  # milliseconds
    ids = " ".join(f"{k}={getattr(r, k)}" for k in _SHOWN if getattr(r, k))
    rest = " ".join(
        f"{k}={json.dumps(v, ensure_ascii=True)}" for k, v in r.payload.items() if k not in _SHOWN
    )
    return f"{r.seq:>8}  {when}  {r.kind:<20} {ids} {rest}".rstrip()


def cmd_tail(args: argparse.Namespace) -> int:
    from ..store import open_store
    from ..store.event_log import FeedStore, record_to_dict

    with open_store(args.db, read_only=True) as store:
        feed = FeedStore(store)
        for shown, r in enumerate(feed.follow(args.since, args.kind, poll=0.1), start=1):
            print(json.dumps(record_to_dict(r), ensure_ascii=False) if args.json else format_line(r))
            sys.stdout.flush()  # a pipe reader sees each event as it commits
            if args.count is not None and shown >= args.count:
                break
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from ..config import FeedbackConfig
    from ..runtime.subscriber import attach_feedback_subscriber
    from ..store import open_store

    config = FeedbackConfig.from_env(base=FeedbackConfig(use_llm=False))
    with open_store(args.db) as store:
        sub = attach_feedback_subscriber(store, config=config, workers=args.workers, poll_interval=0.05)
        before = sub.queue.stats()
        try:
            drained = sub.drain(args.timeout)
        finally:
            sub.close(timeout=10)
        counts = sub.metrics()
        after = sub.queue.stats()
    print(
        f"swept: {counts['done']} done, {counts['retried']} retried, {counts['dead']} dead "
        f"(pending {before['pending']}→{after['pending']}, running {before['running']}→{after['running']}, "
        f"dead letters {after['dead']})"
    )
    if not drained:
        print(f"timeout after {args.timeout:g} s: the queue is not empty", file=sys.stderr)
        return 1
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        from ..web.server import serve
    except ImportError as exc:
        raise MemosFeedbackError(
            f"serve needs the [ui] extra ({exc.name or exc}): pip install 'memos-feedback[ui]'"
        ) from None
    return serve(args)


def register(cli: Commands) -> None:
    from ..events import EVENT_KINDS

    p = cli.add("tail", cmd_tail, "print events as they commit, like tail -f (Ctrl-C ends it)")
    p.add_argument("--kind", action="append", choices=sorted(EVENT_KINDS), help="only this kind (repeatable)")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument(
        "--since", type=nonneg, metavar="SEQ", help="start after event SEQ (0: the whole log; default: now)"
    )
    p.add_argument("--count", type=positive, metavar="N", help="exit after N events")

    p = cli.add("sweep", cmd_sweep, "run the repair queue until it is empty, then exit (1 on timeout)")
    p.add_argument("--timeout", type=seconds, default=600.0, help="seconds (default 600)")
    p.add_argument("--workers", type=positive, default=2, help="worker threads (default 2)")

    p = cli.add("serve", cmd_serve, "web UI: live feed, repairs, queue, policies (extra [ui])")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=nonneg, default=8765, help="port (default 8765; 0 picks a free one)")
    p.add_argument(
        "--token",
        help="required on every request; needed for a non-loopback --host (or MEMOS_FEEDBACK_UI_TOKEN)",
    )
