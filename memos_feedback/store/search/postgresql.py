"""PostgreSQL's search reader: ILIKE over the ``pg_trgm`` GIN index, and one round trip a call.

* A term is found by ``source_text ILIKE '%term%'`` (``like_pattern``).
* The candidates' statement unites the sources' ids and reads the rows by
  key, each with its outcome counts (a LATERAL aggregate); it can also say
  whether a repair was embedded since recall's in-process matrix was read,
  and count terms not counted yet (``fresh_counts``): a round trip costs
  more here than the work it would spare (docs/PERFORMANCE.md, "Recall").
  Its whole-row form would be twice as long, past the 4 kB up to which
  psycopg caches a statement's conversion: parsing it again on every call
  cost more than the lookups it saves.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
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
    func,
    literal,
    or_,
    select,
    text,
    true,
    union_all,
)
from sqlalchemy.dialects import postgresql

from ..engine import Prepared
from ..handles import Executor
from ..models import DecisionRepairModel, RepairOutcomeModel
from ..outcomes import CONTRADICTED, HELD, RECURRED
from ..reads import repair_count
from .candidates import (
    COLUMNS,
    SAME_CONTEXT,
    SAME_TOOL,
    VALIDATED_CONTEXT,
    Candidate,
    by_weight,
    fetch,
    newest_ids,
    one_per_id,
)
from .eligibility import Eligibility, clause
from .query import (
    DF_BATCH,
    CandidateQuery,
    CandidateRows,
    Match,
    OutcomeRow,
    Shape,
    TextSearch,
    common_params,
)

__all__ = ["PostgresSearch", "fresh_counts", "like_pattern"]

M = DecisionRepairModel
_O = RepairOutcomeModel


def like_pattern(term: str) -> str:
    """``term`` anywhere, as an ``ILIKE`` pattern with ``\\`` escaping ``%``, ``_`` and itself."""
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


@functools.cache
def _fresh_count(i: int) -> tuple[Any, ColumnElement[int]]:
    """Term ``:f{i}`` (an ILIKE pattern) counted inside another statement.

    A CTE of its matches (up to ``:df_cap``) and its count: what
    ``count_terms`` would read in a round trip of its own. A CTE referenced
    more than once is materialised, so the trigram scan runs once. Built
    once per position: every statement refers to the same one.
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
def _lexical_statement(n_terms: int, by_ids: tuple[bool, ...] = (), fresh: int = 0) -> Select[Any]:
    """The text search over ``n_terms`` terms (``:t0``…, weighted ``:w0``…), best first.

    Term ``i`` with ``by_ids[i]`` is given as the ids its count found (an
    array), the others as ILIKE patterns; ``fresh`` more terms are counted
    in the same statement (``fresh_counts``): each selects only when its
    count is under the rare cap (``:rare_cap``), weighted by the IDF of
    that count.
    """
    weights: list[ColumnElement[float]] = [bindparam(f"w{i}", type_=Float) for i in range(n_terms)]
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
    return by_weight(select(M.id).where(or_(*tests), clause(True)), tests, weights)


def _lexical_params(search: TextSearch) -> dict[str, Any]:
    matched = search.matched
    params: dict[str, Any] = {f"w{i}": w for i, w in enumerate(search.weights)}
    params.update(
        {f"t{i}": list(matched[t]) if t in matched else like_pattern(t) for i, t in enumerate(search.terms)}
    )
    return params


@functools.cache
def _count_statement(n: int) -> Any:
    """One row, for each of ``:m0``… its count (up to ``:cap``) and, under ``:few``, its ids.

    Each pattern's matches are a CTE read twice (count, ids): PostgreSQL
    materialises a CTE referenced more than once, so the trigram scan runs once.
    """
    table = M.__tablename__
    ctes = ", ".join(
        f"d{i} AS (SELECT id FROM {table} WHERE source_text ILIKE :m{i} ESCAPE '\\' LIMIT :cap)"
        for i in range(n)
    )
    columns = ", ".join(
        f"(SELECT count(*) FROM d{i}), "
        f"(SELECT CASE WHEN count(*) < :few THEN coalesce(array_agg(id), '{{}}') END FROM d{i})"
        for i in range(n)
    )
    return Prepared(text(f"WITH {ctes} SELECT {columns}"))


# Each candidate's outcome counts: one index probe a candidate, in the
# candidates' statement instead of a statement of their own.
_OUTCOMES_OF_ROW = (
    select(
        func.count().filter(_O.kind == HELD).label("held"),
        func.count().filter(_O.kind == RECURRED).label("recurred"),
        func.count().filter(_O.kind == CONTRADICTED).label("contradicted"),
        func.max(_O.ts).filter(_O.kind == HELD).label("last_held"),
    )
    .where(_O.repair_id == M.id)
    .lateral("outcomes")
)

# Whether a repair was embedded after recall's in-process matrix was last
# read (its refresh condition); recall reads them and asks again when so.
_EMBEDDED = M.__table__.alias("embedded")
_NEWER_EMBEDDED = (
    select(literal(1))
    .where(
        _EMBEDDED.c.id > bindparam("newer_than", type_=String),
        _EMBEDDED.c.embedding_model == bindparam("embedding_model", type_=String),
        _EMBEDDED.c.embedding.is_not(None),
    )
    .exists()
    .label("newer_embedded")
)
_N = len(COLUMNS)


