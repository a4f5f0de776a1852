"""Command-line handlers for recall, for ``memos-feedback`` to mount.

``add_parsers(subparsers, common)`` adds ``guidance`` and ``repairs-embed``
(the lead mounts the latter as ``repairs embed``); both are runnable here
too: ``python -m memos_feedback.recall.cli guidance --tool T --query Q``.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from ..recall.config import RecallConfig
from ..recall.embeddings import Embedder
from ..store import open_store

__all__ = ["add_parsers", "cmd_guidance", "cmd_repairs_embed"]


def _embedder(args: argparse.Namespace) -> Embedder | None:
    if not getattr(args, "embeddings", False) and not getattr(args, "model", None):
        return None
    from ..recall.embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(args.model)


def cmd_guidance(args: argparse.Namespace) -> int:
    """Print the block a runtime would inject (or the items as JSON)."""
    from ..recall.guidance import guidance_for

    config = RecallConfig.from_env()
    with open_store(args.db) as store:
        found = guidance_for(
            store,
            tool_id=args.tool,
            context=args.context,
            query=args.query,
            project=args.project,
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
    with open_store(args.db) as store:
        report = backfill(store, embedder, batch_size=args.batch_size, redo=args.all)
    print(f"embedded {report.embedded} of {report.scanned} repairs ({report.text_filled} got search text)")
    return 0


def add_parsers(
    subparsers: Any,
    common: argparse.ArgumentParser | None = None,
    only: tuple[str, ...] = ("guidance", "repairs-embed"),
) -> None:
    """Add ``guidance`` and ``repairs-embed`` (or the ``only`` named) to a sub-parser set."""
    parents = [common] if common is not None else []
    if "guidance" in only:
        _add_guidance(subparsers, parents)
    if "repairs-embed" in only:
        _add_embed(subparsers, parents)


def _add_guidance(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("guidance", parents=parents, help="the repairs a runtime would inject now")
    p.add_argument("--tool")
    p.add_argument("--context")
    p.add_argument("--query")
    p.add_argument("--project")
    p.add_argument("--limit", type=int)
    p.add_argument("--embeddings", action="store_true", help="rank with the packaged embedding model too")
    p.add_argument("--model", help="a local sentence-transformers model directory (implies --embeddings)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_guidance)


def _add_embed(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("repairs-embed", parents=parents, help="backfill repair embeddings")
    p.add_argument("--model", help="a local sentence-transformers model directory (default: packaged)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--all", action="store_true", help="re-embed every repair, not only missing ones")
    p.set_defaults(handler=cmd_repairs_embed)
