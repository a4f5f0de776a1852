"""Evidence gathering (PIPELINE.md §4) against a real SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memos_feedback.config import FeedbackConfig
from memos_feedback.errors import InvalidInputError
from memos_feedback.repair.evidence import gather_repair_evidence
from memos_feedback.store import Store, ToolCall, TraceRow, open_store
from memos_feedback.synthesis.evidence import cap_trace, looks_like_failure
from memos_feedback.types import RepairEvidence

SESSION = "s-1"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Store]:
    store = open_store(f"sqlite:///{tmp_path}/t.db")
    try:
        yield store
    finally:
        store.close()


class Traces:
    """Adds traces with increasing timestamps (so "newest" is well defined)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.ts = 1_700_000_000_000

    def add(self, value: float = 0.0, agent: str = "", **kw: object) -> TraceRow:
        self.ts += 1_000
        kw.setdefault("session_id", SESSION)
        return self.store.traces.add(value=value, agent_text=agent, ts=self.ts, **kw)  # type: ignore[arg-type]


@pytest.fixture
def traces(db: Store) -> Traces:
    return Traces(db)


def ids(rows: tuple[TraceRow, ...]) -> list[str]:
    return [r.id for r in rows]


def gather(db: Store, keyword: str | None = None, limit: int | None = None, **cfg: object) -> RepairEvidence:
    return gather_repair_evidence(SESSION, keyword, limit, db, FeedbackConfig(**cfg))  # type: ignore[arg-type]


def test_splits_by_value_with_threshold(db: Store, traces: Traces) -> None:
    good = traces.add(0.8, "installed numpy with uv")
    bad = traces.add(-0.9, "pip install numpy")
    slightly_negative = traces.add(-0.005, "ran the linter")
    zero = traces.add(0.0, "looked at the file")
    ev = gather(db)
    assert ids(ev.high) == [good.id]
    assert ids(ev.low) == [bad.id]
    assert slightly_negative.id not in ids(ev.low) + ids(ev.high)
    assert zero.id not in ids(ev.low) + ids(ev.high)
    assert ev.keyword is None and ev.relaxed is False
    # A stricter threshold moves the slightly negative trace to the low side.
    assert slightly_negative.id in ids(gather(db, min_low_value_threshold=0.001).low)


def test_failure_wording_makes_a_trace_low_even_with_positive_value(db: Store, traces: Traces) -> None:
    noisy = traces.add(0.7, "Traceback (most recent call last): ModuleNotFoundError: No module named 'numpy'")
    reflected = traces.add(0.5, "done", reflection="the install timed out twice")
    ev = gather(db)
    assert set(ids(ev.low)) == {noisy.id, reflected.id}
    assert ev.high == ()


@pytest.mark.parametrize(
    "text",
    ["安装失败", "运行报错了", "连接超时", "权限被拒绝", "程序崩溃", "出现异常", "執行失敗", "发生错误"],
)
def test_chinese_failure_markers(db: Store, traces: Traces, text: str) -> None:
    row = traces.add(0.3, text)
    assert ids(gather(db).low) == [row.id]


@pytest.mark.parametrize(
    "text",
    [
        "All tests pass, no errors",
        "12 passed, 0 failed",
        "finished without errors",
        "The error was fixed by pinning the version",
        "fixed the import error",
        "added error handling to the client",
        "set timeout=30 and the download finished",
        "错误已修复",
        "没有错误",
        "运行正常，不报错",
        "效果不错",
    ],
)
def test_negated_or_benign_mentions_are_not_failures(db: Store, traces: Traces, text: str) -> None:
    row = traces.add(0.6, text)
    ev = gather(db)
    assert ids(ev.high) == [row.id]
    assert ev.low == ()


@pytest.mark.parametrize(
    "text",
    [
        "10 tests failed",
        "0 errors, 1 failed",
        "Error: connection refused",
        "Permission denied (publickey)",
        "process exited with exit code 2",
        "不断报错",
        "Could not find a version that satisfies the requirement",
    ],
)
def test_failures_the_negation_rules_must_not_hide(text: str) -> None:
    assert looks_like_failure(text)


def test_tool_call_error_code_makes_a_trace_low(db: Store, traces: Traces) -> None:
    row = traces.add(
        0.9, "all good", tool_calls=[ToolCall("shell.exec"), ToolCall("pip.install", error_code="E404")]
    )
    clean = traces.add(0.9, "all good", tool_calls=[ToolCall("pip.install")])
    ev = gather(db)
    assert ids(ev.low) == [row.id]
    assert ids(ev.high) == [clean.id]


def test_trace_never_on_both_sides(db: Store, traces: Traces) -> None:
    for i in range(10):
        traces.add(0.5 if i % 2 else -0.5, "error happened" if i % 3 == 0 else "worked")
    ev = gather(db, limit=10)
    assert not set(ids(ev.high)) & set(ids(ev.low))


