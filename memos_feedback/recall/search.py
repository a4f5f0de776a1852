"""Read-only queries behind ``guidance_for``: eligibility, text search, statistics.

Everything here reads; nothing writes. The text search is the database's:

* SQLite — ``decision_repairs_fts`` (FTS5, trigram tokenizer), ``MATCH`` on
  the query's terms OR-ed together, plus the repairs written in the last
  second or so that wait to be indexed (the tail, ``store/search_index.py``),
  read and tested with ``instr`` directly;
* PostgreSQL — ``source_text ILIKE '%term%'`` OR-ed (the ``pg_trgm`` GIN
  index serves it);

on both, the matches with the most IDF weight of terms first (``_lexical``).

On SQLite a longer ASCII term is not matched as a phrase of all its
trigrams: a phrase reads every trigram's postings, and an identifier like
``orders_api_4123`` is made of trigrams half the repairs have (``ord``,
``api``). It is matched by its three rarest trigrams AND-ed, leaving out
any in ``_GRAM_CAP`` repairs or more (each counted once, up to that cap,
and cached for ten minutes; at most 16 counted per call), and the matches
are checked for the whole term (``instr``): the same rows, from postings
that are short (``term_expression``).

Document frequencies of terms (for IDF) come from the same index, counted up
to a cap and cached for ``_DF_TTL_S`` seconds per store: statistics that
are a minute old rank as well as fresh ones. The count of a term not
counted yet also returns the ids it found when they are few (fewer than
``RARE_DF``), and the search of that call tests those ids instead of
running the same search again: on PostgreSQL an identifier like
``orders_api_4170`` shares trigrams with thousands of repairs, and its
scan took 2–4 ms at 100k repairs (docs/PERFORMANCE.md). SQLite does so
only when every term searched was counted in that call (one FTS5 query
serves all terms otherwise), which is the usual case of a query whose one
rare term is a new identifier.
"""

from __future__ import annotations

import functools
import json
import math
import operator
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    CompoundSelect,
    Connection,
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
    true,
    union_all,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

from ..outcomes.estimate import OutcomeCounts
from ..outcomes.states import CONTRADICTED, HELD, RECURRED
from ..store import Store
from ..store.engine import Prepared
from ..store.models import SQLITE_FTS_TABLE, DecisionRepairModel, RepairOutcomeModel
from ..store.repositories import in_list, list_param
from ..store.search_index import TAIL_SQL

__all__ = [
    "MAX_SEARCH_TERMS",
    "RARE_DF",
    "Candidate",
    "CandidateRead",
    "DocumentFrequencies",
    "Eligibility",
    "Reader",
    "eligible",
    "fetch_candidates",
    "idf",
    "lexical_candidate_ids",
    "read_candidates",
    "same_context_candidate_ids",
    "same_tool_candidate_ids",
    "search_terms",
    "term_expression",
]

M = DecisionRepairModel
_DF_CAP = 1_000
# Terms in at least this many repairs — or in 5 % of them, when that is
# fewer (but never below 20) — do not select candidates by text: they are in
# too many to rank cheaply and say too little on their own (they still weigh
# in the score of candidates found otherwise).
RARE_DF = 200
# At most this many (the rarest) of a query's terms select candidates by text.
MAX_SEARCH_TERMS = 8
_RARE_SHARE = 20
_RARE_FLOOR = 20
_DF_TTL_S = 60.0
_DF_CACHE_MAX = 50_000
# Trigram counts (SQLite): capped (past this a trigram is common, whatever
# its count), kept longer than terms' (they move slowly and only choose
# which postings a search reads, never what it finds).
_GRAM_CAP = 250
_GRAM_TTL_S = 600.0
_GRAMS_PER_TERM = 3


