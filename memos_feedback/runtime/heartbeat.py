"""``Heartbeat``: the thread that keeps leases alive and the queue tidy.

It renews the leases of jobs in flight every quarter lease and returns
other owners' abandoned jobs to ``pending``. It has a thread of its own so
a slow insert or a busy enqueuer can never let a live worker's lease
lapse. Twice a second it also resolves the futures of jobs another
process finished (several processes share one queue), and now and then it
prunes done jobs past ``done_retention_ms``. ``recover_at_start`` is the
same housekeeping once, before any thread starts.
"""

from __future__ import annotations

import threading
import time

from ..config import FeedbackConfig
from ..errors import StoreError
from ..events import FeedbackBus, RepairJobDiscarded
from ..store import Store
from ..store.event_log import FeedStore
from ..text.logs import library_logger
from ..types import now_ms
from .futures import JobFutures
from .queue import PRUNE_BATCH, RepairQueue
from .workers import log_in

__all__ = ["Heartbeat", "recover_at_start"]

logger = library_logger("memos_feedback.subscriber")

# How often (s) the heartbeat looks for jobs another process finished.
_RESOLVE_EVERY = 0.5
# Retention pruning of done jobs: how often, and how many batches a beat.
_PRUNE_EVERY = 60.0
_PRUNE_BATCHES_PER_BEAT = 10


def recover_at_start(
    store: Store, queue: RepairQueue, bus: FeedbackBus, events: FeedStore | None, jobs: JobFutures
) -> None:
    """Return abandoned jobs to ``pending`` and discard stale ones (logged and emitted)."""
    queue.recover()
    with store.session(write=True, action="discarding stale jobs") as s:
        stale = queue.discard_stale(session=s)
        discarded = [
            RepairJobDiscarded(job_id=job.id, context_hash=job.context_hash, reason="stale") for job in stale
        ]
        log_in(events, s, discarded)
    for event in discarded:
        jobs.count("discarded")
        bus.emit(event)


class Heartbeat:
    def __init__(
        self,
        config: FeedbackConfig,
        queue: RepairQueue,
        jobs: JobFutures,
        owner: str,
        closing: threading.Event,
    ) -> None:
        self.config = config
        self.queue = queue
        self.jobs = jobs
        self.owner = owner
        self._closing = closing

    def run(self) -> None:
        # A quarter of the lease: three renewals can be missed (a stalled
        # process, a slow database) before another worker may reclaim.
        interval = max(0.05, self.config.lease_ms / 4000)
        next_beat = time.monotonic() + interval
        next_prune = time.monotonic()
        while not self._closing.wait(timeout=min(interval, _RESOLVE_EVERY)):
            if time.monotonic() >= next_beat:
                next_beat = time.monotonic() + interval
                self.renew_leases()
            self.jobs.resolve_finished_elsewhere()
            if time.monotonic() >= next_prune:
                # A backlog (first start on an old database) is worked off
                # a bounded slice per beat, so lease renewal never waits long.
                backlog = self.prune_done()
                next_prune = time.monotonic() + (interval if backlog else _PRUNE_EVERY)

    def prune_done(self) -> bool:
        """Delete done jobs past ``done_retention_ms``; True when more are left to prune."""
        retention = self.config.done_retention_ms
        if retention <= 0:
            return False
        batches = _PRUNE_BATCHES_PER_BEAT
        try:
            pruned = self.queue.prune_done(now_ms() - retention, max_batches=batches)
        except StoreError as exc:
            logger.warning("pruning done jobs failed: %s", exc)
            return False
        return pruned >= batches * PRUNE_BATCH

    def renew_leases(self) -> None:
        """Extend our leases, and return other owners' abandoned jobs."""
        with self.jobs.lock:
            ids = list(self.jobs.in_flight)
        try:
            self.queue.renew(ids, self.owner)
            if self.queue.recover():
                with self.jobs.work:
                    self.jobs.work.notify_all()
        except StoreError as exc:
            logger.warning("lease renewal failed: %s", exc)
