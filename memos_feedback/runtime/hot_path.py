"""``HotPath``: tool steps as the host records them, applied in order.

``FeedbackSubscriber.record_tool_failure`` / ``record_tool_success``
append the raw arguments (and the time) to ``steps`` and return: no
validation, no lock, no failure window. Whoever holds ``lock`` (the
enqueuer, or a call that needs the steps applied now) pops them, oldest
first, through ``FailureSignals`` (validation included); a burst they make
goes to ``bursts`` for the enqueuer. Nothing is logged on the recording
thread (a slow log handler must not slow a tool step): bad calls are
counted, and a background thread logs a summary at most every
``_BAD_CALL_LOG_EVERY`` seconds.
"""

from __future__ import annotations

import dataclasses
import enum
import threading
import time
from collections import deque
from typing import Any, Literal, TypeAlias

from ..config import FeedbackConfig
from ..errors import InvalidInputError
from ..signals import FailureBurst, FailureSignals
from ..text.logs import library_logger
from ..types import FailureRecord, Scope
from .outcomes import SubscriberOutcomes

__all__ = ["FailureStep", "HotPath", "Step", "StepKind", "SuccessStep"]

logger = library_logger("memos_feedback.subscriber")

# At most one summary of ignored hot-path calls per this many seconds.
_BAD_CALL_LOG_EVERY = 10.0
# Tool steps waiting for the enqueuer beyond this many are applied by the
# recording thread itself: a caller that records faster than the enqueuer
# keeps up (a tight retry loop) pays for its steps instead of growing memory
# without bound. ~10,000 tuples are about 1.5 MB. The bound holds per
# recording thread: each one past it waits until the backlog is applied.
_STEP_BACKLOG = 10_000


_UNSCOPED = Scope()


class StepKind(enum.Enum):
    """What a recorded step is: the first element of its record."""

    FAILURE = "failure"
    SUCCESS = "success"


# A step as the host recorded it: its kind, then the raw, unvalidated
# arguments. A plain tuple with a kind tag rather than a NamedTuple: building
# a NamedTuple costs ~300 ns against ~40 ns for the tuple (measured here), and
# the record is all ``record_tool_failure`` pays (~160 ns in all).
# FAILURE: tool_id, context, step, reason, ts_ns, session_id, episode_id,
# trace_id, project, user.
FailureStep: TypeAlias = tuple[Literal[StepKind.FAILURE], Any, Any, Any, Any, int, Any, Any, Any, Any, Any]
# SUCCESS: tool_id, context, step, session_id.
SuccessStep: TypeAlias = tuple[Literal[StepKind.SUCCESS], Any, Any, Any, Any]
Step: TypeAlias = FailureStep | SuccessStep


