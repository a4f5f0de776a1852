"""The scans superseding needs: the older active repairs of a new repair's scope.

``outcomes.supersede`` decides which older repair a new one contradicts
(word sets, pure); it reads the candidates here. A scope is the same
project and user, and the same context or the same tool, newest first,
at most ``SCAN`` per source.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NamedTuple

from sqlalchemy import CompoundSelect, Select, bindparam, func, select, union
from sqlalchemy.orm import Session

from .engine import Prepared
from .handles import Connection, Executor
from .models import DecisionRepairModel

__all__ = [
    "SCAN",
    "OlderRepair",
    "connection_of",
    "joined_session",
    "new_repair",
    "older_lines",
    "older_repairs",
]

M = DecisionRepairModel
# Older repairs compared per source (same context; same tool), newest first.
SCAN = 20
_NEW = (M.id, M.context_hash, M.tool_id, M.ts, M.project, M.user_id, M.preference, M.anti_pattern)


class OlderRepair(NamedTuple):
    id: str
    preference: str
    anti_pattern: str


def _older(column: Any, key: str, *columns: Any) -> Select[Any]:
    # One indexed range per source — (context_hash, ts) and (tool_id, ts) —
    # instead of an OR that no single index serves (a scan and a sort of
    # every repair of the tool, for every new repair).
    return (
        select(*columns)
        .where(
            column == bindparam(key),
            M.id != bindparam("new_id"),
            M.status.is_(None),
            M.rejected.is_(False),
            M.ts <= bindparam("ts"),
            func.coalesce(M.project, "") == bindparam("project"),
            func.coalesce(M.user_id, "") == bindparam("user"),
        )
        .order_by(M.ts.desc(), M.id.desc())
        .limit(SCAN)
    )


_SAME_CONTEXT = _older(M.context_hash, "key", M.id, M.preference, M.anti_pattern)
_SAME_TOOL = _older(M.tool_id, "key", M.id, M.preference, M.anti_pattern)
_NEW_ROW = select(*_NEW).where(M.id == bindparam("new_id"))


def _lines_statement() -> CompoundSelect[str, str]:
    # The same two ranges as _SAME_CONTEXT and _SAME_TOOL, but only their
    # distinct (preference, anti_pattern) pairs, in one statement: the
    # database drops the duplicates (repairs of one tool often repeat their
    # lines), and the ids are read only when a pair contradicts — rarely.
    def lines(column: Any, key: str) -> Select[Any]:
        inner = _older(column, key, M.preference, M.anti_pattern).subquery()
        return select(inner.c.preference, inner.c.anti_pattern)

    return union(lines(M.context_hash, "context_key"), lines(M.tool_id, "tool_key"))


_OLDER_LINES = _lines_statement()
_RUN_OLDER_LINES = Prepared(_OLDER_LINES)


def _distinct_lines(column: Any) -> Select[Any]:
    # One range's distinct pairs: the rows are de-duplicated in SQLite, not
    # in Python (a row costs more to hand to Python than to compare there).
    inner = _older(column, "key", M.preference, M.anti_pattern).subquery()
    return select(inner.c.preference, inner.c.anti_pattern).distinct()


# SQLite: the two ranges as two statements on the driver's cursor. SQLite
# runs the UNION of the two LIMITed subqueries at about twice the cost of
# the two selects (measured ~100 us against ~50 us with 1,200 repairs of
# one tool), and a statement on the cursor costs a few microseconds. The
# tool range is read from the covering index ix_decision_repairs_tool_lines
# alone (migration 0009), its duplicates dropped there: ~70 -> ~33 us with
# 1,500 repairs of one tool. (A context's range is short: DISTINCT's
# temporary b-tree costs more there than it saves.)
_CONTEXT_LINES = Prepared(_older(M.context_hash, "key", M.preference, M.anti_pattern))
_TOOL_LINES = Prepared(_distinct_lines(M.tool_id))


def connection_of(ex: Executor) -> Connection:
    """The Core connection of ``ex``'s transaction, a session's pending rows flushed first."""
    if isinstance(ex, Session):
        ex.flush()  # the new row may still be pending in the session
        return ex.connection()
    return ex


def new_repair(conn: Connection, new_id: str) -> dict[str, Any] | None:
    """The columns of a repair superseding compares, or None when there is no such repair."""
    row = conn.execute(_NEW_ROW, {"new_id": new_id}).first()
    return None if row is None else row._asdict()


def older_lines(
    conn: Connection, params: Mapping[str, Any], context_hash: str, tool_id: str | None
) -> Iterable[tuple[str, str]]:
    """The distinct (preference, anti_pattern) pairs of the older repairs in scope, per backend.

    ``params``: ``new_id``, ``ts``, ``project`` and ``user`` ("" for none).
    """
    if conn.dialect.name != "sqlite":
        # One round trip: the database drops the duplicates.
        keys = {"context_key": context_hash, "tool_key": tool_id}
        return [(p, a) for p, a in _RUN_OLDER_LINES.all(conn, {**params, **keys})]
    pairs = {(p, a) for p, a in _CONTEXT_LINES.all(conn, {**params, "key": context_hash})}
    if tool_id is not None:  # "tool_id = NULL" matches nothing: skip the statement
        pairs.update((p, a) for p, a in _TOOL_LINES.all(conn, {**params, "key": tool_id}))
    return pairs


def older_repairs(
    conn: Connection, params: Mapping[str, Any], context_hash: str | None, tool_id: str | None
) -> dict[str, OlderRepair]:
    """The older repairs in scope (``older_lines``' rows with their ids), by id."""
    olders: dict[str, OlderRepair] = {}
    for stmt, key in ((_SAME_CONTEXT, context_hash), (_SAME_TOOL, tool_id)):
        if key is not None:
            olders.update((r.id, OlderRepair(*r)) for r in conn.execute(stmt, {**params, "key": key}))
    return olders


@contextmanager
def joined_session(ex: Executor) -> Iterator[Session]:
    """An ORM session in ``ex``'s transaction: ``ex`` itself, or one on its connection, flushed at the end.

    Joins the connection's transaction: the session neither commits nor ends it.
    """
    if isinstance(ex, Session):
        yield ex
        return
    with Session(bind=ex) as s:
        yield s
        s.flush()
