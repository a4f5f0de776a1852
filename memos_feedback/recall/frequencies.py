"""Document frequencies: how many repairs contain a term, for ``guidance_for``'s IDF weights.

Counted in the database's own text index, up to a cap (``DF_CAP``), and
cached for ``_DF_TTL_S`` seconds per store: statistics that are a minute
old rank as well as fresh ones.

* SQLite — ``decision_repairs_fts`` (FTS5, trigram tokenizer), plus the
  repairs written in the last second or so that wait to be indexed (the
  tail, ``store/search_index.py``).
* PostgreSQL — ``source_text ILIKE '%term%'`` (the ``pg_trgm`` GIN index
  serves it).

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

import functools
import json
import math
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, func, select, text
from sqlalchemy.orm import Session

from ..store import Store
from ..store.engine import Prepared
from ..store.models import SQLITE_FTS_TABLE, DecisionRepairModel
from ..store.search_index import TAIL_SQL

__all__ = [
    "DF_BATCH",
    "DF_CAP",
    "RARE_DF",
    "DocumentFrequencies",
    "Reader",
    "count_terms",
    "idf",
    "is_postgresql",
    "like_pattern",
    "term_expression",
]

M = DecisionRepairModel
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
# Uncounted terms are counted this many per statement (a round trip each on PostgreSQL).
DF_BATCH = 16
# PostgreSQL: up to this many uncounted terms are counted in the candidates'
# statement instead (``DocumentFrequencies.of``'s ``defer``): the usual call
# brings one or two (a new identifier), a new process's first calls dozens.
_FOLD_MAX = 4

# What the reads run on: a Core connection (``guidance_for``) or an ORM session.
Reader = Connection | Session


def is_postgresql(reader: Reader) -> bool:
    """Whether ``reader`` runs on PostgreSQL (the statements differ by dialect)."""
    bind = reader.get_bind() if isinstance(reader, Session) else reader
    return bind.dialect.name == "postgresql"


def _fts_phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def like_pattern(term: str) -> str:
    """PostgreSQL: ``term`` anywhere, as an ``ILIKE`` pattern with ``\\`` escaping ``%``, ``_`` and itself."""
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


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
        pg = is_postgresql(session)
        if defer is not None and pg and 0 < len(uncounted) <= _FOLD_MAX:
            defer.extend(uncounted)
            return out
        if not pg:
            waiting = [t for t in terms if t not in _expressions and _matched_by_grams(t)]
            self._choose_grams(store, session, waiting, now)
        patterns = {t: (_df_pattern(t, pg), _verify(t)) for t in uncounted}
        out.update(count_terms(session, patterns, pg, DF_CAP, found))
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
        uncounted = [g for g, n in known.items() if n is None][:DF_BATCH]
        counts.update(count_terms(session, {g: (_fts_phrase(g), "") for g in uncounted}, False, _GRAM_CAP))
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


def count_terms(
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
    for start in range(0, len(keys), DF_BATCH):
        batch = keys[start : start + DF_BATCH]
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
    term itself are told by ``instr`` (``_verify``, and ``lexical.lexical_statement``'s filter).
    """
    hit = _expressions.get(term)
    return _fts_phrase(term) if hit is None else hit[0]


def _verify(term: str) -> str:
    """What a match of ``term_expression(term)`` must contain ("" for a phrase: nothing more)."""
    hit = _expressions.get(term)
    return "" if hit is None else hit[1]


def _df_pattern(term: str, postgresql_dialect: bool) -> str:
    return like_pattern(term) if postgresql_dialect else term_expression(term)


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