@functools.cache
def candidates_statement(shape: Shape) -> Select[Any]:
    """Every candidate source's ids united, and their eligible rows read by key, with extras.

    The sources: the text search (when there are terms or ``fresh`` ones),
    the exact (tool, context), its validated repairs, the tool — each with
    the order and limit of its separate read — and ``:vector_ids``. Each
    row carries its outcome counts, then (with ``newer``) the
    newer-embeddings flag, then the counts of ``counted`` terms, the first
    ``fresh`` of which also search.
    """
    _, n_terms, by_ids, newer, fresh, counted = shape
    searched = (_lexical_statement(n_terms, by_ids, fresh),) if n_terms or fresh else ()
    sources = (*searched, SAME_CONTEXT[True], SAME_TOOL[True], VALIDATED_CONTEXT[True])
    # Wrapped: every member of the compound is a plain select.
    ids = [select(source.subquery().c.id) for source in sources]
    ids.append(select(func.unnest(bindparam("vector_ids", type_=postgresql.ARRAY(String)))))
    o = _OUTCOMES_OF_ROW.c
    extra: list[Any] = [o.held, o.recurred, o.contradicted, o.last_held]
    if newer:
        extra.append(_NEWER_EMBEDDED)
    extra += [count for _, count in fresh_counts(counted)]
    stmt = select(*COLUMNS, *extra).select_from(M.__table__.outerjoin(_OUTCOMES_OF_ROW, true()))
    return cast(Select[Any], stmt.where(M.id.in_(union_all(*ids).scalar_subquery()), clause(True)))


@functools.cache
def _prepared(shape: Shape) -> Prepared:
    return Prepared(candidates_statement(shape))


class PostgresSearch:
    """Recall's reads on PostgreSQL (module docstring)."""

    matches_by_trigrams = False
    folds_into_candidates = True

    def total(self, ex: Executor) -> int:
        """How many repairs there are."""
        return repair_count(ex)

    def fetch(self, ex: Executor, ids: Iterable[str], where: Eligibility) -> list[Candidate]:
        """The eligible repairs among ``ids`` (order unspecified)."""
        return fetch(ex, True, ids, where)

    def newest_ids(self, ex: Executor, key: str, value: str, where: Eligibility, limit: int) -> list[str]:
        """Newest eligible repairs whose ``key`` (``context_hash`` or ``tool_id``) is ``value``."""
        return newest_ids(ex, True, key, value, where, limit)

    def lexical_ids(self, ex: Executor, search: TextSearch, where: Eligibility, limit: int) -> list[str]:
        """Eligible repairs matching ``search``'s terms, the most weight first, then the newest."""
        params = {**where.params(), **_lexical_params(search), "lim": limit}
        return list(ex.scalars(_lexical_statement(len(search.terms)), params))

    def count_terms(
        self,
        ex: Executor,
        keys: Sequence[str],
        cap: int,
        *,
        matches: Mapping[str, Match] | None = None,
        few: int = 0,
        found: dict[str, list[str]] | None = None,
    ) -> dict[str, int]:
        """Key -> how many repairs contain it, up to ``cap``; ``found`` gets the ids of those under ``few``.

        A key is found by its ILIKE pattern (``matches`` are SQLite's, unused here).
        """
        out: dict[str, int] = {}
        for start in range(0, len(keys), DF_BATCH):
            batch = keys[start : start + DF_BATCH]
            params: dict[str, Any] = {f"m{i}": like_pattern(k) for i, k in enumerate(batch)}
            row = _count_statement(len(batch)).all(ex, {**params, "cap": cap, "few": few})[0]
            for i, k in enumerate(batch):
                out[k] = int(row[2 * i])
                if found is not None and row[2 * i + 1] is not None:
                    found[k] = [str(r) for r in row[2 * i + 1]]
        return out

    def candidates(self, ex: Executor, query: CandidateQuery) -> CandidateRows:
        """Every candidate source of ``query`` in one statement, with outcome counts and what was asked."""
        search, fresh = query.search, list(query.fresh)
        params = common_params(query, sorted(set(query.vector_ids)))
        if search is not None:
            params.update(_lexical_params(search))
        if query.newer_than is not None:
            params["embedding_model"], params["newer_than"] = query.newer_than
        if fresh:
            params.update({f"f{i}": like_pattern(t) for i, t in enumerate(fresh)})
            params.update(df_cap=query.df_cap, rare_cap=query.rare_cap, idf_n=float(max(query.total or 0, 1)))
        n_terms, by_ids = (len(search.terms), search.by_ids()) if search is not None else (0, ())
        shape = Shape(True, n_terms, by_ids, query.newer_than is not None, query.searching, len(fresh))
        rows = one_per_id(_prepared(shape).all(ex, params))
        outcomes = {r[0]: cast(OutcomeRow, tuple(r[_N : _N + 4])) for r in rows}
        flag = bool(rows[0][_N + 4]) if shape.newer and rows else None
        counted = None
        if fresh and rows:
            first = _N + 4 + shape.newer
            counted = {t: int(rows[0][first + i]) for i, t in enumerate(fresh)}
        return CandidateRows([Candidate._make(r[:_N]) for r in rows], outcomes, flag, counted)
