"""Reviewing repairs: ``classify``, ``repairs list|show|validate|reject|delete|purge|embed``,
``guidance`` and ``run-once``."""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import TimeoutError as FutureTimeoutError
from dataclasses import asdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..errors import MemosFeedbackError
from ..limits import MAX_LIMIT
from ._commands import Commands, epoch_ms, error, limit, open_db, print_json, seconds

if TYPE_CHECKING:
    from ..embeddings import Embedder

__all__ = ["register"]


def register(cli: Commands) -> None:
    p = cli.add("classify", cmd_classify, "classify one feedback message (needs no database)")
    p.add_argument("text", help="the user's message, in English or Chinese")
    p.add_argument("--agent-text", default=None, help="the agent's turn the message answers (context)")
    p.add_argument("--json", action="store_true", help="print the classification as JSON")

    cli.group("repairs", "list, review, delete and embed decision repairs")
    p = cli.add("list", cmd_repairs_list, "newest repairs first", group="repairs")
    p.add_argument("--context-hash", help="only repairs of this context hash")
    p.add_argument("--status", choices=("active", "stale", "superseded"), help="only repairs of this status")
    p.add_argument("--project", help="only repairs of this project")
    p.add_argument("--user", help="only repairs of this user (tenant)")
    p.add_argument("--limit", type=limit, default=100, help=f"1..{MAX_LIMIT} (default 100)")
    p.add_argument("--json", action="store_true", help="print a JSON list, with the outcome counts")
    p = cli.add("show", cmd_repairs_show, "one repair in full", group="repairs")
    p.add_argument("id", help="the repair's id (dr_…)")
    p.add_argument("--json", action="store_true", help="print it as JSON, with its history")
    for verdict in ("validate", "reject"):
        p = cli.add(verdict, cmd_repairs_verdict, f"{verdict} a repair", group="repairs")
        p.add_argument("id", help="the repair's id (dr_…)")
        p.set_defaults(verdict=verdict)
    p = cli.add(
        "delete", cmd_repairs_delete, "delete repairs for good, with their block lines", group="repairs"
    )
    p.add_argument("ids", nargs="+", metavar="ID", help="the repairs' ids (dr_…); all or none are deleted")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p = cli.add(
        "purge", cmd_repairs_purge, "delete every repair (of a project, older than a date)", group="repairs"
    )
    p.add_argument("--project", help="only repairs stored with this project")
    p.add_argument(
        "--before", type=epoch_ms, help="only repairs older than this (ISO 8601 date/time, UTC, or epoch ms)"
    )
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p = cli.add(
        "embed", cmd_repairs_embed, "backfill repair embeddings (extra [embeddings])", group="repairs"
    )
    p.add_argument("--model", help="a local sentence-transformers model directory (default: packaged)")
    p.add_argument("--batch-size", type=int, default=64, help="repairs embedded per model call (default 64)")
    p.add_argument("--all", action="store_true", help="re-embed every repair, not only missing ones")

    p = cli.add("guidance", cmd_guidance, "the repairs a runtime would inject now")
    p.add_argument("--tool", metavar="TOOL", help="the tool about to run, as the runtime names it")
    p.add_argument(
        "--context", metavar="TEXT", help="where it runs, as the runtime passes it ('install web/')"
    )
    p.add_argument(
        "--query",
        metavar="TEXT",
        help="what the agent is about to do, or the error it just saw (default: --context); "
        "without either, nothing applies",
    )
    p.add_argument(
        "--project",
        metavar="P",
        help="global repairs and those of project P (default: MEMOS_FEEDBACK_RECALL_DEFAULT_PROJECT)",
    )
    p.add_argument("--user", metavar="U", help="also this user's repairs (tenant scope)")
    p.add_argument("--limit", type=int, metavar="N", help="at most N items (default: recall default_limit)")
    p.add_argument("--embeddings", action="store_true", help="rank with the packaged embedding model too")
    p.add_argument("--model", help="a local sentence-transformers model directory (implies --embeddings)")
    p.add_argument("--json", action="store_true", help="print the mode and the items as JSON, not the block")

    p = cli.add("run-once", cmd_run_once, "queue a manual repair and wait for it")
    p.add_argument("--session", required=True, help="the session whose traces are the evidence")
    p.add_argument("--context-hash", required=True, help="the context the repair is for")
    p.add_argument("--tool", help="the tool it is about")
    p.add_argument("--text", help="user feedback text to classify with it")
    p.add_argument("--project", help="the repair's project (default: MEMOS_FEEDBACK_RECALL_DEFAULT_PROJECT)")
    p.add_argument("--user", help="the repair's user (tenant)")
    p.add_argument("--timeout", type=seconds, default=120.0, help="seconds to wait (default 120)")


def cmd_classify(args: argparse.Namespace) -> int:
    from ..classify.classifier import classify_feedback

    fb = classify_feedback(args.text, agent_text=args.agent_text)
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


def _confirmed(question: str, yes: bool) -> bool:
    """``--yes``, or a ``y`` typed at the prompt (stderr, so ``stdout`` stays the result)."""
    if yes:
        return True
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline()  # "" at end of input: not confirmed
    if not answer.endswith("\n") or not sys.stdin.isatty():
        print(file=sys.stderr)  # nothing echoed the newline: end the question's line
    if answer.strip().lower() in ("y", "yes"):
        return True
    error("not confirmed (answer y, or pass --yes): nothing deleted")
    return False


def cmd_repairs_delete(args: argparse.Namespace) -> int:
    from ..feed.actions import delete_repairs

    ids = list(dict.fromkeys(args.ids))
    shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    if not _confirmed(f"delete {len(ids)} repair(s) ({shown}) and their block lines?", args.yes):
        return 1
    with open_db(args) as store:
        deleted = delete_repairs(store, ids)  # also logged as repair.deleted
    print(f"{len(deleted)} repair(s) deleted")
    return 0


def cmd_repairs_purge(args: argparse.Namespace) -> int:
    from ..feed.actions import count_purge, purge_repairs
    from ..types import now_ms

    # Fixed now: a repair written after the question is not part of the answer.
    before = now_ms() + 1 if args.before is None else args.before
    with open_db(args) as store:
        count = count_purge(store, project=args.project, before=before)
        scope = "" if args.project is None else f" of project {args.project!r}"
        if args.before is not None:
            scope += f" older than {datetime.fromtimestamp(before / 1000, UTC).isoformat(timespec='seconds')}"
        if count == 0:
            print(f"no repairs{scope}")
            return 0
        if not _confirmed(f"delete {count} repair(s){scope} and their block lines?", args.yes):
            return 1
        deleted = purge_repairs(store, project=args.project, before=before)
    print(f"{deleted} repair(s) deleted")
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
    from ..embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(args.model)


def cmd_guidance(args: argparse.Namespace) -> int:
    """Print the block a runtime would inject (or the items as JSON)."""
    from ..recall.config import RecallConfig
    from ..recall.guidance import guidance_for
    from ..types import Scope

    config = RecallConfig.from_env()
    scope = Scope.resolve(args.project, args.user, default_project=config.default_project)
    with open_db(args) as store:
        found = guidance_for(
            store,
            tool_id=args.tool,
            context=args.context,
            query=args.query,
            project=scope.project,
            user=scope.user,
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
    from ..embeddings import SentenceTransformerEmbedder
    from ..recall.indexing import backfill

    embedder = SentenceTransformerEmbedder(args.model)
    with open_db(args) as store:
        report = backfill(store, embedder, batch_size=args.batch_size, redo=args.all)
    print(f"embedded {report.embedded} of {report.scanned} repairs ({report.text_filled} got search text)")
    return 0
