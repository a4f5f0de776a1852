"""Crash injection for tests: ``MEMOS_FEEDBACK_FAILPOINTS=name[,name]``.

When a named failpoint is armed, reaching it kills the process with
SIGKILL — the harshest crash there is — at an exact point, so crash tests
need no sleep races. Unset (the normal case) a failpoint costs one
frozenset lookup.
"""

from __future__ import annotations

import os
import signal

__all__ = ["ARMED", "failpoint"]

ARMED: frozenset[str] = frozenset(
    name.strip() for name in os.environ.get("MEMOS_FEEDBACK_FAILPOINTS", "").split(",") if name.strip()
)


def failpoint(name: str) -> None:
    if name in ARMED:
        os.kill(os.getpid(), signal.SIGKILL)