def test_keyword_filters_case_insensitively_over_all_fields(db: Store, traces: Traces) -> None:
    by_user = traces.add(0.5, "done", user_text="Please use UV here")
    by_reflection = traces.add(-0.5, "failed", reflection="uv was missing")
    by_tool = traces.add(0.5, "ok", tool_calls=[ToolCall("uv.sync")])
    other = traces.add(-0.5, "npm failed")
    ev = gather(db, keyword="uv")
    assert ev.relaxed is False and ev.keyword == "uv"
    assert ids(ev.high) == [by_tool.id, by_user.id]
    assert ids(ev.low) == [by_reflection.id]
    assert other.id not in ids(ev.low)


def test_keyword_relaxed_when_it_leaves_both_sides_empty(db: Store, traces: Traces) -> None:
    low = traces.add(-1.0, "pip install numpy failed with a resolver error")
    high = traces.add(1.0, "installed with uv")
    ev = gather(db, keyword="pip.install")
    assert ev.relaxed is True
    assert ev.keyword == "pip.install"
    assert ids(ev.low) == [low.id] and ids(ev.high) == [high.id]


def test_keyword_not_relaxed_when_one_side_matches(db: Store, traces: Traces) -> None:
    traces.add(1.0, "installed with uv")
    low = traces.add(-1.0, "pip.install failed")
    ev = gather(db, keyword="pip.install")
    assert ev.relaxed is False
    assert ids(ev.low) == [low.id] and ev.high == ()


def test_blank_keyword_means_no_filter(db: Store, traces: Traces) -> None:
    row = traces.add(1.0, "worked")
    ev = gather(db, keyword="   ")
    assert ev.keyword is None and ev.relaxed is False and ids(ev.high) == [row.id]


def test_limit_per_side_keeps_most_recent(db: Store, traces: Traces) -> None:
    highs = [traces.add(0.5 + i / 100, f"ok {i}") for i in range(6)]
    lows = [traces.add(-0.5, f"failed {i}") for i in range(6)]
    ev = gather(db)  # evidence_limit defaults to 4
    assert ids(ev.high) == [r.id for r in reversed(highs)][:4]
    assert ids(ev.low) == [r.id for r in reversed(lows)][:4]
    ev2 = gather(db, limit=2)
    assert ids(ev2.low) == [lows[5].id, lows[4].id]
    assert ids(ev2.high) == [highs[5].id, highs[4].id]
    ev3 = gather(db, evidence_limit=1)
    assert len(ev3.high) == 1 and len(ev3.low) == 1


def test_window_reads_at_least_24_traces(db: Store, traces: Traces) -> None:
    # One old success, then 20 neutral traces: still inside max(6 * 1, 24).
    old = traces.add(1.0, "worked")
    for _ in range(20):
        traces.add(0.0, "neutral")
    assert ids(gather(db, evidence_limit=1).high) == [old.id]
    for _ in range(10):
        traces.add(0.0, "neutral")
    assert gather(db, evidence_limit=1).high == ()


def test_other_sessions_are_ignored(db: Store, traces: Traces) -> None:
    traces.add(-1.0, "failed", session_id="other")
    ev = gather(db)
    assert ev.high == () and ev.low == ()


def test_invalid_arguments(db: Store) -> None:
    with pytest.raises(InvalidInputError):
        gather_repair_evidence("", None, None, db)
    with pytest.raises(InvalidInputError):
        gather_repair_evidence(SESSION, None, 0, db)
    with pytest.raises(InvalidInputError):
        gather_repair_evidence(SESSION, None, True, db)
    with pytest.raises(InvalidInputError):
        gather_repair_evidence(SESSION, 42, None, db)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        gather_repair_evidence(SESSION)


def test_cap_trace_keeps_tail_with_marker(db: Store, traces: Traces) -> None:
    long = "x" * 50 + "FATAL: disk full"
    row = traces.add(-1.0, long, user_text="u" * 30, reflection="r" * 5)
    capped = cap_trace(row, 20)
    assert capped.agent_text == "..." + long[-20:]
    assert capped.agent_text.endswith("FATAL: disk full")
    assert capped.user_text == "..." + "u" * 20
    assert capped.reflection == "r" * 5
    assert (capped.id, capped.value, capped.tool_calls) == (row.id, row.value, row.tool_calls)


def test_cap_trace_unchanged_when_short(db: Store, traces: Traces) -> None:
    row = traces.add(1.0, "short", reflection=None)
    assert cap_trace(row, 500) == row
    assert cap_trace(row, 500).reflection is None
    with pytest.raises(InvalidInputError):
        cap_trace(row, 0)
