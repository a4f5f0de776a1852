"""The text search: which of a query's terms select candidates, and the statement that finds them.

* SQLite — ``decision_repairs_fts`` (FTS5, trigram tokenizer), ``MATCH`` on
  the query's terms OR-ed together, plus the repairs written in the last
  second or so that wait to be indexed (the tail, ``store/search_index.py``),
  read and tested with ``instr`` directly;
* PostgreSQL — ``source_text ILIKE '%term%'`` OR-ed (the ``pg_trgm`` GIN
  index serves it);

on both, the matches with the most IDF weight of terms first
(``lexical_statement``). Only the rarer terms search (``search_terms``). A
term whose count (``frequencies``) just found the few repairs containing
it can be given as those ids instead (``search.read_candidates``'
``matched``): testing them costs less than searching for the term again.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Float,
    Integer,
    Select,
    String,
    and_,
    any_,
    bindparam,
    case,
    column,
    func,
    literal,
    or_,
    select,
    text,
)
from sqlalchemy.dialects import postgresql

from ..store.models import SQLITE_FTS_TABLE, DecisionRepairModel
from ..store.reads import in_list, list_param
from ..store.search_index import TAIL_SQL
from .candidates import LIMIT
from .eligibility import ELIGIBLE, Eligibility
from .frequencies import RARE_DF, Reader, idf, is_postgresql, like_pattern, term_expression

__all__ = [
    "MAX_SEARCH_TERMS",
    "fresh_counts",
    "lexical_candidate_ids",
    "lexical_params",
    "lexical_statement",
    "rare_cap",
    "search_terms",
]

M = DecisionRepairModel
# At most this many (the rarest) of a query's terms select candidates by text.
MAX_SEARCH_TERMS = 8
# The rare cap (``RARE_DF``) shrinks to 5 % of a small store, never below 20.
_RARE_SHARE = 20
_RARE_FLOOR = 20

# Unranked: FTS5's bm25 costs as much again as the trigram match itself
# (it counts every trigram's postings). The hits are few by construction —
# only rare terms search, and the limit covers their document frequencies —
# so ranking them after the join is cheap (``lexical_statement``). The tail
# (repairs not indexed yet, a few rows) joins them unfiltered:
# ``lexical_statement`` keeps the rows that contain a term, indexed or not.
_FTS_HITS = (
    text(
        f"SELECT repair_id, doc FROM (SELECT repair_id, doc FROM {SQLITE_FTS_TABLE} "
        f"WHERE {SQLITE_FTS_TABLE} MATCH :match LIMIT :fts_limit) UNION ALL {TAIL_SQL}"
    )
    .columns(column("repair_id", String), column("doc", String))
    .subquery("hits")
)
# The search reads at most this many matches (before eligibility).
_FTS_MAX = 2_000


def rare_cap(total: int | None) -> int:
    """A term in this many repairs or more selects no candidate by text (``lexical_candidate_ids``)."""
    return RARE_DF if total is None else max(_RARE_FLOOR, min(RARE_DF, total // _RARE_SHARE))


def search_terms(
    terms: Sequence[str], frequencies: Mapping[str, int] | None = None, total: int | None = None
) -> list[str]:
    """The terms that select candidates by text (``lexical_candidate_ids`` says which)."""
    cap = rare_cap(total)
    rare = [t for t in terms if len(t) >= 3 and (frequencies is None or frequencies.get(t, 0) < cap)]
    if frequencies is not None and len(rare) > MAX_SEARCH_TERMS:
        # The rarest say the most and have the shortest postings: the
        # search's cost follows the terms it ORs, so it takes only those.
        rare = sorted(rare, key=lambda t: frequencies.get(t, 0))[:MAX_SEARCH_TERMS]
    return rare


def lexical_candidate_ids(
    reader: Reader,
    terms: Sequence[str],
    where: Eligibility,
    limit: int,
    frequencies: Mapping[str, int] | None = None,
    total: int | None = None,
) -> list[str]:
    """Eligible repairs matching the query's rarer terms (3+ characters each), best first.

    Ranked by the IDF weight of the terms matched over the terms fewer
    than ``RARE_DF`` repairs (or 5 % of ``total``, at least 20) contain — the
    ``MAX_SEARCH_TERMS`` rarest of them — so the work follows those terms'
    postings, not the table. A query whose every term is common selects no
    candidate by text: such terms cannot tell a few hundred repairs apart,
    and candidates found by tool, context or embedding are still scored on
    them.
    """
    rare = search_terms(terms, frequencies, total)
    if not rare:
        return []
    pg = is_postgresql(reader)
    params = {**where.params(), **lexical_params(rare, pg, limit, frequencies, total), "lim": limit}
    return list(reader.scalars(lexical_statement(pg, len(rare)), params))


@functools.cache
def _fresh_count(i: int) -> tuple[Any, ColumnElement[int]]:
    """PostgreSQL: term ``:f{i}`` (an ILIKE pattern) counted inside another statement.

    A CTE of its matches (up to ``:df_cap``) and its count: what
    ``DocumentFrequencies.of`` would read in a round trip of its own. A CTE
    referenced more than once is materialised, so the trigram scan runs
    once. Built once per position: every statement refers to the same one.
    """
    pattern = bindparam(f"f{i}", type_=String)
    matches = select(M.id).where(M.source_text.ilike(pattern, escape="\\"))
    cte = matches.limit(bindparam("df_cap", type_=Integer)).cte(f"fresh{i}")
    return cte, select(func.count()).select_from(cte).scalar_subquery()


def fresh_counts(n: int) -> list[tuple[Any, ColumnElement[int]]]:
    """The first ``n`` positions' (CTE, count) pairs (``_fresh_count``), the same objects every time."""
    return [_fresh_count(i) for i in range(n)]


