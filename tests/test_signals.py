from __future__ import annotations

import hashlib
import logging
import random

import pytest

from memos_feedback.config import FeedbackConfig
from memos_feedback.errors import InvalidInputError
from memos_feedback.signals import FailureBurst, FailureSignals, FailureWindow, context_hash_of
from memos_feedback.types import FailureRecord
from tests.support.threads import run_threads

TOOL = "shell.exec"
CTX = "pip install numpy"


def make(threshold: int = 3, window: int = 5, bound: int = 10_000) -> FailureSignals:
    return FailureSignals(
        FeedbackConfig(failure_threshold=threshold, failure_window=window, max_tracked_contexts=bound)
    )


def fail(
    sig: FailureSignals, step: int, tool: str = TOOL, ctx: str = CTX, ts: int | None = None, reason: str = ""
) -> FailureBurst | None:
    if ts is None:
        ts = 1_000 + step
    return sig.record_failure(FailureRecord(tool, ctx, step, reason=reason, ts=ts))


def steps_of(window: FailureWindow | None) -> list[int]:
    assert window is not None
    return [r.step for r in window.occurrences]


# -- context_hash_of ---------------------------------------------------------


def test_context_hash_matches_sha1_prefix() -> None:
    for tool, ctx in [(TOOL, CTX), ("a", ""), ("工具", "上下文 ünïcode"), ("t", "x" * 100_000)]:
        expected = hashlib.sha1((tool + "\n" + ctx).encode("utf-8")).hexdigest()[:16]
        assert context_hash_of(tool, ctx) == expected


def test_context_hash_pinned_vectors() -> None:
    # Pinned literals: must never change, hashes are stored and shared.
    assert context_hash_of("shell.exec", "pip install numpy") == "10d83d080b05072b"
    assert context_hash_of("", "") == "adc83b19e793491b"  # sha1(b"\n")


def test_context_hash_separator_matters() -> None:
    assert context_hash_of("ab", "c") != context_hash_of("a", "bc")
    assert len(context_hash_of("a", "b")) == 16


def test_context_hash_lone_surrogate_does_not_raise() -> None:
    assert context_hash_of("t", "bad \ud800 text") == context_hash_of("t", "bad \ufffd text")


@pytest.mark.parametrize("args", [(1, "c"), ("t", None), ("t", b"c")])
def test_context_hash_rejects_non_str(args: tuple[object, object]) -> None:
    with pytest.raises(InvalidInputError):
        context_hash_of(*args)  # type: ignore[arg-type]


# -- threshold and window ----------------------------------------------------


def test_burst_at_threshold() -> None:
    sig = make()
    assert fail(sig, 1) is None
    assert fail(sig, 2) is None
    burst = fail(sig, 3, reason="exit 1")
    assert burst is not None
    assert burst.tool_id == TOOL
    assert burst.context == CTX
    assert burst.context_hash == context_hash_of(TOOL, CTX)
    assert burst.failure_count == 3
    assert [r.step for r in burst.occurrences] == [1, 2, 3]
    assert burst.occurrences[-1].reason == "exit 1"
    assert burst.first_seen == 1_001
    assert burst.last_seen == 1_003


def test_burst_fires_again_while_condition_holds() -> None:
    sig = make()
    for s in (1, 2, 3):
        fail(sig, s)
    burst4 = fail(sig, 4)
    burst5 = fail(sig, 5)
    assert burst4 is not None and burst4.failure_count == 4
    assert burst5 is not None and burst5.failure_count == 5
    burst6 = fail(sig, 6)  # step 1 drops out: window is 2..6
    assert burst6 is not None
    assert [r.step for r in burst6.occurrences] == [2, 3, 4, 5, 6]
    assert sig.stats()["bursts"] == 4


def test_failures_drop_out_of_window() -> None:
    sig = make()
    fail(sig, 1)
    fail(sig, 2)
    # window at step 6 is 2..6: step 1 is gone, only 2 and 6 remain
    assert fail(sig, 6) is None
    assert steps_of(sig.peek(TOOL, CTX)) == [2, 6]
    # window at step 7 is 3..7: step 2 gone too
    assert fail(sig, 7) is None
    assert steps_of(sig.peek(TOOL, CTX)) == [6, 7]
    assert fail(sig, 8) is not None


