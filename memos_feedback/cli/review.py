"""Reviewing repairs: ``classify``, ``repairs list|show|validate|reject|embed``,
``guidance`` and ``run-once``."""

from __future__ import annotations

import argparse
import json
from concurrent.futures import TimeoutError as FutureTimeoutError
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ..errors import MemosFeedbackError
from ..limits import MAX_LIMIT
from ._commands import Commands, limit, open_db, print_json, seconds

if TYPE_CHECKING:
    from ..recall.embeddings import Embedder

__all__ = ["register"]


def register(cli: Commands) -> None:
    p = cli.add("classify", cmd_classify, "classify one feedback message (needs no database)")
    p.add_argument("text")
    p.add_argument("--json", action="store_true")

    cli.group("repairs", "list and review decision repairs")
    p = cli.add("list", cmd_repairs_list, "newest repairs first", group="repairs")
    p.add_argument("--context-hash")
    p.add_argument("--status", choices=("active", "stale", "superseded"), help="only repairs of this status")
    p.add_argument("--project", help="only repairs of this project")
    p.add_argument("--user", help="only repairs of this user (tenant)")
    p.add_argument("--limit", type=limit, default=100, help=f"1..{MAX_LIMIT} (default 100)")
    p.add_argument("--json", action="store_true")
    p = cli.add("show", cmd_repairs_show, "one repair in full", group="repairs")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    for verdict in ("validate", "reject"):
        p = cli.add(verdict, cmd_repairs_verdict, f"{verdict} a repair", group="repairs")
        p.add_argument("id")
        p.set_defaults(verdict=verdict)
    p = cli.add(
        "embed", cmd_repairs_embed, "backfill repair embeddings (extra [embeddings])", group="repairs"
    )
    p.add_argument("--model", help="a local sentence-transformers model directory (default: packaged)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--all", action="store_true", help="re-embed every repair, not only missing ones")

    p = cli.add("guidance", cmd_guidance, "the repairs a runtime would inject now")
    p.add_argument("--tool")
    p.add_argument("--context")
    p.add_argument("--query")
    p.add_argument(
        "--project", help="global repairs and this project's (default: MEMOS_FEEDBACK_RECALL_DEFAULT_PROJECT)"
    )
    p.add_argument("--user", help="also this user's repairs (tenant scope)")
    p.add_argument("--limit", type=int)
    p.add_argument("--embeddings", action="store_true", help="rank with the packaged embedding model too")
    p.add_argument("--model", help="a local sentence-transformers model directory (implies --embeddings)")
    p.add_argument("--json", action="store_true")

    p = cli.add("run-once", cmd_run_once, "queue a manual repair and wait for it")
    p.add_argument("--session", required=True)
    p.add_argument("--context-hash", required=True)
    p.add_argument("--tool")
    p.add_argument("--text", help="user feedback text to classify with it")
    p.add_argument("--project", help="the repair's project (default: MEMOS_FEEDBACK_RECALL_DEFAULT_PROJECT)")
    p.add_argument("--user", help="the repair's user (tenant)")
    p.add_argument("--timeout", type=seconds, default=120.0, help="seconds to wait (default 120)")


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
        print_json(data)
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
    # With each repair's outcome counts, so a reviewer sees which lessons work.
    from ..outcomes.report import list_line, list_with_outcomes, with_counts

    with open_db(args, read_only=True) as store:
        rows = list_with_outcomes(
            store,
            status=args.status,
            context_hash=args.context_hash,
            limit=args.limit,
            project=args.project,
            user=args.user,
        )
    if args.json:
        print_json([with_counts(r, c) for r, c in rows])
    else:
        for row, counts in rows:
            print(list_line(row, counts))
        if not rows:
            print("no repairs")
    return 0


def cmd_repairs_show(args: argparse.Namespace) -> int:
    from ..outcomes.report import history_lines

    with open_db(args, read_only=True) as store:
        row = store.repairs.get(args.id)
        entries, lines = history_lines(store, args.id)
    if args.json:
        print_json({**asdict(row), "history": [asdict(e) for e in entries]})
    else:
        for key, value in asdict(row).items():
            print(f"{key:>20}: {value}")
        print(f"{'history':>20}: {len(entries)} event(s)")
        for line in lines:
            print(f"{'':>20}  {line}")
    return 0


def cmd_repairs_verdict(args: argparse.Namespace) -> int:
    from ..feed.actions import review_repair

    with open_db(args) as store:
        row = review_repair(store, args.id, args.verdict)  # also logged as repair.reviewed
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
        project=args.project,
        user=args.user,
    )
    with open_db(args) as store, attach_feedback_subscriber(store, config=config) as sub:
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


def _embedder(args: argparse.Namespace) -> Embedder | None:
    if not getattr(args, "embeddings", False) and not getattr(args, "model", None):
        return None
    from ..recall.embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(args.model)


def cmd_guidance(args: argparse.Namespace) -> int:
    """Print the block a runtime would inject (or the items as JSON)."""
    from ..recall.config import RecallConfig
    from ..recall.guidance import guidance_for

    config = RecallConfig.from_env()
    with open_db(args) as store:
        found = guidance_for(
            store,
            tool_id=args.tool,
            context=args.context,
            query=args.query,
            project=args.project if args.project is not None else config.default_project,
            user=args.user,
            limit=args.limit,
            embedder=_embedder(args),
            config=config,
        )
    if args.json:
        print(json.dumps({"mode": found.mode, "items": [asdict(i) for i in found.items]}, ensure_ascii=False))
    else:
        print(found.render() or "(no guidance)")
    return 0


def cmd_repairs_embed(args: argparse.Namespace) -> int:
    """Backfill embeddings (and search text) of repairs written without them."""
    from ..recall.embeddings import SentenceTransformerEmbedder
    from ..recall.indexing import backfill

    embedder = SentenceTransformerEmbedder(args.model)
    with open_db(args) as store:
        report = backfill(store, embedder, batch_size=args.batch_size, redo=args.all)
    print(f"embedded {report.embedded} of {report.scanned} repairs ({report.text_filled} got search text)")
    return 0
