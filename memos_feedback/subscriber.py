"""``attach_feedback_subscriber``: the host's handle on the pipeline (PIPELINE.md §9).

Threads and what they own:

* the caller's thread — ``record_tool_failure`` / ``record_tool_success``
  touch only in-memory signals; a burst is appended to a small buffer.
  ``submit_user_feedback`` and ``run_once`` commit their job before they
  return (a correction the user typed survives a crash).
* the enqueuer — moves buffered bursts into ``repair_jobs`` as soon as it
  is woken (the bound is one insert transaction).
* the heartbeat — renews the leases of jobs in flight every quarter lease
  and returns other owners' abandoned jobs to ``pending``. It has a thread
  of its own so a slow insert or a busy enqueuer can never let a live
  worker's lease lapse. Twice a second it also resolves the futures of
  jobs another process finished (several processes share one queue).
* ``workers`` worker threads — claim due jobs and run ``run_repair``; the
  repair row and the job's ``done`` state commit together.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import Future
from types import TracebackType
from typing import Any

from ._failpoints import failpoint
from .classifier import ClassifiedFeedback, classify_feedback
from .config import FeedbackConfig
from .errors import (
    InvalidInputError,
    LLMTransientError,
    RepairJobDeadError,
    StoreBusyError,
    StoreError,
    SubscriberClosedError,
)
from .events import (
    FeedbackBus,
    FeedbackClassified,
    RepairJobDead,
    RepairJobDiscarded,
    RepairJobFailed,
    RepairJobRetrying,
    RepairSkipped,
)
from .llm import RepairLLM
from .queue import JobRow, LeaseLostError, RepairQueue, backoff_ms, default_owner, input_from_payload
from .repair import RepairDeps, RepairInput, RepairResult, run_repair
from .signals import FailureBurst, FailureRecord, FailureSignals, context_hash_of
from .store import Store
from .store.rows import now_ms
from .synthesize import DecisionRepairDraft

__all__ = ["FeedbackSubscriber", "attach_feedback_subscriber"]

logger = logging.getLogger("memos_feedback.subscriber")

USER_TOOL = "user"
_TRANSIENT = (LLMTransientError, StoreBusyError)
# How often (s) the heartbeat looks for jobs another process finished.
_RESOLVE_EVERY = 0.5


def _burst_input(burst: FailureBurst) -> RepairInput:
    session_id = next((r.session_id for r in reversed(burst.occurrences) if r.session_id), None)
    episode_id = next((r.episode_id for r in reversed(burst.occurrences) if r.episode_id), None)
    return RepairInput(
        trigger="failure-burst",
        context_hash=burst.context_hash,
        tool_id=burst.tool_id,
        session_id=session_id,
        episode_id=episode_id,
        failures=burst.occurrences,
        context=burst.context,
    )


class FeedbackSubscriber:
    """Wires signals, classifier, durable queue and ``run_repair`` together."""

    def __init__(
        self,
        store: Store,
        llm: RepairLLM | None = None,
        embedder: Any = None,
        bus: FeedbackBus | None = None,
        config: FeedbackConfig | None = None,
        *,
        workers: int = 1,
        poll_interval: float = 0.2,
        rng: random.Random | None = None,
        owner: str | None = None,
    ) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise InvalidInputError(f"workers must be an int >= 1, got {workers!r}")
        self.store = store
        self.config = config or FeedbackConfig()
        self.bus = bus or FeedbackBus()
        self.signals = FailureSignals(self.config)
        # Bound once: these run on every tool step of the agent.
        self._record_failure = self.signals.record_failure
        self._record_success = self.signals.record_success
        self.queue = RepairQueue(store, self.config)
        self.owner = owner or default_owner()
        self._llm = llm
        self._embedder = embedder
        self._poll = poll_interval
        self._rng = rng or random.Random()
        self._buffer: deque[RepairInput] = deque()
        self._buffer_wake = threading.Event()
        # True while the enqueuer holds bursts it popped but has not stored
        # and tracked yet; flush() must not report idle in that gap.
        self._draining = False
        self._work = threading.Condition()
        self._lock = threading.Lock()
        self._drain_lock = threading.Lock()
        self._futures: dict[str, list[Future[RepairResult]]] = {}
        self._in_flight: set[str] = set()
        self._counts: Counter[str] = Counter()
        self._closing = threading.Event()
        self._closed = False

        self._startup()
        self._threads = [
            threading.Thread(target=self._enqueuer, name="memos-feedback-enqueuer", daemon=True),
            threading.Thread(target=self._heartbeat, name="memos-feedback-heartbeat", daemon=True),
        ]
        self._threads += [
            threading.Thread(target=self._worker, name=f"memos-feedback-worker-{i}", daemon=True)
            for i in range(workers)
        ]
        for t in self._threads:
            t.start()

    # -- hot path -----------------------------------------------------------

    def record_tool_failure(
        self,
        tool_id: str,
        context: str,
        step: int,
        reason: str = "",
        session_id: str | None = None,
        episode_id: str | None = None,
        trace_id: str | None = None,
    ) -> FailureBurst | None:
        """Record a failed tool step; a burst is queued for repair. Never blocks on I/O.

        Bad arguments are logged and ignored (the agent loop must not crash
        on its own instrumentation); the return value is the burst, if any.
        """
        try:
            burst = self._record_failure(
                FailureRecord(tool_id, context, step, reason, None, session_id, episode_id, trace_id)
            )
        except InvalidInputError as exc:
            logger.warning("record_tool_failure ignored: %s", exc)
            return None
        if burst is not None and not self._closed:
            self._buffer.append(_burst_input(burst))
            self._buffer_wake.set()
        return burst

    def record_tool_success(
        self, tool_id: str, context: str, step: int, session_id: str | None = None
    ) -> None:
        """Record a successful tool step (it suppresses bursts for that tool and context)."""
        try:
            self._record_success(tool_id, context, step)
        except InvalidInputError as exc:
            logger.warning("record_tool_success ignored: %s", exc)

    # -- user feedback and manual runs --------------------------------------

    def submit_user_feedback(
        self,
        text: str,
        session_id: str | None,
        tool_id: str | None = None,
        context: str | None = None,
        episode_id: str | None = None,
    ) -> tuple[ClassifiedFeedback, Future[RepairResult]]:
        """Classify now; queue (durably) a repair when the shape calls for one."""
        self._check_open()
        feedback = classify_feedback(text)
        tool = tool_id or USER_TOOL
        ctx = context if context is not None else (session_id or "")
        context_hash = context_hash_of(tool, ctx)
        if not feedback.shape.triggers_repair:
            started = now_ms()
            self.bus.emit(FeedbackClassified(shape=feedback.shape.value, confidence=feedback.confidence))
            trigger = "user." + feedback.shape.value
            self.bus.emit(
                RepairSkipped(context_hash=context_hash, trigger=trigger, reason="feedback-not-actionable")
            )
            done: Future[RepairResult] = Future()
            done.set_result(
                RepairResult(
                    trigger=trigger,
                    context_hash=context_hash,
                    repair_id=None,
                    draft=None,
                    skipped=True,
                    skipped_reason="feedback-not-actionable",
                    started_at=started,
                    completed_at=now_ms(),
                )
            )
            return feedback, done
        inp = RepairInput(
            trigger="user." + feedback.shape.value,
            context_hash=context_hash,
            tool_id=tool_id,
            user_text=feedback.text,
            session_id=session_id,
            episode_id=episode_id,
            context=context,
        )
        return feedback, self._enqueue_now(inp)

    def run_once(self, input: RepairInput) -> Future[RepairResult]:
        """Queue a manual repair (the UI button); committed before returning."""
        self._check_open()
        if not isinstance(input, RepairInput):
            raise InvalidInputError(f"run_once takes a RepairInput, got {type(input).__name__}")
        return self._enqueue_now(input)

    def _enqueue_now(self, inp: RepairInput) -> Future[RepairResult]:
        future: Future[RepairResult] = Future()
        result = self.queue.enqueue(inp)
        self._track(result.job_id, future, deduped=result.deduped)
        return future

    def _track(self, job_id: str, future: Future[RepairResult] | None, *, deduped: bool) -> None:
        with self._lock:
            self._counts["deduped" if deduped else "enqueued"] += 1
            waiting = self._futures.setdefault(job_id, [])
            if future is not None:
                waiting.append(future)
        with self._work:
            self._work.notify_all()

    # -- lifecycle ----------------------------------------------------------

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until buffered bursts are stored and every job this handle queued finished."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            # Order matters: buffer, then the enqueuer's hand, then jobs.
            with self._lock:
                idle = not self._buffer and not self._draining and not self._futures
            if idle:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            self._buffer_wake.set()
            time.sleep(0.01)

    def close(self, timeout: float | None = None) -> None:
        """Stop claiming, store buffered bursts, wait for jobs in flight (up to ``timeout``).

        Jobs not started stay pending in the database for the next start;
        their futures here are cancelled.
        """
        if self._closed:
            return
        self._closed = True
        self._closing.set()
        self._buffer_wake.set()
        with self._work:
            self._work.notify_all()
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        self._drain_buffer()  # in case the enqueuer was stuck
        with self._lock:
            leftovers = [f for futures in self._futures.values() for f in futures]
            self._futures.clear()
        for f in leftovers:
            f.cancel()

    def __enter__(self) -> FeedbackSubscriber:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def metrics(self) -> dict[str, int | float | None]:
        """Counters since start and queue gauges (depth, oldest pending age)."""
        with self._lock:
            counts = dict(self._counts)
        out: dict[str, int | float | None] = {
            key: counts.get(key, 0)
            for key in ("enqueued", "deduped", "done", "retried", "dead", "discarded", "failed")
        }
        try:
            stats = self.queue.stats()
            out["depth"] = stats["depth"]
            out["oldest_pending_age_ms"] = stats["oldest_pending_age_ms"]
        except StoreError as exc:
            logger.warning("queue gauges unavailable: %s", exc)
            out["depth"] = out["oldest_pending_age_ms"] = None
        out["buffered"] = len(self._buffer)
        out["in_flight"] = len(self._in_flight)
        return out

    def _check_open(self) -> None:
        if self._closed:
            raise SubscriberClosedError("the feedback subscriber is closed")

    # -- background threads -------------------------------------------------

    def _startup(self) -> None:
        self.queue.recover()
        for job in self.queue.discard_stale():
            with self._lock:
                self._counts["discarded"] += 1
            self.bus.emit(RepairJobDiscarded(job_id=job.id, context_hash=job.context_hash, reason="stale"))

    def _drain_buffer(self) -> bool:
        with self._drain_lock:
            self._draining = True
            try:
                return self._store_buffered()
            finally:
                self._draining = False

    def _store_buffered(self) -> bool:
        batch: list[RepairInput] = []
        while self._buffer:
            batch.append(self._buffer.popleft())
        if not batch:
            return True
        try:
            results = self.queue.enqueue_many(batch)
        except StoreError as exc:
            # Put them back in front, in order: nothing triggered is lost.
            self._buffer.extendleft(reversed(batch))
            logger.warning("could not store %d burst(s), will retry: %s", len(batch), exc)
            return False
        for r in results:
            self._track(r.job_id, None, deduped=r.deduped)
        return True

    def _enqueuer(self) -> None:
        # Woken at once by a burst; the timeout bounds how long a burst can
        # sit in memory even if a wake-up were missed (buffer_flush_ms).
        flush_every = self.config.buffer_flush_ms / 1000
        while True:
            self._buffer_wake.wait(timeout=flush_every)
            self._buffer_wake.clear()
            if not self._drain_buffer():
                time.sleep(0.05)
            if self._closing.is_set() and not self._buffer:
                return

    def _heartbeat(self) -> None:
        # A quarter of the lease: three renewals can be missed (a stalled
        # process, a slow database) before another worker may reclaim.
        interval = max(0.05, self.config.lease_ms / 4000)
        next_beat = time.monotonic() + interval
        while not self._closing.wait(timeout=min(interval, _RESOLVE_EVERY)):
            if time.monotonic() >= next_beat:
                next_beat = time.monotonic() + interval
                self._renew_leases()
            self._resolve_finished_elsewhere()

    def _renew_leases(self) -> None:
        """Heartbeat: extend our leases, and return other owners' abandoned jobs."""
        with self._lock:
            ids = list(self._in_flight)
        try:
            self.queue.renew(ids, self.owner)
            if self.queue.recover():
                with self._work:
                    self._work.notify_all()
        except StoreError as exc:
            logger.warning("lease renewal failed: %s", exc)

    def _worker(self) -> None:
        failing = False  # warn once per outage, not on every poll
        while not self._closing.is_set():
            try:
                job = self.queue.claim(self.owner)
                failing = False
            except StoreError as exc:
                logger.log(logging.DEBUG if failing else logging.WARNING, "claiming a job failed: %s", exc)
                failing = True
                job = None
            if job is None:
                self._idle_wait()
                continue
            self._process(job)

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
        with self._lock:
            self._in_flight.add(job.id)
        try:
            self._run_job(job)
        except Exception:  # the worker must survive anything a job does
            logger.exception("unexpected error while finishing job %s", job.id)
        finally:
            with self._lock:
                self._in_flight.discard(job.id)

    def _finalizer(self, job: JobRow) -> Callable[[Any, str], None]:
        def finalize(session: Any, repair_id: str) -> None:
            self.queue.complete_in(session, job, self.owner, "persisted", repair_id)
            failpoint("repair.before_commit")

        return finalize

    def _run_job(self, job: JobRow) -> None:
        last_attempt = job.attempts >= self.config.max_attempts
        try:
            inp = input_from_payload(job.payload)
            deps = RepairDeps(
                store=self.store,
                config=self.config,
                bus=self.bus,
                llm=self._llm,
                embedder=self._embedder,
                raise_transient=not last_attempt,
                finalize=self._finalizer(job),
            )
            failpoint("repair.before_run")
            result = run_repair(inp, deps)
            if result.skipped:
                self.queue.complete(job, self.owner, f"skipped:{result.skipped_reason}")
        except LeaseLostError as exc:
            logger.warning("%s; leaving it to its new owner", exc)
            return
        except _TRANSIENT as exc:
            if not last_attempt:
                self._retry(job, exc)
                return
            self._bury(job, exc)
            return
        except Exception as exc:
            logger.exception("repair job %s failed permanently", job.id)
            self._bury(job, exc)
            return
        with self._lock:
            self._counts["done"] += 1
        if result.repair_id is not None and inp.trigger == "failure-burst":
            # Only now: a failed repair must leave the evidence of the burst.
            self.signals.clear(inp.context_hash)
        self._resolve(job.id, result=result)

    def _retry(self, job: JobRow, exc: BaseException) -> None:
        due = now_ms() + backoff_ms(job.attempts, self.config, self._rng)
        error = f"{type(exc).__name__}: {exc}"
        self.queue.schedule_retry(job, self.owner, error, due)
        with self._lock:
            self._counts["retried"] += 1
        self.bus.emit(
            RepairJobRetrying(
                job_id=job.id,
                context_hash=job.context_hash,
                attempt=job.attempts,
                next_attempt_at=due,
                error=error,
            )
        )

    def _bury(self, job: JobRow, exc: BaseException) -> None:
        error = f"{type(exc).__name__}: {exc}"
        self.bus.emit(RepairJobFailed(context_hash=job.context_hash, error=error))
        try:
            self.queue.bury(job, self.owner, error)
        except LeaseLostError:
            return
        with self._lock:
            self._counts["failed"] += 1
            self._counts["dead"] += 1
        self.bus.emit(
            RepairJobDead(job_id=job.id, context_hash=job.context_hash, attempts=job.attempts, error=error)
        )
        self._resolve(job.id, error=exc)

    def _resolve(
        self, job_id: str, *, result: RepairResult | None = None, error: BaseException | None = None
    ) -> None:
        with self._lock:
            futures = self._futures.pop(job_id, [])
        for f in futures:
            if f.done():
                continue
            if error is not None:
                f.set_exception(error)
            else:
                assert result is not None
                f.set_result(result)

    def _resolve_finished_elsewhere(self) -> None:
        """Settle futures of jobs another process finished (or an operator purged)."""
        with self._lock:
            ids = [j for j in self._futures if j not in self._in_flight]
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
            with self._lock:
                # A worker here may have claimed and finished it meanwhile;
                # its own result (with the draft it made) wins.
                if job_id in self._in_flight:
                    continue
                futures = self._futures.pop(job_id, [])
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


def attach_feedback_subscriber(
    store: Store,
    llm: RepairLLM | None = None,
    embedder: Any = None,
    bus: FeedbackBus | None = None,
    config: FeedbackConfig | None = None,
    *,
    workers: int = 1,
    poll_interval: float = 0.2,
    rng: random.Random | None = None,
) -> FeedbackSubscriber:
    """Start the pipeline's background threads; returns a closable handle."""
    return FeedbackSubscriber(
        store, llm, embedder, bus, config, workers=workers, poll_interval=poll_interval, rng=rng
    )
