"""Starting the UI server: bind, print where, run uvicorn until Ctrl-C."""

from __future__ import annotations

import argparse
import os
import socket

import uvicorn

from ..errors import MemosFeedbackError
from .app import create_app
from .guard import is_loopback

__all__ = ["TOKEN_ENV", "serve"]

TOKEN_ENV = "MEMOS_FEEDBACK_UI_TOKEN"


def serve(args: argparse.Namespace) -> int:
    from ..store import open_store

    token = args.token or os.environ.get(TOKEN_ENV) or None
    loopback = is_loopback(args.host)
    if not loopback and not token:
        raise MemosFeedbackError(
            f"--host {args.host} is not loopback: set --token (or {TOKEN_ENV}) so every request must carry it"
        )
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
        # Listen now, not when uvicorn gets to it: the line below tells clients
        # the server is up, and the kernel queues their connections until then.
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise MemosFeedbackError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    port = sock.getsockname()[1]
    shown_host = f"[{args.host}]" if family == socket.AF_INET6 else args.host
    with open_store(args.db) as store:
        app = create_app(store, token=token)
        # Port 0 picks a free one: say which, so a script can read it.
        print(f"serving on http://{shown_host}:{port}/", flush=True)
        config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2)
        uvicorn.Server(config).run(sockets=[sock])
    return 0
