"""recall/search.py and recall/frequencies.py: matches ranked by the IDF weight of the terms they hold."""

from __future__ import annotations

from sqlalchemy import event, insert

from memos_feedback.outcomes import counts_for
from memos_feedback.outcomes.states import CONTRADICTED, HELD, RECURRED
from memos_feedback.recall import Guidance, guidance_for
from memos_feedback.recall.eligibility import eligible
from memos_feedback.recall.frequencies import RARE_DF, DocumentFrequencies, idf, term_expression
from memos_feedback.recall.lexical import MAX_SEARCH_TERMS, lexical_candidate_ids
from memos_feedback.recall.search import read_candidates
from memos_feedback.store import Store
from memos_feedback.store.models import DecisionRepairModel, RepairOutcomeModel
from memos_feedback.store.search import (
    fetch_candidates,
    same_context_candidate_ids,
    same_tool_candidate_ids,
)
from memos_feedback.types import new_id, now_ms
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


def _search_one_term(store: Store, term: str) -> tuple[int, str, list[str]]:
    """``term``'s count, the FTS5 expression it is matched by (SQLite), and the repairs found."""
    with store.connection() as s:
        frequencies = DocumentFrequencies()
        total = frequencies.total(store, s)
        dfs = frequencies.of(store, s, (term,))
        found = lexical_candidate_ids(s, (term,), eligible(None, now_ms(), 7 * DAY), 10, dfs, total)
    return dfs[term], term_expression(term), found


def test_a_long_term_found_by_its_rarest_trigrams_is_found_exactly_as_by_its_phrase(store: Store) -> None:
    # "bundle_v4123": its trigrams "412" and "123" are rarer than "bun" and
    # "dle" (padding), and three repairs hold every trigram of the term but
    # not the term itself.
    texts = (
        ["avoid: bundle_v4123 failed", "avoid: BUNDLE_V4123 again"]
        + ["avoid: bundle_v4 then v4123 and 123 e_v41 4123"] * 3
        + [f"avoid: bundle pipeline {i} handle" for i in range(30)]
    )
    ids = _insert(store, texts)
    count, expression, found = _search_one_term(store, "bundle_v4123")
    assert count == 2
    if store.engine.dialect.name == "sqlite":
        # Matched by AND-ed trigrams (rarest first), not as a phrase.
        assert expression.startswith('("') and " AND " in expression and "bun" not in expression
    assert sorted(found) == sorted(ids[:2])


def test_a_common_trigram_is_left_out_of_a_long_terms_match(store: Store) -> None:
    # "orders_api_206": every trigram but "_20" and "206" is in each padding
    # repair (past the trigram count's cap), so only those two are AND-ed,
    # not a common third; the matches are still exactly the repairs holding
    # the whole term.
    texts = ["avoid: orders_api_206 failed", "avoid: Orders_API_206 again", "avoid: api_20 and 206 apart"]
    texts += [f"avoid: orders_api_2{i} pipeline" for i in range(300, 560)]
    ids = _insert(store, texts)
    count, expression, found = _search_one_term(store, "orders_api_206")
    assert count == 2
    if store.engine.dialect.name == "sqlite":
        assert expression in ('("206" AND "_20")', '("_20" AND "206")'), expression
    assert sorted(found) == sorted(ids[:2])


