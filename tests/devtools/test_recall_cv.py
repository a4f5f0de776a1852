"""``eval recall --cv domain``: the text gate, the problem gate fitted without each domain, the curve."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from memos_feedback.devtools.eval import main as eval_main
from memos_feedback.devtools.recall_cv import CURVE, cross_validate
from memos_feedback.devtools.recall_eval import evaluate_recall, load_cases
from memos_feedback.devtools.recall_gate import THRESHOLDS, Served, choose_threshold, kept, rates
from memos_feedback.recall import RecallConfig
from memos_feedback.recall.problem_gate import FEATURES, GateModel
from memos_feedback.store import open_store

DATA = Path(__file__).parents[1] / "data"


def _domain(tmp_path: Path, source: Path, n: int) -> Path:
    lines = source.read_text(encoding="utf-8").splitlines()[:n]
    path = tmp_path / source.name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_text_gate_row_is_what_eval_recall_scores_without_the_problem_gate(tmp_path: Path) -> None:
    path = _domain(tmp_path, DATA / "recall" / "embedded_c.jsonl", 12)
    cases = load_cases(path)
    served = cross_validate([("embedded_c", cases)])["embedded_c"]
    with tempfile.TemporaryDirectory() as tmp, open_store(f"sqlite:///{tmp}/r.db") as store:
        direct = evaluate_recall(cases, store, config=RecallConfig(problem_gate_threshold=0.0))
    text = rates(served, None, 0.0)
    assert text["recall_at_5"] == direct.recall_at_5.value
    unrelated = [q for q in served if not q.relevant]
    injected = sum(1 for q in unrelated if q.own is not None and q.own in q.ids[:5])
    assert injected / len(unrelated) == direct.false_injection.value


# A model whose probability is the first feature (scaled): easy to reason about.
_ONE = GateModel(
    mean=(0.0,) * len(FEATURES),
    scale=(1.0,) * len(FEATURES),
    coef=(40.0,) + (0.0,) * (len(FEATURES) - 1),
    intercept=-20.0,
    threshold=0.5,
)


def _query(kind: str, relevant: bool, coverage: float, domain: str = "a") -> Served:
    row = (coverage,) + (0.0,) * (len(FEATURES) - 1)
    return Served(domain, kind, relevant, "own", ("own",), (row,))


def test_the_gate_keeps_what_reaches_its_threshold() -> None:
    queries = [
        _query("same-tool-new-context", True, 0.9),
        _query("cross-language", True, 0.3),
        _query("unrelated-near-miss", False, 0.4),
        _query("unrelated-far", False, 0.1),
    ]
    assert rates(queries, None, 0.0)["near_miss_injection"] == 1.0
    assert kept(queries[0], _ONE, 0.5) == ["own"] and kept(queries[2], _ONE, 0.5) == []
    got = rates(queries, _ONE, 0.5)
    assert got == {
        "recall_at_5": 0.5,
        "cross_language": 0.0,
        "near_miss_injection": 0.0,
        "far_injection": 0.0,
    }


def test_the_threshold_is_chosen_on_the_given_domains_only() -> None:
    """The lowest threshold whose macro near-miss injection on the given domains is within target."""
    strict = [_query("unrelated-near-miss", False, 0.52, "a"), _query("x", True, 0.9, "a")]
    loose = [_query("unrelated-near-miss", False, 0.45, "b"), _query("x", True, 0.9, "b")]
    p_strict, p_loose = _ONE.probability(strict[0].rows[0]), _ONE.probability(loose[0].rows[0])
    assert choose_threshold({"a": strict}, _ONE) == min(t for t in THRESHOLDS if t > p_strict)
    assert choose_threshold({"b": loose}, _ONE) == min(t for t in THRESHOLDS if t > p_loose)
    # Both: macro injection 0.5 between them, 0 above the higher one.
    assert choose_threshold({"a": strict, "b": loose}, _ONE) == choose_threshold({"a": strict}, _ONE)


def test_the_command_reports_macro_worst_and_the_fold_fitted_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _domain(tmp_path, DATA / "recall" / "embedded_c.jsonl", 8)
    b = _domain(tmp_path, DATA / "recall" / "mobile_apps.jsonl", 8)
    assert eval_main(["recall", "--cv", "domain", str(a), str(b), "--mode", "lexical", "--json"]) == 0
    [rep] = json.loads(capsys.readouterr().out)
    assert set(rep["domains"]) == {"embedded_c", "mobile_apps"}
    for table in ("text_gate", "fitted_without"):
        for key in ("recall_at_5", "near_miss_injection", "far_injection", "cross_language"):
            assert set(rep[table][key]) == {"macro", "worst", "worst_domain"}
    for row in rep["domains"].values():
        assert row["chosen_threshold"] in THRESHOLDS
        assert [p["threshold"] for p in row["curve"]] == list(CURVE)
        assert "shipped" not in row  # neither is a held-out domain
    assert eval_main(["recall", "--cv", "domain", str(a), str(b), "--mode", "lexical", "--curve"]) == 0
    out = capsys.readouterr().out
    assert "problem gate fitted on the other domains" in out and "curve of each domain's fold" in out
    assert eval_main(["recall", "--cv", "domain", str(a), "--mode", "lexical"]) == 2
    assert "at least two" in capsys.readouterr().err
