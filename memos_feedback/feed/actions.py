"""Operator actions that change state, each logged in its own transaction.

The command line and the web UI both go through these, so a validation, a
rejection, a deletion, a retry or a purge shows up in the event log (and so on every
live feed) exactly when it commits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._checks import check_int, check_str
from ..config import FeedbackConfig
from ..errors import InvalidInputError, NotFoundError
from ..events import FeedbackEvent, RepairDeleted, RepairJobPurged, RepairJobRequeued, RepairReviewed
from ..runtime.queue import JobRow, RepairQueue
from ..store import DecisionRepairRow, Store
from ..store.deletion import BATCH, DeletedRepair, delete_repair_rows, purge_batch, purge_count
from ..store.event_log import FeedStore
from ..types import now_ms

if TYPE_CHECKING:
    from ..store.handles import Session

__all__ = ["count_purge", "delete_repairs", "purge_job", "purge_repairs", "requeue_job", "review_repair"]


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


def _purge_scope(project: str | None, before: int | None) -> tuple[str | None, int]:
    """The checked ``project`` and cutoff of a purge (``InvalidInputError`` when one is wrong)."""
    if project is not None:
        check_str("project", project)
    cutoff = now_ms() + 1 if before is None else check_int("before", before, lo=0, hi=2**63 - 1)
    return project, cutoff


def _forget(store: Store, s: Session, deleted: Sequence[DeletedRepair]) -> list[FeedbackEvent]:
    """Inside ``s``, after the rows went: their lines leave every block; one event per repair."""
    # Rows first, lines second: a line another live repair still carries is
    # then judged without the deleted ones. Each distinct pair detaches once.
    cleaned: dict[tuple[str, str], tuple[str, ...]] = {}
    for d in deleted:
        pair = (d.preference, d.anti_pattern)
        if pair not in cleaned:
            cleaned[pair] = store.repairs.detach(s, d.preference, d.anti_pattern)
    return [RepairDeleted(repair_id=d.id, policy_ids=cleaned[d.preference, d.anti_pattern]) for d in deleted]


def delete_repairs(store: Store, repair_ids: Sequence[str]) -> list[str]:
    """Delete these repairs for good, all or none: the rows, their servings and outcomes, and
    their lines in policy blocks, in one transaction; logs ``repair.deleted`` for each.

    An unknown id raises ``NotFoundError`` and deletes nothing.
    """
    ids = list(dict.fromkeys(repair_ids))
    if not ids or not all(isinstance(i, str) and i for i in ids):
        raise InvalidInputError("delete_repairs takes one or more repair ids (non-empty strings)")
    feed = FeedStore(store)
    with store.session(write=True, action="deleting repairs") as s:
        deleted: list[DeletedRepair] = []
        for start in range(0, len(ids), BATCH):
            deleted += delete_repair_rows(s, ids[start : start + BATCH])
        missing = sorted(set(ids) - {d.id for d in deleted})
        if missing:  # raising rolls back: nothing of this call is deleted
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise NotFoundError(f"no repair with id {missing[0]!r}{more}; nothing deleted")
        feed.write_in(s, _forget(store, s, deleted))
    return [d.id for d in deleted]


def purge_repairs(store: Store, *, project: str | None = None, before: int | None = None) -> int:
    """Delete every repair older than ``before`` (epoch ms; now when None), of ``project`` when
    given, as ``delete_repairs`` does, in one transaction; how many."""
    project, cutoff = _purge_scope(project, before)
    feed = FeedStore(store)
    total = 0
    with store.session(write=True, action="purging repairs") as s:
        # Each batch's events go in with it (memory stays bounded): the log's
        # lock is then held from the first batch to the commit.
        while batch := purge_batch(s, before=cutoff, project=project):
            feed.write_in(s, _forget(store, s, batch))
            total += len(batch)
    return total


def count_purge(store: Store, *, project: str | None = None, before: int) -> int:
    """How many repairs ``purge_repairs`` with the same arguments would delete now."""
    project, cutoff = _purge_scope(project, before)
    with store.session(action="counting repairs to purge") as s:
        return purge_count(s, before=cutoff, project=project)
