"""The UI in a real browser: Debian's chromium driven by Playwright (from PyPI, no browser download).

Start ``serve`` on a temp database, trigger a repair from another process,
see it on the page within 2 s, click Validate, find the row validated in the
database; a repair whose text is markup shows as text and runs nothing.

Without chromium or Playwright the test skips with the reason on a
developer machine and fails under CI (``.ci/run`` installs both).
``MEMOS_FEEDBACK_SCREENSHOT=docs/feed.png`` saves the page's screenshot there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memos_feedback.events import RepairPersisted
from memos_feedback.feed import FeedStore
from memos_feedback.store import open_store
from tests.support.serve import serve_process

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
HOSTILE = '<img src=x onerror="window.__pwned=1">'
HOSTILE_ANTI = "<script>window.__pwned=2</script><b>bold?</b>"


def require_browser() -> None:
    problem = None
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problem = "Playwright is not installed (pip install playwright; never `playwright install`)"
    if problem is None and not os.path.exists(CHROMIUM):
        problem = f"no chromium at {CHROMIUM} (apt-get install chromium)"
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"browser test cannot run under CI: {problem}")
        pytest.skip(problem)


def seed(db_url: str) -> None:
    with open_store(db_url) as store:
        boundary = "Keep the service on the documented port."
        store.policies.add("deploy the service", boundary=boundary, source_episode_ids=["ep1"])
        good, bad = "ran the service on port 9000, healthy", "error: connection refused on port 8000"
        store.traces.add("s1", agent_text=good, value=0.9, episode_id="ep1")
        store.traces.add("s1", agent_text=bad, value=-0.8, episode_id="ep1")


def run_once_elsewhere(db_url: str) -> str:
    """Trigger a repair from another process; return its id once committed."""
    args = ["run-once", "--session", "s1", "--context-hash", "b0b0b0b0b0b0b0b0", "--tool", "config"]
    args += ["--text", "wrong port, it's 9000 not 8000"]
    done = subprocess.run(
        [sys.executable, "-m", "memos_feedback", "--db", db_url, *args],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("repair ") and first.endswith(" persisted"), done.stdout
    return first.split()[1]


def test_live_page_validate_and_untrusted_text(tmp_path: Path) -> None:
    require_browser()
    from playwright.sync_api import sync_playwright

    db_url = f"sqlite:///{tmp_path / 'ui.db'}"
    seed(db_url)
    dialogs: list[str] = []
    with serve_process(db_url) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(url)
            page.wait_for_selector("#status.live", timeout=15_000)

            repair_id = run_once_elsewhere(db_url)
            committed = time.monotonic()
            row = f'#repairs tr[data-id="{repair_id}"]'
            page.wait_for_selector(row, timeout=2_000)  # functional bound: shown within 2 s
            assert time.monotonic() - committed < 2.5
            page.wait_for_selector(f'#feed li:has-text("{repair_id}")', timeout=2_000)
            assert page.text_content(f"{row} .badge") == "new"

            page.click(f"{row} button.validate")
            page.wait_for_selector(f"{row} .badge.validated", timeout=5_000)
            with open_store(db_url) as store:
                assert store.repairs.get(repair_id).validated is True

            # Hostile text, written as the pipeline would (row plus its event).
            with open_store(db_url) as store:
                bad = store.repairs.insert(
                    context_hash="e71e71e71e71e71e",
                    trigger="user.correction",
                    preference=HOSTILE,
                    anti_pattern=HOSTILE_ANTI,
                    severity="warn",
                    confidence=0.42,
                    tool_id="<i>tool</i>",
                    session_id="s1",
                )
                FeedStore(store).log(
                    [RepairPersisted(context_hash="e71e71e71e71e71e", repair_id=bad.id, confidence=0.42,
                                     severity="warn")]
                )  # fmt: skip
            bad_row = f'#repairs tr[data-id="{bad.id}"]'
            page.wait_for_selector(bad_row, timeout=2_000)
            page.wait_for_timeout(300)  # give a would-be onerror handler its chance
            assert page.text_content(f"{bad_row} .pref .line") == HOSTILE
            assert page.text_content(f"{bad_row} .anti .line") == HOSTILE_ANTI
            assert page.locator("#repairs img, #repairs script, #repairs b").count() == 0
            pwned: Any = page.evaluate("window.__pwned")
            assert pwned is None, "repair text ran as code"
            assert dialogs == []

            page.wait_for_selector(".policy .block .pref", timeout=5_000)
            shot = Path(os.environ.get("MEMOS_FEEDBACK_SCREENSHOT") or tmp_path / "feed.png")
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
        finally:
            browser.close()


CONTEXT = '<b>deploy</b> the "api" service\nwith the lockfile'


def seed_outcomes(db_url: str) -> dict[str, str]:
    """Three repairs of three scopes and outcome states; the first served twice, held once, recurred once."""
    from sqlalchemy import text

    from memos_feedback.outcomes.ledger import write_batch
    from memos_feedback.outcomes.states import HELD, RECURRED, Served, Settlement

    with open_store(db_url) as store:
        ids: dict[str, str] = {}
        for name, pref, anti, project, status in (
            ("labelled", "Prefer: uv sync", "Avoid: pip install -r", "shop-a", None),
            ("bare", "use pnpm", "npm install", "<b>shop-b</b>&amp;", "stale"),
            ("global", "Prefer: the documented port", "Avoid: port 8000", None, "superseded"),
        ):
            row = store.repairs.insert(
                context_hash=f"{name:0<16}"[:16],
                trigger="user.correction",
                preference=pref,
                anti_pattern=anti,
                confidence=0.8,
                tool_id="shell",
                context=CONTEXT if name == "labelled" else None,
            )
            ids[name] = row.id
            with store.session(write=True) as s:  # as the worker and the outcome tracker store them
                s.execute(
                    text("UPDATE decision_repairs SET project = :p, status = :s WHERE id = :i"),
                    {"p": project, "s": status, "i": row.id},
                )
        served = [Served(f"sv_{i}", ids["labelled"], f"s{i}", "shell", None, 1_000 + i) for i in range(2)]
        settled = [
            Settlement(served[0].id, ids["labelled"], "s0", HELD, 2_000),
            Settlement(served[1].id, ids["labelled"], "s1", RECURRED, 2_001),
        ]
        write_batch(store, served, (), 0)
        write_batch(store, (), settled, 10)
    return ids


def test_page_labels_once_outcomes_context_project_filter_and_favicon(tmp_path: Path) -> None:
    require_browser()
    from playwright.sync_api import sync_playwright

    db_url = f"sqlite:///{tmp_path / 'ui.db'}"
    ids = seed_outcomes(db_url)
    rows = {name: f'#repairs tr[data-id="{repair_id}"]' for name, repair_id in ids.items()}
    with serve_process(db_url) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(url)
            for row in rows.values():
                page.wait_for_selector(row, timeout=15_000)

            # Labels: the repair's own "Prefer:" is the label; a bare line gets one. Never both.
            before: Any = page.evaluate(
                "[...document.querySelectorAll('#repairs .pref, #repairs .anti')]"
                ".map((n) => getComputedStyle(n, '::before').content)"
            )
            assert set(before) == {"none"}, "no label drawn by CSS on top of the text's own"
            assert page.inner_text(f"{rows['labelled']} .pref") == "Prefer: uv sync"
            assert page.inner_text(f"{rows['labelled']} .anti") == "Avoid: pip install -r"
            assert page.inner_text(f"{rows['bare']} .pref") == "Prefer: use pnpm"
            assert page.inner_text(f"{rows['bare']} .anti") == "Avoid: npm install"

            # Outcome status and counts, as a column of their own.
            headers = page.locator("#repairs thead th").all_inner_texts()
            assert "Outcome" in headers and "Context" in headers
            outcome = page.inner_text(f"{rows['labelled']} td.outcome")
            assert outcome.split("\n") == ["active", "served 2 · held 1 · recurred 1"]
            assert page.inner_text(f"{rows['bare']} td.outcome .badge") == "stale"
            assert page.inner_text(f"{rows['global']} td.outcome .badge") == "superseded"

            # The context as text (its markup shown, not rendered), its hash on hover.
            context = page.locator(f"{rows['labelled']} td.context")
            assert context.text_content() == CONTEXT
            assert context.get_attribute("title") == f"context hash {'labelled':0<16}"
            assert page.locator("#repairs td.context b").count() == 0
            assert page.inner_text(f"{rows['bare']} td.context") == "–"

            # The project filter: each project and the global scope, from the data.
            options = page.locator("#project-filter option").all_inner_texts()
            hostile_project = "<b>shop-b</b>&amp; (1)"
            assert options == ["all projects", hostile_project, "shop-a (1)", "global, no project (1)"]
            assert page.locator("#project-filter b").count() == 0, "a project name is text"
            for label, only in (
                ("<b>shop-b</b>&amp; (1)", "bare"),
                ("global, no project (1)", "global"),
                ("shop-a (1)", "labelled"),
            ):
                page.select_option("#project-filter", label=label)
                page.wait_for_function(
                    "(id) => { const r = [...document.querySelectorAll('#repairs tbody tr')];"
                    " return r.length === 1 && r[0].dataset.id === id; }",
                    arg=ids[only],
                    timeout=5_000,
                )
            page.select_option("#project-filter", label="all projects")
            page.wait_for_function(
                "() => document.querySelectorAll('#repairs tbody tr').length === 3", timeout=5_000
            )

            # A favicon, linked and served (CSP img-src 'self' allows it).
            icon: Any = page.evaluate(
                "fetch(document.querySelector('link[rel=icon]').href)"
                ".then(async (r) => [r.status, r.headers.get('content-type'), (await r.text()).slice(0, 4)])"
            )
            assert icon == [200, "image/svg+xml; charset=utf-8", "<svg"]
            shot = Path(os.environ.get("MEMOS_FEEDBACK_SCREENSHOT_COLUMNS") or tmp_path / "columns.png")
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()


# (preference, anti-pattern) as writers store them, and the lines the page must show for them.
LABEL_CASES = {
    "own-never": (("Always: pin the engines field", "Never: touch the engines field"),
                  ["Always: pin the engines field", "Never: touch the engines field"]),
    "doubled": (("prefer: Prefer: uv sync", "avoid: Never: force-push to main"),
                ["Prefer: uv sync", "Never: force-push to main"]),
    "no-pref": (("", "Avoid: web_search — failed with: timed out"),
                ["Avoid: web_search — failed with: timed out"]),
    "no-anti": (("use pnpm", "   "), ["Prefer: use pnpm"]),
    "shouting": (("PREFER: the lockfile", "DON'T: delete it"), ["Prefer: the lockfile", "Don't: delete it"]),
    "label-only": (("Prefer:", "npm install"), ["Avoid: npm install"]),
}  # fmt: skip


def test_page_labels_each_line_once_in_one_style_and_omits_an_empty_side(tmp_path: Path) -> None:
    require_browser()
    from playwright.sync_api import sync_playwright

    db_url = f"sqlite:///{tmp_path / 'ui.db'}"
    ids: dict[str, str] = {}
    with open_store(db_url) as store:
        for n, (name, ((pref, anti), _)) in enumerate(LABEL_CASES.items()):
            row = store.repairs.insert(
                context_hash=f"{n:0>16}",
                trigger="failure-burst",
                preference=pref,
                anti_pattern=anti,
                confidence=0.5,
                tool_id="shell",
            )
            ids[name] = row.id
    with serve_process(db_url) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(url)
            for name, (_, shown) in LABEL_CASES.items():
                cell = f'#repairs tr[data-id="{ids[name]}"] td.text'
                page.wait_for_selector(cell, timeout=15_000)
                lines = page.locator(f"{cell} > div").all_inner_texts()
                assert lines == shown, name
        finally:
            browser.close()
