"""The lesson clause scorer: the rules propose each side's clauses, learned weights pick one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memos_feedback.devtools.clause_train import stale
from memos_feedback.devtools.eval import main as eval_main
from memos_feedback.synthesis.clause_scorer import FEATURES, WEIGHTS_PATH, candidate_features, pick, weights
from memos_feedback.synthesis.clauses import instruction_lines, side_candidates
from memos_feedback.text.lessons import without_instance

DATA = Path(__file__).resolve().parents[1] / "data"


def test_the_shipped_weights_cover_the_features_and_were_fitted_on_the_current_data() -> None:
    shipped = weights()
    assert set(shipped) == {"prefer", "avoid"}
    assert all(len(w) == len(FEATURES) for w in shipped.values())
    # `memos-feedback train --tier clauses` refits them when the corpus changes.
    assert not stale(WEIGHTS_PATH)


def test_candidates_keep_the_users_order_and_their_side() -> None:
    text = (
        "Never hand-edit the lockfile. If the resolver complains, run `poetry lock --no-update`, "
        "and keep the team's poetry version."
    )
    found = side_candidates(text)
    assert [c.clause for c in found["avoid"]] == ["Never hand-edit the lockfile."]
    assert len(found["prefer"]) >= 1
    assert all(len(row) == len(FEATURES) for row in candidate_features(found["prefer"], None))


def test_the_clause_naming_the_fix_outranks_a_general_remark() -> None:
    # Two prescriptions: a general one first, the concrete fix second.
    text = "Be careful with the cache. Use `npm ci --prefer-offline` instead of npm install on the runners."
    prefer, _ = instruction_lines(text)
    assert prefer is not None and "npm ci --prefer-offline" in prefer.line
    order = pick("prefer", side_candidates(text)["prefer"], None)
    assert order == sorted(order, key=lambda k: order.index(k))  # a permutation, best first
    assert sorted(order) == list(range(len(side_candidates(text)["prefer"])))


def test_eval_lessons_cv_domain_fits_on_the_others_and_scores_the_one_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = []
    for name in ("embedded_c", "mobile_apps"):
        sample = tmp_path / f"{name}.jsonl"
        lines = (DATA / "recall" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()[:12]
        sample.write_text("\n".join(lines) + "\n", encoding="utf-8")
        files.append(str(sample))
    assert eval_main(["lessons", "--cv", "domain", *files, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    for side in ("prefer", "avoid"):
        rows = report[side]["domains"]
        assert set(rows) == {"embedded_c", "mobile_apps"}
        for row in rows.values():
            assert row["cases"] > 0 and 0.0 <= row["learned"] <= row["ceiling"] <= 1.0
    assert eval_main(["lessons", "--cv", "domain", files[0]]) == 2
    assert "at least two domain files" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        (
            "Never: run black over the tree (as in black --line-length 120 .)",
            "Never: run black over the tree",
        ),
        (
            "Never: run find over the repo (as in find . -name '*.py' -exec ls {} \\; (slow))",
            "Never: run find over the repo",
        ),
        ("避免：直接扫 src/（例如 cppcheck --enable=all src/）", "避免：直接扫 src/"),
        ("Never: paper over it with a retry loop", "Never: paper over it with a retry loop"),
        ("Prefer: use (as in the docs) the preset", "Prefer: use (as in the docs) the preset"),
    ],
)
def test_recall_searches_the_rule_without_the_quoted_call(line: str, rule: str) -> None:
    # The call is the repair's situation again, matched apart: only the rule is searched.
    assert without_instance(line) == rule
