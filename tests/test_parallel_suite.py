"""The suite runs on two pytest-xdist workers under `make test` (issue 46's 12-minute budget).

What makes that safe is checked here where it can be: the workers share one
PostgreSQL server and never a database, and a fresh machine (`make venv`)
installs what `make test` asks for.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.support.pg import fresh_pg_database, worker_tag

ROOT = Path(__file__).resolve().parents[1]


def test_make_test_runs_on_workers_that_the_dev_extra_installs() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^test: lint\n\t(.+)$", makefile, re.M)
    assert recipe is not None and "-n $(TEST_WORKERS)" in recipe.group(1)
    assert re.search(r"^TEST_WORKERS \?= 2$", makefile, re.M)
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]["dev"]
    assert any(re.match(r"pytest-xdist\b", req) for req in dev), dev


def test_the_worker_tag_is_the_worker_id_or_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    assert worker_tag() == "gw1_"
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert worker_tag() == ""
    # It goes into a quoted identifier: anything but letters and digits is left out.
    monkeypatch.setenv("PYTEST_XDIST_WORKER", 'gw0"; DROP DATABASE x; --')
    assert worker_tag() == ""


@pytest.mark.postgres
def test_two_workers_get_databases_of_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    names = []
    for worker in ("gw0", "gw1", "gw1"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        with fresh_pg_database() as url:
            names.append(make_url(url).database or "")
    assert names[0].startswith("memos_test_gw0_") and names[1].startswith("memos_test_gw1_")
    assert len(set(names)) == 3, names


def _omp_threads_in_a_worker(**env: str) -> str:
    """OMP_NUM_THREADS after the suite's conftest loads in a process with ``env``."""
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "PYTEST_XDIST_WORKER_COUNT")}
    code = "import os, tests.conftest; print(os.environ.get('OMP_NUM_THREADS', '-'))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, "PYTHONPATH": str(ROOT), **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return out.stdout.strip()


def test_each_worker_gets_its_share_of_the_cores_for_openmp() -> None:
    """Two workers' OpenMP pools (the e5 engine, torch) each sized for all cores starved each other."""
    cores = os.cpu_count() or 1
    assert _omp_threads_in_a_worker(PYTEST_XDIST_WORKER_COUNT="2") == str(max(1, cores // 2))
    assert _omp_threads_in_a_worker(PYTEST_XDIST_WORKER_COUNT=str(cores * 4)) == "1"
    assert _omp_threads_in_a_worker() == "-"  # one process: the engines' own default
    assert _omp_threads_in_a_worker(PYTEST_XDIST_WORKER_COUNT="2", OMP_NUM_THREADS="3") == "3"
