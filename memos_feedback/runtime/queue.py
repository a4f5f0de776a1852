"""``RepairQueue``: the durable, database-backed queue of repair jobs.

A job is a row in ``repair_jobs`` in the same database as the repairs, so
the repair row and the job's ``done`` status commit together (exactly one
repair per job, even across a crash). Life cycle::

    pending ──claim──▶ running ──ok──────────────▶ done
       ▲                  │  ├─transient error───▶ pending (next_attempt_at = now + backoff)
       │                  │  └─permanent error───▶ dead
       └──lease expired / owner process gone──────┘
    dead ──queue retry──▶ pending        pending older than stale_after ──▶ discarded (deleted)

Job ids are content addresses of the trigger, so re-triggering the same
situation while its job is waiting returns the existing job. When the same
situation comes back after its job finished, the finished row is archived
under ``<id>~<seq>`` (its history stays) and a new round takes the id.

Failure bursts are coalesced: a burst for a context that already has a
pending failure-burst job, or whose newest repair is still in cooldown,
adds no job (the pending job, or the repair, already covers it).

Every string of a trigger is cleaned before it is stored
(``limits.clean_text``: capped, NUL and lone surrogates replaced; then
``text.secrets.redact_secrets``: no credential reaches the table), and a
row whose payload cannot be read comes back with ``payload_error`` set
instead of raising, so the worker dead-letters it and goes on.

The SQL lives in ``store.jobs``; this module is the API over it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import random
import socket
import threading
import time
import unicodedata
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .._checks import check_int
from ..config import FeedbackConfig
from ..errors import InvalidInputError, LeaseLostError, NotFoundError, StoreBusyError
from ..limits import (
    CONTEXT_CHAR_CAP,
    ID_CHAR_CAP,
    MAX_LIMIT,
    REASON_CHAR_CAP,
    USER_TEXT_CHAR_CAP,
    clean_optional,
    clean_text,
)
from ..repair.run import cooldown_family
from ..store import Store
from ..store import jobs as store_jobs
from ..store.handles import Session
from ..store.jobs import (
    CLOCK_SLACK_MS,
    JOB_STATUSES,
    MAX_CLAIM_BATCH,
    PRUNE_BATCH,
    EnqueueResult,
    JobRow,
)
from ..store.payloads import input_from_payload, payload_of
from ..store.reads import Executor
from ..text.logs import library_logger
from ..text.secrets import stored_optional, stored_text
from ..types import ClassifiedFeedback, FailureRecord, RepairInput, now_ms

__all__ = [
    "CLOCK_SLACK_MS",
    "JOB_STATUSES",
    "MAX_CLAIM_BATCH",
    "PRUNE_BATCH",
    "EnqueueResult",
    "JobRow",
    "LeaseLostError",
    "RepairQueue",
    "backoff_ms",
    "clean_input",
    "input_from_payload",
    "job_id_for",
    "payload_of",
]

logger = library_logger("memos_feedback.queue")


# -- payloads and ids -------------------------------------------------------


def _carried(inp: RepairInput, user_text: str | None) -> ClassifiedFeedback | None:
    # The classification read the raw message; if storing it changed the text
    # (capped, a secret redacted), the worker reads the stored text afresh.
    c = inp.classified
    if c is None or user_text != inp.user_text:
        return None
    return c


def _clean_record(f: FailureRecord) -> FailureRecord:
    return FailureRecord(
        clean_text(f.tool_id, ID_CHAR_CAP) or "?",
        # Every record of a burst shares the burst's context; the input keeps
        # it once, so each record keeps only a short excerpt.
        stored_text(f.context, 256),
        f.step,
        stored_text(f.reason, REASON_CHAR_CAP),
        f.ts,
        clean_optional(f.session_id, ID_CHAR_CAP),
        clean_optional(f.episode_id, ID_CHAR_CAP),
        clean_optional(f.trace_id, ID_CHAR_CAP),
    )


# decision_repairs.project and .user_id are String(255).
_PROJECT_CHAR_CAP = 255


def clean_input(inp: RepairInput) -> RepairInput:
    """``inp`` with every string storable: capped, NUL and lone surrogates replaced, secrets redacted.

    The context hash is kept as given: it was computed from the raw context
    in memory, so redaction never moves a failure to another group.

    Raises ``InvalidInputError`` for a context hash no job can carry.
    """
    if len(inp.context_hash) > 64:
        raise InvalidInputError(f"context_hash must be at most 64 characters, got {len(inp.context_hash)}")
    user_text = stored_optional(inp.user_text, USER_TEXT_CHAR_CAP)
    return dataclasses.replace(
        inp,
        context_hash=clean_text(inp.context_hash, 64),
        tool_id=clean_optional(inp.tool_id, ID_CHAR_CAP),
        user_text=user_text,
        classified=_carried(inp, user_text),
        session_id=clean_optional(inp.session_id, ID_CHAR_CAP),
        episode_id=clean_optional(inp.episode_id, ID_CHAR_CAP),
        failures=tuple(_clean_record(f) for f in inp.failures),
        context=stored_optional(inp.context, CONTEXT_CHAR_CAP),
        agent_text=stored_optional(inp.agent_text, CONTEXT_CHAR_CAP),
        project=clean_optional(inp.project, _PROJECT_CHAR_CAP),
        user=clean_optional(inp.user, _PROJECT_CHAR_CAP),
    )


def _normalise(text: str | None) -> str:
    if not text:
        return ""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def job_id_for(inp: RepairInput) -> str:
    """Content address: trigger, context hash, normalised input and the burst window."""
    window = [(f.step, f.ts) for f in inp.failures]
    parts: list[Any] = [
        inp.trigger,
        inp.context_hash,
        _normalise(inp.user_text),
        inp.session_id or "",
        window,
    ]
    if inp.project is not None or inp.user is not None:
        # Another scope's request is another job (ids of unscoped ones unchanged).
        parts += [inp.project, inp.user]
    key = json.dumps(
        parts,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    # surrogatepass: an input that was not cleaned still gets an id.
    return "job_" + hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _check_id(job_id: object) -> None:
    if not isinstance(job_id, str):
        raise InvalidInputError(f"job id must be a str, got {type(job_id).__name__}")
    try:
        job_id.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError("job id must be valid text (it holds a lone surrogate)") from None


def backoff_ms(attempt: int, config: FeedbackConfig, rng: random.Random) -> int:
    """Delay before retry number ``attempt`` (1-based): exponential, capped, jittered."""
    try:
        base = config.retry_initial_ms * config.retry_multiplier ** max(0, attempt - 1)
    except OverflowError:  # a huge multiplier or attempt count: the cap applies
        base = float(config.retry_max_ms)
    base = min(base, float(config.retry_max_ms))
    jitter = 1.0 + rng.uniform(-config.retry_jitter, config.retry_jitter)
    return max(0, int(base * jitter))


def default_owner() -> str:
    """host:pid:random — the pid lets a restart on the same host spot dead owners."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _owner_is_dead(owner: str | None) -> bool:
    if not owner:
        return True
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != socket.gethostname()[:60]:
        return False  # another host: only its lease can tell
    try:
        pid = int(parts[1])
    except ValueError:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


