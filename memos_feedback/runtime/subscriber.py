"""``attach_feedback_subscriber``: the host's handle on the pipeline (PIPELINE.md §9).

``FeedbackSubscriber`` is the facade; each job has a collaborator of its own
in this package: the hot path (``hot_path.HotPath``), the enqueuer
(``enqueuer.Enqueuer``), the workers (``workers.Workers``), the heartbeat
(``heartbeat.Heartbeat``) and the result handles (``futures.JobFutures``).

Threads and what they own:

* the caller's thread — ``record_tool_failure`` / ``record_tool_success``
  append the raw arguments (and the time) to a deque and return: no
  validation, no lock, no failure window. The enqueuer runs those steps,
  in arrival order, through ``FailureSignals`` (validation included) and
  buffers the bursts they make; so does any call that needs them applied
  now (``record_tool_failure_now``, ``sync_signals``, ``flush``, a user
  message or a served guidance of a session). Nothing is logged here (a
  slow log handler must not slow a tool step): bad calls are counted, and
  the enqueuer logs a summary at most every ``hot_path._BAD_CALL_LOG_EVERY`` s.
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

Asyncio hosts await ``asubmit_user_feedback`` and ``aguidance_for``: the
same calls, run in a worker thread (``asyncio.to_thread``), so a commit or a
recall read never blocks the event loop. One class serves both kinds of
host; the awaitable forms take exactly the sync forms' arguments.

``close()`` stops all of them within a deadline (``close_timeout_ms`` when
no timeout is given). Triggers it could not store by then are not dropped
silently: it raises ``TriggersNotPersistedError`` carrying them.
"""

from __future__ import annotations

import math
import random
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final

from .._checks import check_number, check_optional_strs
from ..classify.classifier import classify_feedback
from ..config import FeedbackConfig
from ..errors import InvalidInputError, MemosFeedbackError, StoreError, SubscriberClosedError
from ..events import FeedbackBus
from ..recall.config import RecallConfig
from ..recall.guidance import Guidance, guidance_for
from ..recall.judge import RelevanceJudge
from ..signals import FailureBurst
from ..store import Store
from ..synthesis.llm import RepairLLM
from ..text.logs import library_logger, redact_library_logs
from ..types import ClassifiedFeedback, RepairInput, RepairResult, Scope
from .aio import in_worker_thread
from .assembly import Pipeline, build_pipeline
from .enqueuer import Enqueuer, not_persisted
from .futures import JobFutures
from .hot_path import _STEP_BACKLOG, HotPath, StepKind
from .queue import RepairQueue

__all__ = ["CloseReport", "FeedbackSubscriber", "attach_feedback_subscriber"]

logger = library_logger("memos_feedback.subscriber")

_time_ns = time.time_ns
# Module constants: a global load is all the kind tag costs a recorded step.
_FAILURE: Final = StepKind.FAILURE
_SUCCESS: Final = StepKind.SUCCESS


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


# The counters ``metrics()`` reports, in its order.
_COUNTERS = ("enqueued", "deduped", "coalesced", "rejected", "done", "retried", "dead", "discarded", "failed")


def _timeout(name: str, value: object) -> float | None:
    return None if value is None else check_number(name, value, 0.0, 1e9)


