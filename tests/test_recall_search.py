"""recall/search.py: the text search ranks matches by the IDF weight of the terms they contain."""

from __future__ import annotations

from sqlalchemy import insert

from memos_feedback.recall.search import DocumentFrequencies, eligible, idf, lexical_candidate_ids
from memos_feedback.store import Store
from memos_feedback.store.models import DecisionRepairModel
from memos_feedback.store.rows import now_ms
from tests.support.rows import repair_row

DAY = 24 * 3_600_000


def _insert(store: Store, texts: list[str]) -> list[str]:
    now = now_ms()
    # The later a text in the list, the newer: recency must not decide the order.
    rows = [
        repair_row(i, ts=now - (len(texts) - i) * 1_000, source_text=text) for i, text in enumerate(texts)
    ]
    with store.session(write=True) as s:
        s.execute(insert(DecisionRepairModel), rows)
    return [str(r["id"]) for r in rows]


def test_the_rarest_terms_matched_rank_first_then_the_newest(store: Store) -> None:
    # "zebracode" is in 2 repairs, "walrusflag" in 6, both in 1; 40 other repairs pad the total.
    texts = (
        ["avoid: Zebracode walrusflag together"]
        + ["avoid: zebracode alone"]
        + [f"avoid: walrusflag number {i}" for i in range(5)]
        + [f"avoid: unrelated thing {i}" for i in range(40)]
    )
    ids = _insert(store, texts)
    with store.connection() as s:
        frequencies = DocumentFrequencies()
        total = frequencies.total(store, s)
        terms = ("walrusflag", "zebracode")
        dfs = frequencies.of(store, s, terms)
        assert (dfs["zebracode"], dfs["walrusflag"]) == (2, 6)
        assert idf(2, total) > idf(6, total)
        where = eligible(None, now_ms(), 7 * DAY)
        ranked = lexical_candidate_ids(s, terms, where, 7, dfs, total)
        top3 = lexical_candidate_ids(s, terms, where, 3, dfs, total)
    # Both terms, then the rarer one alone, then the commoner one newest first.
    assert ranked == [ids[0], ids[1], *reversed(ids[2:7])]
    assert top3 == ranked[:3]
