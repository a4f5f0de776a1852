"""store/search_index.py: on a SQLite file, a repair's search-index row is written behind it.

``run_repair`` names the repair in ``decision_repairs_fts_pending`` instead
of indexing it; the search reads such repairs' text directly (the tail)
until the store's background thread, or ``close``, or the next store on
the file indexes them in one statement. Found by text all along, and
indexed exactly once.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memos_feedback.config import FeedbackConfig
from memos_feedback.recall import guidance_for
from memos_feedback.recall.frequencies import DocumentFrequencies
from memos_feedback.repair.deps import RepairDeps
from memos_feedback.repair.run import run_repair
from memos_feedback.store import Store, checkpoint, open_store
from memos_feedback.store.search_index import has_deferred, index_deferred
from memos_feedback.types import RepairInput

CONFIG = FeedbackConfig(use_llm=False, cooldown_ms=0)
SESSION = "tail-session"
# A word no other text in these tests has: found by text only.
RARE = "zephyrwheel"


@pytest.fixture(autouse=True)
def no_thread_turns(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Stores opened in a test take no background turn unless it says so (``_turns_often``)."""
    monkeypatch.setattr(checkpoint, "INTERVAL_S", 3600.0)
    yield


def _turns_often(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoint, "INTERVAL_S", 0.05)


def _seed(store: Store) -> None:
    for i in range(6):
        good = i % 2 == 0
        store.traces.add(
            SESSION,
            agent_text=f"uv sync ok {i}" if good else f"pip install failed {i}",
            reflection=f"uv pins the {RARE} build" if good else "pip resolver conflict",
            value=0.8 if good else -0.7,
            tool_calls=[],
        )


def _repair(store: Store, context: str = "ctx-tail") -> str:
    inp = RepairInput(trigger="manual", context_hash=context, tool_id="pip.install", session_id=SESSION)
    result = run_repair(inp, RepairDeps(store=store, config=CONFIG))
    assert result.repair_id is not None, result
    return result.repair_id


def _rows(store: Store, sql: str) -> list[str]:
    with store.connection() as conn:
        return sorted(conn.exec_driver_sql(sql).scalars())


def _indexed(store: Store) -> list[str]:
    return _rows(store, "SELECT repair_id FROM decision_repairs_fts")


def _tail(store: Store) -> list[str]:
    return _rows(store, "SELECT repair_id FROM decision_repairs_fts_pending")


def _found(store: Store) -> list[str]:
    return [item.repair_id for item in guidance_for(store, query=f"which {RARE} build to pin").items]


