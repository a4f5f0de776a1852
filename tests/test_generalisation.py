"""Floors on the independently written labelled sets in tests/data/.

``feedback_extra`` and ``feedback_third`` were used to tune the rules, so
their floors guard against regressions. ``feedback_holdout`` was never used
for tuning (only its aggregate figures were looked at): its floor is set
below the measured figure and is the closest thing here to the hidden set.
See tests/data/README.md, HOLDOUT.md and THIRD.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memos_feedback.eval import evaluate, load_labels

DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize(
    ("name", "trigger", "macro_f1", "extraction"),
    [
        ("feedback_extra.jsonl", 0.97, 0.95, 0.85),
        ("feedback_third.jsonl", 0.97, 0.95, 0.85),
        ("feedback_holdout.jsonl", 0.90, 0.82, 0.62),  # measured 0.913 / 0.842 / 0.673
    ],
)
def test_independent_sets_stay_above_their_floors(
    name: str, trigger: float, macro_f1: float, extraction: float
) -> None:
    report = evaluate(load_labels(DATA / name))
    assert report.count >= 250
    assert report.trigger_accuracy >= trigger, report.trigger_accuracy
    assert report.macro_f1 >= macro_f1, report.macro_f1
    assert report.extraction_exact is not None and report.extraction_exact >= extraction
