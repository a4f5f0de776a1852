"""store/engine.py: a pooled PostgreSQL connection is pinged only after it sat idle.

The server drops the store's connection (``pg_terminate_backend``, as a
restart or an idle timeout would) while it sits in the pool.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text

from memos_feedback.errors import StoreError
from memos_feedback.store import Store, open_store
from memos_feedback.store import engine as store_engine
from tests.support.pg import fresh_pg_database

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_store() -> Iterator[Store]:
    with fresh_pg_database() as url:
        store = open_store(url)
        try:
            yield store
        finally:
            store.close()


def _backend_pid(store: Store) -> int:
    with store.connection() as conn:
        return int(conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())


def _drop(store: Store, pid: int) -> None:
    """End server process ``pid`` from a connection of its own, as a restart would."""
    admin = create_engine(store.url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            assert conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar_one()
    finally:
        admin.dispose()


def test_a_connection_dropped_while_idle_is_replaced_before_use(
    pg_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_engine, "PING_AFTER_IDLE_S", 0.0)  # every checkout has sat "long enough"
    pid = _backend_pid(pg_store)
    _drop(pg_store, pid)
    # The checkout pings the dead connection, the pool replaces it: the caller sees nothing.
    assert _backend_pid(pg_store) != pid
    assert pg_store.traces.list("s") == []


def test_a_connection_used_a_moment_ago_is_not_pinged_and_a_drop_costs_one_call(
    pg_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_engine, "PING_AFTER_IDLE_S", 3_600.0)  # never idle long enough here
    pid = _backend_pid(pg_store)
    _drop(pg_store, pid)
    # No ping: the statement finds the connection gone, once, as a StoreError ...
    with pytest.raises(StoreError):
        pg_store.traces.list("s")
    # ... and the pool, emptied of it, connects afresh for the next call.
    assert _backend_pid(pg_store) != pid
