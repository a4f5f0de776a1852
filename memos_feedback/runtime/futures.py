"""``JobFutures``: the result handles of queued repairs, and the subscriber's counters.

Every job this handle queued has an entry in ``futures`` (with the
``Future`` objects waiting on it, maybe none) until a worker here
finishes it or the heartbeat sees it finished elsewhere (several
processes share one queue). ``in_flight`` holds the jobs this process's
workers have claimed. One ``lock`` guards the three maps and the counters.
"""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import Future

from ..errors import RepairJobDeadError, StoreError
from ..store import Store
from ..text.logs import library_logger
from ..types import DecisionRepairDraft, RepairResult
from .queue import JobRow, RepairQueue

__all__ = ["JobFutures", "skipped_result"]

logger = library_logger("memos_feedback.subscriber")


def skipped_result(
    trigger: str, context_hash: str, reason: str, started_at: int, completed_at: int
) -> RepairResult:
    """The result of a trigger no job will run for."""
    return RepairResult(
        trigger=trigger,
        context_hash=context_hash,
        repair_id=None,
        draft=None,
        skipped=True,
        skipped_reason=reason,
        started_at=started_at,
        completed_at=completed_at,
    )


class JobFutures:
    """Futures by job id, jobs in flight, and counters; ``work`` hears of new jobs."""

    def __init__(self, store: Store, queue: RepairQueue, work: threading.Condition) -> None:
        self.store = store
        self.queue = queue
        self.work = work
        self.lock = threading.Lock()
        self.futures: dict[str, list[Future[RepairResult]]] = {}
        self.in_flight: set[str] = set()
        self.counts: Counter[str] = Counter()

    def count(self, key: str) -> None:
        with self.lock:
            self.counts[key] += 1

    def track(self, job_id: str, future: Future[RepairResult] | None, *, deduped: bool) -> None:
        """Wait for ``job_id`` (with ``future``, if given) and wake a worker for it."""
        with self.lock:
            self.counts["deduped" if deduped else "enqueued"] += 1
            waiting = self.futures.setdefault(job_id, [])
            if future is not None:
                waiting.append(future)
        with self.work:
            self.work.notify_all()

    def cancel_all(self) -> int:
        """Cancel every future still waiting (closing); returns how many."""
        with self.lock:
            leftovers = [f for futures in self.futures.values() for f in futures]
            self.futures.clear()
        for f in leftovers:
            f.cancel()
        return len(leftovers)

    def resolve(
        self, job_id: str, *, result: RepairResult | None = None, error: BaseException | None = None
    ) -> None:
        with self.lock:
            futures = self.futures.pop(job_id, [])
        for f in futures:
            if f.done():
                continue
            if error is not None:
                f.set_exception(error)
            else:
                assert result is not None
                f.set_result(result)

    def resolve_finished_elsewhere(self) -> None:
        """Settle futures of jobs another process finished (or an operator purged)."""
        with self.lock:
            ids = [j for j in self.futures if j not in self.in_flight]
        if not ids:
            return
        try:
            rows = self.queue.get_many(ids)
        except StoreError as exc:
            logger.debug("could not look up finished jobs: %s", exc)
            return
        for job_id in ids:
            row = rows.get(job_id)
            if row is not None and row.status not in ("done", "dead"):
                continue
            with self.lock:
                # A worker here may have claimed and finished it meanwhile;
                # its own result (with the draft it made) wins.
                if job_id in self.in_flight:
                    continue
                futures = self.futures.pop(job_id, [])
            for f in futures:
                if f.done():
                    continue
                if row is None:
                    f.cancel()  # purged: there is nothing to report
                elif row.status == "dead":
                    f.set_exception(RepairJobDeadError(row.id, row.last_error))
                else:
                    f.set_result(self._result_from_row(row))

    def _result_from_row(self, job: JobRow) -> RepairResult:
        """A ``RepairResult`` rebuilt from a finished job row and its repair."""
        outcome = job.outcome or ""
        draft = None
        if job.repair_id is not None:
            try:
                r = self.store.repairs.get(job.repair_id)
            except StoreError:
                r = None
            if r is not None:
                draft = DecisionRepairDraft(
                    context_hash=r.context_hash,
                    preference=r.preference,
                    anti_pattern=r.anti_pattern,
                    severity="warn" if r.severity == "warn" else "info",
                    confidence=r.confidence,
                    high_value_trace_ids=r.high_value_trace_ids,
                    low_value_trace_ids=r.low_value_trace_ids,
                )
        skipped = job.repair_id is None
        return RepairResult(
            trigger=job.trigger,
            context_hash=job.context_hash,
            repair_id=job.repair_id,
            draft=draft,
            skipped=skipped,
            skipped_reason=outcome.removeprefix("skipped:") if skipped else None,
            started_at=job.created_at,
            completed_at=job.updated_at,
        )