def test_recall_reads_plan_once_and_nothing_else_does(store: Store) -> None:
    # PostgreSQL: recall's read (Store.reading) runs on a pool of its own,
    # autocommit (no BEGIN/COMMIT round trips) with generic plans; the
    # store's other connections keep PostgreSQL's default, and a store made
    # without that pool sets it for the read's transaction only. SQLite:
    # one transaction, nothing to set.
    pg = store.dialect == "postgresql"
    where = eligible(None, now_ms(), DAY)
    with store.reading() as conn:
        assert lexical_candidate_ids(conn, ["zebracode"], where, 5) == []
        if pg:
            assert conn.exec_driver_sql("SHOW plan_cache_mode").scalar() == "force_generic_plan"
            from psycopg.pq import TransactionStatus

            raw = conn.connection.driver_connection
            assert raw is not None and raw.info.transaction_status == TransactionStatus.IDLE
        else:
            assert conn.in_transaction()
    with store.connection() as conn:
        if pg:
            assert conn.exec_driver_sql("SHOW plan_cache_mode").scalar() == "auto"
    bare = Store(store.engine, store.url)  # no recall pool: the setting lasts as long as the read
    with bare.reading() as conn:
        assert conn.in_transaction()
        if pg:
            assert conn.exec_driver_sql("SHOW plan_cache_mode").scalar() == "force_generic_plan"
        assert lexical_candidate_ids(conn, ["zebracode"], where, 5) == []
    with bare.connection() as conn:
        if pg:
            assert conn.exec_driver_sql("SHOW plan_cache_mode").scalar() == "auto"
    bare.close()  # its thread (SQLite); the engine it shares is disposed, and reconnects when used


def test_every_source_in_one_statement_reads_each_repair_once_as_the_separate_reads_do(store: Store) -> None:
    # Each source reads its rows whole, so a repair that several sources find
    # (here: by text, by its context, by its tool and by id) comes back from
    # each; read_candidates keeps one, in id order, and the result is what
    # the separate reads select, rejected repairs never among them.
    now = now_ms()
    rows = [
        repair_row(
            i,
            ts=now - i * 1_000,
            tool_id="npm.install" if i % 2 else "pip.install",
            context_hash="ctx-shared" if i < 4 else f"ctx-{i}",
            source_text=f"avoid: {'quokkaflag ' if i % 3 == 0 else ''}error number {i}",
            rejected=i == 6,
        )
        for i in range(30)
    ]
    with store.session(write=True) as s:
        s.execute(insert(DecisionRepairModel), rows)
    ids = [str(r["id"]) for r in rows]
    vector_ids = [ids[0], ids[3], ids[6], ids[9], ids[20]]
    with store.connection() as s:
        frequencies = DocumentFrequencies()
        total = frequencies.total(store, s)
        dfs = frequencies.of(store, s, ("quokkaflag",))
        where = eligible(None, now, 7 * DAY)
        read = read_candidates(
            s,
            where,
            8,
            terms=("quokkaflag",),
            frequencies=dfs,
            total=total,
            context_hash="ctx-shared",
            tool_id="npm.install",
            vector_ids=vector_ids,
        ).rows
        separate = (
            lexical_candidate_ids(s, ("quokkaflag",), where, 8, dfs, total)
            + same_context_candidate_ids(s, "ctx-shared", where, 8)
            + same_tool_candidate_ids(s, "npm.install", where, 8)
            + vector_ids
        )
        expected = sorted(fetch_candidates(s, separate, where), key=lambda c: c.id)
    assert len(separate) > len(set(separate))  # the sources overlap
    assert read == expected
    assert [c.id for c in read] == sorted(set(c.id for c in read))
    assert ids[6] not in {c.id for c in read} and ids[0] in {c.id for c in read}