class Candidate(NamedTuple):
    """The columns of a repair that ranking needs.

    A named tuple, not a dataclass: it is made straight from the row
    (``_make``), a hundred times per ``guidance_for``, without a frozen
    dataclass's per-field ``__setattr__``.
    """

    id: str
    ts: int
    context_hash: str
    tool_id: str | None
    context: str | None
    trigger: str
    preference: str
    anti_pattern: str
    severity: str
    confidence: float
    validated: bool
    category: str | None
    project: str | None
    source_text: str
    session_id: str | None


_COLUMNS = (
    M.id,
    M.ts,
    M.context_hash,
    M.tool_id,
    M.context,
    M.trigger,
    M.preference,
    M.anti_pattern,
    M.severity,
    M.confidence,
    M.validated,
    M.category,
    M.project,
    # A repair written before recall had no source text: it is read as its
    # lesson (the fallback is computed here, so a row becomes a Candidate as is).
    func.coalesce(
        func.nullif(M.source_text, ""),
        literal("do: ") + M.preference + literal("\navoid: ") + M.anti_pattern,
    ).label("source_text"),
    # No embedding: cosines come from the in-process matrix (``vectors``),
    # and a blob per row is most of a row's bytes.
    M.session_id,
)


# What the reads run on: a Core connection (``guidance_for``) or an ORM session.
Reader = Connection | Session


@dataclass(frozen=True, slots=True)
class Eligibility:
    """Which repairs may be offered: global or of ``project``; validated, or written since ``fresh_after``."""

    project: str | None
    fresh_after: int

    def params(self) -> dict[str, Any]:
        # Projects are never "" (callers' values are stripped, "" means none),
        # so "" stands for "no project": only global repairs match twice.
        return {"e_project": self.project or "", "e_fresh_after": self.fresh_after}


def eligible(project: str | None, now_ms: int, unvalidated_max_age_ms: int) -> Eligibility:
    """Never rejected, still active; global or of ``project``; validated, or younger than the age limit."""
    return Eligibility(project, now_ms - unvalidated_max_age_ms)


# Built once per dialect with bound parameters: every statement below is then
# one compiled-cache hit instead of an expression tree rebuilt per call.
#
# The project test differs by dialect, on purpose. SQLite: through coalesce,
# because an indexable project test tempts its planner into scanning every
# row of the project (half the table) instead of a few primary keys.
# PostgreSQL: on the column itself, because it has statistics for the
# column but not for coalesce(...): an expression's guessed selectivity
# (0.5 %) made it read and sort every repair of a tool instead of walking
# the (tool_id, ts) index newest first until it had enough.
def _eligible(postgresql_dialect: bool) -> ColumnElement[bool]:
    project = bindparam("e_project", type_=String)
    if postgresql_dialect:
        scoped = or_(M.project.is_(None), M.project == project)
    else:
        coalesced = func.coalesce(M.project, "")
        scoped = or_(coalesced == "", project == coalesced)
    return and_(
        M.rejected.is_(False),
        M.status.is_(None),  # outcomes: a stale or superseded repair (status set) is never offered
        scoped,
        or_(M.validated.is_(True), M.ts >= bindparam("e_fresh_after", type_=BigInteger)),
    )


_ELIGIBLE = {True: _eligible(True), False: _eligible(False)}
_LIMIT = bindparam("lim", type_=Integer)


def _newest(key: ColumnElement[Any], name: str, postgresql_dialect: bool) -> Select[Any]:
    return (
        select(M.id)
        .where(key == bindparam(name, type_=String), _ELIGIBLE[postgresql_dialect])
        .order_by(M.ts.desc())
        .limit(_LIMIT)
    )


_SAME_CONTEXT = {
    pg: _newest(cast(ColumnElement[Any], M.context_hash), "context_hash", pg) for pg in (True, False)
}
_SAME_TOOL = {pg: _newest(cast(ColumnElement[Any], M.tool_id), "tool_id", pg) for pg in (True, False)}


