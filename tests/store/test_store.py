"""The store's repositories (PIPELINE.md §10) on a real database file."""

from __future__ import annotations

import dataclasses
import math
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import platformdirs
import pytest
from sqlalchemy.exc import SQLAlchemyError

from memos_feedback.errors import (
    InvalidInputError,
    MemosFeedbackError,
    NotFoundError,
    StoreBusyError,
    StoreError,
)
from memos_feedback.store import (
    DecisionRepairRow,
    PolicyRow,
    Store,
    ToolCall,
    TraceRow,
    default_url,
    open_store,
)
from memos_feedback.store.engine import SQLITE_BUSY_TIMEOUT_MS
from memos_feedback.store.migrate import head_revision
from tests.support.threads import run_threads

# -- traces -------------------------------------------------------------------


def test_trace_add_returns_the_stored_row(store: Store) -> None:
    row = store.traces.add(
        session_id="s1",
        user_text="install numpy",
        agent_text="pip failed",
        reflection="should use the venv",
        value=-0.5,
        tool_calls=(ToolCall("pip.install", error_code="E_NET"), ToolCall("shell.exec")),
        episode_id="ep1",
        ts=1_700_000_000_000,
        id="tr-1",
    )
    assert row == TraceRow(
        id="tr-1",
        session_id="s1",
        episode_id="ep1",
        ts=1_700_000_000_000,
        user_text="install numpy",
        agent_text="pip failed",
        reflection="should use the venv",
        value=-0.5,
        tool_calls=(ToolCall("pip.install", "E_NET"), ToolCall("shell.exec", None)),
    )
    assert store.traces.get("tr-1") == row


def test_trace_defaults(store: Store) -> None:
    before = int(time.time() * 1000)
    row = store.traces.add(session_id="s1")
    after = int(time.time() * 1000)
    assert row.id  # generated
    assert before - 1 <= row.ts <= after + 1
    assert (row.user_text, row.agent_text, row.reflection, row.value) == ("", "", None, 0.0)
    assert row.tool_calls == ()
    assert row.episode_id is None
    assert store.traces.get(row.id) == row


def test_trace_generated_ids_are_unique(store: Store) -> None:
    ids = {store.traces.add(session_id="s").id for _ in range(50)}
    assert len(ids) == 50


def test_trace_tool_calls_round_trip_with_error_codes(store: Store) -> None:
    calls = (ToolCall("a"), ToolCall("b", "TIMEOUT"), ToolCall("c", ""), ToolCall("测试", "错误"))
    row = store.traces.add(session_id="s", tool_calls=calls)
    got = store.traces.get(row.id)
    assert got.tool_calls == calls
    assert all(isinstance(c, ToolCall) for c in got.tool_calls)


def test_trace_tool_calls_accept_mappings(store: Store) -> None:
    row = store.traces.add(session_id="s", tool_calls=[{"name": "x", "error_code": "E1"}, {"name": "y"}])
    assert store.traces.get(row.id).tool_calls == (ToolCall("x", "E1"), ToolCall("y"))


def test_trace_value_int_is_stored_as_float(store: Store) -> None:
    row = store.traces.add(session_id="s", value=1)
    got = store.traces.get(row.id)
    assert got.value == 1.0
    assert type(got.value) is float


def test_trace_list_is_newest_first_per_session_and_limited(store: Store) -> None:
    for i, ts in enumerate([300, 100, 500, 200, 400]):
        store.traces.add(session_id="s1", ts=ts, id=f"a{i}")
    store.traces.add(session_id="s2", ts=1_000, id="other")
    rows = store.traces.list("s1", limit=10)
    assert [r.ts for r in rows] == [500, 400, 300, 200, 100]
    assert all(r.session_id == "s1" for r in rows)
    assert [r.ts for r in store.traces.list(session_id="s1", limit=2)] == [500, 400]
    assert store.traces.list("nobody", limit=5) == []


def test_trace_list_breaks_ts_ties_by_insertion_order(store: Store) -> None:
    ids = [store.traces.add(session_id="s", ts=1_000).id for _ in range(5)]
    assert [r.id for r in store.traces.list("s", limit=5)] == ids[::-1]


def test_trace_list_default_limit(store: Store) -> None:
    for i in range(60):
        store.traces.add(session_id="s", ts=i)
    rows = store.traces.list("s")
    assert len(rows) == 50
    assert rows[0].ts == 59


def test_trace_get_unknown_id(store: Store) -> None:
    with pytest.raises(NotFoundError, match="nope"):
        store.traces.get("nope")


def test_trace_megabyte_text_round_trips(store: Store) -> None:
    big = ("héllo wörld 中文 \n" * 70_000)[:1_000_000]
    assert len(big) == 1_000_000
    row = store.traces.add(session_id="s", user_text=big, agent_text=big[::-1], reflection=big)
    got = store.traces.get(row.id)
    assert got.user_text == big
    assert got.agent_text == big[::-1]
    assert got.reflection == big


