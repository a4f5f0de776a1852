"""freezegun across threads.

By default freezegun answers with real time to any call that has a
``threading`` frame on its stack — every call made by the subscriber's
worker threads. The ``threaded_freezegun`` fixture lifts that for one
test so frozen time reaches the workers too. Waits inside such a test must
count real sleeps, not read the (frozen) clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import freezegun
import freezegun.config
import pytest

__all__ = ["threaded_freezegun", "wait_for"]


@pytest.fixture
def threaded_freezegun() -> Iterator[None]:
    saved = list(freezegun.config.settings.default_ignore_list)
    freezegun.configure(default_ignore_list=[m for m in saved if m != "threading"])
    try:
        yield
    finally:
        freezegun.configure(default_ignore_list=saved)


def wait_for(cond: Callable[[], object], seconds: float = 20.0, step: float = 0.01) -> None:
    """Poll ``cond`` with real sleeps (safe under a frozen clock)."""
    for _ in range(int(seconds / step)):
        if cond():
            return
        time.sleep(step)
    raise AssertionError(f"condition not met within {seconds} s of real time")
