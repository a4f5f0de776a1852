"""Hot-path detection of stuck tools: ``FailureSignals``.

The agent runtime reports every tool failure (and, ideally, every success)
here. For each (tool, context) pair the detector keeps a small rolling
window of the last ``failure_window`` tool steps and says "burst" when the
tool keeps failing in that context: at least ``failure_threshold`` failures
remain in the window and no success for the same pair happened inside it.

Rules, with ``head`` = the newest step recorded for the pair (failure or
success) and ``low = head - failure_window + 1``:

* a failure whose step is below ``low`` has dropped out of the window;
* ``record_success(step)`` discards every failure at or before ``step``;
  while that success is itself inside the window (``step >= low``) no burst
  fires, even if enough later failures pile up (an intermittently working
  tool is not stuck);
* a burst fires on **every** failure recorded while the condition holds.
  Deduplication is the host's job (the repair queue and its cooldown), so a
  burst is never lost because an earlier one was dropped downstream.

Steps may arrive late, repeated or out of order; the detector never raises
for that:

* a failure is placed by its step number, not by arrival order; a step
  newer than ``head`` moves the window forward, an older one is inserted in
  order (and still counts, and can still fire a burst, if it is inside the
  window);
* a failure older than the window, or at/before the latest success, is
  counted in ``failures_recorded`` but not kept;
* the window holds at most one failure per step: a repeated step replaces
  the stored record (the latest report wins), so a retried delivery cannot
  inflate the count and a window never holds more than ``failure_window``
  records;
* a success with an older step than an earlier success does not move the
  success mark back.

State is in memory only, bounded by ``max_tracked_contexts`` (least
recently touched pair evicted first) and guarded by one lock. Everything
that can be done outside the lock (type checks, hashing, building the
result) is.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ._checks import check_step, check_str, check_tool_context
from .config import FeedbackConfig
from .errors import InvalidInputError
from .types import FailureRecord

__all__ = [
    "FailureBurst",
    "FailureSignals",
    "FailureWindow",
    "context_hash_of",
]

_sha1 = hashlib.sha1

# Below any window start (steps are >= 0, a window start is > -failure_window),
# so "no success yet" never looks like a success inside the window.
_NO_SUCCESS = -(1 << 62)


def _utf8_lenient(text: str) -> bytes:
    # Lone surrogates cannot be encoded; hash them as U+FFFD, the way WHATWG
    # encoders (browsers, Node) do, instead of crashing the hot path.
    return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text).encode("utf-8")


def context_hash_of(tool_id: str, context: str) -> str:
    """First 16 hex digits of SHA-1 over ``tool_id + "\\n" + context`` (UTF-8).

    Stable across processes and restarts. The two parts are fed to the hash
    one after the other, so a long context is encoded once and never
    concatenated. Strings with lone surrogates hash as if each surrogate
    were U+FFFD.
    """
    check_str("tool_id", tool_id)
    check_str("context", context)
    return _hash(tool_id, context)


def _hash(tool_id: str, context: str) -> str:
    digest = _sha1(usedforsecurity=False)
    try:
        digest.update(tool_id.encode("utf-8"))
        digest.update(b"\n")
        digest.update(context.encode("utf-8"))
    except UnicodeEncodeError:
        digest = _sha1(usedforsecurity=False)
        digest.update(_utf8_lenient(tool_id))
        digest.update(b"\n")
        digest.update(_utf8_lenient(context))
    return digest.hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class FailureBurst:
    """A tool that keeps failing in one context.

    ``occurrences`` are the failures in the window, ordered by step (oldest
    first); ``failure_count == len(occurrences)``. ``first_seen`` and
    ``last_seen`` are the smallest and largest ``ts`` among them (epoch ms),
    which for in-order reports are the first and last occurrence's times.
    """

    tool_id: str
    context: str
    context_hash: str
    failure_count: int
    occurrences: tuple[FailureRecord, ...]
    first_seen: int
    last_seen: int
    # The scope of the repair it calls for (the host's per-call ``project``);
    # None: the subscriber's ``RecallConfig.default_project``.
    project: str | None = None
    # And the user (tenant) beside it (None: every user's).
    user: str | None = None


@dataclass(frozen=True, slots=True)
class FailureWindow:
    """Read-only snapshot of one (tool, context) window, returned by ``peek``.

    ``newest_step`` is the head of the window (the newest step recorded for
    the pair); the window covers ``window_start .. newest_step``
    (``window_start`` is never below 0, the first step).
    ``occurrences`` are the failures that still count (inside the window and
    after the latest success), oldest first. ``last_success_step`` is None
    when no success was recorded. ``bursting`` tells whether a failure
    recorded now at ``newest_step`` would fire a burst, i.e. whether the
    burst condition currently holds.
    """

    tool_id: str
    context: str
    context_hash: str
    newest_step: int
    window_start: int
    occurrences: tuple[FailureRecord, ...]
    last_success_step: int | None
    success_in_window: bool
    bursting: bool

    @property
    def failure_count(self) -> int:
        return len(self.occurrences)


class _State:
    """Mutable per-(tool, context) window; only touched under the lock."""

    __slots__ = ("context", "context_hash", "failures", "newest", "success", "tool_id")

    def __init__(self, tool_id: str, context: str, newest: int, context_hash: str) -> None:
        self.tool_id = tool_id
        self.context = context
        self.context_hash = context_hash
        self.newest = newest
        self.success = _NO_SUCCESS
        # Ordered by step, one record per step, never longer than the
        # window. None until the first failure, so success-only states stay
        # tiny. A list, not a deque: an empty deque alone costs ~760 bytes.
        self.failures: list[FailureRecord] | None = None


def _burst_of(
    record: FailureRecord, context_hash: str, occurrences: tuple[FailureRecord, ...]
) -> FailureBurst:
    first = last = occurrences[0].ts
    for occ in occurrences:
        ts = occ.ts
        if ts < first:
            first = ts
        elif ts > last:
            last = ts
    return FailureBurst(
        tool_id=record.tool_id,
        context=record.context,
        context_hash=context_hash,
        failure_count=len(occurrences),
        occurrences=occurrences,
        first_seen=first,
        last_seen=last,
    )


class FailureSignals:
    """Rolling failure windows per (tool, context); see the module docstring.

    Thread-safe. Memory is bounded by ``config.max_tracked_contexts`` states,
    each holding at most ``config.failure_window`` records.
    """

    __slots__ = (
        "_bursts",
        "_by_hash",
        "_config",
        "_evictions",
        "_failures_recorded",
        "_lock",
        "_max_states",
        "_states",
        "_successes_recorded",
        "_threshold",
        "_total_failures",
        "_window",
    )

    def __init__(self, config: FeedbackConfig | None = None) -> None:
        if config is None:
            config = FeedbackConfig()
        elif not isinstance(config, FeedbackConfig):
            raise InvalidInputError(f"config must be a FeedbackConfig, got {type(config).__name__}")
        self._config = config
        self._threshold = config.failure_threshold
        self._window = config.failure_window
        self._max_states = config.max_tracked_contexts
        # Keyed by (tool_id, context): Python's cached string hashes make the
        # lookup far cheaper than SHA-1, which is computed once per new pair
        # and indexed in ``_by_hash`` so ``clear(context_hash)`` stays O(1).
        self._states: OrderedDict[tuple[str, str], _State] = OrderedDict()
        self._by_hash: dict[str, tuple[str, str]] = {}
        self._lock = threading.Lock()
        self._total_failures = 0  # records currently held in all windows
        self._failures_recorded = 0
        self._successes_recorded = 0
        self._bursts = 0
        self._evictions = 0

    @property
    def config(self) -> FeedbackConfig:
        return self._config

    def __len__(self) -> int:
        return len(self._states)

    # -- hot path -------------------------------------------------------------

    def record_failure(self, record: FailureRecord) -> FailureBurst | None:
        """Record one failure; return a ``FailureBurst`` when the pair is stuck.

        Fires on every failure while the burst condition holds; the caller
        (the repair queue) dedupes.
        """
        if type(record) is not FailureRecord:
            raise InvalidInputError(f"record must be a FailureRecord, got {type(record).__name__}")
        step = record[2]
        key = (record[0], record[1])
        states = self._states
        occurrences: tuple[FailureRecord, ...] | None = None
        with self._lock:
            self._failures_recorded += 1
            state = states.get(key)
            if state is None:
                # A new pair: the one SHA-1 it will ever cost.
                state = self._add_state(key, step, None)
                if len(states) > self._max_states:
                    self._evict_oldest()
            else:
                states.move_to_end(key)
            failures = state.failures
            if step > state.newest and failures and step > state.success:
                # The common case, inlined: an in-order failure on a pair
                # that already holds some. Drop what left the window, append.
                state.newest = step
                low = step - self._window + 1
                if failures[0][2] < low:
                    drop = 1
                    while drop < len(failures) and failures[drop][2] < low:
                        drop += 1
                    del failures[:drop]
                    self._total_failures -= drop
                failures.append(record)
                self._total_failures += 1
            else:
                failures = self._place(state, record)
            if (
                failures is not None
                and len(failures) >= self._threshold
                and state.success < state.newest - self._window + 1
            ):
                self._bursts += 1
                occurrences = tuple(failures)
        if occurrences is None:
            return None
        # No logging here: this runs on the agent's thread, and a slow log
        # handler would stall the tool step. ``stats()`` counts bursts; the
        # subscriber logs them from its own thread.
        return _burst_of(record, state.context_hash, occurrences)

    def _place(self, state: _State, record: FailureRecord) -> list[FailureRecord] | None:
        """Put ``record`` into ``state`` (lock held).

        Returns the state's failure list, or None when the record does not
        count (outside the window, or at/before the latest success).
        """
        step = record.step
        window = self._window
        if step > state.newest:
            state.newest = step
            failures = state.failures
            if failures:
                low = step - window + 1
                drop = 0
                for old in failures:
                    if old.step >= low:
                        break
                    drop += 1
                if drop:
                    del failures[:drop]
                    self._total_failures -= drop
        elif step < state.newest - window + 1:
            return None  # arrived too late: already outside the window
        if step <= state.success:
            return None  # at or before a success: does not count
        failures = state.failures
        if failures is None:
            failures = state.failures = [record]
            self._total_failures += 1
            return failures
        # In-order reports land here in O(1); late ones scan back a few slots.
        i = len(failures)
        while i and failures[i - 1].step > step:
            i -= 1
        if i and failures[i - 1].step == step:
            failures[i - 1] = record  # repeated step: latest report wins
        else:
            failures.insert(i, record)
            self._total_failures += 1
        return failures

    def _add_state(self, key: tuple[str, str], step: int, context_hash: str | None) -> _State:
        """Create and index the state for ``key`` (lock held)."""
        if context_hash is None:  # another thread removed it since the peek
            context_hash = _hash(key[0], key[1])
        state = _State(key[0], key[1], step, context_hash)
        self._states[key] = state
        self._by_hash[context_hash] = key
        return state

    def _evict_oldest(self) -> str:
        """Drop the least recently touched state (lock held); return its hash."""
        _, old = self._states.popitem(last=False)
        self._by_hash.pop(old.context_hash, None)
        if old.failures:
            self._total_failures -= len(old.failures)
        self._evictions += 1
        return old.context_hash

    def record_success(self, tool_id: str, context: str, step: int) -> None:
        """Mark a success: failures at or before ``step`` stop counting, and
        no burst fires while this success is inside the window."""
        if not (
            isinstance(tool_id, str)
            and tool_id
            and isinstance(context, str)
            and type(step) is int
            and step >= 0
        ):
            check_tool_context(tool_id, context)
            check_step(step)
        key = (tool_id, context)
        states = self._states
        new_hash = None if key in states else _hash(tool_id, context)
        with self._lock:
            self._successes_recorded += 1
            state = states.get(key)
            if state is None:
                # Remembered even without failures: failures in the next
                # steps must not fire while this success is in the window.
                state = self._add_state(key, step, new_hash)
                if len(states) > self._max_states:
                    self._evict_oldest()
            else:
                states.move_to_end(key)
                if step > state.newest:
                    state.newest = step
            if step > state.success:
                state.success = step
                failures = state.failures
                if failures:
                    drop = 0
                    for old in failures:
                        if old.step > step:
                            break
                        drop += 1
                    if drop:
                        del failures[:drop]
                        self._total_failures -= drop

    # -- inspection and housekeeping -----------------------------------------

    def peek(self, tool_id: str, context: str) -> FailureWindow | None:
        """Snapshot of the pair's window, or None when it is not tracked.

        Does not count as a use for the LRU order and changes nothing. The
        window is as of the newest step recorded for the pair: the detector
        has no global clock, so a pair that went quiet keeps its last window
        until it is touched again, evicted or cleared.
        """
        check_tool_context(tool_id, context)
        with self._lock:
            state = self._states.get((tool_id, context))
            if state is None:
                return None
            context_hash = state.context_hash
            newest = state.newest
            success = state.success
            occurrences = tuple(state.failures) if state.failures else ()
        low = max(newest - self._window + 1, 0)
        success_in_window = success >= low
        return FailureWindow(
            tool_id=state.tool_id,
            context=state.context,
            context_hash=context_hash,
            newest_step=newest,
            window_start=low,
            occurrences=occurrences,
            last_success_step=None if success == _NO_SUCCESS else success,
            success_in_window=success_in_window,
            bursting=not success_in_window and len(occurrences) >= self._threshold,
        )

    def clear(self, context_hash: str | None = None) -> int:
        """Forget one pair by its context hash (O(1)), or every pair with None.

        Returns the number of states removed (0 or 1 for a single hash).
        """
        if context_hash is not None and not isinstance(context_hash, str):
            raise InvalidInputError(f"context_hash must be a str or None, got {type(context_hash).__name__}")
        with self._lock:
            if context_hash is None:
                removed = len(self._states)
                self._states.clear()
                self._by_hash.clear()
                self._total_failures = 0
                return removed
            key = self._by_hash.pop(context_hash, None)
            state = None if key is None else self._states.pop(key, None)
            if state is None:
                return 0
            if state.failures:
                self._total_failures -= len(state.failures)
            return 1

    def stats(self) -> dict[str, Any]:
        """Counters, read in one consistent cut.

        ``states``: tracked (tool, context) pairs; ``total_failures``: failure
        records currently held in all windows; ``failures_recorded``,
        ``successes_recorded``, ``bursts``, ``evictions``: totals since
        creation; ``max_tracked_contexts``: the bound.
        """
        with self._lock:
            return {
                "states": len(self._states),
                "total_failures": self._total_failures,
                "failures_recorded": self._failures_recorded,
                "successes_recorded": self._successes_recorded,
                "bursts": self._bursts,
                "evictions": self._evictions,
                "max_tracked_contexts": self._max_states,
            }
