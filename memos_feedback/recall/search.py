"""Read-only queries behind ``guidance_for``: eligibility, text search, statistics.

Everything here reads; nothing writes. The text search is the database's:

* SQLite — ``decision_repairs_fts`` (FTS5, trigram tokenizer), ``MATCH`` on
  the query's terms OR-ed together, best ``bm25`` first;
* PostgreSQL — ``source_text ILIKE '%term%'`` OR-ed (the ``pg_trgm`` GIN
  index serves it), most terms matched first.

Document frequencies of terms (for IDF) come from the same index, counted up
to a cap and cached for ``_DF_TTL_S`` seconds per store: statistics that
are a minute old rank as well as fresh ones.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    String,
    and_,
    case,
    column,
    func,
    literal,
    or_,
    select,
    text,
    true,
)
from sqlalchemy.orm import Session

from ..store import Store
from ..store.models import SQLITE_FTS_TABLE, DecisionRepairModel

__all__ = [
    "MAX_SEARCH_TERMS",
    "RARE_DF",
    "Candidate",
    "DocumentFrequencies",
    "eligible",
    "fetch_candidates",
    "idf",
    "lexical_candidate_ids",
    "same_context_candidate_ids",
    "same_tool_candidate_ids",
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


@dataclass(frozen=True, slots=True)
class Candidate:
    """The columns of a repair that ranking needs."""

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
    embedding: bytes | None
    embedding_model: str | None
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
    M.source_text,
    M.embedding,
    M.embedding_model,
    M.session_id,
)


def eligible(project: str | None, now_ms: int, unvalidated_max_age_ms: int) -> ColumnElement[bool]:
    """Never rejected, still active; global or of ``project``; validated, or younger than the age limit."""
    # Through coalesce on purpose: eligibility filters rows found by key, text
    # or tool; an indexable project test tempts SQLite's planner into scanning
    # every row of the project (half the table) instead of a few primary keys.
    # Projects are never "" (callers' values are stripped, "" means none).
    scoped = func.coalesce(M.project, "")
    scope = scoped == "" if project is None else scoped.in_(("", project))
    fresh = or_(M.validated.is_(True), M.ts >= now_ms - unvalidated_max_age_ms)
    # Outcomes: a stale or superseded repair (status set) is never offered.
    return and_(M.rejected.is_(False), M.status.is_(None), scope, fresh)


def _candidate(row: Any) -> Candidate:
    source = row.source_text or f"do: {row.preference}\navoid: {row.anti_pattern}"
    return Candidate(
        id=row.id,
        ts=row.ts,
        context_hash=row.context_hash,
        tool_id=row.tool_id,
        context=row.context,
        trigger=row.trigger,
        preference=row.preference,
        anti_pattern=row.anti_pattern,
        severity=row.severity,
        confidence=row.confidence,
        validated=bool(row.validated),
        category=row.category,
        project=row.project,
        source_text=source,
        embedding=row.embedding,
        embedding_model=row.embedding_model,
        session_id=row.session_id,
    )


def fetch_candidates(session: Session, ids: Iterable[str], where: ColumnElement[bool]) -> list[Candidate]:
    """The eligible repairs among ``ids`` (order unspecified)."""
    wanted = sorted(set(ids))
    if not wanted:
        return []
    stmt = select(*_COLUMNS).where(M.id.in_(wanted), where)
    return [_candidate(r) for r in session.execute(stmt)]


def same_context_candidate_ids(
    session: Session, context_hash: str, where: ColumnElement[bool], limit: int
) -> list[str]:
    """Newest eligible repairs written for exactly this (tool, context)."""
    stmt = select(M.id).where(M.context_hash == context_hash, where).order_by(M.ts.desc()).limit(limit)
    return list(session.scalars(stmt))


def same_tool_candidate_ids(
    session: Session, tool_id: str, where: ColumnElement[bool], limit: int
) -> list[str]:
    """Newest eligible repairs written for ``tool_id``."""
    stmt = select(M.id).where(M.tool_id == tool_id, where).order_by(M.ts.desc()).limit(limit)
    return list(session.scalars(stmt))


def _fts_phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def lexical_candidate_ids(
    session: Session,
    terms: Sequence[str],
    where: ColumnElement[bool],
    limit: int,
    frequencies: Mapping[str, int] | None = None,
    total: int | None = None,
) -> list[str]:
    """Eligible repairs matching the query's rarer terms (3+ characters each), best first.

    Ranked (bm25 on SQLite, terms matched on PostgreSQL) over the terms fewer
    than ``RARE_DF`` repairs (or 5 % of ``total``, at least 20) contain — the
    ``MAX_SEARCH_TERMS`` rarest of them — so the work follows those terms'
    postings, not the table. A query whose every term is common selects no
    candidate by text: such terms cannot tell a few hundred repairs apart,
    and candidates found by tool, context or embedding are still scored on
    them.
    """
    cap = RARE_DF if total is None else max(_RARE_FLOOR, min(RARE_DF, total // _RARE_SHARE))
    rare = [t for t in terms if len(t) >= 3 and (frequencies is None or frequencies.get(t, 0) < cap)]
    if not rare:
        return []
    if frequencies is not None and len(rare) > MAX_SEARCH_TERMS:
        # The rarest say the most and have the shortest postings: the
        # search's cost follows the terms it ORs, so it takes only those.
        rare = sorted(rare, key=lambda t: frequencies.get(t, 0))[:MAX_SEARCH_TERMS]
    if session.get_bind().dialect.name == "sqlite":
        match = " OR ".join(_fts_phrase(t) for t in rare)
        hits = (
            text(
                f"SELECT repair_id, bm25({SQLITE_FTS_TABLE}) AS rank FROM {SQLITE_FTS_TABLE} "
                f"WHERE {SQLITE_FTS_TABLE} MATCH :match ORDER BY rank LIMIT :fts_limit"
            )
            .columns(column("repair_id", String), column("rank", Float))
            .subquery("hits")
        )
        stmt = (
            select(M.id).join(hits, hits.c.repair_id == M.id).where(where).order_by(hits.c.rank).limit(limit)
        )
        return list(session.scalars(stmt, {"match": match, "fts_limit": limit * 4}))
    likes = [M.source_text.ilike(_like(t), escape="\\") for t in rare]
    matched: ColumnElement[int] = literal(0)
    for like in likes:
        matched = matched + case((like, 1), else_=0)
    stmt = select(M.id).where(or_(*likes), where).order_by(matched.desc(), M.ts.desc()).limit(limit)
    return list(session.scalars(stmt))


def _like(term: str) -> str:
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class DocumentFrequencies:
    """How many repairs contain a term (capped at ``_DF_CAP``), cached per store for a minute."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str], tuple[float, int]] = {}
        self._totals: dict[str, tuple[float, int]] = {}

    def total(self, store: Store, session: Session) -> int:
        now = time.monotonic()
        with self._lock:
            hit = self._totals.get(store.url)
        if hit is not None and now - hit[0] < _DF_TTL_S:
            return hit[1]
        n = int(session.execute(select(func.count()).select_from(M)).scalar_one())
        with self._lock:
            self._totals[store.url] = (now, n)
        return n

    def of(self, store: Store, session: Session, terms: Sequence[str]) -> dict[str, int]:
        now = time.monotonic()
        out: dict[str, int] = {}
        missing: list[str] = []
        with self._lock:
            for t in terms:
                hit = self._cache.get((store.url, t))
                if hit is not None and now - hit[0] < _DF_TTL_S:
                    out[t] = hit[1]
                else:
                    missing.append(t)
        sqlite = session.get_bind().dialect.name == "sqlite"
        for t in missing:
            if sqlite:
                sub = text(
                    f"SELECT count(*) FROM (SELECT 1 FROM {SQLITE_FTS_TABLE} "
                    f"WHERE {SQLITE_FTS_TABLE} MATCH :m LIMIT :cap)"
                )
                n = int(session.execute(sub, {"m": _fts_phrase(t), "cap": _DF_CAP}).scalar_one())
            else:
                inner = (
                    select(true()).where(M.source_text.ilike(_like(t), escape="\\")).limit(_DF_CAP).subquery()
                )
                n = int(session.execute(select(func.count()).select_from(inner)).scalar_one())
            out[t] = n
        if missing:
            with self._lock:
                if len(self._cache) > _DF_CACHE_MAX:
                    self._cache.clear()
                for t in missing:
                    self._cache[(store.url, t)] = (now, out[t])
        return out


def idf(df: int, total: int) -> float:
    """Inverse document frequency scaled to (0, 1]: 1 for a term only one repair has."""
    n = max(total, 1)
    return math.log(1 + n / max(df, 1)) / math.log(1 + n)
