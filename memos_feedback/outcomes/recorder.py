"""The outcome writer: a background thread that commits servings and settlements.

The agent's thread only appends to a deque (``serve``/``settle``). This
thread commits what piled up in one transaction (``ledger.write_batch``)
and emits the events afterwards. A batch the database refuses is kept and
retried with a growing pause; nothing is dropped while the process lives.

A settlement counts only once committed. If the process dies first, its
serving is still open in the database and is loaded again at the next start
(``ledger.open_servings``), so the next signal of that session settles it;
if it dies after the commit, the serving is closed and the unique key on
``served_id`` makes any replay a no-op. Nothing settled is lost, nothing is
settled twice.
"""

from __future__ import annotations

import threading
import time
from collections import deque

from .._loop import wake_loop
from ..events import FeedbackBus
from ..store import Store
from ..text.logs import library_logger
from .ledger import write_batch
from .states import Served, Settlement

__all__ = ["OutcomeRecorder"]

logger = library_logger("memos_feedback.outcomes")

_MAX_BATCH = 500


class OutcomeRecorder:
    def __init__(self, store: Store, bus: FeedbackBus, *, stale_after: int, flush_ms: int) -> None:
        self._store = store
        self._bus = bus
        self._stale_after = stale_after
        self._flush = flush_ms / 1000
        self._served: deque[Served] = deque()
        self._settled: deque[Settlement] = deque()
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._busy = False
        self.committed = 0
        self._thread = threading.Thread(target=self._run, name="memos-feedback-outcomes", daemon=True)
        self._thread.start()

    def serve(self, served: list[Served]) -> None:
        self._served.extend(served)
        self._wake.set()

    def settle(self, settled: list[Settlement]) -> None:
        self._settled.extend(settled)
        self._wake.set()

    def pending(self) -> int:
        return len(self._served) + len(self._settled) + int(self._busy)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything handed over so far is committed (False on timeout)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.pending():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            self._wake.set()
            time.sleep(0.005)
        return True

    def close(self, timeout: float) -> int:
        """Commit what is left within ``timeout`` s; returns how many records were not stored."""
        self._closing.set()
        self._wake.set()
        self._thread.join(timeout)
        left = self.pending()
        if left:
            logger.error("%d outcome record(s) not stored before close(); their servings stay open", left)
        return left

    def _run(self) -> None:
        wake_loop(
            self._drain,
            wake=self._wake,
            period=self._flush,
            closing=self._closing,
            last_round=lambda ok: ok or not self.pending(),
            pause=self._pause,
        )

    def _pause(self, delay: float) -> bool:
        """After a failed round: wait ``delay`` s; True (the loop ends) when closing began."""
        if self._closing.wait(delay):
            # Closing with the database down: one more try, then give up to close().
            self._drain()
            return True
        return False

    def _drain(self) -> bool:
        while self._served or self._settled:
            self._busy = True
            # Servings first: a settlement may refer to one taken in the same batch.
            served = [self._served.popleft() for _ in range(min(len(self._served), _MAX_BATCH))]
            settled = [self._settled.popleft() for _ in range(min(len(self._settled), _MAX_BATCH))]
            try:
                events = write_batch(self._store, served, settled, self._stale_after)
            except Exception as exc:  # kept and retried: an outage must lose nothing
                logger.warning(
                    "could not store %d outcome record(s), will retry: %s", len(served) + len(settled), exc
                )
                self._served.extendleft(reversed(served))
                self._settled.extendleft(reversed(settled))
                self._busy = False
                return False
            self.committed += len(served) + len(settled)
            self._busy = False
            for event in events:
                self._bus.emit(event)
        return True