def test_boundary_step_is_inside_window() -> None:
    sig = make()
    fail(sig, 10)
    fail(sig, 12)
    burst = fail(sig, 14)  # window 10..14 still holds step 10
    assert burst is not None and burst.failure_count == 3
    burst = fail(sig, 15)  # window 11..15: step 10 out, 12, 14, 15 remain
    assert burst is not None
    assert [r.step for r in burst.occurrences] == [12, 14, 15]


def test_boundary_drop_exact() -> None:
    sig = make(threshold=3, window=5)
    fail(sig, 10)
    fail(sig, 11)
    assert fail(sig, 15) is None  # 10 is out (low = 11): 11 and 15
    assert steps_of(sig.peek(TOOL, CTX)) == [11, 15]


def test_threshold_one_fires_on_first_failure() -> None:
    sig = make(threshold=1, window=1)
    burst = fail(sig, 7)
    assert burst is not None and burst.failure_count == 1
    assert fail(sig, 9) is not None


def test_pairs_are_independent() -> None:
    sig = make()
    fail(sig, 1, tool="a")
    fail(sig, 2, tool="b")
    fail(sig, 3, tool="a", ctx="other")
    assert fail(sig, 4, tool="a") is None
    assert sig.stats()["states"] == 3


# -- success ------------------------------------------------------------------


def test_success_inside_window_blocks_burst() -> None:
    sig = make()
    fail(sig, 1)
    sig.record_success(TOOL, CTX, 2)
    assert fail(sig, 3) is None
    assert fail(sig, 4) is None
    assert fail(sig, 5) is None  # 3 failures after the success, but it is in window 1..5
    assert fail(sig, 6) is None  # window 2..6 still holds the success at 2
    burst = fail(sig, 7)  # window 3..7: success out, failures 3..7
    assert burst is not None
    assert [r.step for r in burst.occurrences] == [3, 4, 5, 6, 7]


def test_success_discards_failures_at_or_before_it() -> None:
    sig = make()
    fail(sig, 1)
    fail(sig, 2)
    sig.record_success(TOOL, CTX, 2)
    window = sig.peek(TOOL, CTX)
    assert window is not None
    assert window.occurrences == ()
    assert window.last_success_step == 2
    assert window.success_in_window
    assert not window.bursting
    assert sig.stats()["total_failures"] == 0


def test_success_before_window_does_not_block() -> None:
    sig = make()
    fail(sig, 1)
    sig.record_success(TOOL, CTX, 2)
    fail(sig, 10)
    fail(sig, 11)
    burst = fail(sig, 12)  # window 8..12, success at 2 is long gone
    assert burst is not None and burst.failure_count == 3


def test_success_on_untracked_pair_is_remembered() -> None:
    sig = make()
    sig.record_success(TOOL, CTX, 5)
    assert sig.stats()["states"] == 1
    for s in (6, 7, 8):
        assert fail(sig, s) is None  # success at 5 in window until step 10
    assert fail(sig, 9) is None
    assert fail(sig, 10) is not None  # window 6..10


def test_failure_at_success_step_does_not_count() -> None:
    sig = make(threshold=1, window=3)
    sig.record_success(TOOL, CTX, 4)
    assert fail(sig, 4) is None
    assert steps_of(sig.peek(TOOL, CTX)) == []


def test_late_success_only_drops_failures_up_to_its_step() -> None:
    sig = make(threshold=2, window=5)
    fail(sig, 3)
    fail(sig, 4)  # burst here
    fail(sig, 5)
    sig.record_success(TOOL, CTX, 4)  # arrives late
    assert steps_of(sig.peek(TOOL, CTX)) == [5]
    assert fail(sig, 6) is None  # success at 4 inside 2..6


def test_older_success_does_not_move_mark_back() -> None:
    sig = make()
    sig.record_success(TOOL, CTX, 10)
    sig.record_success(TOOL, CTX, 3)
    window = sig.peek(TOOL, CTX)
    assert window is not None and window.last_success_step == 10


