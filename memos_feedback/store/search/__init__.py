"""Recall's statements: the candidates, the text search, term counts, embeddings, eligibility.

Recall decides what to read — which terms search, their weights, how long a
count holds, how candidates score — and asks for it here in plain values;
every statement it runs is built in this package:

* ``eligibility`` — the clause every candidate read carries;
* ``candidates`` — the candidate row and the per-source statements;
* ``query`` — what recall asks and gets back, in plain values;
* ``sqlite`` — SQLite's reader: FTS5 trigram matches, term counts, the
  candidates' statement;
* ``postgresql`` — PostgreSQL's: ILIKE over the trigram index, and the
  counts and flags folded into the candidates' statement;
* ``readers`` — the ``SearchReader`` protocol they implement, and
  ``search_reader(handle)``, which picks one by ``reads.dialect_of``;
* ``embeddings`` — the in-process matrices' reads and the backfill's.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..handles import Executor
from .candidates import Candidate
from .eligibility import Eligibility
from .postgresql import PostgresSearch
from .query import DF_BATCH, CandidateQuery, CandidateRows, Match, TextSearch
from .readers import SearchReader, search_reader
from .sqlite import SqliteSearch, fts_all, fts_phrase

__all__ = [
    "DF_BATCH",
    "Candidate",
    "CandidateQuery",
    "CandidateRows",
    "Eligibility",
    "Match",
    "PostgresSearch",
    "SearchReader",
    "SqliteSearch",
    "TextSearch",
    "fetch_candidates",
    "fts_all",
    "fts_phrase",
    "same_context_candidate_ids",
    "same_tool_candidate_ids",
    "search_reader",
]


def fetch_candidates(ex: Executor, ids: Iterable[str], where: Eligibility) -> list[Candidate]:
    """The eligible repairs among ``ids`` (order unspecified)."""
    return search_reader(ex).fetch(ex, ids, where)


def same_context_candidate_ids(ex: Executor, context_hash: str, where: Eligibility, limit: int) -> list[str]:
    """Newest eligible repairs written for exactly this (tool, context)."""
    return search_reader(ex).newest_ids(ex, "context_hash", context_hash, where, limit)


def same_tool_candidate_ids(ex: Executor, tool_id: str, where: Eligibility, limit: int) -> list[str]:
    """Newest eligible repairs written for ``tool_id``."""
    return search_reader(ex).newest_ids(ex, "tool_id", tool_id, where, limit)
