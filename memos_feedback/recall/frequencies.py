"""Document frequencies: how many repairs contain a term, for ``guidance_for``'s IDF weights.

Counted in the database's own text index (``store.search``: FTS5 on
SQLite, ILIKE over a trigram index on PostgreSQL), up to a cap
(``DF_CAP``), and cached for ``_DF_TTL_S`` seconds per store: statistics
that are a minute old rank as well as fresh ones. This module holds that
policy and the arithmetic (``idf``); the statements are the store's.

The count of a term not counted yet also returns the ids it found when
they are few (fewer than ``RARE_DF``): the search of that call
(``search.read_candidates``) tests those ids instead of running the same
search again. On PostgreSQL an identifier like ``orders_api_4170`` shares
trigrams with thousands of repairs, and its scan took 2–4 ms at 100k
repairs (docs/PERFORMANCE.md).

On SQLite a longer ASCII term is not matched as a phrase of all its
trigrams: a phrase reads every trigram's postings, and an identifier like
``orders_api_4123`` is made of trigrams half the repairs have (``ord``,
``api``). It is matched by its three rarest trigrams AND-ed, leaving out
any in ``_GRAM_CAP`` repairs or more (each counted once, up to that cap,
and cached for ten minutes; at most 16 counted per call), and the matches
are checked for the whole term (``instr``): the same rows, from postings
that are short (``term_expression``).

Everything here reads; nothing writes.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping, Sequence

from ..store import Store
from ..store.handles import Executor
from ..store.search import DF_BATCH, Match, fts_all, fts_phrase, search_reader

__all__ = ["DF_CAP", "RARE_DF", "DocumentFrequencies", "idf", "term_expression"]

# A term's count stops here: past it, a term is common whatever its count.
DF_CAP = 1_000
# Terms in at least this many repairs — or in 5 % of them, when that is
# fewer (but never below 20) — do not select candidates by text: they are in
# too many to rank cheaply and say too little on their own (they still weigh
# in the score of candidates found otherwise). A count below it returns ids.
RARE_DF = 200
_DF_TTL_S = 60.0
_DF_CACHE_MAX = 50_000
# Trigram counts (SQLite): capped (past this a trigram is common, whatever
# its count), kept longer than terms' (they move slowly and only choose
# which postings a search reads, never what it finds).
_GRAM_CAP = 250
_GRAM_TTL_S = 600.0
_GRAMS_PER_TERM = 3
# PostgreSQL: up to this many uncounted terms are counted in the candidates'
# statement instead (``DocumentFrequencies.of``'s ``defer``): the usual call
# brings one or two (a new identifier), a new process's first calls dozens.
_FOLD_MAX = 4

# (store url, term or trigram) -> (when counted, count).
_Counts = dict[tuple[str, str], tuple[float, int]]


class DocumentFrequencies:
    """How many repairs contain a term (capped at ``DF_CAP``), cached per store for a minute.

    On SQLite it also counts the trigrams of the terms it counts (module
    docstring), to choose the postings a term is matched by.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str], tuple[float, int]] = {}
        self._totals: dict[str, tuple[float, int]] = {}
        self._grams: dict[tuple[str, str], tuple[float, int]] = {}

    def total(self, store: Store, session: Executor) -> int:
        now = time.monotonic()
        with self._lock:
            hit = self._totals.get(store.url)
        if hit is not None and now - hit[0] < _DF_TTL_S:
            return hit[1]
        n = search_reader(session).total(session)
        with self._lock:
            self._totals[store.url] = (now, n)
        return n

    def of(
        self,
        store: Store,
        session: Executor,
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
        reader = search_reader(session)
        if defer is not None and reader.folds_into_candidates and 0 < len(uncounted) <= _FOLD_MAX:
            defer.extend(uncounted)
            return out
        if reader.matches_by_trigrams:
            waiting = [t for t in terms if t not in _expressions and _matched_by_grams(t)]
            self._choose_grams(store, session, waiting, now)
        matches = {t: _expressions[t] for t in uncounted if t in _expressions}
        out.update(reader.count_terms(session, uncounted, DF_CAP, matches=matches, few=RARE_DF, found=found))
        self._remember(self._cache, store.url, uncounted, out, now)
        return out

    def remember(self, store: Store, counts: Mapping[str, int]) -> None:
        """Keep counts read elsewhere (``read_candidates``' ``counted``) as if counted here."""
        self._remember(self._cache, store.url, list(counts), counts, time.monotonic())

    def _choose_grams(self, store: Store, session: Executor, terms: Sequence[str], now: float) -> None:
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
        uncounted = [g for g, n in known.items() if n is None][:DF_BATCH]
        counts.update(search_reader(session).count_terms(session, uncounted, _GRAM_CAP))
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


# Term -> how FTS5 finds it (expression, text its matches must contain or
# ""), once its trigrams are counted (``term_expression``). Shared by every store: which
# trigrams are rarest only decides speed, never what is found.
_expressions: dict[str, Match] = {}


def _matched_by_grams(term: str) -> bool:
    # ASCII only: ``instr(lower(doc), term)`` checks the match exactly as
    # FTS5 folds case only for ASCII; a Chinese term is one trigram anyway.
    return len(term) > _GRAMS_PER_TERM and term.isascii()


def _grams(term: str) -> list[str]:
    return list(dict.fromkeys(term[i : i + 3] for i in range(len(term) - 2)))


def _expression(term: str, counts: Mapping[str, int]) -> Match:
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
        return Match(fts_phrase(term))
    return Match(fts_all(rare[:_GRAMS_PER_TERM]), term)


def _note_expression(term: str, found_by: Match) -> None:
    if len(_expressions) > _DF_CACHE_MAX:
        _expressions.clear()
    _expressions[term] = found_by


def term_expression(term: str) -> str:
    """The FTS5 expression that finds ``term``: its rarest trigrams when known to be rare, else its phrase.

    The rows found by trigrams contain them all; those that contain the
    term itself are told by ``instr`` (``Match.verify``, and the text search's filter).
    """
    hit = _expressions.get(term)
    return fts_phrase(term) if hit is None else hit.expression


def idf(df: int, total: int) -> float:
    """Inverse document frequency scaled to (0, 1]: 1 for a term only one repair has."""
    n = max(total, 1)
    return math.log(1 + n / max(df, 1)) / math.log(1 + n)
