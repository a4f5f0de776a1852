"""``attach_feedback_subscriber``: the host's handle on the pipeline (PIPELINE.md §9).

Threads and what they own:

* the caller's thread — ``record_tool_failure`` / ``record_tool_success``
  append the raw arguments (and the time) to a deque and return: no
  validation, no lock, no failure window. The enqueuer runs those steps,
  in arrival order, through ``FailureSignals`` (validation included) and
  buffers the bursts they make; so does any call that needs them applied
  now (``record_tool_failure_now``, ``sync_signals``, ``flush``, a user
  message or a served guidance of a session). Nothing is logged here (a
  slow log handler must not slow a tool step): bad calls are counted, and
  the enqueuer logs a summary at most every ``_BAD_CALL_LOG_EVERY`` seconds.
  ``submit_user_feedback`` and ``run_once`` commit their job before they
  return (a correction the user typed survives a crash).
* the enqueuer — every ``buffer_flush_ms`` (or at once when woken) applies
  the recorded tool steps and moves the bursts they made into
  ``repair_jobs`` (the bound is that period plus one insert transaction).
  Bursts of one context that pile up while it works are coalesced to the
  newest. A batch the database refuses is split: a trigger that fails
  alone while the database takes a plain write is poison and is dropped
  with a logged reason; anything else is kept and retried, so one bad
  input never stops the queue and a database outage loses nothing.
* the heartbeat — renews the leases of jobs in flight every quarter lease
  and returns other owners' abandoned jobs to ``pending``. It has a thread
  of its own so a slow insert or a busy enqueuer can never let a live
  worker's lease lapse. Twice a second it also resolves the futures of
  jobs another process finished (several processes share one queue).
* ``workers`` worker threads — claim due jobs and run ``run_repair``; the
  repair row and the job's ``done`` state commit together. A job whose
  payload cannot be read is dead-lettered; no exception ends a worker.

``close()`` stops all of them within a deadline (``close_timeout_ms`` when
no timeout is given). Triggers it could not store by then are not dropped
silently: it raises ``TriggersNotPersistedError`` carrying them.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from sqlalchemy.engine import Connection

from .._failpoints import failpoint
from ..classify.classifier import classify_feedback
from ..config import FeedbackConfig
from ..errors import (
    InvalidInputError,
    LLMTransientError,
    MemosFeedbackError,
    RepairJobDeadError,
    StoreBusyError,
    StoreError,
    SubscriberClosedError,
    TriggersNotPersistedError,
)
from ..events import (
    FeedbackBus,
    FeedbackClassified,
    FeedbackEvent,
    RepairJobDead,
    RepairJobDiscarded,
    RepairJobFailed,
    RepairJobRetrying,
    RepairSkipped,
)
from ..recall.guidance import Guidance, guidance_for
from ..repair.deps import RepairDeps
from ..repair.run import StagedRepair, local_synthesis, run_repair, stage_repair
from ..signals import FailureBurst, FailureSignals, context_hash_of
from ..store import Store
from ..store.event_log import FeedStore
from ..store.search_index import index_deferred
from ..synthesis.llm import RepairLLM
from ..types import ClassifiedFeedback, DecisionRepairDraft, FailureRecord, RepairInput, RepairResult, now_ms
from .outcomes import SubscriberOutcomes
from .queue import (
    PRUNE_BATCH,
    EnqueueResult,
    JobRow,
    LeaseLostError,
    RepairQueue,
    backoff_ms,
    default_owner,
    input_from_payload,
)

__all__ = ["CloseReport", "FeedbackSubscriber", "attach_feedback_subscriber"]

logger = logging.getLogger("memos_feedback.subscriber")

USER_TOOL = "user"
_TRANSIENT = (LLMTransientError, StoreBusyError)
# How often (s) the heartbeat looks for jobs another process finished.
_RESOLVE_EVERY = 0.5
# Retention pruning of done jobs: how often, and how many batches a beat.
_PRUNE_EVERY = 60.0
_PRUNE_BATCHES_PER_BEAT = 10
# Bounds on the thread pool and the idle poll: a typo must not start
# 100,000 threads or make a worker sleep for ever.
MAX_WORKERS = 64
POLL_INTERVAL_RANGE = (0.001, 60.0)
# At most one summary of ignored hot-path calls per this many seconds.
_BAD_CALL_LOG_EVERY = 10.0
# A trigger the database refused this many times, while a plain write
# succeeds, is poison: it is dropped with a logged reason.
_POISON_AFTER = 3
# Tool steps waiting for the enqueuer beyond this many are applied by the
# recording thread itself: a caller that records faster than the enqueuer
# keeps up (a tight retry loop) pays for its steps instead of growing memory
# without bound. ~10,000 tuples are about 1.5 MB.
_STEP_BACKLOG = 10_000
_time_ns = time.time_ns


@contextmanager
def _savepoint(conn: Connection) -> Iterator[None]:
    """A SQLite savepoint on the DBAPI connection: undone alone when the block raises.

    Not ``Connection.begin_nested()``: that costs ~160 us a job here, the
    raw statements ~4 us. SQLite only (the group commit's backend).
    """
    raw = conn.connection.driver_connection
    assert raw is not None
    raw.execute("SAVEPOINT memos_feedback_job")
    try:
        yield
    except BaseException:
        raw.execute("ROLLBACK TO SAVEPOINT memos_feedback_job")
        raw.execute("RELEASE SAVEPOINT memos_feedback_job")
        raise
    raw.execute("RELEASE SAVEPOINT memos_feedback_job")


@dataclass(frozen=True, slots=True)
class CloseReport:
    """What ``close()`` left behind.

    ``threads_alive`` names background threads still running at the
    deadline (a worker inside a slow model call, say): their jobs stay
    leased and return to the queue when the lease lapses. ``cancelled``
    counts futures of jobs not finished here (those jobs stay in the
    database for the next start). Triggers that could not be stored are
    never in a report: ``close()`` raises ``TriggersNotPersistedError``.
    """

    threads_alive: tuple[str, ...] = ()
    cancelled: int = 0


def _number_in(name: str, value: object, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInputError(f"{name} must be a finite number, got {value!r}")
    if not low <= value <= high:
        raise InvalidInputError(f"{name} must be in [{low}, {high}], got {value!r}")
    return float(value)


def _timeout(name: str, value: object) -> float | None:
    return None if value is None else _number_in(name, value, 0.0, 1e9)


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
        if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
            raise InvalidInputError(f"workers must be an int in [1, {MAX_WORKERS}], got {workers!r}")
        poll = _number_in("poll_interval", poll_interval, *POLL_INTERVAL_RANGE)
        if config is not None and not isinstance(config, FeedbackConfig):
            raise InvalidInputError(f"config must be a FeedbackConfig, got {type(config).__name__}")
        if not isinstance(store, Store):
            raise InvalidInputError(f"store must be a Store, got {type(store).__name__}")
        self.store = store
        self.config = config or FeedbackConfig()
        self.bus = bus or FeedbackBus()
        self.signals = FailureSignals(self.config)
        self._record_failure = self.signals.record_failure
        self._record_success = self.signals.record_success
        # Tool steps as the hot path recorded them, raw and unvalidated: an
        # 8-tuple for a failure, a 4-tuple for a success (_apply_steps_locked).
        # Only a holder of _steps_lock pops, so steps are applied in order.
        self._steps: deque[tuple[Any, ...]] = deque()
        self._steps_lock = threading.Lock()
        self.queue = RepairQueue(store, self.config)
        self.owner = owner or default_owner()
        self._llm = llm
        self._embedder = embedder
        self._poll = poll
        self._rng = rng or random.Random()
        # Bursts from the hot path (deque appends are thread-safe and cheap);
        # the enqueuer turns them into inputs it holds until they are stored.
        self._buffer: deque[FailureBurst] = deque()
        self._held: dict[str, RepairInput] = {}
        self._refusals: dict[str, int] = {}
        self._buffer_wake = threading.Event()
        # session id -> (tool, context) of its newest tool step (hot path writes).
        self._tool_in_play: dict[str, tuple[str, str]] = {}
        self._bad_calls = 0
        self._bad_reported = 0
        self._last_bad = ""
        self._bad_logged_at = 0.0
        self._close_lock = threading.Lock()
        self._close_deadline = math.inf
        self._close_report: CloseReport | None = None
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
        # Issue 13: the durable event log (memos_feedback.feed), on unless config.events_log is off.
        self.events: FeedStore | None = None
        self._events_off: Callable[[], None] | None = None
        if self.config.events_log:
            self.events = FeedStore(store, self.config)
            self._events_off = self.bus.on_any(self.events.buffer)

        self._startup()
        # Outcomes of served guidance (issue 11): open servings and their writer.
        self.outcomes = SubscriberOutcomes(store, self.bus, self.config)
        # The dict itself, not a method: a membership test is all a tool step pays.
        self._open_sessions = self.outcomes.open.sessions
        if self.events is not None:
            self.events.start()  # after the rest of startup: a failed start leaves no thread behind
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
    ) -> None:
        """Record a failed tool step. Never blocks, never raises, returns nothing.

        The step is appended as it is (with the time) for the enqueuer,
        which validates it and runs the failure window within
        ``buffer_flush_ms``; a burst it makes is queued for repair from
        there. Bad arguments are then counted and ignored (the agent loop
        must not crash on its own instrumentation; a summary is logged off
        this thread); so are calls after ``close()``. A caller that needs
        the burst itself uses ``record_tool_failure_now``.
        """
        if self._closed:
            self._bad_call("record_tool_failure after close()")
            return
        steps = self._steps
        steps.append((tool_id, context, step, reason, _time_ns(), session_id, episode_id, trace_id))
        if len(steps) > _STEP_BACKLOG:
            self._catch_up()

    def record_tool_success(
        self, tool_id: str, context: str, step: int, session_id: str | None = None
    ) -> None:
        """Record a successful tool step (it suppresses bursts for that tool and context).

        Deferred like ``record_tool_failure``: steps are applied in the
        order they were recorded, so a success still cancels the failures
        recorded before it.
        """
        if self._closed:
            self._bad_call("record_tool_success after close()")
            return
        steps = self._steps
        steps.append((tool_id, context, step, session_id))
        if len(steps) > _STEP_BACKLOG:
            self._catch_up()

    def record_tool_failure_now(
        self,
        tool_id: str,
        context: str,
        step: int,
        reason: str = "",
        session_id: str | None = None,
        episode_id: str | None = None,
        trace_id: str | None = None,
    ) -> FailureBurst | None:
        """``record_tool_failure``, applied on this thread: returns the burst it makes, if any.

        Steps recorded earlier are applied first, so the order holds. It
        costs what ``record_tool_failure`` cost before it was deferred
        (validation and the failure window, ~1.5 µs here); for hosts that
        act on the burst at once (the adapters, the demo). Never raises.
        """
        if self._closed:
            self._bad_call("record_tool_failure after close()")
            return None
        with self._steps_lock:
            self._apply_steps_locked()
            try:
                return self._apply_failure(
                    tool_id, context, step, reason, _time_ns(), session_id, episode_id, trace_id
                )
            except Exception as exc:  # the agent loop must not crash on a bad step
                self._bad_call(exc)
                return None

    def sync_signals(self) -> None:
        """Apply every tool step recorded so far to ``signals``, on this thread.

        ``record_tool_*`` only queue their step; call this before reading
        ``signals`` (``peek``, ``stats``) if it must reflect them. ``flush``
        does it too.
        """
        with self._steps_lock:
            self._apply_steps_locked()

    def _catch_up(self) -> None:
        # Back-pressure, not a wait: when another thread is applying steps
        # already, the backlog is shrinking and this call just returns.
        if self._steps_lock.acquire(blocking=False):
            try:
                self._apply_steps_locked()
            finally:
                self._steps_lock.release()

    def _apply_steps_locked(self) -> None:
        """Apply the recorded steps, oldest first (``_steps_lock`` held)."""
        steps = self._steps
        popleft = steps.popleft
        while steps:
            item = popleft()
            try:
                if len(item) == 8:
                    self._apply_failure(*item)
                else:
                    self._apply_success(*item)
            except Exception as exc:  # one bad step must not stop the others
                self._bad_call(exc)

    def _apply_failure(
        self,
        tool_id: Any,
        context: Any,
        step: Any,
        reason: Any,
        ts_ns: int,
        session_id: Any,
        episode_id: Any,
        trace_id: Any,
    ) -> FailureBurst | None:
        # FailureRecord validates every field (InvalidInputError names the bad one).
        record = FailureRecord(
            tool_id, context, step, reason, ts_ns // 1_000_000, session_id, episode_id, trace_id
        )
        burst = self._record_failure(record)
        if session_id is not None:
            self._in_play(session_id, tool_id, context)
            if burst is not None and session_id in self._open_sessions:  # outcomes: a burst recurred
                self.outcomes.tool_step(session_id, tool_id, context, ok=False)
        if burst is not None:
            self._buffer.append(burst)
            self._buffer_wake.set()
        return burst

    def _apply_success(self, tool_id: Any, context: Any, step: Any, session_id: Any) -> None:
        if session_id is not None and not isinstance(session_id, str):
            raise InvalidInputError(f"session_id must be a str or None, got {type(session_id).__name__}")
        self._record_success(tool_id, context, step)
        if session_id is not None:
            self._in_play(session_id, tool_id, context)
            if session_id in self._open_sessions:  # outcomes: the served guidance held
                self.outcomes.tool_step(session_id, tool_id, context, ok=True)

    def _in_play(self, session_id: str, tool_id: str, context: str) -> None:
        """Remember the session's newest tool step: a correction typed next is about it."""
        in_play = self._tool_in_play
        in_play[session_id] = (tool_id, context)
        if len(in_play) > self.config.max_tracked_contexts:
            # Bounded like the failure windows: forget the oldest session.
            # (Under a race another thread may pop first; that is harmless.)
            in_play.pop(next(iter(in_play)), None)

    def _bad_call(self, why: object) -> None:
        # Plain attribute writes: a lost increment under a race only makes
        # the logged count approximate, and the hot path takes no lock.
        self._bad_calls += 1
        self._last_bad = why if isinstance(why, str) else str(why)

    def _log_bad_calls(self, *, force: bool = False) -> None:
        """Log, from a background thread, how many hot-path calls were ignored."""
        count = self._bad_calls
        if count == self._bad_reported:
            return
        now = time.monotonic()
        if not force and now - self._bad_logged_at < _BAD_CALL_LOG_EVERY:
            return
        logger.warning(
            "ignored %d tool-step call(s) since the last report (last: %s)",
            count - self._bad_reported,
            self._last_bad,
        )
        self._bad_reported = count
        self._bad_logged_at = now

    # -- user feedback and manual runs --------------------------------------

    def submit_user_feedback(
        self,
        text: str,
        session_id: str | None,
        tool_id: str | None = None,
        context: str | None = None,
        episode_id: str | None = None,
    ) -> tuple[ClassifiedFeedback, Future[RepairResult]]:
        """Classify now; queue (durably) a repair when the shape calls for one.

        The repair is keyed to the tool in play: ``tool_id``/``context`` when
        given, else the session's newest recorded tool step, else the
        session itself (``guidance_for`` finds it by its text either way).
        """
        self._check_open()
        for name, value in (("session_id", session_id), ("tool_id", tool_id), ("context", context)):
            if value is not None and not isinstance(value, str):
                raise InvalidInputError(f"{name} must be a str or None, got {type(value).__name__}")
        feedback = classify_feedback(text)
        if session_id is not None:
            # The session's tool steps recorded before this message come
            # first: they pick the tool in play and settle servings first.
            self.sync_signals()
            self.outcomes.message(session_id, feedback.shape)  # outcomes: the user's verdict
        if tool_id is None and session_id is not None:
            in_play = self._tool_in_play.get(session_id)
            if in_play is not None:
                tool_id = in_play[0]
                context = in_play[1] if context is None else context
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
        if not result.job_id:  # coalesced into a repair in cooldown: nothing will run
            self.bus.emit(
                RepairSkipped(context_hash=inp.context_hash, trigger=inp.trigger, reason="cooldown")
            )
            future.set_result(self._coalesced_result(inp))
            return future
        self._track(result.job_id, future, deduped=result.deduped)
        return future

    @staticmethod
    def _coalesced_result(inp: RepairInput) -> RepairResult:
        now = now_ms()
        return RepairResult(
            trigger=inp.trigger,
            context_hash=inp.context_hash,
            repair_id=None,
            draft=None,
            skipped=True,
            skipped_reason="cooldown",
            started_at=now,
            completed_at=now,
        )

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
        """Wait until buffered bursts are stored and every job this handle queued finished.

        Returns False when ``timeout`` (seconds) passed first. Jobs other
        processes queued are not waited for.
        """
        limit = _timeout("timeout", timeout)
        deadline = None if limit is None else time.monotonic() + limit
        self.sync_signals()  # here rather than waiting up to buffer_flush_ms for the enqueuer
        while True:
            # Order matters: steps, the hand applying them, buffer, then the
            # enqueuer's hand, then jobs.
            with self._lock:
                idle = not self._steps and not self._steps_lock.locked()
                idle = idle and not self._buffer and not self._draining and not self._held
                idle = idle and not self._futures and not self.outcomes.pending()
            if idle:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            self._buffer_wake.set()
            time.sleep(0.01)

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until no job is pending or running in the database — any process's.

        ``flush`` waits for what *this handle* queued; ``drain`` waits for the
        whole queue to be empty, including jobs other processes queued, jobs
        left behind by a process that died (returned to pending once their
        owner is seen dead or their lease lapses) and jobs waiting out a retry
        backoff. Dead-lettered jobs do not count. Returns False when
        ``timeout`` seconds passed first. Buffered events are written
        before it returns.
        """
        limit = _timeout("timeout", timeout)
        deadline = None if limit is None else time.monotonic() + limit
        self._check_open()
        while True:
            with self._lock:
                local_idle = not self._steps and not self._steps_lock.locked()
                local_idle = local_idle and not self._buffer and not self._draining and not self._held
            if local_idle:
                try:
                    stats = self.queue.stats()
                except StoreError as exc:
                    logger.debug("queue stats unavailable while draining: %s", exc)
                else:
                    if not stats["pending"] and not stats["running"]:
                        if self.events is not None:
                            self.events.flush()
                        return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            self._buffer_wake.set()
            with self._work:
                self._work.notify_all()
            time.sleep(0.02)

    def close(self, timeout: float | None = None) -> CloseReport:
        """Stop claiming, store buffered bursts, wait for jobs in flight — all within a deadline.

        The deadline is ``timeout`` seconds, or ``config.close_timeout_ms``
        when None. Jobs not started stay pending in the database for the
        next start; their futures here are cancelled. In-memory failure
        windows are dropped, and later ``record_tool_*`` calls are ignored.

        Raises ``TriggersNotPersistedError`` (carrying the triggers) when
        some could not be stored by the deadline; otherwise returns a
        ``CloseReport``. Calling it again returns the first report.
        """
        limit = _timeout("timeout", timeout)
        with self._close_lock:
            if self._close_report is not None:
                return self._close_report
            budget = self.config.close_timeout_ms / 1000 if limit is None else limit
            self._close_deadline = time.monotonic() + budget
            self._closed = True
            self._closing.set()
            self._buffer_wake.set()
            with self._work:
                self._work.notify_all()
            for t in self._threads:
                t.join(max(0.0, self._close_deadline - time.monotonic()))
            unstored = self._unstored(max(0.0, self._close_deadline - time.monotonic()))
            self.outcomes.close(max(0.0, self._close_deadline - time.monotonic()))
            with self._lock:
                leftovers = [f for futures in self._futures.values() for f in futures]
                self._futures.clear()
            for f in leftovers:
                f.cancel()
            self.signals.clear()
            self._log_bad_calls(force=True)
            if self._events_off is not None and self.events is not None:
                self._events_off()
                self.events.close(max(0.0, self._close_deadline - time.monotonic()))
            alive = tuple(t.name for t in self._threads if t.is_alive())
            if alive:
                logger.warning("closed with %d thread(s) still running: %s", len(alive), ", ".join(alive))
            self._close_report = CloseReport(threads_alive=alive, cancelled=len(leftovers))
        if unstored:
            logger.error("%d trigger(s) could not be stored before close() gave up", len(unstored))
            raise TriggersNotPersistedError(
                tuple(unstored), f"the database stayed unwritable for {budget:g} s"
            )
        return self._close_report

    def _unstored(self, wait: float) -> list[RepairInput]:
        """Triggers not (known to be) stored; waits up to ``wait`` s for the enqueuer's hand."""
        got = self._drain_lock.acquire(timeout=wait)
        try:
            # Steps recorded while close() began (a call that passed the
            # closed check just before it) may have missed the enqueuer's
            # last round: apply them, and store their bursts if we can.
            late = False
            if self._steps_lock.acquire(timeout=wait):
                try:
                    late = bool(self._steps)
                    self._apply_steps_locked()
                finally:
                    self._steps_lock.release()
            # Only when the enqueuer's last round stored everything (the
            # database is up): otherwise this would wait on it past the deadline.
            if got and late and self._buffer and not self._held:
                try:
                    self._store_buffered()
                except Exception:
                    logger.exception("storing bursts while closing failed")
            # Without the lock the enqueuer is stuck inside an insert: what it
            # holds is in doubt, and is reported as not persisted.
            held = dict(self._held)
            for burst in list(self._buffer):
                held[burst.context_hash] = _burst_input(burst)
            return list(held.values())
        finally:
            if got:
                self._drain_lock.release()

    def __enter__(self) -> FeedbackSubscriber:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
            return
        try:
            self.close()
        except MemosFeedbackError:
            # The block's own exception is the one the caller must see.
            logger.exception("closing the feedback subscriber after an error failed")

    def guidance_for(
        self,
        *,
        tool_id: str | None = None,
        context: str | None = None,
        query: str | None = None,
        project: str | None = None,
        session_id: str | None = None,
        limit: int | None = None,
        record: bool = True,
    ) -> Guidance:
        """The repairs that apply now: ``guidance_for`` on this handle's store and embedder.

        With ``session_id`` (and ``record``), what is served is recorded off
        this thread and settled by the session's next signals (outcomes).
        """
        guidance = guidance_for(
            self.store,
            tool_id=tool_id,
            context=context,
            query=query,
            project=project,
            session_id=session_id,
            limit=limit,
            embedder=self._embedder,
            record=False,  # recorded below, by the background writer
        )
        if record and session_id is not None and session_id.strip():
            # Steps recorded before this serving must not settle it.
            self.sync_signals()
            self.outcomes.served(guidance, session_id, tool_id, context)
        return guidance

    def metrics(self) -> dict[str, int | float | None]:
        """Counters since start and queue gauges (depth, oldest pending age)."""
        with self._lock:
            counts = dict(self._counts)
        out: dict[str, int | float | None] = {
            key: counts.get(key, 0)
            for key in (
                "enqueued",
                "deduped",
                "coalesced",
                "rejected",
                "done",
                "retried",
                "dead",
                "discarded",
                "failed",
            )
        }
        try:
            stats = self.queue.stats()
            out["depth"] = stats["depth"]
            out["oldest_pending_age_ms"] = stats["oldest_pending_age_ms"]
        except StoreError as exc:
            logger.warning("queue gauges unavailable: %s", exc)
            out["depth"] = out["oldest_pending_age_ms"] = None
        out["buffered"] = len(self._buffer) + len(self._held)
        out["ignored_calls"] = self._bad_calls
        out["in_flight"] = len(self._in_flight)
        return out

    def _check_open(self) -> None:
        if self._closed:
            raise SubscriberClosedError("the feedback subscriber is closed")

    # -- background threads -------------------------------------------------

    def _startup(self) -> None:
        self.queue.recover()
        with self.store.session(write=True, action="discarding stale jobs") as s:
            stale = self.queue.discard_stale(session=s)
            discarded = [
                RepairJobDiscarded(job_id=job.id, context_hash=job.context_hash, reason="stale")
                for job in stale
            ]
            self._log_in(s, discarded)
        for event in discarded:
            with self._lock:
                self._counts["discarded"] += 1
            self.bus.emit(event)

    def _log_in(self, session: Any, events: Sequence[FeedbackEvent]) -> None:
        """Issue 13: log state-change events in the transaction of the change."""
        if self.events is not None and events:
            self.events.write_in(session, events)

    def _drain_buffer(self) -> bool:
        with self._drain_lock:
            self._draining = True
            try:
                self.sync_signals()
                return self._store_buffered()
            finally:
                self._draining = False

    def _store_buffered(self) -> bool:
        """Move buffered bursts into the queue; True when nothing is left to store."""
        held = self._held
        while self._buffer:
            burst = self._buffer.popleft()
            # A newer burst of the same context replaces the older one: its
            # window holds the latest evidence, and one job covers both.
            if held.pop(burst.context_hash, None) is not None:
                with self._lock:
                    self._counts["coalesced"] += 1
            held[burst.context_hash] = _burst_input(burst)
        if not held:
            return True
        batch = list(held.values())
        try:
            results = self.queue.enqueue_many(batch)
        except StoreBusyError as exc:
            logger.warning("could not store %d burst(s), will retry: %s", len(batch), exc)
            return False
        except MemosFeedbackError as exc:
            # Something in the batch (or the database) is broken: one by one.
            logger.warning("storing %d burst(s) failed, storing them one by one: %s", len(batch), exc)
            return self._store_one_by_one(batch)
        held.clear()
        self._refusals.clear()
        self._record_stored(batch, results)
        return True

    def _store_one_by_one(self, batch: list[RepairInput]) -> bool:
        ok = True
        for inp in batch:
            key = inp.context_hash
            try:
                results = self.queue.enqueue_many([inp])
            except StoreBusyError:
                return False
            except MemosFeedbackError as exc:
                refusals = self._refusals.get(key, 0) + 1
                self._refusals[key] = refusals
                if refusals >= _POISON_AFTER and self._database_writable():
                    logger.error(
                        "dropping a %s trigger for context %s that the database refuses: %s",
                        inp.trigger,
                        key,
                        exc,
                    )
                    with self._lock:
                        self._counts["rejected"] += 1
                    self._held.pop(key, None)
                    self._refusals.pop(key, None)
                else:
                    ok = False
                continue
            self._held.pop(key, None)
            self._refusals.pop(key, None)
            self._record_stored([inp], results)
        return ok and not self._held

    def _database_writable(self) -> bool:
        """Whether an empty write transaction commits (tells poison from an outage)."""
        try:
            with self.store.session(write=True, action="probing the database"):
                pass
        except MemosFeedbackError:
            return False
        return True

    def _record_stored(self, batch: list[RepairInput], results: list[EnqueueResult]) -> None:
        for inp, r in zip(batch, results, strict=True):
            if r.coalesced is not None:
                with self._lock:
                    self._counts["coalesced"] += 1
            if r.job_id:
                self._track(r.job_id, None, deduped=r.deduped)
            elif r.coalesced == "cooldown":
                # No job will run for it, so this is its terminal event.
                self.bus.emit(
                    RepairSkipped(context_hash=inp.context_hash, trigger=inp.trigger, reason="cooldown")
                )
        fresh = sum(1 for r in results if not r.deduped)
        if fresh:
            logger.info("queued %d failure burst(s) for repair", fresh)

    def _enqueuer(self) -> None:
        # Woken at once by a burst; the timeout bounds how long a burst can
        # sit in memory even if a wake-up were missed (buffer_flush_ms).
        flush_every = self.config.buffer_flush_ms / 1000
        backoff = 0.05
        while True:
            self._buffer_wake.wait(timeout=flush_every)
            self._buffer_wake.clear()
            try:
                stored = self._drain_buffer()
            except Exception:  # the enqueuer must outlive any bug
                logger.exception("unexpected error while storing bursts")
                stored = False
            self._log_bad_calls()
            if self._closing.is_set() and (stored or time.monotonic() >= self._close_deadline):
                return
            if stored:
                backoff = 0.05
            else:
                time.sleep(min(backoff, max(0.0, self._close_deadline - time.monotonic())))
                backoff = min(backoff * 2, 1.0)

    def _heartbeat(self) -> None:
        # A quarter of the lease: three renewals can be missed (a stalled
        # process, a slow database) before another worker may reclaim.
        interval = max(0.05, self.config.lease_ms / 4000)
        next_beat = time.monotonic() + interval
        next_prune = time.monotonic()
        while not self._closing.wait(timeout=min(interval, _RESOLVE_EVERY)):
            if time.monotonic() >= next_beat:
                next_beat = time.monotonic() + interval
                self._renew_leases()
            self._resolve_finished_elsewhere()
            if time.monotonic() >= next_prune:
                # A backlog (first start on an old database) is worked off
                # a bounded slice per beat, so lease renewal never waits long.
                backlog = self._prune_done()
                next_prune = time.monotonic() + (interval if backlog else _PRUNE_EVERY)

    def _prune_done(self) -> bool:
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
        # Several jobs per claim transaction (config.claim_batch), all in
        # flight from then on: the heartbeat renews their leases. Not with
        # an LLM: a job then takes seconds, the transaction saved is noise,
        # and jobs held here would wait for ours instead of running on
        # another worker.
        batch = 1 if self._llm is not None and self.config.use_llm else self.config.claim_batch
        # Group commit (SQLite, local synthesis): a claimed batch's repairs
        # commit in one write transaction (see _process_group).
        group = self.store.dialect == "sqlite" and local_synthesis(self._deps(None))
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
            with self._lock:
                self._in_flight.update(job.id for job in jobs)
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
            with self._lock:
                self._in_flight.difference_update(job.id for job in jobs)

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
            self._in_flight.add(job.id)  # claimed by this worker: already there
        try:
            self._run_job(job)
        except Exception:  # the worker must survive anything a job does
            logger.exception("unexpected error while finishing job %s", job.id)
        finally:
            with self._lock:
                self._in_flight.discard(job.id)

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
        with self._lock:
            self._counts["done"] += 1
        if result.repair_id is not None and inp.trigger == "failure-burst":
            # Only now: a failed repair must leave the evidence of the burst.
            self.signals.clear(inp.context_hash)
        self._resolve(job.id, result=result)

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
            with self._lock:
                self._in_flight.difference_update(job.id for job in jobs[:done])
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
        handled as failed with that error.
        """
        staged: list[tuple[JobRow, RepairInput, StagedRepair]] = []
        failed: list[tuple[JobRow, Exception]] = []
        taken_all: list[dict[str, Any]] = []
        i = start
        try:
            with self.store.connection(write=True, action="persisting repairs") as conn:
                while i < len(jobs) and not self._closing.is_set():
                    job = jobs[i]
                    i += 1
                    taken: list[dict[str, Any]] = []
                    try:
                        with _savepoint(conn):
                            inp = self._job_input(job)
                            failpoint("repair.before_run")
                            one = stage_repair(conn, inp, self._deps(job), taken, defer_index=True)
                            if one.skipped_reason is not None:
                                outcome = f"skipped:{one.skipped_reason}"
                                self.queue.complete_in(conn, job, self.owner, outcome, None)
                    except Exception as exc:
                        if self.events is not None:
                            self.events.hand_back(taken)
                        failed.append((job, exc))
                        break
                    taken_all.extend(taken)
                    staged.append((job, inp, one))
                # The group's repairs enter recall's search index in one
                # statement, after the last savepoint (see index_deferred);
                # a job rolled back to its savepoint took its name with it.
                if any(one.skipped_reason is None for _, _, one in staged):
                    index_deferred(conn)
        except BaseException as exc:
            # Nothing of the group was committed.
            if self.events is not None:
                self.events.hand_back(taken_all)
            if not isinstance(exc, Exception):
                raise
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
        error = f"{type(exc).__name__}: {exc}"
        retrying = RepairJobRetrying(
            job_id=job.id,
            context_hash=job.context_hash,
            attempt=job.attempts,
            next_attempt_at=due,
            error=error,
        )
        with self.store.session(write=True, action="rescheduling a repair job") as s:
            self.queue.schedule_retry(job, self.owner, error, due, session=s)
            self._log_in(s, [retrying])
        with self._lock:
            self._counts["retried"] += 1
        self.bus.emit(retrying)

    def _bury(self, job: JobRow, exc: BaseException) -> None:
        error = f"{type(exc).__name__}: {exc}"
        self.bus.emit(RepairJobFailed(context_hash=job.context_hash, error=error))
        dead = RepairJobDead(job_id=job.id, context_hash=job.context_hash, attempts=job.attempts, error=error)
        try:
            with self.store.session(write=True, action="dead-lettering a repair job") as s:
                self.queue.bury(job, self.owner, error, session=s)
                self._log_in(s, [dead])
        except LeaseLostError:
            return
        with self._lock:
            self._counts["failed"] += 1
            self._counts["dead"] += 1
        self.bus.emit(dead)
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