# -- out of order and repeated steps -----------------------------------------


def test_out_of_order_failures_are_placed_by_step() -> None:
    sig = make()
    fail(sig, 5)
    fail(sig, 3)
    burst = fail(sig, 4)
    assert burst is not None
    assert [r.step for r in burst.occurrences] == [3, 4, 5]
    assert burst.first_seen == 1_003 and burst.last_seen == 1_005


def test_first_last_seen_use_timestamps() -> None:
    sig = make()
    fail(sig, 5, ts=100)
    fail(sig, 3, ts=300)
    burst = fail(sig, 4, ts=200)
    assert burst is not None
    assert burst.first_seen == 100
    assert burst.last_seen == 300


def test_late_failure_outside_window_is_ignored() -> None:
    sig = make()
    fail(sig, 20)
    assert fail(sig, 15) is None  # window 16..20
    assert steps_of(sig.peek(TOOL, CTX)) == [20]
    assert sig.stats()["failures_recorded"] == 2
    assert sig.stats()["total_failures"] == 1


def test_repeated_step_counts_once_latest_wins() -> None:
    sig = make()
    fail(sig, 1)
    fail(sig, 2, reason="first")
    assert fail(sig, 2, reason="again") is None
    window = sig.peek(TOOL, CTX)
    assert steps_of(window) == [1, 2]
    assert window is not None and window.occurrences[-1].reason == "again"
    assert sig.stats()["total_failures"] == 2


def test_window_never_holds_more_than_window_records() -> None:
    rng = random.Random(7)
    sig = make(threshold=2, window=4)
    for _ in range(2_000):
        fail(sig, rng.randrange(0, 60))
        if rng.random() < 0.1:
            sig.record_success(TOOL, CTX, rng.randrange(0, 60))
        window = sig.peek(TOOL, CTX)
        assert window is not None
        steps = steps_of(window)
        assert len(steps) <= 4
        assert steps == sorted(set(steps))
        assert all(window.window_start <= s <= window.newest_step for s in steps)
        if window.last_success_step is not None:
            assert all(s > window.last_success_step for s in steps)
        assert sig.stats()["total_failures"] == len(steps)


def test_peek_untracked_and_no_lru_touch() -> None:
    sig = make(bound=2)
    assert sig.peek(TOOL, CTX) is None
    fail(sig, 1, ctx="a")
    fail(sig, 1, ctx="b")
    assert sig.peek(TOOL, "a") is not None  # peek must not refresh "a"
    fail(sig, 1, ctx="c")
    assert sig.peek(TOOL, "a") is None
    assert sig.peek(TOOL, "b") is not None


def test_peek_snapshot_fields() -> None:
    sig = make()
    for s in (1, 2, 3):
        fail(sig, s)
    window = sig.peek(TOOL, CTX)
    assert window == FailureWindow(
        tool_id=TOOL,
        context=CTX,
        context_hash=context_hash_of(TOOL, CTX),
        newest_step=3,
        window_start=0,
        occurrences=window.occurrences if window else (),
        last_success_step=None,
        success_in_window=False,
        bursting=True,
    )
    assert window is not None and window.failure_count == 3
    fail(sig, 4)
    assert window.failure_count == 3  # a snapshot, not a live view


# -- LRU bound and clear -------------------------------------------------------


def test_lru_eviction_at_bound() -> None:
    sig = make(bound=3)
    for name in ("a", "b", "c"):
        fail(sig, 1, ctx=name)
        fail(sig, 2, ctx=name)
    fail(sig, 3, ctx="a")  # touch a: b is now the oldest
    fail(sig, 1, ctx="d")
    stats = sig.stats()
    assert stats["states"] == 3
    assert stats["evictions"] == 1
    assert stats["total_failures"] == 3 + 2 + 1
    assert sig.peek(TOOL, "b") is None
    for name in ("a", "c", "d"):
        assert sig.peek(TOOL, name) is not None


