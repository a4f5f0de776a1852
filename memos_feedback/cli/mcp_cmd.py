"""``memos-feedback mcp``: the MCP server (memos_feedback.surfaces.mcp_server), extra ``[mcp]``."""

from __future__ import annotations

import argparse

from ._commands import Commands, open_db

__all__ = ["cmd_mcp", "register"]


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be in 1-65535, got {value}")
    return value


def cmd_mcp(args: argparse.Namespace) -> int:
    from ..config import FeedbackConfig
    from ..runtime.subscriber import attach_feedback_subscriber
    from ..surfaces.mcp_server import check_bind, load_sdk, serve

    load_sdk()  # without the extra: one line naming it, before anything starts
    if args.http:
        check_bind(args.host, args.token)
    config = FeedbackConfig.from_env(base=FeedbackConfig(use_llm=False))
    with open_db(args) as store, attach_feedback_subscriber(store, config=config) as sub:
        serve(
            sub, http=args.http, host=args.host, port=args.port, token=args.token, project=args.project_name
        )
    return 0


def register(cli: Commands) -> None:
    p = cli.add(
        "mcp",
        cmd_mcp,
        "serve guidance, outcomes, feedback and reviews to any MCP client (stdio; --http for "
        "streamable HTTP); extra [mcp]",
    )
    p.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    p.add_argument(
        "--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1; others need --token)"
    )
    p.add_argument("--port", type=_port, default=8765, help="HTTP port (default 8765)")
    p.add_argument("--token", help="bearer token HTTP clients must send")
    p.add_argument("--project-name", metavar="NAME", help="the project guidance is scoped to")
