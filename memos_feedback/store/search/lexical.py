"""The text search's statement: the eligible repairs holding the most IDF weight of a query's terms.

* SQLite — ``decision_repairs_fts`` (FTS5, trigram tokenizer), ``MATCH`` on
  the terms' expressions OR-ed together, plus the repairs written in the
  last second or so that wait to be indexed (the tail,
  ``store/search_index.py``), read and tested with ``instr`` directly;
* PostgreSQL — ``source_text ILIKE '%term%'`` OR-ed (the ``pg_trgm`` GIN
  index serves it).

Which terms search, and their weights, are recall's (``recall.lexical``):
they come here as a ``TextSearch`` of plain values. A term whose count just
found the few repairs containing it can be given as those ids instead
(``TextSearch.matched``): testing them costs less than searching again.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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

from ..handles import Executor
from ..models import SQLITE_FTS_TABLE, DecisionRepairModel
from ..reads import in_list, list_param
from ..search_index import TAIL_SQL
from .candidates import LIMIT
from .counts import like_pattern
from .eligibility import Eligibility, clause

__all__ = ["TextSearch", "fresh_counts", "lexical_ids", "lexical_params", "lexical_statement"]

M = DecisionRepairModel

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


@dataclass(frozen=True, slots=True)
class TextSearch:
    """The terms that select candidates by text, and what the statement needs to know of each."""

    terms: Sequence[str]
    # Each term's IDF weight (matches holding the most weight rank first).
    weights: Sequence[float]
    # SQLite: each term's FTS5 expression (``counts.fts_phrase``/``fts_all``).
    expressions: Sequence[str]
    # Terms given as the ids of every repair containing them; on SQLite
    # either every term or none.
    matched: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # How many matches the terms have together (their counts summed; 0: unknown).
    known: int = 0

    def by_ids(self) -> tuple[bool, ...]:
        """Which terms are given as ids (the statement's shape); () when none is."""
        return tuple(t in self.matched for t in self.terms) if self.matched else ()


@functools.cache
def _fresh_count(i: int) -> tuple[Any, ColumnElement[int]]:
    """PostgreSQL: term ``:f{i}`` (an ILIKE pattern) counted inside another statement.

    A CTE of its matches (up to ``:df_cap``) and its count: what
    ``counts.count_terms`` would read in a round trip of its own. A CTE
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
    """Recall's ``idf`` in SQL, of a count in the statement (``:idf_n``: the total, at least 1)."""
    n = bindparam("idf_n", type_=Float)
    return cast(ColumnElement[float], func.ln(1.0 + n / func.greatest(count, 1)) / func.ln(1.0 + n))


@functools.cache
def lexical_statement(
    postgresql_dialect: bool, n_terms: int, by_ids: tuple[bool, ...] = (), fresh: int = 0
) -> Select[Any]:
    """The text search over ``n_terms`` terms, built once per (dialect, count, ``by_ids``, ``fresh``).

    Matches are ranked by the summed IDF weight (``:w0``…) of the terms they
    contain — the measure recall scores by — then newest first. On SQLite
    the FTS5 index finds the matches and ``instr`` on the matched text
    (ASCII-case-folded by ``lower``; the terms are case-folded already)
    tells which terms each contains. On PostgreSQL, term ``i`` with
    ``by_ids[i]`` is given as the ids its count found (module docstring),
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
        stmt = select(M.id).where(or_(*tests), clause(True))
    elif by_ids:
        # SQLite, every term given as the ids its count found (never some of
        # them: ``TextSearch.matched``): no text search at all.
        tests = [in_list(cast(ColumnElement[Any], M.id), f"t{i}", False) for i in range(n_terms)]
        stmt = select(M.id).where(or_(*tests), clause(False))
    else:
        terms = [bindparam(f"t{i}", type_=String) for i in range(n_terms)]
        tests = [func.instr(func.lower(_FTS_HITS.c.doc), t) > 0 for t in terms]
        stmt = select(M.id).join(_FTS_HITS, _FTS_HITS.c.repair_id == M.id).where(clause(False))
    weight: ColumnElement[float] = literal(0.0)
    for test, w in zip(tests, weights, strict=True):
        weight = weight + case((test, w), else_=0.0)
    if not postgresql_dialect and not by_ids:
        # A match of a term's rarest trigrams that lacks the term itself is not a match.
        stmt = stmt.where(or_(*tests))
    return stmt.order_by(weight.desc(), M.ts.desc()).limit(LIMIT)


def lexical_params(search: TextSearch, postgresql_dialect: bool, limit: int) -> dict[str, Any]:
    """The parameters ``lexical_statement`` binds for ``search``, reading at most ``limit`` rows."""
    terms, matched = search.terms, search.matched
    params: dict[str, Any] = {f"w{i}": w for i, w in enumerate(search.weights)}
    if postgresql_dialect:
        params.update(
            {f"t{i}": list(matched[t]) if t in matched else like_pattern(t) for i, t in enumerate(terms)}
        )
        return params
    if matched:  # every term by id
        params.update({f"t{i}": list_param(matched[t], False) for i, t in enumerate(terms)})
        return params
    params.update({f"t{i}": t for i, t in enumerate(terms)})
    params["match"] = " OR ".join(search.expressions)
    # Every match of the terms when their counts are known (each is below the
    # rare cap), else four per candidate wanted; a term's trigrams match a
    # little more than the term does: room for that.
    params["fts_limit"] = min(max(limit * 4, 2 * search.known), _FTS_MAX)
    return params


def lexical_ids(
    ex: Executor, postgresql_dialect: bool, search: TextSearch, where: Eligibility, limit: int
) -> list[str]:
    """The ids ``lexical_statement`` selects for ``search``, best first."""
    params = {**where.params(), **lexical_params(search, postgresql_dialect, limit), "lim": limit}
    return list(ex.scalars(lexical_statement(postgresql_dialect, len(search.terms)), params))