def test_success_touches_lru_and_counts_toward_bound() -> None:
    sig = make(bound=2)
    fail(sig, 1, ctx="a")
    fail(sig, 1, ctx="b")
    sig.record_success(TOOL, "a", 2)  # touch a
    sig.record_success(TOOL, "c", 1)  # new state, evicts b
    assert sig.peek(TOOL, "b") is None
    assert sig.peek(TOOL, "a") is not None
    assert sig.stats()["states"] == 2


def test_evicted_pair_starts_fresh() -> None:
    sig = make(bound=1)
    fail(sig, 1, ctx="a")
    fail(sig, 2, ctx="a")
    fail(sig, 2, ctx="b")  # evicts a
    assert fail(sig, 3, ctx="a") is None  # a's history was forgotten


def test_clear_one_hash_leaves_others() -> None:
    sig = make()
    fail(sig, 1, ctx="a")
    fail(sig, 2, ctx="a")
    fail(sig, 1, ctx="b")
    assert sig.clear(context_hash_of(TOOL, "a")) == 1
    assert sig.peek(TOOL, "a") is None
    assert steps_of(sig.peek(TOOL, "b")) == [1]
    assert sig.stats()["states"] == 1
    assert sig.stats()["total_failures"] == 1
    assert sig.clear(context_hash_of(TOOL, "a")) == 0
    assert sig.clear("0000000000000000") == 0
    # cleared pair starts over
    assert fail(sig, 3, ctx="a") is None


def test_clear_all() -> None:
    sig = make()
    for name in ("a", "b", "c"):
        fail(sig, 1, ctx=name)
    assert sig.clear() == 3
    stats = sig.stats()
    assert stats["states"] == 0
    assert stats["total_failures"] == 0
    assert stats["failures_recorded"] == 3  # lifetime counters survive


def test_clear_rejects_non_str() -> None:
    with pytest.raises(InvalidInputError):
        make().clear(123)  # type: ignore[arg-type]


# -- stats ----------------------------------------------------------------------


def test_stats() -> None:
    sig = make(bound=50)
    assert sig.stats() == {
        "states": 0,
        "total_failures": 0,
        "failures_recorded": 0,
        "successes_recorded": 0,
        "bursts": 0,
        "evictions": 0,
        "max_tracked_contexts": 50,
    }
    for s in (1, 2, 3):
        fail(sig, s)
    sig.record_success(TOOL, "other", 1)
    stats = sig.stats()
    assert stats["states"] == 2
    assert stats["total_failures"] == 3
    assert stats["failures_recorded"] == 3
    assert stats["successes_recorded"] == 1
    assert stats["bursts"] == 1
    assert len(sig) == 2


def test_default_config() -> None:
    sig = FailureSignals()
    assert sig.config == FeedbackConfig()
    assert sig.stats()["max_tracked_contexts"] == 10_000


# -- threads --------------------------------------------------------------------


def test_thread_safety_totals_consistent() -> None:
    sig = make(threshold=2, window=4, bound=40)
    contexts = [f"ctx-{i}" for i in range(64)]
    n_threads, per_thread = 8, 3_000
    bursts = [0] * n_threads

    def worker(k: int) -> None:
        rng = random.Random(k)
        for i in range(per_thread):
            ctx = rng.choice(contexts)
            roll = rng.random()
            if roll < 0.7:
                if sig.record_failure(FailureRecord(TOOL, ctx, i + rng.randrange(3))) is not None:
                    bursts[k] += 1
            elif roll < 0.95:
                sig.record_success(TOOL, ctx, i)
            else:
                sig.clear(context_hash_of(TOOL, ctx))

    errors = run_threads(worker, n_threads)
    assert not errors
    stats = sig.stats()
    held = 0
    tracked = 0
    for ctx in contexts:
        window = sig.peek(TOOL, ctx)
        if window is not None:
            tracked += 1
            held += window.failure_count
            assert window.failure_count <= 4
    assert stats["states"] == tracked <= 40
    assert stats["total_failures"] == held
    assert stats["failures_recorded"] + stats["successes_recorded"] <= n_threads * per_thread
    assert stats["bursts"] == sum(bursts)
    assert stats["evictions"] > 0


