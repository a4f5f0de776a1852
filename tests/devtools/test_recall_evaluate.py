"""recall/evaluate.py: ``python -m memos_feedback.eval recall`` scores only what it wrote itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memos_feedback.devtools.recall_eval import evaluate_recall, load_cases, main
from memos_feedback.errors import InvalidInputError
from memos_feedback.store import Store

DATA = Path(__file__).parents[1] / "data"


def _two_cases(tmp_path: Path) -> Path:
    lines = (DATA / "recall" / "web_shop.jsonl").read_text(encoding="utf-8").splitlines()[:2]
    path = tmp_path / "two.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _repairs(store: Store) -> int:
    return len(store.repairs.list(limit=1_000))


def test_a_database_is_scored_once_and_then_refused(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = _two_cases(tmp_path)
    assert main([str(cases), "--mode", "lexical", "--db", store.url, "--json"]) == 0
    [report] = json.loads(capsys.readouterr().out)
    assert (report["mode"], report["cases"], report["repairs_written"]) == ("lexical", 2, 2)
    written = _repairs(store)
    assert written == 2
    # A second run would rank its repairs against the first run's: refused, nothing written.
    assert main([str(cases), "--mode", "lexical", "--db", store.url]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: recall evaluation needs an empty database;") and "holds 2 repairs" in err
    assert _repairs(store) == written
    with pytest.raises(InvalidInputError, match="needs an empty database"):
        evaluate_recall(load_cases(cases), store)


def test_db_with_both_modes_is_an_error_not_one_mode_silently(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([str(_two_cases(tmp_path)), "--db", store.url])  # --mode defaults to both
    assert exited.value.code == 2
    assert "--db takes one mode" in capsys.readouterr().err
    assert _repairs(store) == 0


def _domains(tmp_path: Path) -> Path:
    """Three small domains cut from three of the corpus's files."""
    folder = tmp_path / "domains"
    folder.mkdir()
    for name in ("web_shop", "ml_training", "embedded_c"):
        lines = (DATA / "recall" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()[:4]
        (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_cv_by_domain_scores_each_domain_left_out_and_reports_macro_and_worst(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("sklearn")
    folder = _domains(tmp_path)
    assert main([str(folder), "--cv", "domain", "--mode", "lexical", "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert report["mode"] == "lexical"
    assert sorted(report["domains"]) == ["embedded_c", "ml_training", "web_shop"]
    recall = report["summary"]["recall@5"]
    values = [d["recall_at_5"]["value"] for d in report["domains"].values()]
    assert recall["macro"] == pytest.approx(sum(values) / 3, abs=1e-4)
    assert recall["worst"] == pytest.approx(min(values), abs=1e-4)
    assert recall["worst_domain"] in report["domains"]
    block = report["summary"]["items per unrelated query"]
    assert block["macro"] is not None and block["macro"] >= 0
    assert "kind unrelated-near-miss" in report["summary"]
    for d in report["domains"].values():
        assert d["far_empty"]["total"] >= 0 and d["mean_unrelated_items"] is not None


def test_cv_needs_a_directory_of_domains_and_a_db_template(tmp_path: Path) -> None:
    assert main([str(tmp_path), "--cv", "domain", "--mode", "lexical"]) == 2
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--cv", "domain", "--mode", "lexical", "--db", "sqlite:///x.db"])
