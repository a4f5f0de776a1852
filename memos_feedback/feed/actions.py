"""Operator actions that change state, each logged in its own transaction.

The command line and the web UI both go through these, so a validation, a
rejection, a retry or a purge shows up in the event log (and so on every
live feed) exactly when it commits.
"""

from __future__ import annotations

from ..config import FeedbackConfig
from ..events import FeedbackEvent, RepairJobPurged, RepairJobRequeued, RepairReviewed
from ..runtime.queue import JobRow, RepairQueue
from ..store import DecisionRepairRow, Store
from ..store.event_log import FeedStore

__all__ = ["purge_job", "requeue_job", "review_repair"]


def review_repair(store: Store, repair_id: str, verdict: str) -> DecisionRepairRow:
    """``verdict`` ``validate`` or ``reject``; logs ``repair.reviewed`` with the change."""
    feed = FeedStore(store)
    with store.session(write=True, action="reviewing a repair") as s:
        if verdict == "validate":
            row = store.repairs.validate(repair_id, session=s)
        elif verdict == "reject":
            row = store.repairs.reject(repair_id, session=s)
        else:
            raise ValueError(f"verdict must be 'validate' or 'reject', got {verdict!r}")
        event: FeedbackEvent = RepairReviewed(
            repair_id=row.id, verdict="validated" if row.validated else "rejected"
        )
        feed.write_in(s, [event])
    return row


def requeue_job(store: Store, job_id: str, config: FeedbackConfig | None = None) -> JobRow:
    """``RepairQueue.retry`` that logs ``repair.job.requeued`` with the change."""
    queue = RepairQueue(store, config or FeedbackConfig())
    with store.session(write=True, action="retrying a job") as s:
        job = queue.retry(job_id, session=s)
        FeedStore(store).write_in(s, [RepairJobRequeued(job_id=job.id, context_hash=job.context_hash)])
    return job


def purge_job(store: Store, job_id: str, config: FeedbackConfig | None = None) -> JobRow:
    """``RepairQueue.purge`` that logs ``repair.job.purged`` with the change."""
    queue = RepairQueue(store, config or FeedbackConfig())
    with store.session(write=True, action="purging a job") as s:
        job = queue.purge(job_id, session=s)
        FeedStore(store).write_in(s, [RepairJobPurged(job_id=job.id)])
    return job