# -- input checking ---------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"tool_id": 1, "context": "c", "step": 1},
        {"tool_id": "", "context": "c", "step": 1},
        {"tool_id": "t", "context": None, "step": 1},
        {"tool_id": "t", "context": "c", "step": "1"},
        {"tool_id": "t", "context": "c", "step": 1.0},
        {"tool_id": "t", "context": "c", "step": True},
        {"tool_id": "t", "context": "c", "step": -1},
        {"tool_id": "t", "context": "c", "step": 1, "reason": None},
        {"tool_id": "t", "context": "c", "step": 1, "ts": 1.5},
        {"tool_id": "t", "context": "c", "step": 1, "ts": False},
        {"tool_id": "t", "context": "c", "step": 1, "session_id": 3},
        {"tool_id": "t", "context": "c", "step": 1, "trace_id": b"x"},
    ],
)
def test_failure_record_rejects_bad_input(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError):
        FailureRecord(**kwargs)  # type: ignore[arg-type]


def test_error_messages_are_clear() -> None:
    with pytest.raises(InvalidInputError, match="step must be an int, got bool"):
        FailureRecord("t", "c", True)
    with pytest.raises(InvalidInputError, match="tool_id must be a str, got int"):
        make().record_success(1, "c", 1)  # type: ignore[arg-type]


def test_record_failure_rejects_non_record() -> None:
    with pytest.raises(InvalidInputError, match="FailureRecord"):
        make().record_failure({"tool_id": "t", "context": "c", "step": 1})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "args", [(1, "c", 1), ("t", 2, 1), ("t", "c", "1"), ("t", "c", True), ("t", "c", None), ("t", "c", -3)]
)
def test_record_success_and_peek_reject_bad_input(args: tuple[object, object, object]) -> None:
    sig = make()
    with pytest.raises(InvalidInputError):
        sig.record_success(*args)  # type: ignore[arg-type]
    if not (isinstance(args[0], str) and isinstance(args[1], str)):
        with pytest.raises(InvalidInputError):
            sig.peek(args[0], args[1])  # type: ignore[arg-type]
    assert sig.stats()["states"] == 0


def test_bad_config_type() -> None:
    with pytest.raises(InvalidInputError):
        FailureSignals({"failure_threshold": 3})  # type: ignore[arg-type]


def test_record_defaults() -> None:
    rec = FailureRecord("t", "c", 0)
    assert rec.reason == ""
    assert rec.ts > 1_600_000_000_000  # epoch ms, not seconds
    assert rec.session_id is None and rec.episode_id is None and rec.trace_id is None


def test_long_context() -> None:
    sig = make()
    ctx = "x" * 5_000_000
    for s in (1, 2):
        fail(sig, s, ctx=ctx)
    burst = fail(sig, 3, ctx=ctx)
    assert burst is not None
    assert burst.context is ctx
    assert burst.context_hash == context_hash_of(TOOL, ctx)


# -- logging --------------------------------------------------------------------


def test_the_hot_path_never_logs(caplog: pytest.LogCaptureFixture) -> None:
    # A slow log handler on the agent's thread would stall every tool step.
    sig = make(threshold=1, window=1, bound=1)
    with caplog.at_level(logging.DEBUG, logger="memos_feedback"):
        fail(sig, 1)
        fail(sig, 2, ctx="other")  # evicts the first pair
        sig.record_success(TOOL, CTX, 3)
    assert sig.stats()["bursts"] == 2 and sig.stats()["evictions"] >= 1
    assert not caplog.records


def test_first_steps_burst_without_any_success() -> None:
    # Regression: "no success yet" must never look like a success in the window.
    sig = make(threshold=3, window=5)
    fail(sig, 0)
    fail(sig, 1)
    burst = fail(sig, 2)
    assert burst is not None and burst.failure_count == 3


def test_success_at_step_zero_blocks_early_failures() -> None:
    sig = make(threshold=3, window=5)
    sig.record_success(TOOL, CTX, 0)
    for s in (1, 2, 3, 4):
        assert fail(sig, s) is None  # window 0..4 holds the success
    assert fail(sig, 5) is not None  # window 1..5
