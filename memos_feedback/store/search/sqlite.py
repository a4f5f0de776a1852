"""SQLite's search reader: the FTS5 trigram index, and the statements built on it.

* A term is found by an FTS5 expression: its phrase (``fts_phrase``, every
  trigram in order) or, once recall knows which of its trigrams are rare,
  those AND-ed (``fts_all``) with the match checked for the term itself
  (``instr``; ASCII-case-folded by ``lower``, as FTS5 folds).
* The repairs written in the last second or so wait to be indexed (the
  tail, ``store/search_index.py``): every read here joins them, read and
  tested with ``instr`` directly, so a repair is found from its commit on.
* The candidates' statement selects every source's eligible rows whole,
  united with ``UNION ALL``; outcome counts are read apart, for the few
  candidates that pass recall's gate.

Reads run on the driver's cursor (``Prepared``): SQLAlchemy's per-statement
machinery costs as much as these statements take inside SQLite.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Float,
    Select,
    String,
    bindparam,
    column,
    func,
    or_,
    select,
    text,
    union_all,
)

from ..engine import Prepared
from ..handles import Executor
from ..models import SQLITE_FTS_TABLE, DecisionRepairModel
from ..reads import in_list, list_param, repair_count
from ..search_index import TAIL_SQL
from .candidates import (
    COLUMNS,
    SAME_CONTEXT,
    SAME_TOOL,
    VALIDATED_CONTEXT,
    Candidate,
    by_weight,
    fetch,
    newest_ids,
    one_per_id,
)
from .eligibility import Eligibility, clause
from .query import DF_BATCH, CandidateQuery, CandidateRows, Match, Shape, TextSearch, common_params

__all__ = ["SqliteSearch", "fts_all", "fts_phrase"]

M = DecisionRepairModel
FTS = SQLITE_FTS_TABLE

# Unranked: FTS5's bm25 costs as much again as the trigram match itself
# (it counts every trigram's postings). The hits are few by construction —
# only rare terms search, and the limit covers their document frequencies —
# so ranking them after the join is cheap. The tail (repairs not indexed
# yet, a few rows) joins them unfiltered: the search keeps the rows that
# contain a term, indexed or not.
_FTS_HITS = (
    text(
        f"SELECT repair_id, doc FROM (SELECT repair_id, doc FROM {FTS} "
        f"WHERE {FTS} MATCH :match LIMIT :fts_limit) UNION ALL {TAIL_SQL}"
    )
    .columns(column("repair_id", String), column("doc", String))
    .subquery("hits")
)
# The search reads at most this many matches (before eligibility).
_FTS_MAX = 2_000


def fts_phrase(term: str) -> str:
    """``term`` as an FTS5 phrase (every trigram of it, in order)."""
    return '"' + term.replace('"', '""') + '"'


def fts_all(grams: Sequence[str]) -> str:
    """An FTS5 expression that finds the rows containing every one of ``grams``."""
    return "(" + " AND ".join(fts_phrase(g) for g in grams) + ")"


@functools.cache
def _lexical_statement(n_terms: int, by_ids: bool) -> Select[Any]:
    """The text search over ``n_terms`` terms (``:t0``…, weighted ``:w0``…), best first.

    The FTS5 index finds the matches and ``instr`` on the matched text
    tells which terms each contains. ``by_ids``: every term is given as the
    ids its count found instead (never some of them: one FTS5 query serves
    all terms, and the ids would not spare it): no text search at all.
    """
    weights: list[ColumnElement[float]] = [bindparam(f"w{i}", type_=Float) for i in range(n_terms)]
    if by_ids:
        tests = [in_list(cast(ColumnElement[Any], M.id), f"t{i}", False) for i in range(n_terms)]
        return by_weight(select(M.id).where(or_(*tests), clause(False)), tests, weights)
    terms = [bindparam(f"t{i}", type_=String) for i in range(n_terms)]
    tests = [func.instr(func.lower(_FTS_HITS.c.doc), t) > 0 for t in terms]
    stmt = select(M.id).join(_FTS_HITS, _FTS_HITS.c.repair_id == M.id).where(clause(False))
    # A match of a term's rarest trigrams that lacks the term itself is not a match.
    return by_weight(stmt.where(or_(*tests)), tests, weights)


def _lexical_params(search: TextSearch, limit: int) -> dict[str, Any]:
    params: dict[str, Any] = {f"w{i}": w for i, w in enumerate(search.weights)}
    if search.matched:  # every term by id
        params.update({f"t{i}": list_param(search.matched[t], False) for i, t in enumerate(search.terms)})
        return params
    params.update({f"t{i}": t for i, t in enumerate(search.terms)})
    params["match"] = " OR ".join(search.expressions)
    # Every match of the terms when their counts are known (each is below
    # recall's rare cap), else four per candidate wanted; a term's trigrams
    # match a little more than the term does: room for that.
    params["fts_limit"] = min(max(limit * 4, 2 * search.known), _FTS_MAX)
    return params


@functools.cache
def _count_statement(checks: tuple[bool, ...]) -> Any:
    """One row, each of ``:m0``… counted (up to ``:cap``) as FTS5 finds them.

    ``checks[i]``: a match of ``:m{i}`` must also contain ``:v{i}``. The
    tail's repairs that contain ``:k{i}`` (the key itself) count too.
    """
    parts = []
    for i, check in enumerate(checks):
        also = f" AND instr(lower(doc), :v{i}) > 0" if check else ""
        one = f"SELECT 1 FROM {FTS} WHERE {FTS} MATCH :m{i}{also} LIMIT :cap"
        tail = f"SELECT count(*) FROM ({TAIL_SQL}) AS t{i} WHERE instr(lower(t{i}.doc), :k{i}) > 0"
        parts.append(f"min(:cap, (SELECT count(*) FROM ({one}) AS d{i}) + ({tail}))")
    return text(f"SELECT {', '.join(parts)}")


@functools.cache
def _count_ids_statement(checks: tuple[bool, ...]) -> Any:
    """``_count_statement``'s counts, each followed by its ids (a JSON array) when under ``:few``.

    Each term's matches (indexed, and the tail's) are a CTE read twice
    (count, ids): SQLite materialises a CTE referenced more than once, so
    the FTS5 query runs once.
    """
    ctes, columns = [], []
    for i, check in enumerate(checks):
        also = f" AND instr(lower(doc), :v{i}) > 0" if check else ""
        one = f"SELECT repair_id FROM {FTS} WHERE {FTS} MATCH :m{i}{also} LIMIT :cap"
        tail = f"SELECT t{i}.repair_id FROM ({TAIL_SQL}) AS t{i} WHERE instr(lower(t{i}.doc), :k{i}) > 0"
        ctes.append(f"d{i} AS (SELECT repair_id FROM ({one}) UNION ALL {tail})")
        columns.append(
            f"(SELECT min(:cap, count(*)) FROM d{i}), "
            f"(SELECT CASE WHEN count(*) < :few THEN json_group_array(repair_id) END FROM d{i})"
        )
    return text(f"WITH {', '.join(ctes)} SELECT {', '.join(columns)}")


@functools.cache
def _prepared(statement: Any) -> Prepared:
    return Prepared(statement)


@functools.cache
def candidates_statement(shape: Shape) -> Any:
    """Every candidate source's eligible rows, whole, united with ``UNION ALL`` (rows in no order).

    The text search (when there are terms), the exact (tool, context), its
    validated repairs, the tool — each with the order and limit of its
    separate read — and the ids given (``:vector_ids``, JSON text). A row is
    read where its source finds it, not looked up again by id: that second
    visit of every row was a third of the statement's time. A repair that
    several sources find comes back once from each.
    """
    searched = (_lexical_statement(shape.n_terms, bool(shape.by_ids)),) if shape.n_terms else ()
    sources = (*searched, SAME_CONTEXT[False], SAME_TOOL[False], VALIDATED_CONTEXT[False])
    # Wrapped: SQLite allows no ORDER BY or LIMIT in a compound's members.
    parts: list[Select[Any]] = [
        select(*source.with_only_columns(*COLUMNS).subquery().c) for source in sources
    ]
    values = func.json_each(bindparam("vector_ids", type_=String)).table_valued("value")
    given = M.id.in_(select(values.c.value))
    parts.append(cast(Select[Any], select(*COLUMNS).where(given, clause(False))))
    return union_all(*parts)


class SqliteSearch:
    """Recall's reads on SQLite (module docstring)."""

    matches_by_trigrams = True
    folds_into_candidates = False

    def total(self, ex: Executor) -> int:
        """How many repairs there are."""
        return repair_count(ex)

    def fetch(self, ex: Executor, ids: Iterable[str], where: Eligibility) -> list[Candidate]:
        """The eligible repairs among ``ids`` (order unspecified)."""
        return fetch(ex, False, ids, where)

    def newest_ids(self, ex: Executor, key: str, value: str, where: Eligibility, limit: int) -> list[str]:
        """Newest eligible repairs whose ``key`` (``context_hash`` or ``tool_id``) is ``value``."""
        return newest_ids(ex, False, key, value, where, limit)

    def lexical_ids(self, ex: Executor, search: TextSearch, where: Eligibility, limit: int) -> list[str]:
        """Eligible repairs matching ``search``'s terms, the most weight first, then the newest."""
        params = {**where.params(), **_lexical_params(search, limit), "lim": limit}
        return list(ex.scalars(_lexical_statement(len(search.terms), False), params))

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
        """Key -> how many repairs contain it, up to ``cap``; ``found`` gets the ids of those under ``few``.

        A key is found by ``matches[key]``, by its phrase when absent.
        """
        chosen = matches or {}
        out: dict[str, int] = {}
        for start in range(0, len(keys), DF_BATCH):
            batch = keys[start : start + DF_BATCH]
            how = [chosen.get(k) or Match(fts_phrase(k)) for k in batch]
            params: dict[str, Any] = {f"m{i}": m.expression for i, m in enumerate(how)}
            params.update({f"v{i}": m.verify for i, m in enumerate(how) if m.verify})
            params.update({f"k{i}": k for i, k in enumerate(batch)})
            checks = tuple(bool(m.verify) for m in how)
            if found is None:
                counts = _prepared(_count_statement(checks)).all(ex, {**params, "cap": cap})[0]
                out.update((k, int(n)) for k, n in zip(batch, counts, strict=True))
                continue
            # Each key's count, then its ids (JSON text) or NULL.
            row = _prepared(_count_ids_statement(checks)).all(ex, {**params, "cap": cap, "few": few})[0]
            for i, k in enumerate(batch):
                out[k] = int(row[2 * i])
                if row[2 * i + 1] is not None:
                    found[k] = [str(r) for r in json.loads(row[2 * i + 1])]
        return out

    def candidates(self, ex: Executor, query: CandidateQuery) -> CandidateRows:
        """Every candidate source of ``query`` in one statement (PostgreSQL's extras are not asked)."""
        search = query.search
        params = common_params(query, list_param(sorted(set(query.vector_ids)), False))
        if search is not None:
            params.update(_lexical_params(search, query.limit))
        shape = Shape(False, len(search.terms), search.by_ids()) if search is not None else Shape(False, 0)
        rows = one_per_id(_prepared(candidates_statement(shape)).all(ex, params))
        return CandidateRows([Candidate._make(r) for r in rows])