class FeedbackSubscriber:
    """Wires signals, classifier, durable queue and ``run_repair`` together.

    A facade: the hot path, the enqueuer, the workers, the heartbeat and
    the result handles are collaborators it owns (see the module docstring).
    """

    def __init__(self, pipeline: Pipeline) -> None:
        """Start ``pipeline``'s threads (hosts call ``attach_feedback_subscriber``, which builds it)."""
        if not isinstance(pipeline, Pipeline):
            got = type(pipeline).__name__
            raise InvalidInputError(
                f"FeedbackSubscriber takes a Pipeline (attach_feedback_subscriber builds one), got {got}"
            )
        self.store = pipeline.store
        self.config = pipeline.config
        # ``recall.default_project``: the scope of what is written and read here naming none.
        self.recall = pipeline.recall
        self.bus = pipeline.bus
        self.signals = pipeline.signals
        self.queue = pipeline.queue
        self.owner = pipeline.owner
        self.events = pipeline.events
        self.outcomes = pipeline.outcomes
        self._embedder = pipeline.embedder
        self._judge = pipeline.judge
        self._events_off = pipeline.events_off
        self._close_lock = threading.Lock()
        self._close_deadline = math.inf
        self._close_report: CloseReport | None = None
        self._closing = pipeline.closing
        self._closed = False
        self._jobs = pipeline.jobs
        self._lock = self._jobs.lock
        self._work = self._jobs.work  # notified when there is work for the workers
        self._hot = pipeline.hot
        # The deque itself: an append is all a recorded tool step pays.
        self._steps = self._hot.steps
        self._enqueuer = pipeline.enqueuer
        self._heartbeat = pipeline.heartbeat
        if self.events is not None:
            self.events.start()  # after the rest of startup: a failed start leaves no thread behind
        loops = [("enqueuer", self._enqueuer.run), ("heartbeat", self._heartbeat.run)]
        loops += [(f"worker-{i}", pipeline.workers.run) for i in range(pipeline.worker_threads)]
        self._threads = [
            threading.Thread(target=f, name=f"memos-feedback-{n}", daemon=True) for n, f in loops
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
        *,
        project: str | None = None,
        user: str | None = None,
    ) -> None:
        """Record a failed tool step. Never raises, returns nothing.

        The step is appended as it is (with the time) for the enqueuer,
        which validates it and runs the failure window within
        ``buffer_flush_ms``; a burst it makes is queued for repair from
        there. Bad arguments are then counted and ignored (the agent loop
        must not crash on its own instrumentation; a summary is logged off
        this thread); so are calls after ``close()``. A caller that needs
        the burst itself uses ``record_tool_failure_now``. ``project``/``user``:
        the scope of the repair a burst makes (docs/RECALL.md, "Scope"). It
        waits only past 10,000 waiting steps: then it applies them itself
        (after the enqueuer, if that is applying them): a bounded backlog.
        """
        if self._closed:
            self._hot.bad_call("record_tool_failure after close()")
            return
        steps = self._steps
        steps.append(
            (
                _FAILURE,
                tool_id,
                context,
                step,
                reason,
                _time_ns(),
                session_id,
                episode_id,
                trace_id,
                project,
                user,
            )
        )
        if len(steps) > _STEP_BACKLOG:
            self._hot.catch_up()

    def record_tool_success(
        self, tool_id: str, context: str, step: int, session_id: str | None = None
    ) -> None:
        """Record a successful tool step (it suppresses bursts for that tool and context).

        Deferred like ``record_tool_failure``: steps are applied in the
        order they were recorded, so a success still cancels the failures
        recorded before it.
        """
        if self._closed:
            self._hot.bad_call("record_tool_success after close()")
            return
        steps = self._steps
        steps.append((_SUCCESS, tool_id, context, step, session_id))
        if len(steps) > _STEP_BACKLOG:
            self._hot.catch_up()

    def record_tool_failure_now(
        self,
        tool_id: str,
        context: str,
        step: int,
        reason: str = "",
        session_id: str | None = None,
        episode_id: str | None = None,
        trace_id: str | None = None,
        *,
        project: str | None = None,
        user: str | None = None,
    ) -> FailureBurst | None:
        """``record_tool_failure``, applied on this thread: returns the burst it makes, if any.

        Steps recorded earlier are applied first, so the order holds. It
        costs what ``record_tool_failure`` cost before it was deferred
        (validation and the failure window, ~1.5 µs here); for hosts that
        act on the burst at once (the adapters, the demo). Never raises.
        """
        if self._closed:
            self._hot.bad_call("record_tool_failure after close()")
            return None
        return self._hot.record_failure_now(
            tool_id, context, step, reason, session_id, episode_id, trace_id, project, user
        )

    def sync_signals(self) -> None:
        """Apply every tool step recorded so far to ``signals``, on this thread.

        ``record_tool_*`` only queue their step; call this before reading
        ``signals`` (``peek``, ``stats``) if it must reflect them. ``flush``
        does it too.
        """
        self._hot.sync()

    # -- user feedback and manual runs --------------------------------------

    def submit_user_feedback(
        self,
        text: str,
        session_id: str | None,
        tool_id: str | None = None,
        context: str | None = None,
        episode_id: str | None = None,
        *,
        project: str | None = None,
        user: str | None = None,
        agent_text: str | None = None,
    ) -> tuple[ClassifiedFeedback, Future[RepairResult]]:
        """Classify now; queue (durably) a repair when the shape calls for one.

        The repair is keyed to the tool in play: ``tool_id``/``context`` when
        given, else the session's newest recorded tool step, else the
        session itself (``guidance_for`` finds it by its text either way).
        ``agent_text``, the agent's turn the message answers, is the
        classifier's context (``classify_feedback(text, agent_text=...)``).
        ``project``/``user``: its scope (default: ``recall.default_project``, every user).
        """
        self._check_open()
        check_optional_strs(session_id=session_id, tool_id=tool_id, context=context, agent_text=agent_text)
        scope = Scope.resolve(project, user, default_project=self.recall.default_project)  # validates them
        feedback = classify_feedback(text, agent_text=agent_text)
        return feedback, self._enqueuer.user_feedback(
            feedback, session_id, tool_id, context, episode_id, agent_text=agent_text, scope=scope
        )

    # Returns (feedback, concurrent Future): ``await asyncio.wrap_future(f)`` waits for the repair.
    asubmit_user_feedback = in_worker_thread(
        submit_user_feedback, "asubmit_user_feedback", "FeedbackSubscriber"
    )

    def run_once(self, input: RepairInput) -> Future[RepairResult]:
        """Queue a manual repair (the UI button); committed before returning."""
        self._check_open()
        if not isinstance(input, RepairInput):
            raise InvalidInputError(f"run_once takes a RepairInput, got {type(input).__name__}")
        return self._enqueuer.enqueue_now(input.scoped(input.scope.with_default(self.recall.default_project)))

    # -- lifecycle ----------------------------------------------------------

    def flush(self, timeout: float | None = None, *, jobs: bool = True) -> bool:
        """Wait until buffered bursts are stored and every job this handle queued finished.

        Returns False when ``timeout`` (seconds) passed first. Jobs other
        processes queued are not waited for. ``jobs=False`` returns once the
        bursts are stored as jobs (durable), without waiting for them to
        run: for a caller that may be ended before a repair is written.
        """
        limit = _timeout("timeout", timeout)
        deadline = None if limit is None else time.monotonic() + limit
        self.sync_signals()  # here rather than waiting up to buffer_flush_ms for the enqueuer
        while True:
            # Order matters: what is on its way to the queue (_local_idle), then jobs.
            with self._lock:
                idle = self._local_idle() and (
                    not jobs or (not self._jobs.futures and not self.outcomes.pending())
                )
            if idle:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            self._hot.wake.set()
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
                local_idle = self._local_idle()
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
            self._hot.wake.set()
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
            self._close_deadline = self._enqueuer.close_deadline = time.monotonic() + budget
            self._closed = True
            self._closing.set()
            self._hot.wake.set()
            with self._work:
                self._work.notify_all()
            for t in self._threads:
                t.join(max(0.0, self._close_deadline - time.monotonic()))
            unstored = self._enqueuer.unstored(max(0.0, self._close_deadline - time.monotonic()))
            self.outcomes.close(max(0.0, self._close_deadline - time.monotonic()))
            cancelled = self._jobs.cancel_all()
            self.signals.clear()
            self._hot.log_bad_calls(force=True)
            if self._events_off is not None and self.events is not None:
                self._events_off()
                self.events.close(max(0.0, self._close_deadline - time.monotonic()))
            alive = tuple(t.name for t in self._threads if t.is_alive())
            if alive:
                logger.warning("closed with %d thread(s) still running: %s", len(alive), ", ".join(alive))
            self._close_report = CloseReport(threads_alive=alive, cancelled=cancelled)
        if unstored:
            raise not_persisted(unstored, budget)
        return self._close_report

    def _local_idle(self) -> bool:
        """No step, burst or held trigger is on its way to the queue (``_lock`` held)."""
        # Order matters: steps, the hand applying them, buffer, then the
        # enqueuer's hand.
        hot, enqueuer = self._hot, self._enqueuer
        idle = not hot.steps and not hot.lock.locked()
        return idle and not enqueuer.buffer and not enqueuer.draining and not enqueuer.held

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
        user: str | None = None,
    ) -> Guidance:
        """The repairs that apply now: ``guidance_for`` with this handle's store, embedder, judge, config.

        ``project`` defaults to ``recall.default_project``: global repairs
        and that project's (``user``: and that user's). With ``session_id`` (and ``record``), what is
        served is recorded off this thread and settled by the session's
        next signals (outcomes).
        """
        scope = Scope.resolve(project, user, default_project=self.recall.default_project)
        guidance = guidance_for(
            self.store,
            tool_id=tool_id,
            context=context,
            query=query,
            project=scope.project,
            session_id=session_id,
            limit=limit,
            embedder=self._embedder,
            judge=self._judge,
            config=self.recall,
            user=scope.user,
            record=False,  # recorded below, by the background writer
        )
        if record and session_id is not None and session_id.strip():
            # Steps recorded before this serving must not settle it.
            self.sync_signals()
            self.outcomes.served(guidance, session_id, tool_id, context)
        return guidance

    aguidance_for = in_worker_thread(guidance_for, "aguidance_for", "FeedbackSubscriber")

    def metrics(self) -> dict[str, int | float | None]:
        """Counters since start and queue gauges (depth, oldest pending age)."""
        return _metrics(self._jobs, self.queue, self._enqueuer, self._hot)

    def _check_open(self) -> None:
        if self._closed:
            raise SubscriberClosedError("the feedback subscriber is closed")

    def _prune_done(self) -> bool:
        """Delete done jobs past ``done_retention_ms`` now (the heartbeat's pruning)."""
        return self._heartbeat.prune_done()


