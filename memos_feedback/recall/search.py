"""The candidates of one ``guidance_for`` call, read in one statement (``read_candidates``).

Everything here reads; nothing writes. The sources — the exact (tool,
context) and the tool's newest, the nearest embeddings' ids, and the
database's text search over the query's rarer terms (``lexical``) — are
united in the store's candidates' statement (``store.search``, one per dialect),
which keeps only the repairs that may be served (``eligibility``). This
module decides what that statement is asked; the store builds and runs it.

Document frequencies, how a term is matched on SQLite, and the ids a fresh
count found come from ``frequencies``. A term counted in the same call is
searched by those ids (on SQLite only when every term searched was, since
one FTS5 query serves all terms otherwise: the usual case of a query whose
one rare term is a new identifier). On PostgreSQL, terms not counted yet
are counted in the candidates' statement itself when they fit
(``counting``), which spares the count a round trip of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..outcomes.estimate import OutcomeCounts
from ..store.handles import Executor
from ..store.search import DF_BATCH, Candidate, CandidateQuery, Eligibility, search_reader
from .frequencies import DF_CAP, RARE_DF
from .lexical import MAX_SEARCH_TERMS, rare_cap, search_terms, text_search

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
    reader: Executor,
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
    reads = search_reader(reader)
    fresh = list(dict.fromkeys(counting)) if reads.folds_into_candidates else []
    counted: dict[str, int] | None = None
    searching = 0
    if fresh:
        fold = _fold(terms, fresh, frequencies, total)
        if fold is not None:
            terms, fresh, searching = fold
        else:
            # Folded, the rarest could not be chosen among them: counted first instead.
            found: dict[str, list[str]] = {}
            counted = reads.count_terms(reader, fresh, DF_CAP, few=RARE_DF, found=found)
            frequencies, matched = {**(frequencies or {}), **counted}, {**(matched or {}), **found}
            fresh = []
    rare = search_terms(terms, frequencies, total)
    # SQLite searches by id only when every term can be: its text search is
    # one FTS5 query for all terms, and the ids would not spare it otherwise.
    folds = reads.folds_into_candidates
    known = matched if matched and (folds or all(t in matched for t in rare)) else {}
    if known:
        # Terms searched by id first: the statement's shape is then (terms, how
        # many by id), a few dozen at most (compiled and prepared statements
        # are cached per shape); the order of terms changes no match or weight.
        rare = [t for t in rare if t in known] + [t for t in rare if t not in known]
    query = CandidateQuery(
        where,
        limit,
        text_search(rare, frequencies, total, known) if rare else None,
        context_hash,
        tool_id,
        vector_ids,
        newer_than,
        fresh,
        searching,
        df_cap=DF_CAP,
        rare_cap=rare_cap(total),
        total=total,
    )
    got = reads.candidates(reader, query)
    rows = got.rows
    if got.outcomes is None:
        return CandidateRead(rows)
    outcomes = {
        repair_id: OutcomeCounts(held=held, recurred=recurred, contradicted=contradicted, last_held=last)
        for repair_id, (held, recurred, contradicted, last) in got.outcomes.items()
    }
    if got.counted is not None:
        counted = got.counted
    return CandidateRead(rows, outcomes, got.newer_embedded, counted)


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
