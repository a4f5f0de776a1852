"""``Prepared``: hot statements on SQLite's driver cursor, unchanged elsewhere.

Every check compares with what SQLAlchemy's own ``Connection.execute``
gives for the same statement on the same database, on both backends.
"""

from __future__ import annotations

import sqlite3
from typing import Any, cast

import pytest
from sqlalchemy import Table, bindparam, event, insert, select, update

from memos_feedback.errors import StoreBusyError, StoreError
from memos_feedback.store import Store, ToolCall, open_store
from memos_feedback.store.engine import Prepared
from memos_feedback.store.models import DecisionRepairModel, TraceModel
from memos_feedback.store.reads import session_traces
from memos_feedback.store.repositories import insert_repair, repair_values

_REPAIRS = cast(Table, DecisionRepairModel.__table__)


def _seed_traces(store: Store) -> None:
    for i in range(4):
        store.traces.add(
            "s1",
            agent_text=f"step {i}",
            value=0.5 - i * 0.25,
            episode_id="ep" if i % 2 else None,
            tool_calls=[ToolCall("pip.install", "E1" if i % 2 else None)] if i < 3 else [],
        )


def test_rows_match_sqlalchemy_with_json_decoded(store: Store) -> None:
    _seed_traces(store)
    stmt = (
        select(TraceModel.id, TraceModel.value, TraceModel.tool_calls, TraceModel.episode_id)
        .where(TraceModel.session_id == bindparam("sid"))
        .order_by(TraceModel.ts, TraceModel.id)
    )
    with store.connection() as conn:
        expected = [tuple(r) for r in conn.execute(stmt, {"sid": "s1"})]
        got = [tuple(r) for r in Prepared(stmt).all(conn, {"sid": "s1"})]
    assert got == expected
    assert got[1][2] == [{"name": "pip.install", "error_code": "E1"}]  # JSON decoded, as SQLAlchemy does


def test_session_traces_decodes_tool_calls_as_the_orm_does(store: Store) -> None:
    _seed_traces(store)
    with store.connection() as conn:
        traces = session_traces(conn, "s1", 10)
    with store.session() as s:
        listed = {t.id: t for t in s.scalars(select(TraceModel))}
    assert len(traces) == 4
    for t in traces:
        model = listed[t.id]
        assert [(c.name, c.error_code) for c in t.tool_calls] == [
            (c["name"], c.get("error_code")) for c in model.tool_calls
        ]
        assert (t.agent_text, t.value, t.episode_id) == (model.agent_text, model.value, model.episode_id)


def test_insert_converts_json_and_booleans(store: Store) -> None:
    values = repair_values(
        context_hash="ctx",
        trigger="manual",
        preference="Prefer: uv",
        anti_pattern="Avoid: pip",
        high_value_trace_ids=["t1", "t2"],
        low_value_trace_ids=[],
        confidence=1,
    )
    with store.connection(write=True) as conn:
        insert_repair(conn, values)
    row = store.repairs.get(values["id"])
    assert row.high_value_trace_ids == ("t1", "t2")
    assert row.low_value_trace_ids == ()
    assert row.validated is False and row.rejected is False
    assert row.confidence == 1.0


def test_fixed_values_in_the_statement_are_bound(store: Store) -> None:
    # A literal compared in the statement (status == "x") is a bind parameter
    # with a value: it must be sent, not asked of the caller.
    for pref in ("a", "b"):
        store.repairs.insert(context_hash="c", trigger="manual", preference=pref, anti_pattern="z")
    stmt = update(_REPAIRS).where(_REPAIRS.c.preference == "a").values(category=bindparam("cat"))
    with store.connection(write=True) as conn:
        assert Prepared(stmt).rowcount(conn, {"cat": "tools"}) == 1
    with store.connection() as conn:
        got = conn.execute(select(_REPAIRS.c.preference, _REPAIRS.c.category).order_by(_REPAIRS.c.preference))
        assert [tuple(r) for r in got] == [("a", "tools"), ("b", None)]


def test_a_missing_parameter_is_an_error_not_a_null(store: Store) -> None:
    stmt = update(_REPAIRS).values(category=bindparam("cat"))
    with pytest.raises((KeyError, StoreError)), store.connection(write=True) as conn:
        Prepared(stmt).rowcount(conn, {})


def test_runs_inside_a_transaction_the_caller_can_roll_back(store: Store) -> None:
    values = repair_values(context_hash="ctx", trigger="manual", preference="p", anti_pattern="a")
    stmt = Prepared(insert(_REPAIRS), column_keys=list(values))
    with store.engine.connect() as conn:
        assert not conn.in_transaction()
        stmt.rowcount(conn, values)
        assert conn.in_transaction()  # begun as Connection.execute would (autobegin)
        conn.rollback()
    assert store.repairs.list() == []


