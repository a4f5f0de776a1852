"""The candidates' statement: every candidate source and the rows it selects, as one statement.

Built per shape (``Shape``) and cached, from the per-source statements of
``candidates`` and ``lexical``; on PostgreSQL it also reads each row's
outcome counts, whether a repair was embedded since the in-process matrix
was read, and the document frequencies of terms not counted yet.
``search.read_candidates`` fills its parameters and reads its rows.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple, cast

from sqlalchemy import CompoundSelect, Select, String, bindparam, func, literal, select, true, union_all
from sqlalchemy.dialects import postgresql

from ..outcomes.states import CONTRADICTED, HELD, RECURRED
from ..store.engine import Prepared
from ..store.models import DecisionRepairModel, RepairOutcomeModel
from .candidates import COLUMNS, SAME_CONTEXT, SAME_TOOL, VALIDATED_CONTEXT
from .eligibility import ELIGIBLE
from .lexical import fresh_counts, lexical_statement

__all__ = ["N_COLUMNS", "Shape", "candidates_prepared", "candidates_statement"]

M = DecisionRepairModel


# PostgreSQL: each candidate's outcome counts, read in the candidates'
# statement (a LATERAL aggregate over its outcome rows, one index probe a
# candidate) instead of a statement of their own: a round trip costs more
# there than the probes (docs/PERFORMANCE.md, "Recall"). SQLite reads
# them separately (``counts_for``), for the candidates that pass the gate.
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

# PostgreSQL, with embeddings: whether a repair was embedded after the
# in-process matrix was last read (``vectors``' refresh condition), asked in
# the same round trip; ``guidance_for`` reads them and asks again when so.
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
N_COLUMNS = len(COLUMNS)


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
    several sources find comes back once from each (``read_candidates``
    keeps one, in id order).

    SQLite: each source selects its eligible rows whole, united with
    ``UNION ALL``. A row is read where its source finds it, not looked up
    again by id: that second visit of every row was a third of the
    statement's time. PostgreSQL: the sources' ids are united and the rows
    read by key, each with its outcome counts, then (with ``newer``) the
    newer-embeddings flag, then the counts of ``counted`` terms counted in
    the statement, the first ``fresh`` of which also search
    (``read_candidates``' ``counting``). Its whole-row form would be twice
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
        return cast(Select[Any], stmt.where(M.id.in_(union_all(*ids).scalar_subquery()), ELIGIBLE[pg]))
    # Wrapped: SQLite allows no ORDER BY or LIMIT in a compound's members.
    parts: list[Select[Any]] = [
        select(*source.with_only_columns(*COLUMNS).subquery().c) for source in sources
    ]
    values = func.json_each(bindparam("vector_ids", type_=String)).table_valued("value")
    given = M.id.in_(select(values.c.value))
    parts.append(cast(Select[Any], select(*COLUMNS).where(given, ELIGIBLE[pg])))
    return union_all(*parts)


@functools.cache
def candidates_prepared(shape: Shape) -> Prepared:
    # On SQLite, a hundred rows through SQLAlchemy's result machinery cost a
    # third as much again as the statement itself; the driver's cursor does not.
    return Prepared(candidates_statement(shape))
