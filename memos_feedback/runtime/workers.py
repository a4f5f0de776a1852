"""``Workers``: the worker threads that claim due jobs and run ``run_repair``.

The repair row and the job's ``done`` state commit together. A job whose
payload cannot be read is dead-lettered; no exception ends a worker. A
transient error (model or database) schedules a retry with backoff until
``max_attempts``; anything else, or the last attempt, buries the job.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Sequence
from typing import Any

from .._failpoints import failpoint
from ..config import FeedbackConfig
from ..errors import InvalidInputError, LLMTransientError, StoreBusyError, StoreError
from ..events import FeedbackBus, FeedbackEvent, RepairJobDead, RepairJobFailed, RepairJobRetrying
from ..recall.config import RecallConfig
from ..repair.deps import RepairDeps
from ..repair.run import StagedRepair, local_synthesis, run_repair, stage_repair
from ..signals import FailureSignals
from ..store import Store
from ..store.event_log import FeedStore
from ..store.unit import repair_unit
from ..synthesis.llm import RepairLLM
from ..text.logs import library_logger
from ..text.secrets import redact_secrets
from ..types import RepairInput, RepairResult, now_ms
from .futures import JobFutures
from .queue import JobRow, LeaseLostError, RepairQueue, backoff_ms, input_from_payload

__all__ = ["Workers", "log_in"]

logger = library_logger("memos_feedback.subscriber")

_TRANSIENT = (LLMTransientError, StoreBusyError)


def log_in(events: FeedStore | None, session: Any, logged: Sequence[FeedbackEvent]) -> None:
    """Log state-change events in the transaction of the change (when the event log is on)."""
    if events is not None and logged:
        events.write_in(session, logged)


def _error_text(exc: BaseException) -> str:
    # An exception's message may quote its input (a URL, a command line):
    # what the bus, the job row and the event log carry is redacted.
    return redact_secrets(f"{type(exc).__name__}: {exc}"[:4096])


class Workers:
    """What every worker thread runs (``run``); the threads share this object."""

    def __init__(
        self,
        store: Store,
        config: FeedbackConfig,
        bus: FeedbackBus,
        queue: RepairQueue,
        signals: FailureSignals,
        jobs: JobFutures,
        events: FeedStore | None,
        *,
        owner: str,
        llm: RepairLLM | None,
        embedder: Any,
        poll: float,
        rng: random.Random,
        closing: threading.Event,
        recall: RecallConfig | None = None,
    ) -> None:
        self.store = store
        # Frozen: one instance for every job's deps (building one validates it).
        self._recall = recall or RecallConfig()
        self.config = config
        self.bus = bus
        self.queue = queue
        self.signals = signals
        self.jobs = jobs
        self.events = events
        self.owner = owner
        self._llm = llm
        self._embedder = embedder
        self._poll = poll
        self._rng = rng
        self._work = jobs.work
        self._closing = closing

    def run(self) -> None:
        failing = False  # warn once per outage, not on every poll
        # Several jobs per claim transaction (config.claim_batch), all in
        # flight from then on: the heartbeat renews their leases. Not with
        # an LLM: a job then takes seconds, the transaction saved is noise,
        # and jobs held here would wait for ours instead of running on
        # another worker.
        batch = 1 if self._llm is not None and self.config.use_llm else self.config.claim_batch
        # Group commit (SQLite, local synthesis): a claimed batch's repairs
        # commit in one write transaction (see _process_group).
        group = self.store.one_writer and local_synthesis(self._deps(None))
        while not self._closing.is_set():
            try:
                jobs = self.queue.claim_many(self.owner, batch)
                failing = False
            except StoreError as exc:
                logger.log(logging.DEBUG if failing else logging.WARNING, "claiming a job failed: %s", exc)
                failing = True
                jobs = []
            except Exception:  # a worker must outlive any bug
                logger.exception("unexpected error while claiming a job")
                jobs = []
            if not jobs:
                self._idle_wait()
                continue
            with self.jobs.lock:
                self.jobs.in_flight.update(job.id for job in jobs)
            if group and len(jobs) > 1:
                self._process_group(jobs)
                continue
            for i, job in enumerate(jobs):
                if self._closing.is_set():
                    self._release(jobs[i:])
                    break
                self._process(job)

    def _release(self, jobs: list[JobRow]) -> None:
        """Closing: hand back claimed jobs not started yet, so the next start runs them at once."""
        try:
            self.queue.release(jobs, self.owner)
        except StoreError as exc:  # their leases expire and recovery takes them
            logger.warning("releasing %d claimed job(s) failed: %s", len(jobs), exc)
        finally:
            with self.jobs.lock:
                self.jobs.in_flight.difference_update(job.id for job in jobs)

    def _idle_wait(self) -> None:
        try:
            hint = self.queue.wait_hint()
        except StoreError:
            hint = None
        delay = self._poll if hint is None else min(self._poll, max(hint / 1000, 0.005))
        with self._work:
            if not self._closing.is_set():
                self._work.wait(timeout=delay)

    def _process(self, job: JobRow) -> None:
        with self.jobs.lock:
            self.jobs.in_flight.add(job.id)  # claimed by this worker: already there
        try:
            self._run_job(job)
        except Exception:  # the worker must survive anything a job does
            logger.exception("unexpected error while finishing job %s", job.id)
        finally:
            with self.jobs.lock:
                self.jobs.in_flight.discard(job.id)

    def _finalizer(self, job: JobRow) -> Callable[[Any, str], None]:
        def finalize(conn: Any, repair_id: str) -> None:
            self.queue.complete_in(conn, job, self.owner, "persisted", repair_id)
            failpoint("repair.before_commit")

        return finalize

    def _deps(self, job: JobRow | None) -> RepairDeps:
        last_attempt = job is not None and job.attempts >= self.config.max_attempts
        return RepairDeps(
            store=self.store,
            config=self.config,
            bus=self.bus,
            llm=self._llm,
            embedder=self._embedder,
            recall=self._recall,
            raise_transient=not last_attempt,
            finalize=None if job is None else self._finalizer(job),
            events=self.events,
        )

    @staticmethod
    def _job_input(job: JobRow) -> RepairInput:
        if job.payload_error is not None:
            raise InvalidInputError(f"unreadable job payload: {job.payload_error}")
        return input_from_payload(job.payload)

    def _run_job(self, job: JobRow) -> None:
        try:
            inp = self._job_input(job)
            deps = self._deps(job)
            failpoint("repair.before_run")
            result = run_repair(inp, deps)
            if result.skipped:
                self.queue.complete(job, self.owner, f"skipped:{result.skipped_reason}")
        except Exception as exc:
            self._job_failed(job, exc)
            return
        self._job_done(inp, job, result)

    def _job_failed(self, job: JobRow, exc: Exception) -> None:
        """A job's repair raised (its transaction rolled back): retry, bury, or leave it."""
        if isinstance(exc, LeaseLostError):
            logger.warning("%s; leaving it to its new owner", exc)
            return
        if isinstance(exc, _TRANSIENT) and job.attempts < self.config.max_attempts:
            self._retry(job, exc)
            return
        if not isinstance(exc, _TRANSIENT):
            logger.error("repair job %s failed permanently", job.id, exc_info=exc)
        self._bury(job, exc)

    def _job_done(self, inp: RepairInput, job: JobRow, result: RepairResult) -> None:
        self.jobs.count("done")
        if result.repair_id is not None and inp.trigger == "failure-burst":
            # Only now: a failed repair must leave the evidence of the burst.
            self.signals.clear(inp.context_hash)
        self.jobs.resolve(job.id, result=result)

    def _process_group(self, jobs: list[JobRow]) -> None:
        """Group commit: the repairs of claimed jobs in one write transaction (SQLite).

        Each job's repair row still commits together with its own ``done``
        (the exactly-once argument is unchanged: both are in the one
        commit). Saves a BEGIN and a COMMIT per job, and pages that several
        repairs touch (the newest index pages, the job counters) go to the
        WAL once. Only with local synthesis: nothing slow runs in the
        transaction. A job that raises ends its group (``_group_from``), so
        outcomes are settled in job order, as on the one-job path.
        """
        done = 0
        try:
            while done < len(jobs) and not self._closing.is_set():
                done = self._group_from(jobs, done)
        finally:
            with self.jobs.lock:
                self.jobs.in_flight.difference_update(job.id for job in jobs[:done])
        if done < len(jobs):
            self._release(jobs[done:])

    def _group_from(self, jobs: list[JobRow], start: int) -> int:
        """Run ``jobs[start:]`` in one transaction until one raises; returns the index after the last run.

        Each job runs in a savepoint of its own: one that raises is rolled
        back alone, what the jobs before it wrote commits, and then it is
        retried or buried (in a transaction of its own) before the next
        group starts. The repairs written are indexed for recall in one
        statement before the commit (``index_deferred``). If that or the
        commit fails, none of the group was written and every job in it is
        handled as failed with that error. The unit (store/unit.py) settles
        the event-log rows and the deferred index rows of both cases.
        """
        staged: list[tuple[JobRow, RepairInput, StagedRepair]] = []
        failed: list[tuple[JobRow, Exception]] = []
        i = start
        try:
            # The unit hands back the event-log rows of a job rolled back to
            # its savepoint, or of the whole group if it does not commit.
            with repair_unit(self.store, self.events, group=True, action="persisting repairs") as unit:
                while i < len(jobs) and not self._closing.is_set():
                    job = jobs[i]
                    i += 1
                    try:
                        with unit.savepoint():
                            inp = self._job_input(job)
                            failpoint("repair.before_run")
                            one = stage_repair(unit, inp, self._deps(job))
                            if one.skipped_reason is not None:
                                outcome = f"skipped:{one.skipped_reason}"
                                self.queue.complete_in(unit.conn, job, self.owner, outcome, None)
                    except Exception as exc:
                        failed.append((job, exc))
                        break
                    staged.append((job, inp, one))
        except Exception as exc:
            # Nothing of the group was committed.
            failed = [(job, exc) for job, _, _ in staged] + failed
            staged = []
        for job, inp, one in staged:
            self._job_done(inp, job, one.finish())
        for job, error in failed:
            try:
                self._job_failed(job, error)
            except Exception:  # the worker must survive anything a job does
                logger.exception("unexpected error while finishing job %s", job.id)
        return i

    def _retry(self, job: JobRow, exc: BaseException) -> None:
        due = now_ms() + backoff_ms(job.attempts, self.config, self._rng)
        error = _error_text(exc)
        retrying = RepairJobRetrying(
            job_id=job.id,
            context_hash=job.context_hash,
            attempt=job.attempts,
            next_attempt_at=due,
            error=error,
        )
        with self.store.session(write=True, action="rescheduling a repair job") as s:
            self.queue.schedule_retry(job, self.owner, error, due, session=s)
            log_in(self.events, s, [retrying])
        self.jobs.count("retried")
        self.bus.emit(retrying)

    def _bury(self, job: JobRow, exc: BaseException) -> None:
        error = _error_text(exc)
        self.bus.emit(RepairJobFailed(context_hash=job.context_hash, error=error))
        dead = RepairJobDead(job_id=job.id, context_hash=job.context_hash, attempts=job.attempts, error=error)
        try:
            with self.store.session(write=True, action="dead-lettering a repair job") as s:
                self.queue.bury(job, self.owner, error, session=s)
                log_in(self.events, s, [dead])
        except LeaseLostError:
            return
        with self.jobs.lock:
            self.jobs.counts["failed"] += 1
            self.jobs.counts["dead"] += 1
        self.bus.emit(dead)
        self.jobs.resolve(job.id, error=exc)
