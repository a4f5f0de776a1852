"""The candidates' statement: every candidate source and the rows it selects, as one statement.

Built per shape (``Shape``) and cached, from the per-source statements of
``candidates`` and ``lexical``; on PostgreSQL it also reads each row's
outcome counts, whether a repair was embedded since recall's in-process
matrix was read, and the document frequencies of terms not counted yet.
``read_rows`` fills its parameters from a ``CandidateQuery`` and reads it.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from sqlalchemy import CompoundSelect, Select, String, bindparam, func, literal, select, true, union_all
from sqlalchemy.dialects import postgresql

from ..engine import Prepared
from ..handles import Executor
from ..models import DecisionRepairModel, RepairOutcomeModel
from ..outcomes import CONTRADICTED, HELD, RECURRED
from ..reads import list_param
from .candidates import COLUMNS, SAME_CONTEXT, SAME_TOOL, VALIDATED_CONTEXT, Candidate
from .counts import like_pattern
from .eligibility import Eligibility, clause
from .lexical import TextSearch, fresh_counts, lexical_params, lexical_statement

__all__ = [
    "CandidateQuery",
    "CandidateRows",
    "OutcomeRow",
    "Shape",
    "candidates_prepared",
    "candidates_statement",
    "read_rows",
]

M = DecisionRepairModel


# PostgreSQL: each candidate's outcome counts, read in the candidates'
# statement (a LATERAL aggregate over its outcome rows, one index probe a
# candidate) instead of a statement of their own: a round trip costs more
# there than the probes (docs/PERFORMANCE.md, "Recall"). SQLite reads
# them separately, for the candidates that pass recall's gate.
_O = RepairOutcomeModel


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

# PostgreSQL, with embeddings: whether a repair was embedded after recall's
# in-process matrix was last read (its refresh condition), asked in the
# same round trip; recall reads them and asks again when so.
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


class Shape(NamedTuple):
    """What a candidates' statement is built for: its cache key (``candidates_statement``)."""

    postgresql_dialect: bool
    n_terms: int
    by_ids: tuple[bool, ...] = ()
    newer: bool = False
    fresh: int = 0
    counted: int = 0


@functools.cache
def candidates_statement(shape: Shape) -> CompoundSelect[Any] | Select[Any]:
    """Every candidate source and the rows they select, as one statement.

    The sources: the text search (when there are terms), the exact (tool,
    context), its validated repairs, and the tool — each its own
    subquery with the order and limit of its separate read — and the ids
    given (nearest embeddings). A NULL
    ``context_hash`` or ``tool_id`` and an empty ``vector_ids`` select
    nothing. Rows come in no particular order, and on SQLite a repair that
    several sources find comes back once from each (``read_rows`` keeps
    one, in id order).

    SQLite: each source selects its eligible rows whole, united with
    ``UNION ALL``. A row is read where its source finds it, not looked up
    again by id: that second visit of every row was a third of the
    statement's time. PostgreSQL: the sources' ids are united and the rows
    read by key, each with its outcome counts, then (with ``newer``) the
    newer-embeddings flag, then the counts of ``counted`` terms counted in
    the statement, the first ``fresh`` of which also search
    (``CandidateQuery.fresh``). Its whole-row form would be twice
    as long, past the 4 kB up to which psycopg caches a statement's
    conversion: parsing it again on every call cost more than the lookups
    it saves.
    """
    pg, n_terms, by_ids, newer, fresh, counted = shape
    searched = (lexical_statement(pg, n_terms, by_ids, fresh),) if n_terms or fresh else ()
    situation = (SAME_CONTEXT[pg], SAME_TOOL[pg], VALIDATED_CONTEXT[pg])
    sources = (*searched, *situation)
    if pg:
        # Wrapped: as on SQLite, every member of the compound is a plain select.
        ids = [select(source.subquery().c.id) for source in sources]
        ids.append(select(func.unnest(bindparam("vector_ids", type_=postgresql.ARRAY(String)))))
        o = _OUTCOMES_OF_ROW.c
        extra: list[Any] = [o.held, o.recurred, o.contradicted, o.last_held]
        if newer:
            extra.append(_NEWER_EMBEDDED)
        extra += [count for _, count in fresh_counts(counted)]
        stmt = select(*COLUMNS, *extra).select_from(M.__table__.outerjoin(_OUTCOMES_OF_ROW, true()))
        return cast(Select[Any], stmt.where(M.id.in_(union_all(*ids).scalar_subquery()), clause(pg)))
    # Wrapped: SQLite allows no ORDER BY or LIMIT in a compound's members.
    parts: list[Select[Any]] = [
        select(*source.with_only_columns(*COLUMNS).subquery().c) for source in sources
    ]
    values = func.json_each(bindparam("vector_ids", type_=String)).table_valued("value")
    given = M.id.in_(select(values.c.value))
    parts.append(cast(Select[Any], select(*COLUMNS).where(given, clause(pg))))
    return union_all(*parts)


