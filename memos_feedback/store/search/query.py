"""What recall asks the search reader, and what it gets back: plain values, no SQL.

Recall fills these (which terms search, their weights, which ids a count
already found); each dialect's reader (``sqlite``, ``postgresql``) turns
them into its statement's parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .candidates import Candidate
from .eligibility import Eligibility

__all__ = [
    "DF_BATCH",
    "CandidateQuery",
    "CandidateRows",
    "Match",
    "OutcomeRow",
    "Shape",
    "TextSearch",
    "common_params",
]

# Terms are counted this many per statement (a round trip each on PostgreSQL).
DF_BATCH = 16


class Match(NamedTuple):
    """SQLite: the FTS5 expression that finds a key, and the text a match must contain ("" for none)."""

    expression: str
    verify: str = ""


@dataclass(frozen=True, slots=True)
class TextSearch:
    """The terms that select candidates by text, and what the statement needs to know of each."""

    terms: Sequence[str]
    # Each term's IDF weight (matches holding the most weight rank first).
    weights: Sequence[float]
    # SQLite: each term's FTS5 expression (``sqlite.fts_phrase``/``fts_all``).
    expressions: Sequence[str]
    # Terms given as the ids of every repair containing them; on SQLite
    # either every term or none.
    matched: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # How many matches the terms have together (their counts summed; 0: unknown).
    known: int = 0

    def by_ids(self) -> tuple[bool, ...]:
        """Which terms are given as ids (the statement's shape); () when none is."""
        return tuple(t in self.matched for t in self.terms) if self.matched else ()


@dataclass(frozen=True, slots=True)
class CandidateQuery:
    """What one read of every candidate source asks."""

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
    """What a candidates' read found: the rows in id order, and what PostgreSQL read with them."""

    rows: list[Candidate]
    # PostgreSQL: every row's outcome counts; None on SQLite.
    outcomes: dict[str, OutcomeRow] | None = None
    # PostgreSQL, given ``newer_than``; None when not asked or no row came back to carry it.
    newer_embedded: bool | None = None
    # PostgreSQL, given ``fresh``: each fresh term's count; None when no row came back to carry them.
    counted: dict[str, int] | None = None


class Shape(NamedTuple):
    """What a candidates' statement is built for: its cache key."""

    postgresql_dialect: bool
    n_terms: int
    by_ids: tuple[bool, ...] = ()
    newer: bool = False
    fresh: int = 0
    counted: int = 0


def common_params(query: CandidateQuery, vector_ids: Any) -> dict[str, Any]:
    """The parameters every dialect's candidates' statement binds (``vector_ids`` in its list form)."""
    return {
        **query.where.params(),
        "lim": query.limit,
        "context_hash": query.context_hash,
        "tool_id": query.tool_id,
        "vector_ids": vector_ids,
    }