@dataclass(slots=True)
class _EnqueueRequest:
    inp: RepairInput
    result: EnqueueResult | None = None
    error: BaseException | None = None
    finished: bool = False


class RepairQueue:
    """Operations on ``repair_jobs``; every method is one short transaction."""

    def __init__(self, store: Store, config: FeedbackConfig | None = None) -> None:
        self.store = store
        self.config = config or FeedbackConfig()
        # Group commit: requests wait here; one leader at a time commits them.
        self._group = threading.Condition()
        self._waiting: list[_EnqueueRequest] = []
        self._committing = False

    # -- enqueue ------------------------------------------------------------

    def enqueue(self, inp: RepairInput) -> EnqueueResult:
        """Store one job durably; returns once it is committed.

        Concurrent callers share commits (group commit): when no commit is
        in progress, the caller that finds it so becomes the leader and
        writes every request waiting at that moment in one transaction;
        the others wait for the leader's notification, so a burst of
        producers costs a few transactions, not one each, and nobody waits
        behind more than one commit besides its own.
        """
        if not isinstance(inp, RepairInput):
            raise InvalidInputError(f"enqueue takes RepairInput, got {type(inp).__name__}")
        request = _EnqueueRequest(inp)
        # A follower waits for the leader's commit, which is itself bounded by
        # the store's busy timeout; past twice that something is stuck, and
        # the caller hears so instead of waiting for ever.
        patience = 2 * self.store.busy_timeout_ms / 1000 + 1.0
        deadline = time.monotonic() + patience
        with self._group:
            self._waiting.append(request)
            while not request.finished:
                if not self._committing:
                    # Become the leader: take everything waiting, commit it below.
                    self._committing = True
                    batch, self._waiting = self._waiting, []
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    if request in self._waiting:
                        self._waiting.remove(request)
                        raise StoreBusyError(f"enqueueing a repair job waited {patience:g} s for a commit")
                    # Taken by a leader already: its commit decides.
                    deadline = time.monotonic() + patience
                    continue
                self._group.wait(timeout=left)
            else:
                batch = []
        if batch:
            try:
                results = self.enqueue_many([r.inp for r in batch])
            except BaseException as exc:
                for r in batch:
                    r.error = exc
            else:
                for r, result in zip(batch, results, strict=True):
                    r.result = result
            finally:
                with self._group:
                    for r in batch:
                        r.finished = True
                    self._committing = False
                    self._group.notify_all()
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

    def enqueue_many(self, inputs: Sequence[RepairInput]) -> list[EnqueueResult]:
        """Insert jobs in order, in one transaction; waiting duplicates are no-ops.

        Every input is cleaned first (``clean_input``). Failure bursts are
        coalesced into a pending failure-burst job of their context, or
        dropped while the context's newest repair is in cooldown.
        """
        for inp in inputs:
            if not isinstance(inp, RepairInput):
                raise InvalidInputError(f"enqueue takes RepairInput, got {type(inp).__name__}")
        if not inputs:
            return []
        cleaned = [clean_input(inp) for inp in inputs]
        ids = [job_id_for(inp) for inp in cleaned]
        now = now_ms()
        with self.store.session(write=True, action="enqueueing repair jobs") as s:
            return store_jobs.insert(
                s,
                cleaned,
                ids,
                now,
                cooldown_ms=self.config.cooldown_ms,
                cooldown_triggers=cooldown_family("failure-burst"),
            )

    # -- claiming -----------------------------------------------------------

    def recover(self, now: int | None = None) -> int:
        """Return expired or orphaned ``running`` jobs to ``pending``; count them."""
        now = now_ms() if now is None else now
        with self.store.session(write=True, action="recovering repair jobs") as s:
            return self._recover(s, now)

    def _recover(self, s: Session, now: int) -> int:
        running = store_jobs.running_leases(s)
        # A lease that ends further ahead than any this code grants was
        # written before the wall clock went back: it no longer protects.
        horizon = now + self.config.lease_ms + CLOCK_SLACK_MS
        stale = [
            job_id
            for job_id, lease_until, owner in running
            if (lease_until or 0) < now or (lease_until or 0) > horizon or _owner_is_dead(owner)
        ]
        if stale:
            store_jobs.return_to_pending(s, stale, now)
            logger.info("returned %d abandoned running job(s) to pending", len(stale))
        return len(stale)

    def claim(self, owner: str, now: int | None = None) -> JobRow | None:
        """Take the next due job whose context has nothing running and nothing older waiting.

        Expired leases are not swept here (``recover`` does that at start
        and on the subscriber's heartbeat), so a claim is two statements.
        """
        jobs = self.claim_many(owner, 1, now)
        return jobs[0] if jobs else None

    def claim_many(self, owner: str, limit: int, now: int | None = None) -> list[JobRow]:
        """Take up to ``limit`` due jobs, each of a different context, in one transaction.

        Each job is taken as ``claim`` takes one; a later pick in the same
        transaction sees the earlier ones running, so no two jobs of a
        context are ever taken together and a context's jobs still run in
        order. Saves a transaction per job for a worker that claims ahead.
        On SQLite the batch is one statement (``_RUN_TAKE_MANY_SQLITE``,
        which takes the same jobs), returned in queue order.
        """
        check_int("limit", limit, lo=1, hi=MAX_CLAIM_BATCH)
        now = now_ms() if now is None else now
        horizon = self._due_horizon(now)
        lease_until = now + self.config.lease_ms
        with self.store.connection(write=True, action="claiming a repair job") as s:
            return store_jobs.claim(s, owner, limit, now, horizon, lease_until)

    def release(self, jobs: Iterable[JobRow], owner: str) -> int:
        """Give back claimed jobs that were never started: pending again, the attempt not counted."""
        ids = [job.id for job in jobs]
        if not ids:
            return 0
        with self.store.connection(write=True, action="releasing claimed jobs") as s:
            return store_jobs.release(s, ids, owner, now_ms())

    def _due_horizon(self, now: int) -> int:
        """A ``next_attempt_at`` beyond this was written before the clock went back: due now."""
        return now + self.config.retry_max_ms + CLOCK_SLACK_MS

    def renew(self, job_ids: Iterable[str], owner: str, now: int | None = None) -> None:
        """Extend the leases of jobs this owner is still working on."""
        ids = list(job_ids)
        if not ids:
            return
        now = now_ms() if now is None else now
        with self.store.session(write=True, action="renewing job leases") as s:
            store_jobs.renew(s, ids, owner, now + self.config.lease_ms)

    # -- finishing ----------------------------------------------------------

    @staticmethod
    def _finish(s: Executor, job: JobRow, owner: str, now: int, **values: Any) -> None:
        """Move a job out of ``running`` — only if it is still leased to ``owner``.

        ``LeaseLostError`` otherwise: another worker took it over.
        """
        store_jobs.finish(s, job, owner, now, **values)

    def complete_in(self, s: Executor, job: JobRow, owner: str, outcome: str, repair_id: str | None) -> None:
        """Mark the job done inside the caller's transaction (the repair's own)."""
        self._finish(s, job, owner, now_ms(), status="done", outcome=outcome, repair_id=repair_id)

    def complete(self, job: JobRow, owner: str, outcome: str) -> None:
        with self.store.connection(write=True, action="completing a repair job") as s:
            self.complete_in(s, job, owner, outcome, None)

    def schedule_retry(
        self, job: JobRow, owner: str, error: str, next_attempt_at: int, *, session: Session | None = None
    ) -> None:
        with self.store.connection(write=True, action="rescheduling a repair job", session=session) as s:
            self._finish(
                s,
                job,
                owner,
                now_ms(),
                status="pending",
                lease_owner=None,
                next_attempt_at=next_attempt_at,
                last_error=error[:2000],  # redacted by its column (store.models.RedactedText)
            )

    def bury(self, job: JobRow, owner: str, error: str, *, session: Session | None = None) -> None:
        with self.store.connection(write=True, action="dead-lettering a repair job", session=session) as s:
            self._finish(s, job, owner, now_ms(), status="dead", last_error=error[:2000])

    def discard_stale(self, now: int | None = None, *, session: Session | None = None) -> list[JobRow]:
        """Delete pending jobs older than ``stale_after_ms``; return them."""
        now = now_ms() if now is None else now
        cutoff = now - self.config.stale_after_ms
        with self.store.session(write=True, action="discarding stale jobs", session=session) as s:
            return store_jobs.delete_pending_before(s, cutoff)

    def prune_done(self, before: int, *, batch: int = PRUNE_BATCH, max_batches: int | None = None) -> int:
        """Delete ``done`` jobs that finished before ``before`` (epoch ms); count them.

        A batch of at most ``batch`` rows per transaction (found at the edge
        of the (status, updated_at) index), so pruning a large backlog never
        holds the write lock for long; stops after ``max_batches`` (None:
        until nothing is left). Dead jobs stay: they wait for an operator.
        """
        check_int("before", before)
        check_int("batch", batch, lo=1, hi=MAX_LIMIT)
        total = rounds = 0
        while max_batches is None or rounds < max_batches:
            with self.store.connection(write=True, action="pruning done jobs") as conn:
                deleted = store_jobs.prune_done_batch(conn, before, batch)
            total += deleted
            rounds += 1
            if deleted < batch:
                break
        if total:
            logger.info("pruned %d done job(s) finished before %d", total, before)
        return total

    # -- operator surface ---------------------------------------------------

    def get(self, job_id: str) -> JobRow:
        """The job with ``job_id``; ``NotFoundError`` when there is none."""
        _check_id(job_id)
        with self.store.session(action="reading a job") as s:
            row = store_jobs.get(s, job_id)
        if row is None:
            raise NotFoundError(f"no job with id {job_id!r}")
        return row

    def get_many(self, job_ids: Iterable[str]) -> dict[str, JobRow]:
        """The jobs among ``job_ids`` that exist, by id (one query per 500 ids)."""
        if isinstance(job_ids, (str, bytes)) or not isinstance(job_ids, Iterable):
            raise InvalidInputError("job_ids must be an iterable of str")
        ids = list(dict.fromkeys(job_ids))
        for job_id in ids:
            _check_id(job_id)
        with self.store.session(action="reading jobs") as s:
            return store_jobs.get_many(s, ids)

    def list(self, status: str | None = None, limit: int = 100) -> list[JobRow]:
        """Jobs in queue order, optionally of one status; at most ``limit`` (1..10,000)."""
        if status is not None and status not in JOB_STATUSES:
            raise InvalidInputError(f"status must be one of {JOB_STATUSES}, got {status!r}")
        check_int("limit", limit, lo=1, hi=MAX_LIMIT)
        with self.store.session(action="listing jobs") as s:
            return store_jobs.list_jobs(s, status, limit)

    def retry(self, job_id: str, *, session: Session | None = None) -> JobRow:
        """Make a job pending and due now, attempts reset: a dead one, one waiting out a
        backoff, or a done one that wrote no repair.

        A done job that wrote a repair is refused: running it again would
        write a second repair for the same trigger.
        """
        _check_id(job_id)
        now = now_ms()
        with self.store.session(write=True, action="retrying a job", session=session) as s:
            return store_jobs.reset_for_retry(s, job_id, now)

    def purge(self, job_id: str, *, session: Session | None = None) -> JobRow:
        """Delete one job (any status) and return it; ``NotFoundError`` when there is none."""
        _check_id(job_id)
        with self.store.session(write=True, action="purging a job", session=session) as s:
            return store_jobs.purge(s, job_id)

    def stats(self, now: int | None = None) -> dict[str, int | None]:
        """Counts per status, depth (pending + running) and the oldest pending age in ms."""
        now = now_ms() if now is None else now
        # Both reads stay small however many jobs there are (see
        # store_jobs.counts_and_oldest_pending).
        with self.store.connection(action="reading queue stats") as s:
            counts, oldest = store_jobs.counts_and_oldest_pending(s)
        out: dict[str, int | None] = {status: int(counts.get(status, 0)) for status in JOB_STATUSES}
        out["depth"] = int(counts.get("pending", 0)) + int(counts.get("running", 0))
        out["oldest_pending_age_ms"] = None if oldest is None else max(0, now - oldest)
        return out

    def wait_hint(self, now: int | None = None) -> int | None:
        """Milliseconds until the earliest pending job is due (0 if one is due), None if none."""
        now = now_ms() if now is None else now
        with self.store.connection(action="peeking the queue") as s:
            nxt = store_jobs.next_due(s)
        if nxt is None:
            return None
        return 0 if nxt > self._due_horizon(now) else max(0, nxt - now)
