"""Recall's statements: the candidates, the text search, term counts, embeddings, eligibility.

Recall decides what to read — which terms search, their weights, how long a
count holds, how candidates score — and asks for it here in plain values;
every statement it runs is built in this package:

* ``eligibility`` — the clause every candidate read carries;
* ``candidates`` — the candidate row and the per-source statements;
* ``lexical`` — the text search (FTS5 on SQLite, ILIKE on PostgreSQL);
* ``counts`` — document frequencies in the same indexes, and the
  dialects' query text (FTS5 phrases, ILIKE patterns);
* ``statement`` — every source in one statement (``read_rows``);
* ``embeddings`` — the in-process matrices' reads and the backfill's;
* ``readers`` — ``SearchReader``, one implementation per dialect,
  picked by ``search_reader(handle)``.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..handles import Executor
from .candidates import Candidate
from .counts import DF_BATCH, Match, fts_all, fts_phrase
from .eligibility import Eligibility
from .lexical import TextSearch
from .readers import PostgresSearch, SearchReader, SqliteSearch, search_reader
from .statement import CandidateQuery, CandidateRows

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
