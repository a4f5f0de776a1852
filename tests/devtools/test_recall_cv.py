"""``eval recall --cv domain``: recall scored leave one domain out, its curve and the chosen threshold."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from memos_feedback.devtools.eval import main as eval_main
from memos_feedback.devtools.recall_cv import (
    THRESHOLDS,
    DomainResult,
    QueryResult,
    choose_threshold,
    cross_validate,
    figures,
)
from memos_feedback.devtools.recall_eval import evaluate_recall, load_cases
from memos_feedback.store import open_store

DATA = Path(__file__).parents[1] / "data"


def _domain(tmp_path: Path, source: Path, n: int) -> Path:
    lines = source.read_text(encoding="utf-8").splitlines()[:n]
    path = tmp_path / source.name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_shipped_row_is_what_eval_recall_scores(tmp_path: Path) -> None:
    """The curve's first point is the shipped gate: the same recall@5 and injection as ``eval recall``."""
    path = _domain(tmp_path, DATA / "recall" / "embedded_c.jsonl", 12)
    cases = load_cases(path)
    [result] = cross_validate([("embedded_c", cases)])
    with tempfile.TemporaryDirectory() as tmp, open_store(f"sqlite:///{tmp}/r.db") as store:
        direct = evaluate_recall(cases, store)
    at_zero = result.at(0.0)
    assert at_zero.recall_at_5 == direct.recall_at_5.value
    unrelated = [q for q in result.queries if not q.relevant]
    injected = sum(1 for q in unrelated if q.own is not None and q.own in [r for r, _ in q.ranked][:5])
    assert injected / len(unrelated) == direct.false_injection.value


def _query(kind: str, relevant: bool, score: float) -> QueryResult:
    return QueryResult(kind, relevant, "own", (("own", score),))


def test_a_stricter_threshold_drops_low_scoring_items() -> None:
    queries = [
        _query("same-tool-new-context", True, 0.9),
        _query("cross-language", True, 0.3),
        _query("unrelated-near-miss", False, 0.4),
        _query("unrelated-far", False, 0.1),
    ]
    assert figures(queries, 0.0).near_miss_injection == 1.0
    high = figures(queries, 0.5)
    assert (high.recall_at_5, high.cross_language, high.near_miss_injection, high.far_injection) == (
        0.5,
        0.0,
        0.0,
        0.0,
    )


def test_the_threshold_is_chosen_on_the_other_domains_only() -> None:
    """The lowest threshold whose macro near-miss injection on the given domains is within target."""
    strict = DomainResult("a", 2, 2, [_query("unrelated-near-miss", False, 0.42), _query("x", True, 0.9)])
    loose = DomainResult("b", 2, 2, [_query("unrelated-near-miss", False, 0.12), _query("x", True, 0.9)])
    assert choose_threshold([strict]) == min(t for t in THRESHOLDS if t > 0.42)
    assert choose_threshold([loose]) == min(t for t in THRESHOLDS if t > 0.12)
    # Both: macro injection 0.5 above 0.12, 0 above 0.42 — within 0.15 only there.
    assert choose_threshold([strict, loose]) == choose_threshold([strict])


def test_the_command_reports_macro_and_worst(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _domain(tmp_path, DATA / "recall" / "embedded_c.jsonl", 4)
    b = _domain(tmp_path, DATA / "recall" / "mobile_apps.jsonl", 4)
    assert eval_main(["recall", "--cv", "domain", str(a), str(b), "--mode", "lexical", "--json"]) == 0
    [rep] = json.loads(capsys.readouterr().out)
    assert set(rep["domains"]) == {"embedded_c", "mobile_apps"}
    for key in ("recall_at_5", "near_miss_injection", "far_injection", "cross_language"):
        assert set(rep["shipped"][key]) == {"macro", "worst", "worst_domain"}
    for row in rep["domains"].values():
        assert row["chosen_threshold"] in THRESHOLDS
        assert len(row["curve"]) == len(THRESHOLDS)
    assert eval_main(["recall", "--cv", "domain", str(a), "--mode", "lexical"]) == 2
    assert "at least two" in capsys.readouterr().err
