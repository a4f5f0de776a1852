"""Document frequencies: how many repairs contain a term, counted in the database's text index.

* SQLite — ``decision_repairs_fts`` (FTS5, trigram tokenizer), matched by
  an FTS5 expression the caller chose (the term's phrase, ``fts_phrase``,
  or its rarest trigrams AND-ed, ``fts_all``, then checked for the term
  itself with ``instr``), plus the repairs written in the last second or
  so that wait to be indexed (the tail, ``store/search_index.py``).
* PostgreSQL — ``source_text ILIKE '%term%'`` (``like_pattern``; the
  ``pg_trgm`` GIN index serves it).

A count stops at a cap; under ``few`` it also returns the ids it found, so
the search of the same call can test those instead of searching again.
Which terms to count, and for how long a count holds, is recall's
(``recall.frequencies``). Everything here reads.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from sqlalchemy import text

from ..engine import Prepared
from ..handles import Executor
from ..models import SQLITE_FTS_TABLE, DecisionRepairModel
from ..search_index import TAIL_SQL

__all__ = ["DF_BATCH", "Match", "count_terms", "fts_all", "fts_phrase", "like_pattern"]

# Terms are counted this many per statement (a round trip each on PostgreSQL).
DF_BATCH = 16


class Match(NamedTuple):
    """SQLite: the FTS5 expression that finds a key, and the text a match must contain ("" for none)."""

    expression: str
    verify: str = ""


def fts_phrase(term: str) -> str:
    """SQLite: ``term`` as an FTS5 phrase (every trigram of it, in order)."""
    return '"' + term.replace('"', '""') + '"'


def fts_all(grams: Sequence[str]) -> str:
    """SQLite: an FTS5 expression that finds the rows containing every one of ``grams``."""
    return "(" + " AND ".join(fts_phrase(g) for g in grams) + ")"


def like_pattern(term: str) -> str:
    """PostgreSQL: ``term`` anywhere, as an ``ILIKE`` pattern with ``\\`` escaping ``%``, ``_`` and itself."""
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def count_terms(
    ex: Executor,
    postgresql_dialect: bool,
    keys: Sequence[str],
    cap: int,
    *,
    matches: Mapping[str, Match] | None = None,
    few: int = 0,
    found: dict[str, list[str]] | None = None,
) -> dict[str, int]:
    """Key -> how many repairs contain it, up to ``cap``; ``found`` gets the ids of those under ``few``.

    SQLite finds a key by ``matches[key]`` (its phrase when absent);
    PostgreSQL by the key itself (``like_pattern``).
    """
    chosen = matches or {}
    out: dict[str, int] = {}
    for start in range(0, len(keys), DF_BATCH):
        batch = keys[start : start + DF_BATCH]
        if postgresql_dialect:
            how = [Match(like_pattern(k)) for k in batch]
        else:
            how = [chosen.get(k) or Match(fts_phrase(k)) for k in batch]
        params: dict[str, Any] = {f"m{i}": m.expression for i, m in enumerate(how)}
        checks = tuple(bool(m.verify) for m in how)
        params.update({f"v{i}": m.verify for i, m in enumerate(how) if m.verify})
        if not postgresql_dialect:
            params.update({f"k{i}": k for i, k in enumerate(batch)})
            if found is None:
                counts = _prepared(_df_statement(checks)).all(ex, {**params, "cap": cap})[0]
                out.update((k, int(n)) for k, n in zip(batch, counts, strict=True))
                continue
        # Each key's count, then its ids (an array; JSON text on SQLite) or NULL.
        statement = _df_ids_statement(len(batch)) if postgresql_dialect else _df_ids_sqlite_statement(checks)
        row = _prepared(statement).all(ex, {**params, "cap": cap, "few": few})[0]
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
    table = DecisionRepairModel.__tablename__
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
