"""The candidate row, and the statements that select candidates one source at a time.

``Candidate`` is what ranking reads of a repair (``COLUMNS``). The
per-source statements here — the eligible repairs among given ids, the
newest of an exact (tool, context) and the validated ones of it (however
many newer ones there are), the newest of a tool — say what each source
selects; recall reads every source at once, in the candidates' statement
(``statement``) made of them.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, cast

from sqlalchemy import ColumnElement, Integer, Select, String, bindparam, case, func, literal, select, true

from ..handles import Executor
from ..models import DecisionRepairModel
from ..reads import in_list, list_param
from .eligibility import Eligibility, clause

__all__ = [
    "COLUMNS",
    "LIMIT",
    "SAME_CONTEXT",
    "SAME_TOOL",
    "VALIDATED_CONTEXT",
    "Candidate",
    "by_weight",
    "fetch",
    "newest_ids",
    "one_per_id",
]

M = DecisionRepairModel


class Candidate(NamedTuple):
    """The columns of a repair that ranking needs.

    A named tuple, not a dataclass: it is made straight from the row
    (``_make``), a hundred times per ``guidance_for``, without a frozen
    dataclass's per-field ``__setattr__``.
    """

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
    session_id: str | None


COLUMNS = (
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
    # A repair written before recall had no source text: it is read as its
    # lesson (the fallback is computed here, so a row becomes a Candidate as is).
    func.coalesce(
        func.nullif(M.source_text, ""),
        literal("do: ") + M.preference + literal("\navoid: ") + M.anti_pattern,
    ).label("source_text"),
    # No embedding: cosines come from recall's in-process matrix, and a
    # blob per row is most of a row's bytes.
    M.session_id,
)

# How many rows a source selects. One parameter object for every source (the
# text search's too): the candidates' statement binds them all with one value.
LIMIT = bindparam("lim", type_=Integer)


def _newest(
    key: ColumnElement[Any], name: str, postgresql_dialect: bool, *, validated: bool = False
) -> Select[Any]:
    where = [key == bindparam(name, type_=String), clause(postgresql_dialect)]
    if validated:
        # ``= true`` as a literal: the partial indexes of validated rows say so (migration 0014).
        where.append(M.validated == true())
    return select(M.id).where(*where).order_by(M.ts.desc()).limit(LIMIT)


_CONTEXT_KEY = cast(ColumnElement[Any], M.context_hash)
_TOOL_KEY = cast(ColumnElement[Any], M.tool_id)
SAME_CONTEXT = {pg: _newest(_CONTEXT_KEY, "context_hash", pg) for pg in (True, False)}
SAME_TOOL = {pg: _newest(_TOOL_KEY, "tool_id", pg) for pg in (True, False)}
# Validated repairs of the exact situation are always candidates
# (recall.principles): its newest are not enough once newer unvalidated ones
# outnumber them. (Not of the whole tool: with many validated repairs per
# tool, 50 more rows to score cost a third more per call, and a repair of
# another context is not the situation's.)
VALIDATED_CONTEXT = {pg: _newest(_CONTEXT_KEY, "context_hash", pg, validated=True) for pg in (True, False)}
_BY_KEY = {"context_hash": SAME_CONTEXT, "tool_id": SAME_TOOL}


def _fetch_statement(postgresql_dialect: bool) -> Select[Any]:
    ids = in_list(cast(ColumnElement[Any], M.id), "ids", postgresql_dialect)
    return cast(Select[Any], select(*COLUMNS).where(ids, clause(postgresql_dialect)).order_by(M.id))


_FETCH = {True: _fetch_statement(True), False: _fetch_statement(False)}


def fetch(ex: Executor, postgresql_dialect: bool, ids: Iterable[str], where: Eligibility) -> list[Candidate]:
    """The eligible repairs among ``ids`` (order unspecified)."""
    wanted = sorted(set(ids))
    if not wanted:
        return []
    params = {**where.params(), "ids": list_param(wanted, postgresql_dialect)}
    return [Candidate._make(r) for r in ex.execute(_FETCH[postgresql_dialect], params)]


def newest_ids(
    ex: Executor, postgresql_dialect: bool, key: str, value: str, where: Eligibility, limit: int
) -> list[str]:
    """Newest eligible repairs whose ``key`` (``context_hash`` or ``tool_id``) is ``value``."""
    params = {**where.params(), key: value, "lim": limit}
    return list(ex.scalars(_BY_KEY[key][postgresql_dialect], params))


def by_weight(
    stmt: Select[Any], tests: Sequence[ColumnElement[bool]], weights: Sequence[ColumnElement[float]]
) -> Select[Any]:
    """``stmt`` ordered by the summed weights of the tests each row passes, then newest first.

    The text search's order on both dialects: the measure recall scores by.
    """
    weight: ColumnElement[float] = literal(0.0)
    for test, w in zip(tests, weights, strict=True):
        weight = weight + case((test, w), else_=0.0)
    return stmt.order_by(weight.desc(), M.ts.desc()).limit(LIMIT)


_by_id = operator.itemgetter(0)


def one_per_id(rows: Iterable[Sequence[Any]]) -> list[Sequence[Any]]:
    """One row per repair (sources overlap), ordered by id.

    Ranking's ties then fall the same way whichever source found a repair first.
    """
    return sorted({r[0]: r for r in rows}.values(), key=_by_id)
