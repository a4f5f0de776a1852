"""The relevance gate's artefact: current with its data, reproduced by training, read as documented."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from memos_feedback.devtools import recall_train
from memos_feedback.errors import ConfigError
from memos_feedback.recall.gate import (
    FEATURES,
    GATE_PATH,
    GateModel,
    RelevanceGate,
    current_gate,
    shipped_gate,
    using_gate,
)

DATA = Path(__file__).parents[1] / "data" / "recall"


def _shipped() -> dict[str, object]:
    data: dict[str, object] = json.loads(GATE_PATH.read_text(encoding="utf-8"))
    return data


def test_the_shipped_artefact_is_current_with_the_recall_domains() -> None:
    shipped = _shipped()
    paths = sorted(DATA.glob("*.jsonl"))
    assert shipped["data_files"] == [p.name for p in paths]
    # Stale: the cases changed since the gate was trained; retrain with `memos-feedback train recall`.
    assert shipped["data_sha256"] == recall_train.data_sha256(paths)
    assert shipped["features"] == list(FEATURES)
    models = shipped["models"]
    assert isinstance(models, dict) and "lexical" in models
    for model in models.values():
        assert len(model["weights"]) == len(FEATURES)
        assert 0.0 < model["threshold"] < 1.0


def test_training_reproduces_the_shipped_lexical_model() -> None:
    pytest.importorskip("sklearn")
    fresh = recall_train.train_gate(DATA, [None])
    shipped = _shipped()["models"]
    assert isinstance(shipped, dict)
    old, new = shipped["lexical"], fresh["models"]["lexical"]
    pairs = zip(old["weights"] + [old["bias"]], new["weights"] + [new["bias"]], strict=True)
    worst = max(abs(a - b) for a, b in pairs)
    assert worst <= 1e-4, worst  # rounding to 6 significant digits
    assert abs(old["threshold"] - new["threshold"]) <= 1e-4


def test_the_probability_is_a_logistic_of_the_features_and_the_threshold_is_chosen_out_of_sample() -> None:
    model = GateModel(tuple(1.0 if i == 0 else 0.0 for i in range(len(FEATURES))), -0.5, 0.5)
    values = [0.0] * len(FEATURES)
    assert model.probability(values) == pytest.approx(1 / (1 + math.exp(0.5)))
    values[0] = 1.0
    assert model.probability(values) == pytest.approx(1 / (1 + math.exp(-0.5)))
    # 3 % of 100 unrelated queries may get their repair in: the threshold sits between the 3rd and 4th.
    probabilities: list[float | None] = [0.9, 0.8, 0.7, 0.6, 0.5] + [None] * 95
    assert recall_train.threshold_for(probabilities) == pytest.approx(0.65)
    assert recall_train.threshold_for([None] * 10) == 0.5


def test_an_unknown_embedding_model_is_gated_on_the_lexical_signals() -> None:
    gate = shipped_gate()
    lexical, reads = gate.model("some-served-model")
    assert lexical is gate.models["lexical"] and not reads
    for name in gate.models:
        if name.startswith("semantic:"):
            assert gate.model(name.removeprefix("semantic:")) == (gate.models[name], True)


def test_using_gate_swaps_the_gate_for_the_context_only_and_a_bad_artefact_is_a_config_error() -> None:
    open_gate = RelevanceGate({"lexical": GateModel((0.0,) * len(FEATURES), 0.0, 0.0)})
    with using_gate(open_gate):
        assert current_gate() is open_gate
    assert current_gate() is shipped_gate()
    with pytest.raises(ConfigError):
        RelevanceGate.from_dict({"format": 0, "features": [], "models": {}})
    with pytest.raises(ConfigError):
        RelevanceGate({})
