"""The candidates of one ``guidance_for`` call, read in one statement (``read_candidates``).

Everything here reads; nothing writes. The sources — the exact (tool,
context) and the tool's newest (``candidates``), the nearest embeddings'
ids, and the database's text search over the query's rarer terms
(``lexical``) — are united in the candidates' statement (``statement``),
which keeps only the repairs that may be served (``eligibility``).

Document frequencies, how a term is matched on SQLite, and the ids a fresh
count found come from ``frequencies``. A term counted in the same call is
searched by those ids (on SQLite only when every term searched was, since
one FTS5 query serves all terms otherwise: the usual case of a query whose
one rare term is a new identifier). On PostgreSQL, terms not counted yet
are counted in the candidates' statement itself when they fit
(``counting``), which spares the count a round trip of its own.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..outcomes.estimate import OutcomeCounts
from ..store.reads import list_param
from .candidates import Candidate
from .eligibility import Eligibility
from .frequencies import DF_BATCH, DF_CAP, Reader, count_terms, is_postgresql, like_pattern
from .lexical import MAX_SEARCH_TERMS, lexical_params, rare_cap, search_terms
from .statement import N_COLUMNS, Shape, candidates_prepared

__all__ = ["CandidateRead", "read_candidates"]


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
    shape = Shape(pg, len(rare), by_ids, newer is not None, searching, len(fresh))
    statement = candidates_prepared(shape)
    got = statement.all(reader, params)
    # One row per repair (sources overlap), ordered by id: ranking's ties
    # then fall the same way whichever source found a repair first.
    rows = sorted({r[0]: r for r in got}.values(), key=_by_id)
    if not pg:
        return CandidateRead([Candidate._make(r) for r in rows])
    n = N_COLUMNS
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
