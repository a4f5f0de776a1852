"""``Enqueuer``: turns triggers into durable jobs.

Its thread, every ``buffer_flush_ms`` (or at once when woken), applies the
recorded tool steps and moves the bursts they made into ``repair_jobs``
(the bound is that period plus one insert transaction). Bursts of one
context that pile up while it works are coalesced to the newest. A batch
the database refuses is split: a trigger that fails alone, again and
again, while the database commits a write of a trivial row, and with an
error that is not an outage (a full disk, an I/O error, a lost file:
``store.durability``), is poison and is dropped with a logged reason;
anything else is kept and retried, so one bad input never stops the
queue and a database outage loses nothing.

``submit_user_feedback`` and ``run_once`` go through ``enqueue_now``
instead, which commits the job before it returns (a correction the user
typed survives a crash). What ``close()`` could not store by its deadline
is reported by ``unstored`` and raised as ``TriggersNotPersistedError``.
"""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import Future

from .._loop import wake_loop
from ..config import FeedbackConfig
from ..errors import MemosFeedbackError, StoreBusyError, TriggersNotPersistedError
from ..events import FeedbackBus, FeedbackClassified, RepairSkipped
from ..signals import FailureBurst, context_hash_of
from ..store import Store
from ..store.durability import is_outage, probe_write
from ..text.logs import library_logger
from ..types import ClassifiedFeedback, RepairInput, RepairResult, Scope, now_ms
from .futures import JobFutures, skipped_result
from .hot_path import HotPath
from .queue import EnqueueResult, RepairQueue

__all__ = ["Enqueuer", "burst_input", "not_persisted"]

logger = library_logger("memos_feedback.subscriber")

_UNSCOPED = Scope()
# The tool a user's message is keyed to when no tool step is in play.
USER_TOOL = "user"
# A trigger the database refused this many times, while a write of a
# trivial row succeeds, is poison: it is dropped with a logged reason.
_POISON_AFTER = 3


def burst_input(burst: FailureBurst) -> RepairInput:
    """The repair trigger of a failure burst."""
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
        project=burst.project,
        user=burst.user,
    )


def not_persisted(unstored: list[RepairInput], budget: float) -> TriggersNotPersistedError:
    """The error ``close()`` raises for triggers it could not store within ``budget`` seconds."""
    logger.error("%d trigger(s) could not be stored before close() gave up", len(unstored))
    return TriggersNotPersistedError(tuple(unstored), f"the database stayed unwritable for {budget:g} s")