def _fetch_statement(postgresql_dialect: bool) -> Select[Any]:
    ids = in_list(cast(ColumnElement[Any], M.id), "ids", postgresql_dialect)
    return cast(Select[Any], select(*_COLUMNS).where(ids, _ELIGIBLE[postgresql_dialect]).order_by(M.id))


_FETCH = {True: _fetch_statement(True), False: _fetch_statement(False)}
# Unranked: FTS5's bm25 costs as much again as the trigram match itself
# (it counts every trigram's postings). The hits are few by construction —
# only rare terms search, and the limit covers their document frequencies —
# so ranking them after the join is cheap (``_lexical``). The tail (repairs
# not indexed yet, a few rows) joins them unfiltered: ``_lexical`` keeps
# the rows that contain a term, indexed or not.
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


def _is_postgresql(reader: Reader) -> bool:
    bind = reader.get_bind() if isinstance(reader, Session) else reader
    return bind.dialect.name == "postgresql"


def fetch_candidates(reader: Reader, ids: Iterable[str], where: Eligibility) -> list[Candidate]:
    """The eligible repairs among ``ids`` (order unspecified)."""
    wanted = sorted(set(ids))
    if not wanted:
        return []
    pg = _is_postgresql(reader)
    params = {**where.params(), "ids": list_param(wanted, pg)}
    return [Candidate._make(r) for r in reader.execute(_FETCH[pg], params)]


def same_context_candidate_ids(
    reader: Reader, context_hash: str, where: Eligibility, limit: int
) -> list[str]:
    """Newest eligible repairs written for exactly this (tool, context)."""
    params = {**where.params(), "context_hash": context_hash, "lim": limit}
    return list(reader.scalars(_SAME_CONTEXT[_is_postgresql(reader)], params))


def same_tool_candidate_ids(reader: Reader, tool_id: str, where: Eligibility, limit: int) -> list[str]:
    """Newest eligible repairs written for ``tool_id``."""
    params = {**where.params(), "tool_id": tool_id, "lim": limit}
    return list(reader.scalars(_SAME_TOOL[_is_postgresql(reader)], params))