@functools.cache
def candidates_prepared(shape: Shape) -> Prepared:
    # On SQLite, a hundred rows through SQLAlchemy's result machinery cost a
    # third as much again as the statement itself; the driver's cursor does not.
    return Prepared(candidates_statement(shape))


@dataclass(frozen=True, slots=True)
class CandidateQuery:
    """What one read of every candidate source asks (plain values; recall fills them)."""

    where: Eligibility
    limit: int
    search: TextSearch | None = None
    context_hash: str | None = None
    tool_id: str | None = None
    vector_ids: Sequence[str] = ()
    # PostgreSQL: (embedding model, id): was a repair of that model embedded past the id?
    newer_than: tuple[str, str] | None = None
    # PostgreSQL: terms counted in the statement; the first ``searching`` of them also search.
    fresh: Sequence[str] = ()
    searching: int = 0
    # With ``fresh``: a count's cap, the rare cap a fresh term searches under, the repairs in all.
    df_cap: int = 0
    rare_cap: int = 0
    total: int | None = None


# (held, recurred, contradicted, last held) of a candidate.
OutcomeRow = tuple[int, int, int, int | None]


@dataclass(frozen=True, slots=True)
class CandidateRows:
    """What ``read_rows`` read: the rows in id order, and what PostgreSQL read with them."""

    rows: list[Candidate]
    # PostgreSQL: every row's outcome counts; None on SQLite.
    outcomes: dict[str, OutcomeRow] | None = None
    # PostgreSQL, given ``newer_than``; None when not asked or no row came back to carry it.
    newer_embedded: bool | None = None
    # PostgreSQL, given ``fresh``: each fresh term's count; None when no row came back to carry them.
    counted: dict[str, int] | None = None


def read_rows(ex: Executor, postgresql_dialect: bool, query: CandidateQuery) -> CandidateRows:
    """Every source of ``query`` in one statement: one row per repair, ordered by id."""
    pg, search = postgresql_dialect, query.search
    params: dict[str, Any] = {
        **query.where.params(),
        **(lexical_params(search, pg, query.limit) if search is not None else {}),
        "lim": query.limit,
        "context_hash": query.context_hash,
        "tool_id": query.tool_id,
        "vector_ids": list_param(sorted(set(query.vector_ids)), pg),
    }
    newer = query.newer_than if pg else None
    if newer is not None:
        params["embedding_model"], params["newer_than"] = newer
    fresh = list(query.fresh) if pg else []
    if fresh:
        params.update({f"f{i}": like_pattern(t) for i, t in enumerate(fresh)})
        params.update(df_cap=query.df_cap, rare_cap=query.rare_cap, idf_n=float(max(query.total or 0, 1)))
    n_terms = len(search.terms) if search is not None else 0
    by_ids = search.by_ids() if search is not None else ()
    shape = Shape(pg, n_terms, by_ids, newer is not None, query.searching if fresh else 0, len(fresh))
    got = candidates_prepared(shape).all(ex, params)
    # One row per repair (sources overlap), ordered by id: ranking's ties
    # then fall the same way whichever source found a repair first.
    rows = sorted({r[0]: r for r in got}.values(), key=_by_id)
    if not pg:
        return CandidateRows([Candidate._make(r) for r in rows])
    outcomes = {r[0]: cast(OutcomeRow, tuple(r[_N : _N + 4])) for r in rows}
    flag = bool(rows[0][_N + 4]) if shape.newer and rows else None
    counted = None
    if fresh and rows:
        first = _N + 4 + shape.newer
        counted = {t: int(rows[0][first + i]) for i, t in enumerate(fresh)}
    return CandidateRows([Candidate._make(r[:_N]) for r in rows], outcomes, flag, counted)


_by_id = operator.itemgetter(0)
