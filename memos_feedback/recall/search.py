"""Read-only queries behind ``guidance_for``: eligibility and the candidates.

Everything here reads; nothing writes. A call's candidates come from one
statement (``read_candidates``): the exact (tool, context), the tool's
newest, the nearest embeddings' ids, and the database's text search:

* SQLite — ``decision_repairs_fts`` (FTS5, trigram tokenizer), ``MATCH`` on
  the query's terms OR-ed together, plus the repairs written in the last
  second or so that wait to be indexed (the tail, ``store/search_index.py``),
  read and tested with ``instr`` directly;
* PostgreSQL — ``source_text ILIKE '%term%'`` OR-ed (the ``pg_trgm`` GIN
  index serves it);

on both, the matches with the most IDF weight of terms first (``lexical_statement``).
Only the rarer terms search (``search_terms``); their document frequencies,
how a term is matched on SQLite, and the ids a fresh count found come from
``frequencies``. A term counted in the same call is searched by those ids
(on SQLite only when every term searched was, since one FTS5 query serves
all terms otherwise: the usual case of a query whose one rare term is a new
identifier).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from sqlalchemy import (
    CompoundSelect,
    Select,
    String,
    bindparam,
    func,
    literal,
    select,
    true,
    union_all,
)
from sqlalchemy.dialects import postgresql

from ..outcomes.estimate import OutcomeCounts
from ..outcomes.states import CONTRADICTED, HELD, RECURRED
from ..store.engine import Prepared
from ..store.models import DecisionRepairModel, RepairOutcomeModel
from ..store.reads import list_param
from .candidates import (
    COLUMNS,
    SAME_CONTEXT,
    SAME_TOOL,
    Candidate,
)
from .eligibility import ELIGIBLE, Eligibility
from .frequencies import (
    DF_BATCH,
    DF_CAP,
    Reader,
    count_terms,
    is_postgresql,
    like_pattern,
)
from .lexical import (
    MAX_SEARCH_TERMS,
    fresh_counts,
    lexical_params,
    lexical_statement,
    rare_cap,
    search_terms,
)

__all__ = [
    "CandidateRead",
    "read_candidates",
]

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
_N_COLUMNS = len(COLUMNS)


class _Shape(NamedTuple):
    """What a candidates' statement is built for: its cache key (``_candidates_statement``)."""

    postgresql_dialect: bool
    n_terms: int
    by_ids: tuple[bool, ...] = ()
    newer: bool = False
    fresh: int = 0
    counted: int = 0


