"""Crash injection for tests: ``MEMOS_FEEDBACK_FAILPOINTS=name[,name]``.

When a named failpoint is armed, reaching it kills the process with
SIGKILL — the harshest crash there is — at an exact point, so crash tests
need no sleep races. ``name=stall`` arms it to hang there instead, until
something else ends the process (a hook's deadline watchdog, say). Unset
(the normal case) a failpoint costs one frozenset lookup.
"""

from __future__ import annotations

import os
import signal
import time

__all__ = ["ARMED", "failpoint"]

_SPECS = [spec.strip() for spec in os.environ.get("MEMOS_FEEDBACK_FAILPOINTS", "").split(",") if spec.strip()]
ARMED: frozenset[str] = frozenset(spec.partition("=")[0] for spec in _SPECS)
_STALLED = frozenset(name for name, _, how in (spec.partition("=") for spec in _SPECS) if how == "stall")


def failpoint(name: str) -> None:
    if name in ARMED:
        while name in _STALLED:
            time.sleep(3600)
        os.kill(os.getpid(), signal.SIGKILL)
