"""The built wheel carries the migrations and migrates a database on its own.

The wheel is built from the checkout, unzipped, and imported in a fresh
interpreter whose ``PYTHONPATH`` puts the unzipped copy before the editable
install, from a working directory outside the checkout: the migrations that
run are the packaged ones, never the repository's ``migrations/`` folder.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from memos_feedback.store.migrate import head_revision

ROOT = Path(__file__).resolve().parents[1]

REQUIRED = (
    "memos_feedback/__init__.py",
    "memos_feedback/py.typed",
    "memos_feedback/migrations/env.py",
    "memos_feedback/migrations/script.py.mako",
    "memos_feedback/migrations/versions/0001_initial.py",
    # The web UI's page ships in the package: serve needs no build step.
    "memos_feedback/web/static/index.html",
    "memos_feedback/web/static/app.js",
    "memos_feedback/web/static/style.css",
    "memos_feedback/web/static/favicon.svg",
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("hatchling") is None:
        pytest.fail(
            "cannot build the wheel: the build backend 'hatchling' is not installed in this "
            "environment; install the dev extra (`pip install -e '.[dev]'`, done by `make venv`)",
            pytrace=False,
        )
    out = str(tmp_path_factory.mktemp("wheel"))
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", out, "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0:
        pytest.fail(f"building the wheel failed:\n{result.stdout}\n{result.stderr}", pytrace=False)
    wheels = list(Path(out).glob("memos_feedback-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def unzipped(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(target)
    return target


def test_wheel_contains_the_migrations_and_py_typed(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    missing = [name for name in REQUIRED if name not in names]
    assert not missing, f"missing from {wheel.name}: {missing}"
    # every revision of the checkout ships, and nothing else under versions/
    checkout = {p.name for p in (ROOT / "migrations" / "versions").glob("*.py")}
    shipped = {
        n.rsplit("/", 1)[1]
        for n in names
        if n.startswith("memos_feedback/migrations/versions/") and n.endswith(".py")
    }
    assert shipped == checkout
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    # the repository's own tooling files stay out of the package
    assert not any(n.startswith(("tests/", "migrations/")) for n in names)


def test_wheel_carries_the_license(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        licenses = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert len(licenses) == 1, names
        assert zf.read(licenses[0]) == (ROOT / "LICENSE").read_bytes()
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License: MIT" in metadata.splitlines()


PROBE = textwrap.dedent(
    """
    import json, sys
    import memos_feedback
    from memos_feedback.store import open_store
    from memos_feedback.store.migrate import head_revision, migrations_dir

    with open_store(sys.argv[1]) as store:
        revision = store.revision()
        row = store.traces.add(session_id="s")
        assert store.traces.get(row.id) == row
    print(json.dumps({
        "file": memos_feedback.__file__,
        "migrations": str(migrations_dir()),
        "revision": revision,
        "head": head_revision(),
    }))
    """
)


def test_installed_wheel_migrates_a_fresh_database(unzipped: Path, tmp_path: Path) -> None:
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOS_FEEDBACK_")}
    env["PYTHONPATH"] = str(unzipped)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    db = tmp_path / "fresh.db"
    result = subprocess.run(
        [sys.executable, "-c", PROBE, f"sqlite:///{db}"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout.strip().splitlines()[-1])
    assert Path(info["file"]).resolve().is_relative_to(unzipped.resolve())
    migrations = Path(info["migrations"]).resolve()
    assert migrations == (unzipped / "memos_feedback" / "migrations").resolve()
    assert not migrations.is_relative_to(ROOT)
    assert info["revision"] == info["head"] == head_revision()
    assert db.is_file()


RUNTIME_DISTS = {
    "langchain": "langchain",
    "openai-agents": "openai-agents",
    "claude-agent": "claude-agent-sdk",
}


def test_agent_runtimes_are_only_extras_and_never_imported(
    wheel: Path, unzipped: Path, tmp_path: Path
) -> None:
    """``pip install memos-feedback`` pulls no agent runtime, and importing it loads none."""
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = zf.read(name).decode()
    requires = [
        line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")
    ]
    for extra, dist in RUNTIME_DISTS.items():
        lines = [r for r in requires if r.lower().startswith(dist)]
        assert lines, f"{dist} is not declared"
        assert all(f"extra == '{extra}'" in r or f'extra == "{extra}"' in r for r in lines), lines
    assert not any(r.lower().startswith("langchain-core") and "extra" not in r for r in requires)
    probe = textwrap.dedent(
        """
        import sys
        import memos_feedback, memos_feedback.adapters
        print(sorted(m for m in sys.modules if m.split(".")[0] in
                     ("langchain", "langchain_core", "langgraph", "agents", "claude_agent_sdk")))
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOS_FEEDBACK_")}
    env["PYTHONPATH"] = str(unzipped)
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
