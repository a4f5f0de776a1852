"""The problem gate: a learned check, part by part, that a candidate is about the query's problem."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import pytest

from memos_feedback.devtools.recall_eval import load_cases
from memos_feedback.devtools.recall_gate import GATE_PATH, rates, served_queries, stale
from memos_feedback.errors import ConfigError
from memos_feedback.recall import RecallConfig, guidance_for
from memos_feedback.recall.problem_gate import (
    FEATURES,
    GateModel,
    QueryParts,
    features,
    repair_parts,
    shipped_model,
)
from memos_feedback.store import Store

DATA = Path(__file__).parents[1] / "data"


def test_the_shipped_weights_cover_the_features_and_were_fitted_on_the_current_data() -> None:
    data = json.loads(GATE_PATH.read_text(encoding="utf-8"))
    assert tuple(data["features"]) == FEATURES
    assert not stale(GATE_PATH), "retrain with: memos-feedback train --tier recall-gate"
    # The configured default is the threshold chosen on the training domains.
    assert RecallConfig().problem_gate_threshold == pytest.approx(data["threshold"])
    assert not set(data["held_out"]) & {Path(name).stem for name in data["trained_on"]}
    assert len(shipped_model().coef) == len(FEATURES)


@pytest.mark.parametrize(
    "change",
    [
        {"features": ["coverage"]},
        {"coef": [0.0]},
        {"mean": "abc"},
        {"intercept": None},
        {"threshold": "high"},
    ],
)
def test_weights_of_another_shape_are_a_config_error(change: dict[str, object]) -> None:
    data = {**shipped_model().to_json(), **change}
    with pytest.raises(ConfigError, match="problem_gate"):
        GateModel.from_json(data)
    without = shipped_model().to_json()
    del without["coef"]
    with pytest.raises(ConfigError, match="problem_gate"):
        GateModel.from_json(without)


def test_the_probability_is_bounded_on_extreme_inputs() -> None:
    model = GateModel(
        mean=(0.0,) * len(FEATURES),
        scale=(1.0,) * len(FEATURES),
        coef=(1e6,) * len(FEATURES),
        intercept=0.0,
        threshold=0.5,
    )
    assert model.probability((1e9,) * len(FEATURES)) == pytest.approx(1.0)
    assert model.probability((-1e9,) * len(FEATURES)) == pytest.approx(0.0, abs=1e-12)
    assert all(math.isfinite(model.probability((v,) * len(FEATURES))) for v in (0.0, 1.0, -1.0))


SOURCE = (
    "user: don't touch the engines field; run nvm use first\n"
    "do: Prefer: run nvm use in web/ first, .nvmrc pins node 20.11\n"
    "avoid: Never: edit engines.node in web/package.json\n"
    "error: ERR_PNPM_UNSUPPORTED_ENGINE Unsupported environment\n"
    "trace: expected node >=20.11 <21, got v22.3.0\n"
    "tool: shell.run\n"
    "context: pnpm install in web/"
)


def _named(x: tuple[float, ...]) -> dict[str, float]:
    return dict(zip(FEATURES, x, strict=True))


def test_the_repair_is_read_part_by_part() -> None:
    parts = repair_parts(SOURCE, "shell.run", "pnpm install in web/")
    assert parts.compared and not parts.cjk
    assert "20.11" in parts.prefers and "engines.node" in parts.avoids
    same = QueryParts.of("shell.run", "pnpm install in web/", "ERR_PNPM_UNSUPPORTED_ENGINE on node 22")
    x = _named(features(same, parts, exact=True, same_error=True))
    assert x["report"] == 1.0 and x["query_identifiers"] == 1.0 and x["conflict"] == 0.0
    assert x["error"] > 0 and x["exact"] == 1.0 and x["same_error"] == 1.0
    # Another error of the same tool: a conflict; the query already following the lesson's Prefer says so.
    other = QueryParts.of(
        "shell.run",
        "pnpm install in web/",
        "ran nvm use, node 20.11 is active; ERR_PNPM_OUTDATED_LOCKFILE now",
    )
    y = _named(features(other, parts, exact=True, same_error=False))
    assert y["conflict"] == 1.0 and y["prefer_in_query"] == 1.0 and y["avoid_in_query"] == 0.0
    # A Chinese query of this English lesson is another language; its shares are weighed apart.
    chinese = QueryParts.of(None, None, "pnpm 安装时报 ERR_PNPM_UNSUPPORTED_ENGINE，node 版本不对")
    z = _named(features(chinese, parts, exact=False, same_error=True))
    assert z["query_cjk"] == 1.0 and z["other_language"] == 1.0
    assert z["coverage_other_language"] == z["coverage"] > 0


def test_a_lesson_without_parts_to_compare_keeps_the_text_gates_answer(store: Store) -> None:
    store.repairs.insert(
        context_hash="h1",
        trigger="manual",
        preference="Prefer: pnpm",
        anti_pattern="Avoid: npm install",
    )
    assert not repair_parts("do: Prefer: pnpm\navoid: Avoid: npm install", None, None).compared
    query = "npm install keeps failing on the web app: should it be pnpm?"
    gated = guidance_for(store, query=query)
    off = RecallConfig(problem_gate_threshold=0.0)
    assert gated.items == guidance_for(store, query=query, config=off).items
    if store.engine.dialect.name == "sqlite":
        # (PostgreSQL searches the source text, which this row has none of.)
        assert [i.preference for i in gated.items] == ["Prefer: pnpm"]


def test_on_a_domain_it_was_fitted_on_it_halves_near_miss_injection_for_little_recall() -> None:
    """A regression guard, in sample: the figures of record are leave one domain out (``--cv domain``)."""
    cases = load_cases(DATA / "recall" / "security_operations.jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        served = served_queries("security_operations", cases, f"sqlite:///{tmp}/s.db", None, RecallConfig())
    text = rates(served, None, 0.0)
    gate = rates(served, shipped_model(), RecallConfig().problem_gate_threshold)
    assert text["near_miss_injection"] is not None and gate["near_miss_injection"] is not None
    assert text["recall_at_5"] is not None and gate["recall_at_5"] is not None
    assert gate["near_miss_injection"] <= text["near_miss_injection"] / 2
    assert gate["recall_at_5"] >= text["recall_at_5"] - 0.15


def test_served_with_the_gate_is_what_the_offline_gate_keeps(store: Store) -> None:
    """``guidance_for`` with the gate on serves what ``recall_gate.kept`` keeps of the gate-off list."""
    cases = load_cases(DATA / "recall_dev.jsonl")[:15]
    with tempfile.TemporaryDirectory() as tmp:
        served = served_queries("dev", cases, f"sqlite:///{tmp}/d.db", None, RecallConfig())
        from memos_feedback.devtools.recall_eval import evaluate_recall
        from memos_feedback.store import open_store

        with open_store(f"sqlite:///{tmp}/e.db") as other:
            direct = evaluate_recall(cases, other)
    offline = rates(served, shipped_model(), RecallConfig().problem_gate_threshold)
    assert offline["recall_at_5"] == direct.recall_at_5.value