def _metrics(
    jobs: JobFutures, queue: RepairQueue, enqueuer: Enqueuer, hot: HotPath
) -> dict[str, int | float | None]:
    with jobs.lock:
        counts = dict(jobs.counts)
    out: dict[str, int | float | None] = {key: counts.get(key, 0) for key in _COUNTERS}
    try:
        stats = queue.stats()
        out["depth"] = stats["depth"]
        out["oldest_pending_age_ms"] = stats["oldest_pending_age_ms"]
    except StoreError as exc:
        logger.warning("queue gauges unavailable: %s", exc)
        out["depth"] = out["oldest_pending_age_ms"] = None
    out["buffered"] = len(enqueuer.buffer) + len(enqueuer.held)
    out["ignored_calls"] = hot.bad_calls
    out["in_flight"] = len(jobs.in_flight)
    return out


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
    owner: str | None = None,
    recall: RecallConfig | None = None,
    judge: RelevanceJudge | None = None,
) -> FeedbackSubscriber:
    """Build the pipeline (``assembly.build_pipeline``) and start it; returns a closable handle.

    ``config`` and ``recall`` not given are read from the environment
    (``recall.config.load_config``); ``recall.default_project`` is the
    scope of everything this handle writes and reads that names none.
    The library's loggers get the secret-redacting filter here, at the
    edge where a host calls in (the CLI installs it too). ``judge`` (a
    ``recall.judge.RelevanceJudge``, off by default) lets a model read the
    borderline items of every ``guidance_for`` (docs/RECALL.md).
    """
    redact_library_logs()
    pipeline = build_pipeline(
        store,
        llm,
        embedder,
        bus,
        config,
        workers=workers,
        poll_interval=poll_interval,
        rng=rng,
        owner=owner,
        recall=recall,
        judge=judge,
    )
    return FeedbackSubscriber(pipeline)