class Enqueuer:
    """The bursts of ``hot`` (and the inputs held until stored) on their way into the queue."""

    def __init__(
        self,
        store: Store,
        config: FeedbackConfig,
        bus: FeedbackBus,
        queue: RepairQueue,
        hot: HotPath,
        jobs: JobFutures,
        closing: threading.Event,
    ) -> None:
        self.store = store
        self.config = config
        self.bus = bus
        self.queue = queue
        self.hot = hot
        self.jobs = jobs
        self.closing = closing
        self.buffer = hot.bursts
        self.wake = hot.wake
        # Inputs popped from the buffer and not stored yet, by context.
        self.held: dict[str, RepairInput] = {}
        self._refusals: dict[str, int] = {}
        # True while the enqueuer holds bursts it popped but has not stored
        # and tracked yet; flush() must not report idle in that gap.
        self.draining = False
        self.drain_lock = threading.Lock()
        # Set by close(): the thread gives up storing at this time.
        self.close_deadline = math.inf

    def enqueue_now(self, inp: RepairInput) -> Future[RepairResult]:
        """Queue ``inp`` and commit it before returning; a future of its result."""
        future: Future[RepairResult] = Future()
        result = self.queue.enqueue(inp)
        if not result.job_id:  # coalesced into a repair in cooldown: nothing will run
            self.bus.emit(
                RepairSkipped(context_hash=inp.context_hash, trigger=inp.trigger, reason="cooldown")
            )
            now = now_ms()
            future.set_result(skipped_result(inp.trigger, inp.context_hash, "cooldown", now, now))
            return future
        self.jobs.track(result.job_id, future, deduped=result.deduped)
        return future

    def user_feedback(
        self,
        feedback: ClassifiedFeedback,
        session_id: str | None,
        tool_id: str | None,
        context: str | None,
        episode_id: str | None,
        *,
        scope: Scope = _UNSCOPED,
        agent_text: str | None = None,
    ) -> Future[RepairResult]:
        """Queue (durably) the repair a user's message calls for, keyed to the tool in play.

        ``tool_id``/``context`` when given, else the session's newest
        recorded tool step, else the session itself. A shape that calls
        for no repair resolves at once (skipped, ``feedback-not-actionable``).
        ``scope``: resolved by the caller; the job carries it as it is.
        """
        if session_id is not None:
            # The session's tool steps recorded before this message come
            # first: they pick the tool in play and settle servings first.
            self.hot.sync()
            self.hot.outcomes.message(session_id, feedback.shape)  # outcomes: the user's verdict
        if tool_id is None and session_id is not None:
            in_play = self.hot.tool_in_play.get(session_id)
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
                skipped_result(trigger, context_hash, "feedback-not-actionable", started, now_ms())
            )
            return done
        inp = RepairInput(
            trigger="user." + feedback.shape.value,
            context_hash=context_hash,
            tool_id=tool_id,
            user_text=feedback.text,
            session_id=session_id,
            episode_id=episode_id,
            context=context,
            project=scope.project,
            user=scope.user,
            agent_text=agent_text,
            classified=feedback,
        )
        return self.enqueue_now(inp)

    # -- the thread -----------------------------------------------------------

    def run(self) -> None:
        # Woken at once by a burst; the period bounds how long a burst can
        # sit in memory even if a wake-up were missed (buffer_flush_ms).
        wake_loop(
            self._round,
            wake=self.wake,
            period=self.config.buffer_flush_ms / 1000,
            closing=self.closing,
            last_round=lambda stored: stored or time.monotonic() >= self.close_deadline,
            pause=self._pause,
        )

    def _round(self) -> bool:
        try:
            stored = self.drain_buffer()
        except Exception:  # the enqueuer must outlive any bug
            logger.exception("unexpected error while storing bursts")
            stored = False
        self.hot.log_bad_calls()
        return stored

    def _pause(self, delay: float) -> bool:
        # Not cut short by close(): only by its deadline.
        time.sleep(min(delay, max(0.0, self.close_deadline - time.monotonic())))
        return False

    def drain_buffer(self) -> bool:
        with self.drain_lock:
            self.draining = True
            try:
                self.hot.sync()
                return self.store_buffered()
            finally:
                self.draining = False

    def store_buffered(self) -> bool:
        """Move buffered bursts into the queue; True when nothing is left to store."""
        held = self.held
        while self.buffer:
            burst = self.buffer.popleft()
            # A newer burst of the same context replaces the older one: its
            # window holds the latest evidence, and one job covers both.
            if held.pop(burst.context_hash, None) is not None:
                self.jobs.count("coalesced")
            held[burst.context_hash] = burst_input(burst)
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
                if is_outage(exc):
                    # A full disk, a lost file: never the trigger's fault, and
                    # the rest would fail alike. Everything stays held.
                    return False
                refusals = self._refusals.get(key, 0) + 1
                self._refusals[key] = refusals
                if refusals >= _POISON_AFTER and probe_write(self.store):
                    logger.error(
                        "dropping a %s trigger for context %s that the database refuses: %s",
                        inp.trigger,
                        key,
                        exc,
                    )
                    self.jobs.count("rejected")
                    self.held.pop(key, None)
                    self._refusals.pop(key, None)
                else:
                    ok = False
                continue
            self.held.pop(key, None)
            self._refusals.pop(key, None)
            self._record_stored([inp], results)
        return ok and not self.held

    def _record_stored(self, batch: list[RepairInput], results: list[EnqueueResult]) -> None:
        for inp, r in zip(batch, results, strict=True):
            if r.coalesced is not None:
                self.jobs.count("coalesced")
            if r.job_id:
                self.jobs.track(r.job_id, None, deduped=r.deduped)
            elif r.coalesced == "cooldown":
                # No job will run for it, so this is its terminal event.
                self.bus.emit(
                    RepairSkipped(context_hash=inp.context_hash, trigger=inp.trigger, reason="cooldown")
                )
        fresh = sum(1 for r in results if not r.deduped)
        if fresh:
            logger.info("queued %d failure burst(s) for repair", fresh)

    # -- closing --------------------------------------------------------------

    def unstored(self, wait: float) -> list[RepairInput]:
        """Triggers not (known to be) stored; waits up to ``wait`` s for the enqueuer's hand."""
        got = self.drain_lock.acquire(timeout=wait)
        try:
            # Steps recorded while close() began (a call that passed the
            # closed check just before it) may have missed the enqueuer's
            # last round: apply them, and store their bursts if we can.
            late = False
            if self.hot.lock.acquire(timeout=wait):
                try:
                    late = bool(self.hot.steps)
                    self.hot.apply_steps_locked()
                finally:
                    self.hot.lock.release()
            # Only when the enqueuer's last round stored everything (the
            # database is up): otherwise this would wait on it past the deadline.
            if got and late and self.buffer and not self.held:
                try:
                    self.store_buffered()
                except Exception:
                    logger.exception("storing bursts while closing failed")
            # Without the lock the enqueuer is stuck inside an insert: what it
            # holds is in doubt, and is reported as not persisted.
            held = dict(self.held)
            for burst in list(self.buffer):
                held[burst.context_hash] = burst_input(burst)
            return list(held.values())
        finally:
            if got:
                self.drain_lock.release()
