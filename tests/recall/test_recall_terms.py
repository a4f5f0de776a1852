"""Query terms across wording and language: stems, word-start matching, the Chinese glossary."""

from __future__ import annotations

import random
import tracemalloc

import pytest

from memos_feedback.recall import guidance_for
from memos_feedback.recall.glossary import GLOSSARY, gloss
from memos_feedback.recall.terms import MAX_TERMS, comparable, contains_term, glossed, query_terms, stem
from memos_feedback.store import Store
from tests.recall.test_recall_guidance import write  # one repair through run_repair


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("cancelled", "cancel"),
        ("canceling", "cancel"),
        ("refunds", "refund"),
        ("connections", "connect"),
        ("dependencies", "dependenc"),
        ("types", "type"),
        ("stripe", "stripe"),  # a final e stays: stripe is not strip
        ("status", "status"),  # not a plural
        ("access", "access"),
        ("timed", "timed"),  # too short to cut
        ("node", "node"),
        ("break-system-packages", "break-system-packages"),  # flags and identifiers as written
        ("py311", "py311"),
    ],
)
def test_stem_keeps_a_prefix_shared_by_the_word_forms(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_query_words_are_stemmed_so_other_forms_match() -> None:
    terms = query_terms("the cohort query keeps getting cancelled")
    assert "cancel" in terms.words and "cancelled" not in terms.words
    problem = comparable("ERROR: canceling statement due to statement timeout")
    assert contains_term(problem, "cancel")


def test_a_word_term_matches_only_at_the_start_of_a_word() -> None:
    assert contains_term("charge has already been refunded", "refund")
    assert not contains_term("charge has already been refunded", "fund")
    assert contains_term("fund refunded", "fund")  # the second hit is not needed, the first is a word
    assert contains_term("x-refund", "refund")  # punctuation starts a word
    assert contains_term("连接超时", "超时")  # Chinese has no spaces: anywhere


def test_contains_term_is_linear_on_hostile_text() -> None:
    # Every occurrence is inside a word: each is checked once, then skipped.
    assert not contains_term("xab" * 300_000, "ab")


def test_gloss_maps_simplified_and_traditional_words_to_english() -> None:
    assert gloss("退款请求超时了") == ("refund", "request", "timeout", "timed")
    assert gloss("報表走唯讀副本") == ("report", "read-only", "readonly", "replica")
    assert gloss("今天天气不错") == ()  # outside the vocabulary: no gloss
    assert gloss("pip install failed") == ()


def test_glossary_keys_are_chinese_words_of_two_to_four_characters() -> None:
    for key, english in GLOSSARY.items():
        assert 2 <= len(key) <= 4, key
        assert english and all(w.isascii() and w == w.lower() for w in english), key


def test_gloss_is_linear_on_a_long_chinese_text() -> None:
    text = "数据库连接超时" * 40_000  # 280k characters
    assert gloss(text) == ("database", "data", "connect", "connection", "timeout", "timed")


def test_glossed_appends_english_for_the_embedder() -> None:
    assert glossed("镜像太大") == "镜像太大\nimage large size"
    assert glossed("docker image too large") == "docker image too large"


def test_a_chinese_query_finds_an_english_repair_through_the_glossary(store: Store) -> None:
    rid = write(
        store,
        tool="http.request",
        context="retry the failed refunds from yesterday (POST /v1/refunds)",
        trace="HTTP 504 upstream request timeout",
        feedback="a refund request that timed out may still have gone through; "
        "resend it only with the same Idempotency-Key",
    )
    # In the caller's own words, in Chinese; nothing in it is written as in the repair.
    found = guidance_for(
        store,
        tool_id="http.request",
        context="补发昨天失败的退款",
        query="上次退款请求超时了，不知道成没成功，要不要重发？",
        project="shop",
    )
    assert [i.repair_id for i in found.items] == [rid]


def test_an_english_query_finds_a_chinese_repair_through_the_glossary(store: Store) -> None:
    rid = write(
        store,
        tool="psql",
        context="每月对账报表",
        trace="",
        feedback="报表这种大查询一律走只读副本，不要在主库上跑",
    )
    found = guidance_for(
        store,
        tool_id="psql",
        context="monthly revenue report",
        query="run the big report query on the primary database",
        project="shop",
    )
    assert [i.repair_id for i in found.items] == [rid]


def _random_cjk(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(n))


def test_a_long_chinese_query_keeps_its_first_terms_without_building_the_rest() -> None:
    # Every window distinct: a query that kept all of them before the cap
    # held ~600,000 strings for this one (the peak is what is asserted).
    text = _random_cjk(300_000, 1) + " pnpm install failed " + _random_cjk(1_000, 2)
    tracemalloc.start()
    try:
        terms = query_terms(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    head = text[:60]
    assert terms.short == tuple(head[i : i + 2] for i in range(MAX_TERMS))
    # The query's words come first, then its first windows, up to the cap.
    assert terms.words == ("pnpm", "install", "fail")
    assert terms.indexed == ("pnpm", "install", "fail", *(head[i : i + 3] for i in range(MAX_TERMS - 3)))
    # A few copies of the text (2 bytes a character: normalised, the CJK
    # run) and nothing per window: keeping every window took ~100 bytes a character.
    assert peak < 32 * len(text), peak