def _fts_phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _rare_cap(total: int | None) -> int:
    """A term in this many repairs or more selects no candidate by text (``lexical_candidate_ids``)."""
    return RARE_DF if total is None else max(_RARE_FLOOR, min(RARE_DF, total // _RARE_SHARE))


def search_terms(
    terms: Sequence[str], frequencies: Mapping[str, int] | None = None, total: int | None = None
) -> list[str]:
    """The terms that select candidates by text (``lexical_candidate_ids`` says which)."""
    cap = _rare_cap(total)
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
    pg = _is_postgresql(reader)
    params = {**where.params(), **_lexical_params(rare, pg, limit, frequencies, total), "lim": limit}
    return list(reader.scalars(_lexical(pg, len(rare)), params))


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


def _fresh_counts(n: int) -> list[tuple[Any, ColumnElement[int]]]:
    return [_fresh_count(i) for i in range(n)]


def _idf_of(count: ColumnElement[int]) -> ColumnElement[float]:
    """``idf`` in SQL, of a count in the statement (``:idf_n``: the total, at least 1)."""
    n = bindparam("idf_n", type_=Float)
    return cast(ColumnElement[float], func.ln(1.0 + n / func.greatest(count, 1)) / func.ln(1.0 + n))


@functools.cache
def _lexical(
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
    (``_fresh_counts``): each selects only when its count is under the rare
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
        for cte, count in _fresh_counts(fresh):
            tests.append(and_(M.id.in_(select(cte.c.id)), count < bindparam("rare_cap", type_=Integer)))
            weights.append(_idf_of(count))
        stmt = select(M.id).where(or_(*tests), _ELIGIBLE[True])
    elif by_ids:
        # SQLite, every term given as the ids its count found (never some of
        # them: ``read_candidates``): no text search at all.
        tests = [in_list(cast(ColumnElement[Any], M.id), f"t{i}", False) for i in range(n_terms)]
        stmt = select(M.id).where(or_(*tests), _ELIGIBLE[False])
    else:
        terms = [bindparam(f"t{i}", type_=String) for i in range(n_terms)]
        tests = [func.instr(func.lower(_FTS_HITS.c.doc), t) > 0 for t in terms]
        stmt = select(M.id).join(_FTS_HITS, _FTS_HITS.c.repair_id == M.id).where(_ELIGIBLE[False])
    weight: ColumnElement[float] = literal(0.0)
    for test, w in zip(tests, weights, strict=True):
        weight = weight + case((test, w), else_=0.0)
    if not postgresql_dialect and not by_ids:
        # A match of a term's rarest trigrams that lacks the term itself is not a match.
        stmt = stmt.where(or_(*tests))
    return stmt.order_by(weight.desc(), M.ts.desc()).limit(_LIMIT)


def _lexical_params(
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
        params.update({f"t{i}": list(ids[t]) if t in ids else _like(t) for i, t in enumerate(rare)})
        return params
    if matched:  # every term by id (``read_candidates``)
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
_N_COLUMNS = len(_COLUMNS)


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
    searched = (_lexical(pg, n_terms, by_ids, fresh),) if n_terms or fresh else ()
    sources = (*searched, _SAME_CONTEXT[pg], _SAME_TOOL[pg])
    if pg:
        # Wrapped: as on SQLite, every member of the compound is a plain select.
        ids = [select(source.subquery().c.id) for source in sources]
        ids.append(select(func.unnest(bindparam("vector_ids", type_=postgresql.ARRAY(String)))))
        o = _OUTCOMES_OF_ROW.c
        extra: list[Any] = [o.held, o.recurred, o.contradicted, o.last_held]
        if newer:
            extra.append(_NEWER_EMBEDDED)
        extra += [count for _, count in _fresh_counts(counted)]
        stmt = select(*_COLUMNS, *extra).select_from(M.__table__.outerjoin(_OUTCOMES_OF_ROW, true()))
        return cast(Select[Any], stmt.where(M.id.in_(union_all(*ids).scalar_subquery()), _ELIGIBLE[pg]))
    # Wrapped: SQLite allows no ORDER BY or LIMIT in a compound's members.
    parts: list[Select[Any]] = [
        select(*source.with_only_columns(*_COLUMNS).subquery().c) for source in sources
    ]
    values = func.json_each(bindparam("vector_ids", type_=String)).table_valued("value")
    given = M.id.in_(select(values.c.value))
    parts.append(cast(Select[Any], select(*_COLUMNS).where(given, _ELIGIBLE[pg])))
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
    pg = _is_postgresql(reader)
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
            counted = _count(reader, {t: (_like(t), "") for t in fresh}, True, _DF_CAP, found)
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
        **(_lexical_params(rare, pg, limit, frequencies, total, known) if rare else {}),
        "lim": limit,
        "context_hash": context_hash,
        "tool_id": tool_id,
        "vector_ids": list_param(sorted(set(vector_ids)), pg),
    }
    newer = newer_than if pg else None
    if newer is not None:
        params["embedding_model"], params["newer_than"] = newer
    if fresh:
        params.update({f"f{i}": _like(t) for i, t in enumerate(fresh)})
        params.update(df_cap=_DF_CAP, rare_cap=_rare_cap(total), idf_n=float(max(total or 0, 1)))
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
        len(fresh) > _DF_BATCH
        or len(search_terms(others, frequencies, total)) + len(searching) > MAX_SEARCH_TERMS
    ):
        return None
    chosen = set(searching)
    return others, searching + [t for t in fresh if t not in chosen], len(searching)


def _like(term: str) -> str:
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


# (store url, term or trigram) -> (when counted, count).
_Counts = dict[tuple[str, str], tuple[float, int]]


class DocumentFrequencies:
    """How many repairs contain a term (capped at ``_DF_CAP``), cached per store for a minute.

    On SQLite it also counts the trigrams of the terms it counts (module
    docstring), to choose the postings a term is matched by.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str], tuple[float, int]] = {}
        self._totals: dict[str, tuple[float, int]] = {}
        self._grams: dict[tuple[str, str], tuple[float, int]] = {}

    def total(self, store: Store, session: Reader) -> int:
        now = time.monotonic()
        with self._lock:
            hit = self._totals.get(store.url)
        if hit is not None and now - hit[0] < _DF_TTL_S:
            return hit[1]
        n = int(session.execute(select(func.count()).select_from(M)).scalar_one())
        with self._lock:
            self._totals[store.url] = (now, n)
        return n

    def of(
        self,
        store: Store,
        session: Reader,
        terms: Sequence[str],
        found: dict[str, list[str]] | None = None,
        defer: list[str] | None = None,
    ) -> dict[str, int]:
        """Each term's count; ``found`` gets the ids of terms counted now, when few.

        ``defer`` (PostgreSQL): when a few terms (up to ``_FOLD_MAX``) are not
        counted yet, they are put there instead, left out of the result, for
        the caller to count in its candidates' statement (``read_candidates``'
        ``counting``) and hand back to ``remember``.
        """
        now = time.monotonic()
        missing = self._cached(self._cache, store.url, terms, now, _DF_TTL_S)
        out = {t: n for t, n in missing.items() if n is not None}
        uncounted = [t for t, n in missing.items() if n is None]
        pg = _is_postgresql(session)
        if defer is not None and pg and 0 < len(uncounted) <= _FOLD_MAX:
            defer.extend(uncounted)
            return out
        if not pg:
            waiting = [t for t in terms if t not in _expressions and _matched_by_grams(t)]
            self._choose_grams(store, session, waiting, now)
        patterns = {t: (_df_pattern(t, pg), _verify(t)) for t in uncounted}
        out.update(_count(session, patterns, pg, _DF_CAP, found))
        self._remember(self._cache, store.url, uncounted, out, now)
        return out

    def remember(self, store: Store, counts: Mapping[str, int]) -> None:
        """Keep counts read elsewhere (``read_candidates``' ``counted``) as if counted here."""
        self._remember(self._cache, store.url, list(counts), counts, time.monotonic())

    def _choose_grams(self, store: Store, session: Reader, terms: Sequence[str], now: float) -> None:
        """Note the rarest trigrams of each of ``terms`` whose trigrams are all counted.

        What ``term_expression`` then matches the term by. At most one
        statement's worth of trigrams is counted per call, so a new
        process's first calls stay cheap; a term waits for its remaining
        trigrams (matched as a phrase meanwhile).
        """
        if not terms:
            return
        grams = list(dict.fromkeys(g for t in terms for g in _grams(t)))
        known = self._cached(self._grams, store.url, grams, now, _GRAM_TTL_S)
        counts = {g: n for g, n in known.items() if n is not None}
        uncounted = [g for g, n in known.items() if n is None][:_DF_BATCH]
        counts.update(_count(session, {g: (_fts_phrase(g), "") for g in uncounted}, False, _GRAM_CAP))
        self._remember(self._grams, store.url, uncounted, counts, now)
        for t in terms:
            if all(g in counts for g in _grams(t)):
                _note_expression(t, _expression(t, counts))

    def _cached(
        self, cache: _Counts, url: str, keys: Sequence[str], now: float, ttl: float
    ) -> dict[str, int | None]:
        """Each key's cached count, or None when it has none younger than ``ttl``."""
        out: dict[str, int | None] = {}
        with self._lock:
            for key in keys:
                hit = cache.get((url, key))
                out[key] = hit[1] if hit is not None and now - hit[0] < ttl else None
        return out

    def _remember(
        self, cache: _Counts, url: str, keys: Sequence[str], counts: Mapping[str, int], now: float
    ) -> None:
        if not keys:
            return
        with self._lock:
            if len(cache) > _DF_CACHE_MAX:
                cache.clear()
            for key in keys:
                cache[(url, key)] = (now, counts[key])


def _count(
    session: Reader,
    patterns: Mapping[str, tuple[str, str]],
    postgresql_dialect: bool,
    cap: int,
    found: dict[str, list[str]] | None = None,
) -> dict[str, int]:
    """Key -> how many repairs its (pattern, text a match must contain or "") finds, up to ``cap``.

    ``found`` gets the ids of each key found in fewer than ``RARE_DF``.
    """
    keys = list(patterns)
    out: dict[str, int] = {}
    for start in range(0, len(keys), _DF_BATCH):
        batch = keys[start : start + _DF_BATCH]
        params: dict[str, Any] = {f"m{i}": patterns[k][0] for i, k in enumerate(batch)}
        checks = tuple(bool(patterns[k][1]) for k in batch)
        params.update({f"v{i}": patterns[k][1] for i, k in enumerate(batch) if checks[i]})
        if not postgresql_dialect:
            params.update({f"k{i}": k for i, k in enumerate(batch)})
            if found is None:
                counts = _prepared(_df_statement(checks)).all(session, {**params, "cap": cap})[0]
                out.update((k, int(n)) for k, n in zip(batch, counts, strict=True))
                continue
        # Each key's count, then its ids (an array; JSON text on SQLite) or NULL.
        statement = _df_ids_statement(len(batch)) if postgresql_dialect else _df_ids_sqlite_statement(checks)
        row = _prepared(statement).all(session, {**params, "cap": cap, "few": RARE_DF})[0]
        for i, k in enumerate(batch):
            out[k] = int(row[2 * i])
            ids = row[2 * i + 1]
            if found is not None and ids is not None:
                found[k] = [str(r) for r in (ids if postgresql_dialect else json.loads(ids))]
    return out


@functools.cache
def _prepared(statement: Any) -> Prepared:
    # SQLite: on the driver's cursor (SQLAlchemy's execute costs as much as a count).
    return Prepared(statement)


# Uncounted terms are counted this many per statement (a round trip each on PostgreSQL).
_DF_BATCH = 16
# PostgreSQL: up to this many uncounted terms are counted in the candidates'
# statement instead (``DocumentFrequencies.of``'s ``defer``): the usual call
# brings one or two (a new identifier), a new process's first calls dozens.
_FOLD_MAX = 4
# Term -> (FTS5 expression, text its matches must contain or ""), once its
# trigrams are counted (``term_expression``). Shared by every store: which
# trigrams are rarest only decides speed, never what is found.
_expressions: dict[str, tuple[str, str]] = {}


def _matched_by_grams(term: str) -> bool:
    # ASCII only: ``instr(lower(doc), term)`` checks the match exactly as
    # FTS5 folds case only for ASCII; a Chinese term is one trigram anyway.
    return len(term) > _GRAMS_PER_TERM and term.isascii()


def _grams(term: str) -> list[str]:
    return list(dict.fromkeys(term[i : i + 3] for i in range(len(term) - 2)))


def _expression(term: str, counts: Mapping[str, int]) -> tuple[str, str]:
    """How to find ``term`` given its trigrams' counts: its (up to) three rarest AND-ed, or its phrase.

    Checking a match for the whole term reads its text, ~40 times a posting:
    worth it only when a rare trigram bounds the matches (fewer than
    ``_GRAM_CAP``). A term made of common trigrams is a common word, and
    the phrase reads its postings only until the count's cap. A common
    trigram is left out of the AND even beside rare ones: its long postings
    cost more to walk than the few matches it would spare checking
    (``orders_api_206``: 173 us with ``ord``, 66 us without, at 10k repairs).
    """
    rare = [g for g in sorted(_grams(term), key=lambda g: counts[g]) if counts[g] < _GRAM_CAP]
    if not rare:
        return _fts_phrase(term), ""
    return "(" + " AND ".join(_fts_phrase(g) for g in rare[:_GRAMS_PER_TERM]) + ")", term


def _note_expression(term: str, found_by: tuple[str, str]) -> None:
    if len(_expressions) > _DF_CACHE_MAX:
        _expressions.clear()
    _expressions[term] = found_by


def term_expression(term: str) -> str:
    """The FTS5 expression that finds ``term``: its rarest trigrams when known to be rare, else its phrase.

    The rows found by trigrams contain them all; those that contain the
    term itself are told by ``instr`` (``_verify``, and ``_lexical``'s filter).
    """
    hit = _expressions.get(term)
    return _fts_phrase(term) if hit is None else hit[0]


def _verify(term: str) -> str:
    """What a match of ``term_expression(term)`` must contain ("" for a phrase: nothing more)."""
    hit = _expressions.get(term)
    return "" if hit is None else hit[1]


def _df_pattern(term: str, postgresql_dialect: bool) -> str:
    return _like(term) if postgresql_dialect else term_expression(term)


@functools.cache
def _df_statement(checks: tuple[bool, ...]) -> Any:
    """SQLite: one row, each of ``:m0``… counted (up to ``:cap``) as FTS5 finds them.

    ``checks[i]``: a match of ``:m{i}`` must also contain ``:v{i}``. The
    tail's repairs that contain ``:k{i}`` (the key itself) count too.
    """
    parts = []
    for i, check in enumerate(checks):
        also = f" AND instr(lower(doc), :v{i}) > 0" if check else ""
        one = f"SELECT 1 FROM {SQLITE_FTS_TABLE} WHERE {SQLITE_FTS_TABLE} MATCH :m{i}{also} LIMIT :cap"
        tail = f"SELECT count(*) FROM ({TAIL_SQL}) AS t{i} WHERE instr(lower(t{i}.doc), :k{i}) > 0"
        parts.append(f"min(:cap, (SELECT count(*) FROM ({one}) AS d{i}) + ({tail}))")
    return text(f"SELECT {', '.join(parts)}")


@functools.cache
def _df_ids_sqlite_statement(checks: tuple[bool, ...]) -> Any:
    """SQLite: ``_df_statement``'s counts, each followed by its ids (a JSON array) when under ``:few``.

    Each term's matches (indexed, and the tail's) are a CTE read twice
    (count, ids): SQLite materialises a CTE referenced more than once, so
    the FTS5 query runs once.
    """
    fts = SQLITE_FTS_TABLE
    ctes, columns = [], []
    for i, check in enumerate(checks):
        also = f" AND instr(lower(doc), :v{i}) > 0" if check else ""
        one = f"SELECT repair_id FROM {fts} WHERE {fts} MATCH :m{i}{also} LIMIT :cap"
        tail = f"SELECT t{i}.repair_id FROM ({TAIL_SQL}) AS t{i} WHERE instr(lower(t{i}.doc), :k{i}) > 0"
        ctes.append(f"d{i} AS (SELECT repair_id FROM ({one}) UNION ALL {tail})")
        columns.append(
            f"(SELECT min(:cap, count(*)) FROM d{i}), "
            f"(SELECT CASE WHEN count(*) < :few THEN json_group_array(repair_id) END FROM d{i})"
        )
    return text(f"WITH {', '.join(ctes)} SELECT {', '.join(columns)}")


@functools.cache
def _df_ids_statement(n: int) -> Any:
    """PostgreSQL: one row, for each of ``:m0``… its count (up to ``:cap``) and, under ``:few``, its ids.

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
    return text(f"WITH {ctes} SELECT {columns}")


def idf(df: int, total: int) -> float:
    """Inverse document frequency scaled to (0, 1]: 1 for a term only one repair has."""
    n = max(total, 1)
    return math.log(1 + n / max(df, 1)) / math.log(1 + n)
