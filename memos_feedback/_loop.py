"""``wake_loop``: the loop of a background writer thread.

Several threads have the same shape: sleep until woken (or until a period
passes, which bounds how long work can wait if a wake-up were missed), do a
round of work, and pause before the next round while rounds fail — 50 ms,
doubling up to 1 s — so an outage is retried without spinning and without
waiting long once it ends. Once closing, the loop ends after a round the
owner says is its last. Below the store (the event log's flusher uses it),
so it imports nothing of the package.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["FIRST_BACKOFF", "MAX_BACKOFF", "wake_loop"]

# The pause after a failed round, and the most it grows to.
FIRST_BACKOFF = 0.05
MAX_BACKOFF = 1.0


def _always(ok: bool) -> bool:
    return True


def wake_loop(
    work: Callable[[], bool],
    *,
    wake: threading.Event,
    period: float,
    closing: threading.Event,
    last_round: Callable[[bool], bool] = _always,
    pause: Callable[[float], bool] | None = None,
) -> None:
    """Run ``work`` each time ``wake`` is set, and at least every ``period`` seconds.

    ``work`` returns whether its round succeeded (it should not raise:
    an exception ends the loop). Once ``closing`` is set, the loop ends
    after a round for which ``last_round(ok)`` is true. After a failed
    round it calls ``pause(delay)`` (by default: wait ``delay`` seconds or
    until ``closing`` is set), and ends when that returns True; the delay
    starts at ``FIRST_BACKOFF``, doubles up to ``MAX_BACKOFF`` and starts
    over after a round that succeeds.
    """
    delay = FIRST_BACKOFF
    while True:
        wake.wait(timeout=period)
        wake.clear()
        ok = work()
        if closing.is_set() and last_round(ok):
            return
        if ok:
            delay = FIRST_BACKOFF
            continue
        if pause is None:
            closing.wait(delay)
        elif pause(delay):
            return
        delay = min(delay * 2, MAX_BACKOFF)
