"""The search reader: recall's reads, one implementation per dialect, chosen once per handle.

``SqliteSearch`` (``sqlite``) and ``PostgresSearch`` (``postgresql``) hold
their dialect's statements whole. They differ in what they can do in one
statement, and recall plans its reads by that (the flags), not by the
dialect's name:

* ``matches_by_trigrams`` (SQLite): a term is found through the FTS5
  trigram index by an expression recall may choose (its rarest trigrams);
* ``folds_into_candidates`` (PostgreSQL): new terms' counts, outcome
  counts and whether newer embeddings exist are read inside the
  candidates' statement itself — a round trip there costs more than the
  work it would spare.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from ..handles import Executor
from ..reads import dialect_of
from . import postgresql, sqlite
from .candidates import Candidate
from .eligibility import Eligibility
from .query import CandidateQuery, CandidateRows, Match, Shape, TextSearch

__all__ = ["SearchReader", "candidates_statement", "search_reader"]


class SearchReader(Protocol):
    """Recall's reads of the repairs (module docstring)."""

    @property
    def matches_by_trigrams(self) -> bool: ...

    @property
    def folds_into_candidates(self) -> bool: ...

    def total(self, ex: Executor) -> int:
        """How many repairs there are."""
        ...

    def fetch(self, ex: Executor, ids: Iterable[str], where: Eligibility) -> list[Candidate]:
        """The eligible repairs among ``ids`` (order unspecified)."""
        ...

    def newest_ids(self, ex: Executor, key: str, value: str, where: Eligibility, limit: int) -> list[str]:
        """Newest eligible repairs whose ``key`` (``context_hash`` or ``tool_id``) is ``value``."""
        ...

    def lexical_ids(self, ex: Executor, search: TextSearch, where: Eligibility, limit: int) -> list[str]:
        """Eligible repairs matching ``search``'s terms, the most weight first, then the newest."""
        ...

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
        """Key -> how many repairs contain it, up to ``cap``; ``found``: the ids of those under ``few``."""
        ...

    def candidates(self, ex: Executor, query: CandidateQuery) -> CandidateRows:
        """Every candidate source of ``query`` in one statement: one row per repair, in id order."""
        ...


_READERS: dict[bool, SearchReader] = {False: sqlite.SqliteSearch(), True: postgresql.PostgresSearch()}


def search_reader(ex: Executor) -> SearchReader:
    """The reader for the database ``ex`` runs on (the same object for every handle of a dialect)."""
    return _READERS[dialect_of(ex) == "postgresql"]


def candidates_statement(shape: Shape) -> Any:
    """The candidates' statement of ``shape``, in its dialect (for plans and benchmarks)."""
    if shape.postgresql_dialect:
        return postgresql.candidates_statement(shape)
    return sqlite.candidates_statement(shape)