def test_terms_counted_just_now_are_searched_by_the_ids_their_count_found(store: Store) -> None:
    # A term's count also returns its ids when they are fewer than RARE_DF,
    # and the search then tests the ids instead of searching for the term
    # again — the same candidates, in the same order. A common term brings
    # no ids; a term nothing contains brings none to look for. (SQLite
    # searches by id only when every rare term was just counted: the
    # "mixed" read below searches by text there.)
    texts = (
        ["avoid: orders_api_417 timeout", "avoid: ORDERS_API_417 again, otterglyph"]
        + ["avoid: otterglyph alone"]
        + [f"avoid: common word {i}" for i in range(RARE_DF + 5)]
        + ["avoid: walrusflag once"]
    )
    ids = _insert(store, texts)
    terms = ("orders_api_417", "otterglyph", "word", "nowherefound")
    with store.connection() as s:
        frequencies = DocumentFrequencies()
        total = frequencies.total(store, s)
        found: dict[str, list[str]] = {}
        dfs = frequencies.of(store, s, terms, found)
        where = eligible(None, now_ms(), 7 * DAY)
        by_ids = read_candidates(s, where, 10, terms=terms, frequencies=dfs, total=total, matched=found).rows
        by_text = read_candidates(s, where, 10, terms=terms, frequencies=dfs, total=total).rows
        # Counted already: nothing more to find. With one new term among
        # them, only that one is searched by id, the others by text.
        again: dict[str, list[str]] = {}
        assert frequencies.of(store, s, terms, again) == dfs and again == {}
        more = (*terms, "walrusflag")  # searched by id, so moved first
        dfs_more = frequencies.of(store, s, more, again)
        mixed = read_candidates(
            s, where, 10, terms=more, frequencies=dfs_more, total=total, matched=again
        ).rows
        mixed_by_text = read_candidates(s, where, 10, terms=more, frequencies=dfs_more, total=total).rows
    assert (dfs["orders_api_417"], dfs["otterglyph"], dfs["nowherefound"]) == (2, 2, 0)
    assert dfs["word"] > RARE_DF
    assert sorted(found) == ["nowherefound", "orders_api_417", "otterglyph"]
    assert sorted(found["orders_api_417"]) == sorted(ids[:2])
    assert sorted(found["otterglyph"]) == sorted(ids[1:3])
    assert found["nowherefound"] == []
    assert by_ids == by_text
    assert sorted(c.id for c in by_ids) == sorted(ids[:3])
    assert list(again) == ["walrusflag"]
    assert mixed == mixed_by_text
    assert sorted(c.id for c in mixed) == sorted([*ids[:3], ids[-1]])


def test_postgresql_reads_outcomes_and_newer_embeddings_with_the_candidates(store: Store) -> None:
    # One round trip on PostgreSQL: each row's outcome counts (what
    # counts_for would read) and whether a repair was embedded past an id
    # come with the rows. SQLite leaves both to the caller (None).
    first, second, third = _insert(
        store, ["avoid: yakbarn one", "avoid: yakbarn two", "avoid: yakbarn three"]
    )
    now = now_ms()
    kinds = [
        (first, HELD, now - 5),
        (first, HELD, now - 1),
        (first, RECURRED, now),
        (second, CONTRADICTED, now),
    ]
    outcomes = [
        dict(id=new_id("ro_"), served_id=new_id("sv_"), repair_id=r, session_id="s", kind=k, ts=ts)
        for r, k, ts in kinds
    ]
    with store.session(write=True) as s:
        s.execute(insert(RepairOutcomeModel), outcomes)
    where = eligible(None, now_ms(), DAY)
    with store.reading() as conn:
        frequencies = DocumentFrequencies()
        total = frequencies.total(store, conn)
        dfs = frequencies.of(store, conn, ["yakbarn"])
        asked = read_candidates(conn, where, 10, terms=["yakbarn"], frequencies=dfs, total=total)
        want = counts_for(conn, [first, second, third])
        model = "test-model"
        unasked = asked.newer_embedded
        no_newer = read_candidates(
            conn, where, 10, terms=["yakbarn"], frequencies=dfs, total=total, newer_than=(model, third)
        )
    assert sorted(c.id for c in asked.rows) == sorted([first, second, third])
    assert unasked is None
    if store.dialect != "postgresql":
        assert asked.outcomes is None and no_newer.newer_embedded is None
        return
    assert asked.outcomes == want
    assert want[first].held == 2 and want[first].last_held == now - 1 and want[second].contradicted == 1
    # Nothing embedded by that model at all: nothing newer.
    assert no_newer.newer_embedded is False
    with store.session(write=True) as s:
        s.execute(
            DecisionRepairModel.__table__.update()
            .where(DecisionRepairModel.id == second)
            .values(embedding=b"\0" * 8, embedding_model=model)
        )
    with store.reading() as conn:

        def ask(after: str, of: str = model) -> bool | None:
            got = read_candidates(
                conn, where, 10, terms=["yakbarn"], frequencies=dfs, total=total, newer_than=(of, after)
            )
            return got.newer_embedded

        assert (ask(""), ask(first), ask(second), ask(first, "another-model")) == (True, True, False, False)
        # No row, no answer: the caller must look for itself.
        empty = read_candidates(
            conn, where, 10, terms=["nothingmatches"], frequencies={}, total=total, newer_than=(model, "")
        )
        assert empty.rows == [] and empty.newer_embedded is None


