"""``db redact``: rewrite the secrets older versions stored (store/redact.py)."""

from __future__ import annotations

import argparse
import sys

from ._commands import Commands, open_db

__all__ = ["register"]


def _batch(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"must be 1..10000, got {value}")
    return value


def register(cli: Commands) -> None:
    p = cli.add(
        "redact",
        cmd_db_redact,
        "redact secrets in rows older versions stored (batched, resumable; a second run changes nothing)",
        group="db",
    )
    p.add_argument("--batch", type=_batch, default=500, help="rows per transaction, 1..10000 (default 500)")
    p.add_argument(
        "--traces",
        action="store_true",
        help="also rewrite the host's own traces rows (left alone by default)",
    )
    p.add_argument(
        "--vacuum",
        action="store_true",
        help="then rewrite the storage so no old copy stays in free pages "
        "(SQLite VACUUM; PostgreSQL VACUUM FULL of the rewritten tables, which locks each one)",
    )


def cmd_db_redact(args: argparse.Namespace) -> int:
    from ..store.redact import redact_tables

    def progress(table: str, scanned: int, rewritten: int) -> None:
        print(f"{table}: {scanned} rows read, {rewritten} rewritten", file=sys.stderr)

    with open_db(args) as store:
        report = redact_tables(
            store, traces=args.traces, batch=args.batch, progress=progress, vacuum=args.vacuum
        )
    for table, scanned in report.scanned.items():
        print(f"{table}: {report.rewritten[table]} of {scanned} rows rewritten")
    return 0