def _idf_of(count: ColumnElement[int]) -> ColumnElement[float]:
    """``idf`` in SQL, of a count in the statement (``:idf_n``: the total, at least 1)."""
    n = bindparam("idf_n", type_=Float)
    return cast(ColumnElement[float], func.ln(1.0 + n / func.greatest(count, 1)) / func.ln(1.0 + n))


@functools.cache
def lexical_statement(
    postgresql_dialect: bool, n_terms: int, by_ids: tuple[bool, ...] = (), fresh: int = 0
) -> Select[Any]:
    """The text search over ``n_terms`` terms, built once per (dialect, count, ``by_ids``, ``fresh``).

    Matches are ranked by the summed IDF weight (``:w0``…) of the terms they
    contain — the measure ``guidance_for`` scores by — then newest first.
    On SQLite the FTS5 index finds the matches and ``instr`` on the
    matched text (ASCII-case-folded by ``lower``; the terms are case-folded
    already) tells which terms each contains. On PostgreSQL, term ``i``
    with ``by_ids[i]`` is given as the ids its count found (module docstring),
    and ``fresh`` more terms are counted in the same statement
    (``fresh_counts``): each selects only when its count is under the rare
    cap (``:rare_cap``), weighted by the IDF of that count.
    """
    tests: list[ColumnElement[bool]]
    weights: list[ColumnElement[float]] = [bindparam(f"w{i}", type_=Float) for i in range(n_terms)]
    if postgresql_dialect:
        ids = by_ids or (False,) * n_terms
        tests = [
            M.id == any_(bindparam(f"t{i}", type_=postgresql.ARRAY(String)))
            if ids[i]
            else M.source_text.ilike(bindparam(f"t{i}", type_=String), escape="\\")
            for i in range(n_terms)
        ]
        for cte, count in fresh_counts(fresh):
            tests.append(and_(M.id.in_(select(cte.c.id)), count < bindparam("rare_cap", type_=Integer)))
            weights.append(_idf_of(count))
        stmt = select(M.id).where(or_(*tests), ELIGIBLE[True])
    elif by_ids:
        # SQLite, every term given as the ids its count found (never some of
        # them: ``search.read_candidates``): no text search at all.
        tests = [in_list(cast(ColumnElement[Any], M.id), f"t{i}", False) for i in range(n_terms)]
        stmt = select(M.id).where(or_(*tests), ELIGIBLE[False])
    else:
        terms = [bindparam(f"t{i}", type_=String) for i in range(n_terms)]
        tests = [func.instr(func.lower(_FTS_HITS.c.doc), t) > 0 for t in terms]
        stmt = select(M.id).join(_FTS_HITS, _FTS_HITS.c.repair_id == M.id).where(ELIGIBLE[False])
    weight: ColumnElement[float] = literal(0.0)
    for test, w in zip(tests, weights, strict=True):
        weight = weight + case((test, w), else_=0.0)
    if not postgresql_dialect and not by_ids:
        # A match of a term's rarest trigrams that lacks the term itself is not a match.
        stmt = stmt.where(or_(*tests))
    return stmt.order_by(weight.desc(), M.ts.desc()).limit(LIMIT)


def lexical_params(
    rare: Sequence[str],
    postgresql_dialect: bool,
    limit: int,
    frequencies: Mapping[str, int] | None,
    total: int | None,
    matched: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    n = max(total or 0, 1)
    params: dict[str, Any] = {
        f"w{i}": idf(frequencies.get(t, 0), n) if frequencies is not None else 1.0 for i, t in enumerate(rare)
    }
    if postgresql_dialect:
        ids = matched or {}
        params.update({f"t{i}": list(ids[t]) if t in ids else like_pattern(t) for i, t in enumerate(rare)})
        return params
    if matched:  # every term by id (``search.read_candidates``)
        params.update({f"t{i}": list_param(matched[t], False) for i, t in enumerate(rare)})
        return params
    # Every match of the rare terms when their frequencies are known (each
    # is below the rare cap), else four per candidate wanted.
    known = sum(frequencies.get(t, 0) for t in rare) if frequencies is not None else 0
    params.update({f"t{i}": t for i, t in enumerate(rare)})
    params["match"] = " OR ".join(term_expression(t) for t in rare)
    # A term's trigrams match a little more than the term does: room for that.
    params["fts_limit"] = min(max(limit * 4, 2 * known), _FTS_MAX)
    return params