@pytest.mark.parametrize(
    "kwargs",
    [
        {"session_id": 3},
        {"session_id": None},
        {"session_id": ""},
        {"session_id": "   "},
        {"session_id": "s", "user_text": None},
        {"session_id": "s", "agent_text": b"bytes"},
        {"session_id": "s", "reflection": 5},
        {"session_id": "s", "value": "0.5"},
        {"session_id": "s", "value": True},
        {"session_id": "s", "value": math.nan},
        {"session_id": "s", "value": math.inf},
        {"session_id": "s", "tool_calls": "pip"},
        {"session_id": "s", "tool_calls": [3]},
        {"session_id": "s", "tool_calls": [ToolCall(3)]},  # type: ignore[arg-type]
        {"session_id": "s", "tool_calls": [ToolCall("x", 404)]},  # type: ignore[arg-type]
        {"session_id": "s", "tool_calls": None},
        {"session_id": "s", "episode_id": 1},
        {"session_id": "s", "ts": -1},
        {"session_id": "s", "ts": 1.5},
        {"session_id": "s", "ts": "now"},
        {"session_id": "s", "ts": True},
        {"session_id": "s", "id": ""},
        {"session_id": "s", "id": 7},
    ],
)
def test_trace_add_rejects_bad_input(store: Store, kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        store.traces.add(**kwargs)
    assert store.traces.list("s", limit=10) == []


@pytest.mark.parametrize("limit", [0, -1, 10_001, True, 2.0, "5", None])
def test_trace_list_rejects_bad_limit(store: Store, limit: object) -> None:
    with pytest.raises(InvalidInputError, match="limit"):
        store.traces.list("s", limit=limit)  # type: ignore[arg-type]


def test_trace_get_and_list_reject_non_str(store: Store) -> None:
    with pytest.raises(InvalidInputError):
        store.traces.get(5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        store.traces.list(None, limit=5)  # type: ignore[arg-type]


# -- policies -----------------------------------------------------------------


def test_policy_add_and_get(store: Store) -> None:
    before = int(time.time() * 1000)
    row = store.policies.add(
        title="Install packages", boundary="Use the venv.", source_episode_ids=("ep1", "ep2"), id="po-1"
    )
    assert row.id == "po-1"
    assert (row.title, row.boundary, row.status) == ("Install packages", "Use the venv.", "active")
    assert row.source_episode_ids == ("ep1", "ep2")
    assert row.updated_at >= before - 1
    assert store.policies.get("po-1") == row


def test_policy_defaults(store: Store) -> None:
    row = store.policies.add(title="t")
    assert row.id
    assert (row.boundary, row.status, row.source_episode_ids) == ("", "active", ())
    assert store.policies.get(row.id) == row


def test_policy_list_filters_by_status(store: Store) -> None:
    a = store.policies.add(title="a", id="p-a")
    b = store.policies.add(title="b", status="archived", id="p-b")
    c = store.policies.add(title="c", id="p-c")
    assert {p.id for p in store.policies.list()} == {a.id, b.id, c.id}
    assert [p.id for p in store.policies.list(status="active")] == ["p-a", "p-c"]
    assert [p.id for p in store.policies.list("archived")] == ["p-b"]
    assert store.policies.list(status="draft") == []


def test_policies_with_source_episodes_overlap_in_the_database(store: Store) -> None:
    a = store.policies.add("a", source_episode_ids=["ep1", "ep2"], id="a")
    b = store.policies.add("b", source_episode_ids=["ep2", "ep3"], id="b")
    store.policies.add("c", source_episode_ids=["ep4"], id="c")
    store.policies.add("empty", id="empty")
    old = store.policies.add("old", source_episode_ids=["ep1"], status="archived", id="old")
    assert store.policies.with_source_episodes(["ep1"]) == [a]
    assert store.policies.with_source_episodes(("ep2", "ep9", "ep2")) == [a, b]
    assert store.policies.with_source_episodes({"ep1"}, status=None) == [a, old]
    assert store.policies.with_source_episodes(["ep1"], status="archived") == [old]
    assert store.policies.with_source_episodes(["ep9"]) == []
    assert store.policies.with_source_episodes([]) == []
    # an id that looks like JSON or SQL is only ever a value
    store.policies.add("q", source_episode_ids=['ep"x', "'; drop table policies; --"], id="q")
    assert [p.id for p in store.policies.with_source_episodes(['ep"x'])] == ["q"]
    assert [p.id for p in store.policies.with_source_episodes(["'; drop table policies; --"])] == ["q"]
    with pytest.raises(InvalidInputError):
        store.policies.with_source_episodes("ep1")
    with pytest.raises(InvalidInputError):
        store.policies.with_source_episodes([1])  # type: ignore[list-item]


def test_policy_upsert_inserts_a_new_row(store: Store) -> None:
    row = PolicyRow(
        id="p-new", title="t", boundary="b", status="active", source_episode_ids=("e",), updated_at=0
    )
    saved = store.policies.upsert(row)
    assert saved.id == "p-new"
    assert (saved.title, saved.boundary, saved.status) == ("t", "b", "active")
    assert saved.source_episode_ids == ("e",)
    assert saved.updated_at > 0  # the store stamps the write time
    assert store.policies.get("p-new") == saved


def test_policy_upsert_updates_every_field(store: Store) -> None:
    original = store.policies.add(title="old", boundary="x", source_episode_ids=("e1",), id="p1")
    time.sleep(0.002)
    changed = dataclasses.replace(
        original, title="new", boundary="y", status="archived", source_episode_ids=("e2", "e3")
    )
    saved = store.policies.upsert(changed)
    assert (saved.title, saved.boundary, saved.status, saved.source_episode_ids) == (
        "new",
        "y",
        "archived",
        ("e2", "e3"),
    )
    assert saved.updated_at > original.updated_at
    assert store.policies.get("p1") == saved
    assert len(store.policies.list()) == 1


def test_policy_update_boundary(store: Store) -> None:
    original = store.policies.add(title="t", boundary="keep", id="p1")
    seen: list[str] = []

    def change(current: str) -> str:
        seen.append(current)
        return current + "\n@repair {}"

    time.sleep(0.002)
    updated = store.policies.update_boundary("p1", change)
    assert seen == ["keep"]
    assert updated is not None
    assert updated.boundary == "keep\n@repair {}"
    assert updated.updated_at > original.updated_at
    assert store.policies.get("p1") == updated


@pytest.mark.parametrize("result", [None, "same"])
def test_policy_update_boundary_without_change_writes_nothing(store: Store, result: str | None) -> None:
    original = store.policies.add(title="t", boundary="same", id="p1")
    assert store.policies.update_boundary("p1", lambda _current: result) is None
    assert store.policies.get("p1") == original


def test_policy_update_boundary_error_in_change_rolls_back(store: Store) -> None:
    original = store.policies.add(title="t", boundary="b", id="p1")

    def change(_current: str) -> str:
        raise RuntimeError("merge bug")

    with pytest.raises(RuntimeError, match="merge bug"):
        store.policies.update_boundary("p1", change)
    assert store.policies.get("p1") == original


def test_policy_unknown_ids(store: Store) -> None:
    with pytest.raises(NotFoundError):
        store.policies.get("missing")
    with pytest.raises(NotFoundError):
        store.policies.update_boundary("missing", lambda b: b + "x")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"title": None},
        {"title": 1},
        {"title": "t", "boundary": None},
        {"title": "t", "source_episode_ids": "ep1"},
        {"title": "t", "source_episode_ids": [1, 2]},
        {"title": "t", "source_episode_ids": None},
        {"title": "t", "status": ""},
        {"title": "t", "status": 1},
        {"title": "t", "id": ""},
    ],
)
def test_policy_add_rejects_bad_input(store: Store, kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        store.policies.add(**kwargs)
    assert store.policies.list() == []


def test_policy_upsert_rejects_bad_input(store: Store) -> None:
    with pytest.raises(InvalidInputError):
        store.policies.upsert({"id": "p", "title": "t"})  # type: ignore[arg-type]
    bad = PolicyRow(id="p", title="t", boundary=None, status="active", source_episode_ids=(), updated_at=0)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        store.policies.upsert(bad)
    with pytest.raises(InvalidInputError):
        store.policies.upsert(dataclasses.replace(bad, boundary="", id=""))
    assert store.policies.list() == []


def test_policy_list_rejects_bad_status(store: Store) -> None:
    with pytest.raises(InvalidInputError):
        store.policies.list(status=3)  # type: ignore[arg-type]


# -- decision repairs ---------------------------------------------------------


def insert(store: Store, **overrides: Any) -> DecisionRepairRow:
    values: dict[str, Any] = {
        "context_hash": "abcdef0123456789",
        "trigger": "failure-burst",
        "preference": "Prefer: use the venv",
        "anti_pattern": "Avoid: global pip",
    }
    values.update(overrides)
    return store.repairs.insert(**values)


def test_repair_insert_and_get_carry_every_column(store: Store) -> None:
    row = insert(
        store,
        id="dr-1",
        ts=1_700_000_000_123,
        tool_id="pip.install",
        context="pip install numpy",
        session_id="s1",
        severity="warn",
        confidence=0.75,
        high_value_trace_ids=("t1", "t2"),
        low_value_trace_ids=("t3",),
    )
    assert row == DecisionRepairRow(
        id="dr-1",
        ts=1_700_000_000_123,
        context_hash="abcdef0123456789",
        tool_id="pip.install",
        context="pip install numpy",
        trigger="failure-burst",
        session_id="s1",
        preference="Prefer: use the venv",
        anti_pattern="Avoid: global pip",
        severity="warn",
        confidence=0.75,
        high_value_trace_ids=("t1", "t2"),
        low_value_trace_ids=("t3",),
        validated=False,
        rejected=False,
    )
    assert store.repairs.get("dr-1") == row


def test_repair_insert_defaults(store: Store) -> None:
    row = insert(store)
    assert row.id
    assert (row.severity, row.confidence, row.validated, row.rejected) == ("info", 0.5, False, False)
    assert (row.tool_id, row.context, row.session_id) == (None, None, None)
    assert (row.high_value_trace_ids, row.low_value_trace_ids) == ((), ())
    assert store.repairs.get(row.id) == row


def test_repair_list_newest_first_filtered_and_limited(store: Store) -> None:
    for i, ts in enumerate([20, 50, 10, 40, 30]):
        insert(store, context_hash="h1", ts=ts, id=f"h1-{i}")
    insert(store, context_hash="h2", ts=45, id="h2-0")
    assert [r.ts for r in store.repairs.list()] == [50, 45, 40, 30, 20, 10]
    assert [r.ts for r in store.repairs.list(context_hash="h1")] == [50, 40, 30, 20, 10]
    assert [r.ts for r in store.repairs.list("h1", limit=2)] == [50, 40]
    assert [r.id for r in store.repairs.list(limit=1)] == ["h1-1"]
    assert store.repairs.list(context_hash="h3") == []


def test_repair_list_default_limit_is_100(store: Store) -> None:
    for i in range(105):
        insert(store, ts=i)
    rows = store.repairs.list()
    assert len(rows) == 100
    assert rows[0].ts == 104


def test_repair_recent_for_context(store: Store) -> None:
    assert store.repairs.recent_for_context("h1") is None
    insert(store, context_hash="h1", ts=100, id="old")
    insert(store, context_hash="h1", ts=300, id="new")
    insert(store, context_hash="h1", ts=200, id="mid")
    insert(store, context_hash="h2", ts=999, id="other")
    recent = store.repairs.recent_for_context("h1")
    assert recent is not None
    assert recent.id == "new"
    assert store.repairs.recent_for_context(context_hash="h3") is None


def test_repair_validate_and_reject(store: Store) -> None:
    row = insert(store, id="dr")
    validated = store.repairs.validate("dr")
    assert (validated.validated, validated.rejected) == (True, False)
    assert store.repairs.get("dr") == validated
    rejected = store.repairs.reject("dr")
    assert (rejected.validated, rejected.rejected) == (False, True)
    assert store.repairs.get("dr") == rejected
    again = store.repairs.validate("dr")
    assert (again.validated, again.rejected) == (True, False)
    # nothing else changed
    assert dataclasses.replace(again, validated=False) == row


def test_repair_unknown_ids(store: Store) -> None:
    for call in (store.repairs.get, store.repairs.validate, store.repairs.reject):
        with pytest.raises(NotFoundError, match="ghost"):
            call("ghost")


@pytest.mark.parametrize(
    "overrides",
    [
        {"severity": "error"},
        {"severity": None},
        {"confidence": 1.5},
        {"confidence": -0.1},
        {"confidence": math.nan},
        {"confidence": "high"},
        {"confidence": True},
        {"context_hash": ""},
        {"context_hash": None},
        {"trigger": ""},
        {"trigger": 3},
        {"preference": None},
        {"anti_pattern": 1},
        {"tool_id": 3},
        {"context": b"x"},
        {"session_id": 1},
        {"high_value_trace_ids": "t1"},
        {"high_value_trace_ids": [1]},
        {"low_value_trace_ids": None},
        {"ts": -5},
        {"ts": 1.0},
        {"id": ""},
    ],
)
def test_repair_insert_rejects_bad_input(store: Store, overrides: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        insert(store, **overrides)
    assert store.repairs.list() == []


def test_repair_read_methods_reject_bad_input(store: Store) -> None:
    with pytest.raises(InvalidInputError):
        store.repairs.get(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        store.repairs.validate(1)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        store.repairs.reject(1)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        store.repairs.list(context_hash=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        store.repairs.list(limit=0)
    with pytest.raises(InvalidInputError):
        store.repairs.recent_for_context(None)  # type: ignore[arg-type]


# -- rows -----------------------------------------------------------------------


def test_rows_are_frozen(store: Store) -> None:
    trace = store.traces.add(session_id="s", tool_calls=[ToolCall("x")])
    policy = store.policies.add(title="t")
    repair = insert(store)
    for row, field in (
        (trace, "user_text"),
        (trace.tool_calls[0], "error_code"),
        (policy, "boundary"),
        (repair, "validated"),
    ):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(row, field, "changed")
    # sequences come back as tuples, so they cannot be mutated in place either
    assert isinstance(trace.tool_calls, tuple)
    assert isinstance(policy.source_episode_ids, tuple)
    assert isinstance(repair.high_value_trace_ids, tuple)


def test_rows_stay_usable_after_the_store_is_closed(db_url: str) -> None:
    s = open_store(db_url)
    row = s.traces.add(session_id="s", tool_calls=[ToolCall("x", "E")])
    s.close()
    assert row.tool_calls[0].error_code == "E"
    assert row.session_id == "s"


# -- errors never leak ----------------------------------------------------------


def test_duplicate_trace_id_is_a_store_error(store: Store) -> None:
    store.traces.add(session_id="s", id="dup")
    with pytest.raises(StoreError) as info:
        store.traces.add(session_id="s", id="dup")
    assert not isinstance(info.value, SQLAlchemyError)
    assert isinstance(info.value.__cause__, SQLAlchemyError)  # the original is kept for debugging
    assert "adding a trace" in str(info.value)
    assert len(store.traces.list("s", limit=10)) == 1


def test_duplicate_policy_and_repair_ids_are_store_errors(store: Store) -> None:
    store.policies.add(title="t", id="p")
    with pytest.raises(StoreError) as info:
        store.policies.add(title="t2", id="p")
    assert not isinstance(info.value, SQLAlchemyError)
    insert(store, id="r")
    with pytest.raises(StoreError) as info:
        insert(store, id="r")
    assert not isinstance(info.value, SQLAlchemyError)
    assert store.policies.get("p").title == "t"


def test_store_is_usable_after_an_error(store: Store) -> None:
    store.traces.add(session_id="s", id="dup")
    with pytest.raises(StoreError):
        store.traces.add(session_id="s", id="dup")
    assert store.traces.add(session_id="s", id="next").id == "next"


def test_broken_database_file_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not a sqlite database" * 200)
    with pytest.raises(StoreError) as info:
        open_store(f"sqlite:///{path}")
    assert not isinstance(info.value, SQLAlchemyError)


@pytest.mark.parametrize("url", ["not a url", "nosuchdb+nodriver://host/db"])
def test_bad_urls_are_store_errors(url: str) -> None:
    with pytest.raises(StoreError):
        open_store(url)


@pytest.mark.parametrize("url", ["", "   ", 42])
def test_url_must_be_a_non_empty_string(url: object) -> None:
    with pytest.raises(InvalidInputError):
        open_store(url)  # type: ignore[arg-type]


def test_library_errors_share_one_root() -> None:
    for cls in (StoreError, NotFoundError, InvalidInputError):
        assert issubclass(cls, MemosFeedbackError)
    assert issubclass(NotFoundError, StoreError)


# -- SQLite specifics -------------------------------------------------------------


def test_sqlite_file_uses_wal_and_busy_timeout(sqlite_url: str) -> None:
    with open_store(sqlite_url) as s:
        assert s.dialect == "sqlite"
        with s.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == SQLITE_BUSY_TIMEOUT_MS
        assert SQLITE_BUSY_TIMEOUT_MS >= 1_000


def test_sqlite_writer_waits_for_a_lock_instead_of_failing(sqlite_url: str, tmp_path: Path) -> None:
    with open_store(sqlite_url) as s:
        other = sqlite3.connect(tmp_path / "memos_feedback.db", isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")  # hold the write lock
        releasing = threading.Event()

        def release() -> None:
            time.sleep(0.5)
            releasing.set()
            other.execute("COMMIT")

        t = threading.Thread(target=release)
        t.start()
        try:
            row = s.traces.add(session_id="s")  # blocks until the lock is released
            assert releasing.is_set()
            assert s.traces.get(row.id) == row
        finally:
            t.join()
            other.close()


# A second, real process holding SQLite's write lock until its stdin closes.
_LOCK_HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute(sys.argv[2])
print("locked", flush=True)
sys.stdin.read()
conn.execute("COMMIT")
"""
# The machine running the suite is shared and slow: allow this much on top
# of the busy timeout. Stacked waits (the bug) take a whole timeout more
# per waiter, so they still show.
_SLACK_S = 1.5


def _hold_lock(path: Path, begin: str = "BEGIN IMMEDIATE") -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", _LOCK_HOLDER, str(path), begin],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


def _release(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.close()
    assert holder.wait(timeout=30) == 0


def test_write_gives_up_after_the_busy_timeout_when_another_process_holds_the_lock(
    sqlite_url: str, tmp_path: Path
) -> None:
    with open_store(sqlite_url, busy_timeout_ms=1_000) as s:
        holder = _hold_lock(tmp_path / "memos_feedback.db")
        try:
            started = time.monotonic()
            with pytest.raises(StoreBusyError, match="locked"):
                s.traces.add(session_id="s")
            elapsed = time.monotonic() - started
        finally:
            _release(holder)
        assert 0.9 <= elapsed < 1.0 + _SLACK_S, elapsed
        assert s.traces.add(session_id="s").session_id == "s"  # usable again once released


def test_threads_queueing_on_the_write_lock_share_the_busy_timeout(sqlite_url: str, tmp_path: Path) -> None:
    """Each thread's write gives up one timeout after *it* started, not after the others."""
    threads = 5
    with open_store(sqlite_url, busy_timeout_ms=1_000) as s:
        holder = _hold_lock(tmp_path / "memos_feedback.db")
        outcomes: list[tuple[BaseException | None, float]] = []
        start = threading.Barrier(threads)

        def write() -> None:
            start.wait()
            began = time.monotonic()
            try:
                s.traces.add(session_id="s")
                outcomes.append((None, time.monotonic() - began))
            except BaseException as exc:
                outcomes.append((exc, time.monotonic() - began))

        workers = [threading.Thread(target=write) for _ in range(threads)]
        try:
            for t in workers:
                t.start()
            for t in workers:
                t.join(timeout=60)
        finally:
            _release(holder)
    assert len(outcomes) == threads
    for exc, elapsed in outcomes:
        assert isinstance(exc, StoreBusyError), exc
        assert elapsed < 1.0 + _SLACK_S, elapsed


def test_opening_a_locked_non_wal_file_gives_up_after_the_busy_timeout(tmp_path: Path) -> None:
    """The connect-time switch to WAL is bounded by the same timeout."""
    path = tmp_path / "rollback.db"
    plain = sqlite3.connect(path)
    plain.execute("CREATE TABLE t (x)")
    plain.commit()
    plain.close()
    holder = _hold_lock(path, "BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        with pytest.raises(StoreBusyError):
            open_store(f"sqlite:///{path}", busy_timeout_ms=1_000)
        elapsed = time.monotonic() - started
    finally:
        _release(holder)
    assert elapsed < 1.0 + _SLACK_S, elapsed


@pytest.mark.parametrize("value", [-1, 2**70, 1.5, True, "1000", None])
def test_busy_timeout_must_be_a_sane_int(sqlite_url: str, value: object) -> None:
    with pytest.raises(InvalidInputError, match="busy_timeout_ms"):
        open_store(sqlite_url, busy_timeout_ms=value)  # type: ignore[arg-type]


def test_in_memory_store_works() -> None:
    with open_store("sqlite://") as s:
        assert s.revision() == head_revision()
        row = s.traces.add(session_id="s", tool_calls=[ToolCall("t", "E")])
        assert s.traces.get(row.id) == row
        p = s.policies.add(title="t")
        assert s.policies.list() == [p]
        r = insert(s)
        assert s.repairs.recent_for_context(r.context_hash) == r


def test_concurrent_writers_from_threads(store: Store) -> None:
    per_thread = 50

    def work(n: int) -> None:
        for i in range(per_thread):
            store.traces.add(session_id=f"s{n}", ts=i, user_text=f"{n}-{i}")

    assert run_threads(work, 4) == []
    for n in range(4):
        rows = store.traces.list(f"s{n}", limit=1_000)
        assert len(rows) == per_thread
        assert {r.user_text for r in rows} == {f"{n}-{i}" for i in range(per_thread)}


# -- default location ---------------------------------------------------------------


def test_default_url_honours_the_environment(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'from-env.db'}"
    clean_env.setenv("MEMOS_FEEDBACK_DB_URL", url)
    assert default_url() == url
    with open_store() as s:
        assert s.url == url
        s.traces.add(session_id="s")
    assert (tmp_path / "from-env.db").is_file()


def test_default_url_is_a_file_in_the_user_data_dir(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[tuple[Any, ...]] = []

    def fake_user_data_dir(*args: Any, **kwargs: Any) -> str:
        calls.append((args, kwargs))
        return str(tmp_path / "data")

    clean_env.setattr(platformdirs, "user_data_dir", fake_user_data_dir)
    url = default_url()
    assert calls and calls[0][0][0] == "memos-feedback"
    assert url == f"sqlite:///{tmp_path / 'data' / 'memos_feedback.db'}"
    with open_store() as s:
        assert s.revision() == head_revision()
    assert (tmp_path / "data" / "memos_feedback.db").is_file()  # parent directory created


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_DATA_HOME is a Linux convention")
def test_default_url_follows_xdg_data_home(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    expected = Path(platformdirs.user_data_dir("memos-feedback", appauthor=False)) / "memos_feedback.db"
    assert default_url() == f"sqlite:///{expected}"
    assert str(expected).startswith(str(tmp_path / "xdg"))


def test_empty_env_url_falls_back_to_the_data_dir(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("MEMOS_FEEDBACK_DB_URL", "")
    clean_env.setattr(platformdirs, "user_data_dir", lambda *a, **k: str(tmp_path))
    assert default_url() == f"sqlite:///{tmp_path / 'memos_feedback.db'}"


# -- issue 9, item 15: bad input is always InvalidInputError ----------------------

S = "\ud83d"  # a lone surrogate: not Unicode text, no driver can encode it
HUGE = 2**70  # beyond BIGINT
HUGER = 2**1100  # beyond float


def _new_policy(s: Store) -> str:
    return s.policies.add("t").id


def _repair(**overrides: Any) -> Callable[[Store], object]:
    kwargs: dict[str, Any] = {"context_hash": "c", "trigger": "manual", "preference": "p"}
    kwargs["anti_pattern"] = "a"
    kwargs.update(overrides)
    return lambda s: s.repairs.insert(**kwargs)


BAD_CALLS: list[tuple[str, Callable[[Store], object]]] = [
    # traces
    *[
        (f"traces.add {k}", lambda s, k=k: s.traces.add(**{"session_id": "s", k: S}))
        for k in ("session_id", "user_text", "agent_text", "reflection", "episode_id", "id")
    ],
    ("traces.add tool name", lambda s: s.traces.add("s", tool_calls=[ToolCall(S)])),
    ("traces.add tool error", lambda s: s.traces.add("s", tool_calls=[ToolCall("t", S)])),
    ("traces.add tool mapping", lambda s: s.traces.add("s", tool_calls=[{"name": S}])),
    ("traces.add NUL", lambda s: s.traces.add("s", agent_text="a\x00b")),
    ("traces.add ts huge", lambda s: s.traces.add("s", ts=HUGE)),
    ("traces.add value huge", lambda s: s.traces.add("s", value=HUGER)),
    ("traces.add value str", lambda s: s.traces.add("s", value="0.5")),
    ("traces.add long id", lambda s: s.traces.add("s", id="x" * 65)),
    ("traces.add long session", lambda s: s.traces.add("x" * 256)),
    ("traces.add tool_calls int", lambda s: s.traces.add("s", tool_calls=5)),
    ("traces.get surrogate", lambda s: s.traces.get(S)),
    ("traces.get int", lambda s: s.traces.get(5)),
    ("traces.list surrogate", lambda s: s.traces.list(S)),
    ("traces.list limit str", lambda s: s.traces.list("s", limit="x")),
    ("traces.list limit huge", lambda s: s.traces.list("s", limit=HUGE)),
    # policies
    *[
        (f"policies.add {k}", lambda s, k=k: s.policies.add(**{"title": "t", k: S}))
        for k in ("title", "boundary", "status", "id")
    ],
    ("policies.add episode", lambda s: s.policies.add("t", source_episode_ids=[S])),
    ("policies.add episodes str", lambda s: s.policies.add("t", source_episode_ids="ep")),
    ("policies.add long status", lambda s: s.policies.add("t", status="x" * 33)),
    ("policies.get surrogate", lambda s: s.policies.get(S)),
    ("policies.list surrogate", lambda s: s.policies.list(status=S)),
    ("policies.list int", lambda s: s.policies.list(status=5)),
    ("policies.with_source_episodes surrogate", lambda s: s.policies.with_source_episodes([S])),
    ("policies.with_source_episodes int", lambda s: s.policies.with_source_episodes(5)),
    ("policies.with_source_episodes status", lambda s: s.policies.with_source_episodes(["e"], status=S)),
    ("policies.upsert not a row", lambda s: s.policies.upsert("row")),
    ("policies.upsert surrogate id", lambda s: s.policies.upsert(PolicyRow(S, "t", "", "active", (), 0))),
    ("policies.upsert surrogate title", lambda s: s.policies.upsert(PolicyRow("p", S, "", "active", (), 0))),
    ("policies.update_boundary id", lambda s: s.policies.update_boundary(S, lambda b: b)),
    ("policies.update_boundary not callable", lambda s: s.policies.update_boundary(_new_policy(s), "x")),
    (
        "policies.update_boundary returns surrogate",
        lambda s: s.policies.update_boundary(_new_policy(s), lambda b: b + S),
    ),
    (
        "policies.update_boundary returns int",
        lambda s: s.policies.update_boundary(_new_policy(s), lambda b: 5),
    ),
    ("policies.update_boundary session", lambda s: s.policies.update_boundary("p", lambda b: b, session="x")),
    # repairs
    *[
        (f"repairs.insert {k}", _repair(**{k: S}))
        for k in (
            "context_hash",
            "trigger",
            "preference",
            "anti_pattern",
            "severity",
            "tool_id",
            "context",
            "session_id",
            "id",
        )
    ],
    ("repairs.insert severity list", _repair(severity=["info"])),
    ("repairs.insert evidence", _repair(high_value_trace_ids=[S])),
    ("repairs.insert confidence huge", _repair(confidence=HUGER)),
    ("repairs.insert ts huge", _repair(ts=HUGE)),
    ("repairs.insert long trigger", _repair(trigger="x" * 33)),
    ("repairs.insert session", _repair(session="x")),
    ("repairs.get surrogate", lambda s: s.repairs.get(S)),
    ("repairs.list surrogate", lambda s: s.repairs.list(context_hash=S)),
    ("repairs.list limit str", lambda s: s.repairs.list(limit="x")),
    ("repairs.list limit huge", lambda s: s.repairs.list(limit=HUGE)),
    ("repairs.recent_for_context surrogate", lambda s: s.repairs.recent_for_context(S)),
    ("repairs.recent_for_context int", lambda s: s.repairs.recent_for_context(5)),
    ("repairs.recent_for_context session", lambda s: s.repairs.recent_for_context("c", session="x")),
    ("repairs.validate surrogate", lambda s: s.repairs.validate(S)),
    ("repairs.reject surrogate", lambda s: s.repairs.reject(S)),
    ("repairs.validate int", lambda s: s.repairs.validate(5)),
    # the store itself
    ("Store engine", lambda s: Store("engine", "sqlite://")),  # type: ignore[arg-type]
    ("Store url surrogate", lambda s: Store(s.engine, S)),
    ("Store url int", lambda s: Store(s.engine, 5)),  # type: ignore[arg-type]
    ("Store busy timeout", lambda s: Store(s.engine, "u", busy_timeout_ms=HUGE)),
    ("Store read_only", lambda s: Store(s.engine, "u", read_only="no")),  # type: ignore[arg-type]
    ("open_store surrogate", lambda s: open_store(f"sqlite:///{S}.db")),
    ("open_store int", lambda s: open_store(5)),  # type: ignore[arg-type]
    ("open_store read_only", lambda s: open_store(s.url, read_only="yes")),  # type: ignore[arg-type]
    ("open_store migrate_to_head", lambda s: open_store(s.url, migrate_to_head=1)),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("call", [c for _, c in BAD_CALLS], ids=[name for name, _ in BAD_CALLS])
def test_bad_input_to_any_public_call_is_invalid_input_error(
    store: Store, call: Callable[[Store], object]
) -> None:
    """Never a raw TypeError, UnicodeEncodeError, OverflowError or driver error; nothing written."""
    before = (store.traces.list("s"), store.repairs.list())
    with pytest.raises(InvalidInputError):
        call(store)
    assert (store.traces.list("s"), store.repairs.list()) == before
    for policy in store.policies.list():
        assert S not in policy.boundary


# -- the kept write connection (SQLite file) ---------------------------------------------


def _driver(conn: Any) -> Any:
    return conn.connection.driver_connection


def test_sqlite_file_writes_reuse_one_connection_outside_any_transaction(sqlite_url: str) -> None:
    with open_store(sqlite_url) as s:
        with s.connection(write=True) as conn:
            first = _driver(conn)
            assert first.in_transaction
        with s.session(write=True) as session:
            assert _driver(session.connection()) is first  # the ORM path takes it too
        with s.connection(write=True) as conn:
            assert _driver(conn) is first
        assert not first.in_transaction  # committed, nothing left open between writes
        with s.connection() as conn:
            assert _driver(conn) is not first  # reads keep using the pool


def test_a_write_that_raised_is_rolled_back_and_the_next_write_starts_clean(sqlite_url: str) -> None:
    with open_store(sqlite_url) as s:
        with pytest.raises(RuntimeError), s.connection(write=True) as conn:
            broken = _driver(conn)
            conn.exec_driver_sql(
                "INSERT INTO traces (id, session_id, ts, user_text, agent_text, value, tool_calls) "
                "VALUES ('t1', 's', 1, '', '', 0, '[]')"
            )
            raise RuntimeError("boom")
        assert not broken.in_transaction
        assert s.traces.list("s") == []
        s.traces.add(session_id="s")  # a write after the failed one works
        assert len(s.traces.list("s")) == 1


def test_threads_share_the_kept_write_connection_one_at_a_time(sqlite_url: str) -> None:
    with open_store(sqlite_url) as s:
        drivers: set[int] = set()

        def work(n: int) -> None:
            for i in range(20):
                with s.connection(write=True) as conn:
                    drivers.add(id(_driver(conn)))
                    assert _driver(conn).in_transaction
                s.traces.add(session_id=f"s{n}", ts=i)

        assert run_threads(work, 4) == []
        assert len(drivers) == 1
        assert sum(len(s.traces.list(f"s{n}", limit=100)) for n in range(4)) == 80


def test_closing_the_store_closes_the_kept_write_connection(sqlite_url: str) -> None:
    s = open_store(sqlite_url)
    with s.connection(write=True) as conn:
        kept = _driver(conn)
    s.close()
    with pytest.raises(sqlite3.ProgrammingError):
        kept.execute("SELECT 1")