def test_driver_errors_are_translated(store: Store) -> None:
    values = repair_values(context_hash="ctx", trigger="manual", preference="p", anti_pattern="a")
    with store.connection(write=True) as conn:
        insert_repair(conn, values)
    with pytest.raises(StoreError) as info, store.connection(write=True, action="writing twice") as conn:
        insert_repair(conn, dict(values))
    assert "writing twice failed" in str(info.value)
    assert not isinstance(info.value, StoreBusyError)


def test_a_locked_database_is_a_busy_error(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path}/locked.db"
    store = open_store(url, busy_timeout_ms=50)
    other = sqlite3.connect(f"{tmp_path}/locked.db", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        values = repair_values(context_hash="ctx", trigger="manual", preference="p", anti_pattern="a")
        # A read transaction that then writes: the driver itself meets the lock.
        with pytest.raises(StoreBusyError), store.connection(action="writing late") as conn:
            Prepared(insert(_REPAIRS), column_keys=list(values)).rowcount(conn, values)
    finally:
        other.execute("ROLLBACK")
        other.close()
        store.close()


def test_a_cursor_listener_hears_the_statement(store: Store) -> None:
    # A tracer (and benchmarks.floor) listens on before_cursor_execute.
    seen: list[tuple[str, Any]] = []

    def note(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        seen.append((statement, parameters))

    stmt = select(TraceModel.id).where(TraceModel.session_id == bindparam("sid"))
    event.listen(store.engine, "before_cursor_execute", note)
    try:
        with store.connection() as conn:
            Prepared(stmt).all(conn, {"sid": "s9"})
    finally:
        event.remove(store.engine, "before_cursor_execute", note)
    statements = [s for s, _ in seen if "FROM traces" in s]
    assert len(statements) == 1
    assert any("s9" in str(p) for s, p in seen if "FROM traces" in s)


def test_many_writes_the_rows_sqlalchemys_executemany_writes(store: Store) -> None:
    """``Prepared.many`` against ``Connection.execute`` with a list, on the same table and rows."""
    from memos_feedback.store.models import FeedbackEventModel

    events = cast(Table, FeedbackEventModel.__table__)
    keys = ("ts", "kind", "context_hash", "repair_id", "job_id", "payload")
    rows = [
        {
            "ts": 10 + i,
            "kind": "repair.persisted",
            "context_hash": f"c{i}",
            "repair_id": None,
            "job_id": "j" if i else None,
            "payload": {"n": i, "text": "ü\u2028", "list": [1, None]},
        }
        for i in range(3)
    ]
    with store.connection(write=True) as conn:
        Prepared(insert(events), column_keys=keys).many(conn, rows)
        Prepared(insert(events), column_keys=keys).many(conn, [])  # nothing to write: no statement
    with store.connection(write=True) as conn:
        conn.execute(insert(events), rows)
    columns = [events.c[k] for k in keys]
    with store.connection() as conn:
        got = [tuple(r) for r in conn.execute(select(*columns).order_by(events.c.seq))]
    assert got[:3] == got[3:]
    assert got[1] == (11, "repair.persisted", "c1", None, "j", {"n": 1, "text": "ü\u2028", "list": [1, None]})


def test_many_rolls_back_with_the_callers_transaction(store: Store) -> None:
    values = [
        repair_values(context_hash=f"ctx{i}", trigger="manual", preference="p", anti_pattern="a")
        for i in range(2)
    ]
    with store.engine.connect() as conn:
        Prepared(insert(_REPAIRS), column_keys=list(values[0])).many(conn, values)
        assert conn.in_transaction()
        conn.rollback()
    assert store.repairs.list() == []


def test_policy_boundaries_are_the_policies_with_those_episodes(store: Store) -> None:
    from memos_feedback.store.reads import policies_with_episodes, policy_boundaries_with_episodes

    store.policies.add("a", boundary="A", source_episode_ids=["e1", "e2"])
    store.policies.add("b", boundary="B", source_episode_ids=["e2"])
    store.policies.add("c", boundary="C", source_episode_ids=["e3"], status="retired")
    store.policies.add("d", boundary="D", source_episode_ids=[])
    for episodes in (["e1"], ["e2", "e3"], ["e3"], ["nope"], []):
        for status in ("active", None):
            with store.connection() as conn:
                rows = policies_with_episodes(conn, episodes, status)
                got = policy_boundaries_with_episodes(conn, episodes, status)
            assert list(got.items()) == [(p.id, p.boundary) for p in rows], (episodes, status)
    with store.connection() as conn:
        assert set(policy_boundaries_with_episodes(conn, ["e2", "e3"], None).values()) == {"A", "B", "C"}