def _traced_guidance(store: Store, query: str) -> tuple[Guidance, list[str]]:
    """``guidance_for(query)`` and the statements it ran on the recall engine."""
    engine = store.recall_engine or store.engine
    seen: list[str] = []

    def note(*args: object) -> None:
        seen.append(str(args[2]))

    event.listen(engine, "before_cursor_execute", note)
    try:
        return guidance_for(store, query=query), seen
    finally:
        event.remove(engine, "before_cursor_execute", note)


def test_postgresql_guidance_reads_in_one_statement_once_terms_are_counted(store: Store) -> None:
    # The candidates, their outcomes and (with embeddings) the check for
    # newer ones are one statement; on SQLite each is a read of its own.
    [wanted] = _insert(store, ["avoid: quokkaflag in deploy"])
    guidance_for(store, query="quokkaflag in deploy")  # counts the terms (cached for a minute)
    found, seen = _traced_guidance(store, "quokkaflag in deploy")
    assert [i.repair_id for i in found.items] == [wanted]
    if store.dialect == "postgresql":
        assert len(seen) == 1 and "repair_outcomes" in seen[0]


def test_postgresql_counts_new_terms_in_the_candidates_statement(store: Store) -> None:
    # Terms not counted yet are counted in the candidates' statement: the
    # same counts as DocumentFrequencies.of, and the same rows as when they
    # were counted first — a rare one searches, a common one (past the rare
    # cap) does not, one outside the query (a situation's) is only counted.
    # Too many to fold, and they are counted first. SQLite ignores them.
    many = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    texts = (
        ["avoid: orders_api_417 timeout", "avoid: ORDERS_API_417 again, otterglyph"]
        + ["avoid: otterglyph alone"]
        + [f"avoid: common word {i} {' '.join(many)}" for i in range(RARE_DF + 5)]
    )
    _insert(store, texts)
    query = ("orders_api_417", "otterglyph", "word")
    fresh = [*query, "deploy"]
    pg = store.dialect == "postgresql"
    with store.connection() as s:
        frequencies = DocumentFrequencies()
        total = frequencies.total(store, s)
        where = eligible(None, now_ms(), 7 * DAY)
        found: dict[str, list[str]] = {}
        counts = frequencies.of(store, s, [*fresh, *many], found)
        first = read_candidates(s, where, 10, terms=query, frequencies=counts, total=total, matched=found)
        # SQLite counts nothing here: it is given the counts.
        given = {} if pg else counts
        folded = read_candidates(s, where, 10, terms=query, frequencies=given, total=total, counting=fresh)
        unfolded = read_candidates(
            s, where, 10, terms=(*query, *many), frequencies=given, total=total, counting=[*fresh, *many]
        )
    assert len(first.rows) == 3 and counts["word"] > RARE_DF and counts["deploy"] == 0
    assert len(query) + len(many) > MAX_SEARCH_TERMS  # too many to fold
    assert folded.rows == first.rows and unfolded.rows == first.rows
    if pg:
        assert folded.counted == {t: counts[t] for t in fresh}
        assert unfolded.counted == counts
    else:
        assert folded.counted is None and unfolded.counted is None


def test_postgresql_guidance_counts_a_new_identifier_in_its_one_statement(store: Store) -> None:
    # A query's usual new term, an identifier not seen this minute, costs no
    # round trip of its own; the next call finds its count cached.
    from memos_feedback.recall.guidance import _df

    [wanted] = _insert(store, ["avoid: quokkaflag in deploy_7731"])
    guidance_for(store, query="quokkaflag in deploy")  # counts these terms (cached for a minute)
    found, seen = _traced_guidance(store, "quokkaflag in deploy_7731")
    assert [i.repair_id for i in found.items] == [wanted]
    with store.connection() as s:
        assert _df.of(store, s, ["deploy_7731"]) == {"deploy_7731": 1}
    if store.dialect == "postgresql":
        assert len(seen) == 1 and "fresh0" in seen[0]