class HotPath:
    """The recorded tool steps, the bursts they made, and the count of ignored calls."""

    def __init__(
        self,
        signals: FailureSignals,
        config: FeedbackConfig,
        outcomes: SubscriberOutcomes,
        *,
        default_project: str | None = None,
    ) -> None:
        self.config = config
        # The host's project for a burst whose calls name none (RecallConfig.default_project).
        self.default_project = default_project
        self._record_failure = signals.record_failure
        self._record_success = signals.record_success
        # Tool steps as the hot path recorded them (``Step``), raw and
        # unvalidated. Only a holder of ``lock`` pops, so steps are applied in order.
        self.steps: deque[Step] = deque()
        self.lock = threading.Lock()
        # The thread applying steps under ``lock`` (0: none), so that one
        # never waits for itself in ``catch_up``.
        self._applying = 0
        # Bursts the steps made (deque appends are thread-safe and cheap),
        # for the enqueuer, which is woken by ``wake``.
        self.bursts: deque[FailureBurst] = deque()
        self.wake = threading.Event()
        # session id -> (tool, context) of its newest tool step.
        self.tool_in_play: dict[str, tuple[str, str]] = {}
        self.outcomes = outcomes
        # The dict itself, not a method: a membership test is all a tool step pays.
        self._open_sessions = outcomes.open.sessions
        self.bad_calls = 0
        self._bad_reported = 0
        self._last_bad = ""
        self._bad_logged_at = 0.0

    def record_failure_now(
        self,
        tool_id: str,
        context: str,
        step: int,
        reason: str,
        session_id: str | None,
        episode_id: str | None,
        trace_id: str | None,
        project: str | None = None,
        user: str | None = None,
    ) -> FailureBurst | None:
        """Apply the steps recorded so far, then this failure; its burst, if any. Never raises."""
        with self.lock:
            self.apply_steps_locked()
            try:
                # Timed after the earlier steps are applied: none of them is newer.
                return self._apply_failure(
                    tool_id,
                    context,
                    step,
                    reason,
                    time.time_ns(),
                    session_id,
                    episode_id,
                    trace_id,
                    project,
                    user,
                )
            except Exception as exc:  # the agent loop must not crash on a bad step
                self.bad_call(exc)
                return None

    def sync(self) -> None:
        """Apply every tool step recorded so far, on this thread."""
        with self.lock:
            self.apply_steps_locked()

    def catch_up(self) -> None:
        """Back-pressure: the backlog passed its bound, so this thread applies it.

        If another thread holds the lock (the enqueuer, applying), this one
        waits for it and then applies what is left: returning at once
        instead let a caller faster than the enqueuer queue without bound,
        since the enqueuer keeps applying while steps keep coming. The wait
        is for the steps already queued (~3 us each), never for I/O: no
        holder of the lock writes to the database while holding it.
        """
        if self._applying == threading.get_ident():
            return  # a step recorded from inside an apply (a listener): that loop takes it
        with self.lock:
            self.apply_steps_locked()

    def apply_steps_locked(self) -> None:
        """Apply the recorded steps, oldest first (``lock`` held)."""
        steps = self.steps
        popleft = steps.popleft
        self._applying = threading.get_ident()
        try:
            while steps:
                item = popleft()
                try:
                    if item[0] is StepKind.FAILURE:
                        self._apply_failure(*item[1:])
                    else:
                        self._apply_success(*item[1:])
                except Exception as exc:  # one bad step must not stop the others
                    self.bad_call(exc)
        finally:
            self._applying = 0

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
        project: Any = None,
        user: Any = None,
    ) -> FailureBurst | None:
        # FailureRecord validates every field (InvalidInputError names the bad one).
        record = FailureRecord(
            tool_id, context, step, reason, ts_ns // 1_000_000, session_id, episode_id, trace_id
        )
        scope = _UNSCOPED
        if project is not None or user is not None:  # most hosts scope by config, not per call
            scope = Scope(project, user)
        burst = self._record_failure(record)
        if burst is not None:
            # The window is the (tool, context)'s; the repair is the scope of the
            # call that fired it, resolved here: the job carries it to the worker.
            scope = scope.with_default(self.default_project)
            if not scope.is_unscoped:
                burst = dataclasses.replace(burst, project=scope.project, user=scope.user)
        if session_id is not None:
            self._in_play(session_id, tool_id, context)
            if burst is not None and session_id in self._open_sessions:  # outcomes: a burst recurred
                self.outcomes.tool_step(session_id, tool_id, context, ok=False)
        if burst is not None:
            self.bursts.append(burst)
            self.wake.set()
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
        in_play = self.tool_in_play
        in_play[session_id] = (tool_id, context)
        if len(in_play) > self.config.max_tracked_contexts:
            # Bounded like the failure windows: forget the oldest session.
            # (Under a race another thread may pop first; that is harmless.)
            in_play.pop(next(iter(in_play)), None)

    def bad_call(self, why: object) -> None:
        # Plain attribute writes: a lost increment under a race only makes
        # the logged count approximate, and the hot path takes no lock.
        self.bad_calls += 1
        self._last_bad = why if isinstance(why, str) else str(why)

    def log_bad_calls(self, *, force: bool = False) -> None:
        """Log, from a background thread, how many hot-path calls were ignored."""
        count = self.bad_calls
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
