"""Repairs staged in one transaction (the worker's group commit) share a session's trace read.

The sharing must be invisible: the same evidence as separate runs, and a
new transaction reads the traces again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, event

from memos_feedback.config import FeedbackConfig
from memos_feedback.repair.deps import RepairDeps
from memos_feedback.repair.run import run_repair, stage_repair
from memos_feedback.store import Store, ToolCall
from memos_feedback.store.engine import WRITE_OPTION
from memos_feedback.store.unit import RepairUnit
from memos_feedback.types import RepairInput, RepairResult

CONFIG = FeedbackConfig(use_llm=False, cooldown_ms=0)


def _seed(store: Store) -> None:
    for i in range(8):
        store.traces.add(
            "s1",
            agent_text=f"pip install failed: error {i}" if i % 2 else f"uv pip install ok {i}",
            value=0.8 if i % 2 == 0 else -0.7,
            tool_calls=[ToolCall("pip.install", "E1" if i % 2 else None)],
            ts=1_000 + i,
        )


def _inp(context: str) -> RepairInput:
    return RepairInput(trigger="manual", context_hash=context, tool_id="pip.install", session_id="s1")


@contextmanager
def _trace_reads(store: Store) -> Iterator[list[str]]:
    """The SELECTs of ``traces`` run on the store's SQLite connections inside the block."""
    seen: list[str] = []

    def callback(sql: str) -> None:
        if sql.startswith("SELECT traces."):
            seen.append(sql)

    def watch(dbapi: Any, record: Any, proxy: Any) -> None:
        dbapi.set_trace_callback(callback)

    def unwatch(dbapi: Any, record: Any) -> None:
        dbapi.set_trace_callback(None)

    # Writes on a SQLite file reuse the store's kept write connection, which
    # stays checked out (no checkout event per write): watch it as well.
    with store.connection(write=True) as conn:
        kept = conn.connection.driver_connection
    assert kept is not None
    kept.set_trace_callback(callback)
    event.listen(store.engine, "checkout", watch)
    event.listen(store.engine, "checkin", unwatch)
    try:
        yield seen
    finally:
        event.remove(store.engine, "checkout", watch)
        event.remove(store.engine, "checkin", unwatch)
        kept.set_trace_callback(None)


def _unit(conn: Connection, store: Store) -> RepairUnit:
    return RepairUnit(conn, defer_index=store.defers_search_index)


def _stage_all(store: Store, contexts: list[str]) -> list[RepairResult]:
    deps = RepairDeps(store=store, config=CONFIG)
    with store.connection(write=True) as conn:
        staged = [stage_repair(_unit(conn, store), _inp(c), deps) for c in contexts]
    return [s.finish() for s in staged]


def test_jobs_of_one_transaction_get_the_evidence_of_separate_runs(store: Store) -> None:
    _seed(store)
    alone = run_repair(_inp("alone"), RepairDeps(store=store, config=CONFIG))
    grouped = _stage_all(store, ["g1", "g2", "g3"])
    assert alone.draft is not None
    for result in grouped:
        assert result.repair_id is not None and result.draft is not None
        assert result.draft.high_value_trace_ids == alone.draft.high_value_trace_ids
        assert result.draft.low_value_trace_ids == alone.draft.low_value_trace_ids


def test_sqlite_reads_a_session_once_per_transaction(store: Store) -> None:
    if store.dialect != "sqlite":
        return  # PostgreSQL reads every time (read committed); nothing is shared there
    _seed(store)
    with _trace_reads(store) as reads:
        _stage_all(store, ["g1", "g2", "g3"])
    assert len(reads) == 1
    with _trace_reads(store) as reads:
        _stage_all(store, ["g4"])
        _stage_all(store, ["g5"])
    assert len(reads) == 2  # one per transaction


def test_a_new_transaction_on_the_same_connection_sees_new_traces(store: Store) -> None:
    _seed(store)
    deps = RepairDeps(store=store, config=CONFIG)
    with store.engine.connect() as raw:
        conn = raw.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            first = stage_repair(_unit(conn, store), _inp("c1"), deps)
        newest = store.traces.add(
            "s1",
            agent_text="pip install failed again",
            value=-0.9,
            tool_calls=[ToolCall("pip.install", "E2")],
            ts=2_000,
        )
        with conn.begin():
            second = stage_repair(_unit(conn, store), _inp("c2"), deps)
    before, after = first.finish().draft, second.finish().draft
    assert before is not None and after is not None
    assert newest.id not in before.low_value_trace_ids
    assert after.low_value_trace_ids[0] == newest.id