@functools.cache
def _candidates_statement(shape: _Shape) -> CompoundSelect[Any] | Select[Any]:
    """Every candidate source and the rows they select, as one statement.

    The sources: the text search (when there are terms), the exact (tool,
    context) and the tool — each its own subquery with the order and limit
    of its separate read — and the ids given (nearest embeddings). A NULL
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
    sources = (*searched, SAME_CONTEXT[pg], SAME_TOOL[pg])
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
def _candidates_prepared(shape: _Shape) -> Prepared:
    # On SQLite, a hundred rows through SQLAlchemy's result machinery cost a
    # third as much again as the statement itself; the driver's cursor does not.
    return Prepared(_candidates_statement(shape))


@dataclass(frozen=True, slots=True)
class CandidateRead:
    """What ``read_candidates`` found: the rows, and what PostgreSQL read with them."""

    rows: list[Candidate]
    # PostgreSQL: every row's outcome counts (read in the same statement);
    # None on SQLite, where the caller reads them (``counts_for``).
    outcomes: dict[str, OutcomeCounts] | None = None
    # PostgreSQL, when asked (``newer_than``): whether a repair was embedded
    # past that id. None: not asked, or no row came back to carry the answer.
    newer_embedded: bool | None = None
    # PostgreSQL, given ``counting``: each of those terms' document frequency.
    # None when no row came back to carry them.
    counted: dict[str, int] | None = None


def read_candidates(
    reader: Reader,
    where: Eligibility,
    limit: int,
    *,
    terms: Sequence[str] = (),
    frequencies: Mapping[str, int] | None = None,
    total: int | None = None,
    context_hash: str | None = None,
    tool_id: str | None = None,
    vector_ids: Sequence[str] = (),
    matched: Mapping[str, Sequence[str]] | None = None,
    newer_than: tuple[str, str] | None = None,
    counting: Sequence[str] = (),
) -> CandidateRead:
    """The eligible repairs of every source in one statement, ordered by id.

    The same rows as ``fetch_candidates`` over the ids of
    ``lexical_candidate_ids``, ``same_context_candidate_ids``,
    ``same_tool_candidate_ids`` (each only when its key is given) and
    ``vector_ids``: on PostgreSQL each separate read is a round trip.
    ``matched``: every repair containing a term, for terms
    ``DocumentFrequencies.of`` just counted (its ``found``); those terms
    are searched by id (on SQLite, only when all of them can be).

    On PostgreSQL the same statement also reads each row's outcome counts
    and, given ``newer_than`` (embedding model, id), whether a repair of
    that model was embedded with a greater id (``CandidateRead``). Given
    ``counting`` (terms not counted yet; ignored on SQLite), it counts them
    too (``CandidateRead.counted``, as ``DocumentFrequencies.of`` would),
    and those among ``terms`` search as they would once counted: by text
    while under the rare cap, weighted by the IDF of their count. That
    spares the count its own round trip. (Too many to fold, and they are
    counted first.)
    """
    pg = is_postgresql(reader)
    fresh = list(dict.fromkeys(counting)) if pg else []
    counted: dict[str, int] | None = None
    searching = 0
    if fresh:
        fold = _fold(terms, fresh, frequencies, total)
        if fold is not None:
            terms, fresh, searching = fold
        else:
            # Folded, the rarest could not be chosen among them: counted first instead.
            found: dict[str, list[str]] = {}
            counted = count_terms(reader, {t: (like_pattern(t), "") for t in fresh}, True, DF_CAP, found)
            frequencies, matched = {**(frequencies or {}), **counted}, {**(matched or {}), **found}
            fresh = []
    rare = search_terms(terms, frequencies, total)
    # SQLite searches by id only when every term can be: its text search is
    # one FTS5 query for all terms, and the ids would not spare it otherwise.
    known = matched if matched and (pg or all(t in matched for t in rare)) else {}
    if known:
        # Terms searched by id first: the statement's shape is then (terms, how
        # many by id), a few dozen at most (compiled and prepared statements
        # are cached per shape); the order of terms changes no match or weight.
        rare = [t for t in rare if t in known] + [t for t in rare if t not in known]
    by_ids = tuple(t in known for t in rare) if known else ()
    params: dict[str, Any] = {
        **where.params(),
        **(lexical_params(rare, pg, limit, frequencies, total, known) if rare else {}),
        "lim": limit,
        "context_hash": context_hash,
        "tool_id": tool_id,
        "vector_ids": list_param(sorted(set(vector_ids)), pg),
    }
    newer = newer_than if pg else None
    if newer is not None:
        params["embedding_model"], params["newer_than"] = newer
    if fresh:
        params.update({f"f{i}": like_pattern(t) for i, t in enumerate(fresh)})
        params.update(df_cap=DF_CAP, rare_cap=rare_cap(total), idf_n=float(max(total or 0, 1)))
    shape = _Shape(pg, len(rare), by_ids, newer is not None, searching, len(fresh))
    statement = _candidates_prepared(shape)
    got = statement.all(reader, params)
    # One row per repair (sources overlap), ordered by id: ranking's ties
    # then fall the same way whichever source found a repair first.
    rows = sorted({r[0]: r for r in got}.values(), key=_by_id)
    if not pg:
        return CandidateRead([Candidate._make(r) for r in rows])
    n = _N_COLUMNS
    outcomes = {
        r[0]: OutcomeCounts(held=r[n], recurred=r[n + 1], contradicted=r[n + 2], last_held=r[n + 3])
        for r in rows
    }
    flag = bool(rows[0][n + 4]) if shape.newer and rows else None
    if fresh and rows:
        first = n + 4 + shape.newer
        counted = {t: int(rows[0][first + i]) for i, t in enumerate(fresh)}
    return CandidateRead([Candidate._make(r[:n]) for r in rows], outcomes, flag, counted)


_by_id = operator.itemgetter(0)


def _fold(
    terms: Sequence[str], fresh: Sequence[str], frequencies: Mapping[str, int] | None, total: int | None
) -> tuple[list[str], list[str], int] | None:
    """How ``fresh`` terms are counted in the candidates' statement, or None when they cannot be.

    The terms left to search as counted, the fresh ones with those of the
    query first, and how many of them search. None: more than one
    statement's worth, or more search terms than ``MAX_SEARCH_TERMS`` (the
    rarest could not be chosen before the counts are known).
    """
    in_query, new = set(terms), set(fresh)
    searching = [t for t in fresh if t in in_query and len(t) >= 3]
    others = [t for t in terms if t not in new]
    if (
        len(fresh) > DF_BATCH
        or len(search_terms(others, frequencies, total)) + len(searching) > MAX_SEARCH_TERMS
    ):
        return None
    chosen = set(searching)
    return others, searching + [t for t in fresh if t not in chosen], len(searching)
