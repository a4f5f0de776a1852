"""Run a test's work on several threads at once and keep what they raised."""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["run_threads"]


def run_threads(work: Callable[[int], None], n: int) -> list[BaseException]:
    """``work(0)`` … ``work(n - 1)``, each on its own thread, released together; their exceptions."""
    errors: list[BaseException] = []
    start = threading.Barrier(n)

    def run(k: int) -> None:
        try:
            start.wait()
            work(k)
        except BaseException as exc:  # reported to the caller
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors
