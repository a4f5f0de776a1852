"""Floors on the independently written labelled sets in tests/data/.

``feedback_generalisation``, ``feedback_english_hard_phrasings``,
``feedback_phrasing_variety``, ``feedback_chinese_mixed`` and
``feedback_english_variety`` were used to tune the rules, so their floors
guard against regressions. ``feedback_holdout``,
``feedback_holdout_many_voices`` and ``feedback_holdout_families`` were never
used for tuning or training (only their aggregate figures were looked at,
and they vetoed rule deletions): their floors are set below the measured
figures and are the closest thing here to the hidden set. The learned tier
is trained on every other set (``devtools.labels.TRAINING_FILES``). See
tests/data/README.md and the set's own notes (HOLDOUT.md,
ENGLISH_HARD_PHRASINGS.md, PHRASING_VARIETY.md, HOLDOUT_MANY_VOICES.md,
CHINESE_MIXED.md, ENGLISH_VARIETY.md, HOLDOUT_FAMILIES.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memos_feedback.devtools.scoring import evaluate, load_labels

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize(
    ("name", "trigger", "macro_f1", "extraction"),
    [
        ("feedback_generalisation.jsonl", 0.97, 0.95, 0.85),
        ("feedback_english_hard_phrasings.jsonl", 0.97, 0.95, 0.85),
        ("feedback_phrasing_variety.jsonl", 0.98, 0.97, 0.95),  # tuned on; measured 1.000 / 1.000 / 0.992
        ("feedback_chinese_mixed.jsonl", 0.98, 0.97, 0.90),  # tuned on; measured 0.997 / 0.997 / 0.933
        # tuned on (fifth round); measured 0.993 / 0.979 / 0.824, untuned it scored 0.896 / 0.866 / 0.620
        ("feedback_english_variety.jsonl", 0.98, 0.96, 0.80),
        # Untouched hold-outs (never trained or tuned on; only aggregate figures read).
        # Rules alone measured 0.927 / 0.882 / 0.708; with the learned tier 0.960 / 0.931 / 0.761;
        # after issue 14's second round 0.970 / 0.937 / 0.788.
        ("feedback_holdout.jsonl", 0.95, 0.91, 0.74),
        # Rules alone measured 0.931 / 0.897 / 0.767; with the learned tier 0.959 / 0.934 / 0.825;
        # after the second round 0.966 / 0.936 / 0.850.
        ("feedback_holdout_many_voices.jsonl", 0.94, 0.91, 0.80),
        # Written for the second round; the code of 379cb25 scored 0.946 / 0.894 / 0.711,
        # after the round 0.970 / 0.919 / 0.727.
        ("feedback_holdout_families.jsonl", 0.95, 0.89, 0.69),
        # Trained on (second round, hand-written by family); 0.936 / 0.901 / 0.731 before training.
        ("feedback_families_more.jsonl", 0.96, 0.93, 0.72),
        # Trained on (hand-written by phrasing family); rules alone 0.840 / 0.856 / 0.753.
        ("feedback_families.jsonl", 0.96, 0.94, 0.79),
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
