"""The search reader: recall's reads, one implementation per dialect, chosen once per handle.

The two differ in what they can do in one statement, and recall plans its
reads by that (the flags), not by the dialect's name:

* SQLite (``SqliteSearch``) finds a term through the FTS5 trigram index by
  an expression recall may choose (``matches_by_trigrams``), and reads a
  candidate's outcome counts separately, for the few that pass recall's gate;
* PostgreSQL (``PostgresSearch``) counts new terms, reads outcome counts
  and asks whether newer embeddings exist inside the candidates' statement
  itself (``folds_into_candidates``): a round trip there costs more than
  the work it would spare.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar, Protocol

from ..handles import Executor
from ..reads import dialect_of, repair_count
from . import candidates, counts, lexical, statement
from .candidates import Candidate
from .counts import Match
from .eligibility import Eligibility
from .lexical import TextSearch
from .statement import CandidateQuery, CandidateRows

__all__ = ["PostgresSearch", "SearchReader", "SqliteSearch", "search_reader"]


class SearchReader(Protocol):
    """Recall's reads of the repairs (module docstring)."""

    matches_by_trigrams: bool
    folds_into_candidates: bool

    def total(self, ex: Executor) -> int: ...

    def fetch(self, ex: Executor, ids: Iterable[str], where: Eligibility) -> list[Candidate]: ...

    def newest_ids(self, ex: Executor, key: str, value: str, where: Eligibility, limit: int) -> list[str]: ...

    def lexical_ids(self, ex: Executor, search: TextSearch, where: Eligibility, limit: int) -> list[str]: ...

    def count_terms(
        self,
        ex: Executor,
        keys: Sequence[str],
        cap: int,
        *,
        matches: Mapping[str, Match] | None = None,
        few: int = 0,
        found: dict[str, list[str]] | None = None,
    ) -> dict[str, int]: ...

    def candidates(self, ex: Executor, query: CandidateQuery) -> CandidateRows: ...


class _Statements:
    """The reads, over the statements built for ``_postgresql`` (a subclass says which)."""

    _postgresql: ClassVar[bool]

    def total(self, ex: Executor) -> int:
        """How many repairs there are."""
        return repair_count(ex)

    def fetch(self, ex: Executor, ids: Iterable[str], where: Eligibility) -> list[Candidate]:
        """The eligible repairs among ``ids`` (order unspecified)."""
        return candidates.fetch(ex, self._postgresql, ids, where)

    def newest_ids(self, ex: Executor, key: str, value: str, where: Eligibility, limit: int) -> list[str]:
        """Newest eligible repairs whose ``key`` (``context_hash`` or ``tool_id``) is ``value``."""
        return candidates.newest_ids(ex, self._postgresql, key, value, where, limit)

    def lexical_ids(self, ex: Executor, search: TextSearch, where: Eligibility, limit: int) -> list[str]:
        """Eligible repairs matching ``search``'s terms, the most weight first, then the newest."""
        return lexical.lexical_ids(ex, self._postgresql, search, where, limit)

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
        """Key -> how many repairs contain it, up to ``cap`` (``counts.count_terms``)."""
        return counts.count_terms(ex, self._postgresql, keys, cap, matches=matches, few=few, found=found)

    def candidates(self, ex: Executor, query: CandidateQuery) -> CandidateRows:
        """Every candidate source of ``query`` in one statement (``statement.read_rows``)."""
        return statement.read_rows(ex, self._postgresql, query)


class SqliteSearch(_Statements):
    """SQLite: FTS5 trigram matches; outcome counts read apart."""

    _postgresql = False
    matches_by_trigrams = True
    folds_into_candidates = False


class PostgresSearch(_Statements):
    """PostgreSQL: ILIKE over the trigram index; counts and flags folded into the candidates' statement."""

    _postgresql = True
    matches_by_trigrams = False
    folds_into_candidates = True


_READERS: dict[bool, SearchReader] = {False: SqliteSearch(), True: PostgresSearch()}


def search_reader(ex: Executor) -> SearchReader:
    """The reader for the database ``ex`` runs on (the same object for every handle of a dialect)."""
    return _READERS[dialect_of(ex) == "postgresql"]