def _wait(cond: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "the background thread did not index the tail in time"
        time.sleep(0.05)


def test_a_repair_is_found_by_text_before_and_after_it_is_indexed(sqlite_url: str) -> None:
    with open_store(sqlite_url) as store:
        assert store.defers_search_index
        _seed(store)
        with store.connection() as conn:  # the count of the word, before the repair exists
            assert DocumentFrequencies().of(store, conn, [RARE]) == {RARE: 0}
        repair_id = _repair(store)
        # Committed, not indexed: the tail has it, and the search reads the tail.
        assert _indexed(store) == [] and _tail(store) == [repair_id]
        assert _found(store) == [repair_id]
        with store.connection() as conn:  # counted in the tail (a fresh cache: no minute-old count)
            ids: dict[str, list[str]] = {}
            assert DocumentFrequencies().of(store, conn, [RARE], ids) == {RARE: 1}
            assert ids == {RARE: [repair_id]}  # and its id found there, to be searched by
        with store.connection(write=True) as conn:  # what the store's thread does
            assert index_deferred(conn) == 1
        assert _indexed(store) == [repair_id] and _tail(store) == []
        assert _found(store) == [repair_id]
        with store.connection() as conn:
            assert DocumentFrequencies().of(store, conn, [RARE]) == {RARE: 1}


def test_the_store_thread_indexes_the_tail(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _turns_often(monkeypatch)
    with open_store(sqlite_url) as store:
        _seed(store)
        repair_id = _repair(store)
        _wait(lambda: _tail(store) == [])
        assert _indexed(store) == [repair_id]
        assert _found(store) == [repair_id]


def test_close_indexes_the_tail(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    _seed(store)
    repair_id = _repair(store)
    store.close()
    with open_store(sqlite_url, read_only=True) as reader:
        assert _tail(reader) == [] and _indexed(reader) == [repair_id]


def test_the_next_store_indexes_a_tail_a_stopped_process_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "left.db"
    open_store(f"sqlite:///{path}").close()
    # What a process killed between its commit and its thread's turn leaves.
    raw = sqlite3.connect(path)
    with raw:
        raw.execute("INSERT INTO decision_repairs_fts_pending (repair_id) VALUES ('dr_left')")
        raw.execute(
            "INSERT INTO decision_repairs (id, ts, context_hash, trigger, preference, anti_pattern, "
            "severity, confidence, high_value_trace_ids, low_value_trace_ids, validated, rejected) "
            f"VALUES ('dr_left', 1, 'abc', 'manual', 'Prefer: the {RARE} pin', 'Avoid: pip', "
            "'info', 0.5, '[]', '[]', false, false)"
        )
    raw.close()
    _turns_often(monkeypatch)
    with open_store(f"sqlite:///{path}") as store:
        _wait(lambda: _tail(store) == [])
        assert _indexed(store) == ["dr_left"]


def test_stores_without_a_thread_index_at_once(tmp_path: Path, sqlite_url: str) -> None:
    with open_store("sqlite://") as memory:  # in memory: no background thread
        assert not memory.defers_search_index
        _seed(memory)
        repair_id = _repair(memory)
        assert _tail(memory) == [] and _indexed(memory) == [repair_id]
    open_store(sqlite_url).close()
    # Not migrated by this open: the schema may predate the tail's triggers.
    with open_store(sqlite_url, migrate_to_head=False) as unmigrated:
        assert not unmigrated.defers_search_index
        _seed(unmigrated)
        repair_id = _repair(unmigrated)
        assert _tail(unmigrated) == [] and _indexed(unmigrated) == [repair_id]


def test_index_deferred_indexes_every_waiting_repair_once_and_drops_deleted_ones(sqlite_url: str) -> None:
    with open_store(sqlite_url) as store:
        _seed(store)
        first, second = _repair(store, "ctx-a"), _repair(store, "ctx-b")
        with store.connection(write=True) as conn:
            conn.exec_driver_sql(f"DELETE FROM decision_repairs WHERE id = '{second}'")
            assert has_deferred(conn)
            assert index_deferred(conn) == 1
            assert not has_deferred(conn)
        assert _indexed(store) == [first] and _tail(store) == []


def _plan(store: Store, sql: str) -> list[str]:
    with store.connection() as conn:
        raw = conn.connection.driver_connection
        assert raw is not None
        return [row[3] for row in raw.execute(f"EXPLAIN QUERY PLAN {sql}", [None] * sql.count("?"))]


def test_waiting_repairs_are_read_by_key_never_by_a_scan_of_every_repair(sqlite_url: str) -> None:
    from sqlalchemy.dialects import sqlite

    from memos_feedback.store.search.query import Shape as _Shape
    from memos_feedback.store.search.sqlite import _count_statement as _df_statement
    from memos_feedback.store.search.sqlite import candidates_statement as _candidates_statement
    from memos_feedback.store.search_index import _INDEX, TAIL_SQL

    def sql(statement: object) -> str:
        return str(statement.compile(dialect=sqlite.dialect()))  # type: ignore[attr-defined]

    with open_store(sqlite_url) as store:
        for statement in (TAIL_SQL, sql(_INDEX.statement), sql(_df_statement((True, False)))):
            plan = _plan(store, statement)
            assert "SEARCH r USING INDEX sqlite_autoindex_decision_repairs_1 (id=?)" in plan, plan
            assert "SCAN r" not in plan, plan
        plan = _plan(store, sql(_candidates_statement(_Shape(False, 2))))
        assert not [step for step in plan if step.startswith("SCAN decision_repairs ") or step == "SCAN r"], (
            plan
        )
