"""PostgreSQL for the tests: one throwaway database per test.

Each test's database has a name of its own (a random suffix), so the
workers of a parallel run (``pytest -n 2``, pytest-xdist) share the server
and never a database; the name carries the worker (``memos_test_gw0_…``)
so a database left behind by a killed run says whose it was.

``MEMOS_FEEDBACK_TEST_PG_URL`` points at a server (``make test-postgres``
and ``.ci/run`` start one). Without it, PostgreSQL tests skip with a hint on
a developer machine — and fail under ``CI``, where a missing server means a
broken pipeline, not an optional backend.
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

__all__ = ["PG_URL_ENV", "fresh_pg_database", "require_pg_url", "worker_tag"]

PG_URL_ENV = "MEMOS_FEEDBACK_TEST_PG_URL"
HINT = f"PostgreSQL tests need {PG_URL_ENV}; run `make test-postgres` to start a throwaway server"


@functools.cache
def _reachable(url: str) -> str | None:
    """None when the server answers, else the reason it does not."""
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return None
    except Exception as exc:  # any driver or network error: report it
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    finally:
        engine.dispose()


def require_pg_url() -> str:
    url = os.environ.get(PG_URL_ENV)
    problem = HINT if not url else _reachable(url)
    if problem is None and url:
        return url
    message = f"PostgreSQL unavailable: {problem}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def worker_tag() -> str:
    """``gw0_`` under a pytest-xdist worker, empty in a plain run (a safe identifier either way)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return f"{worker}_" if worker.isalnum() else ""


@contextmanager
def fresh_pg_database() -> Iterator[str]:
    """Create an empty database on the test server; drop it afterwards."""
    base = make_url(require_pg_url())
    name = f"memos_test_{worker_tag()}{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
