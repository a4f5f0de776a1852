"""``python -m benchmarks.loop`` meets the issue's acceptance on a short seeded run (no timing asserted)."""

from __future__ import annotations

import json

import pytest

from benchmarks import loop

pytestmark = pytest.mark.slow


def test_loop_halves_repeat_failures_and_retires_only_wrong_repairs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert loop.main(["--sessions", "40", "--seed", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    rates = report["repeat_failure_rate"]
    assert rates["with"] <= rates["without"] / 2
    wrong = report["wrong_repairs"]
    assert wrong and all(w["status"] in ("stale", "superseded") for w in wrong)
    assert all(w["recurrences_before_retired"] <= report["stale_after_recurrences"] for w in wrong)
    assert {w["how"] for w in wrong} == {"repair.stale", "repair.superseded"}  # both routes exercised
    assert report["right_repairs_retired"] == 0
