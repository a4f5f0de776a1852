"""The hot reads a repair makes inside its own transaction (a session's
traces, the policies of its episodes), and the conversion of their rows
into the frozen rows of ``types``: prebuilt statements on the driver's
cursor where the caller holds a Core connection."""

from __future__ import annotations

import functools
import json
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from sqlalchemy import ColumnElement, Row, Select, String, Table, Text, any_, bindparam, func, or_, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from ..errors import InvalidInputError
from ..types import DecisionRepairRow, PolicyRow, ToolCall, TraceRow
from .checks import as_opt_str, as_str
from .engine import Prepared
from .handles import Executor
from .models import DecisionRepairModel, PolicyEpisodeModel, PolicyModel, TraceModel

__all__ = [
    "POLICIES",
    "POLICIES_ALL",
    "Executor",
    "dialect_of",
    "in_list",
    "like_literal",
    "list_param",
    "newest_in_family",
    "policies_with_episodes",
    "policy_boundaries_with_episodes",
    "policy_of_tuple",
    "policy_row",
    "repair_count",
    "repair_projects",
    "repair_row",
    "rows_of",
    "session_traces",
    "tool_calls_of",
    "trace_row",
    "transaction_traces",
]

POLICIES = cast(Table, PolicyModel.__table__)
POLICIES_ALL = select(*PolicyModel.__table__.columns).order_by(PolicyModel.id)


# Hot read statements, built once: SQLAlchemy memoizes a statement object's
# cache key, so re-running one skips building and keying the query again.
# Core selects of the table columns: rows come back as plain tuples with
# attribute access, skipping the ORM's identity map for read-only lists.
_T = TraceModel


_TRACES_OF_SESSION = (
    # In the order ``_trace_of_tuple`` unpacks them.
    select(
        _T.id,
        _T.session_id,
        _T.episode_id,
        _T.ts,
        _T.user_text,
        _T.agent_text,
        _T.reflection,
        _T.value,
        _T.tool_calls,
    )
    .where(TraceModel.session_id == bindparam("session_id"))
    .order_by(TraceModel.ts.desc(), TraceModel.id.desc())
    .limit(bindparam("limit"))
)


def in_list(column: ColumnElement[Any], name: str, postgresql_dialect: bool) -> ColumnElement[bool]:
    """``column IN (:name...)`` with the whole list as one parameter (see ``list_param``).

    An expanding IN re-renders the statement for every list length, which
    costs more than the query itself; an array (PostgreSQL) or a JSON text
    walked by ``json_each`` (SQLite) keeps the statement fully cached.
    """
    if postgresql_dialect:
        return column == any_(bindparam(name, type_=postgresql.ARRAY(Text)))
    member = func.json_each(bindparam(name, type_=Text)).table_valued("value")
    return column.in_(select(member.c.value).scalar_subquery())


def list_param(values: Sequence[str], postgresql_dialect: bool) -> Any:
    """The value of an ``in_list`` parameter: a list (PostgreSQL array) or its JSON text (SQLite)."""
    return list(values) if postgresql_dialect else json.dumps(list(values))


def _policies_with_episodes(postgresql_dialect: bool) -> Select[Any]:
    """Policies sharing an episode id with ``:ids``, of ``:status`` (any when NULL).

    Read through ``policy_episodes`` (kept by triggers, migration 0006): a
    primary-key range per episode on both backends.
    """
    pairs = cast(Table, PolicyEpisodeModel.__table__)
    sources = select(pairs.c.policy_id).where(in_list(pairs.c.episode_id, "ids", postgresql_dialect))
    status = bindparam("status", type_=String)
    return POLICIES_ALL.where(
        PolicyModel.id.in_(sources.scalar_subquery()), or_(status.is_(None), PolicyModel.status == status)
    )


# Built once per dialect (index: is it PostgreSQL?), like the statements above.
_POLICIES_WITH_EPISODES = (_policies_with_episodes(False), _policies_with_episodes(True))


def tool_calls_of(values: object) -> tuple[ToolCall, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InvalidInputError("tool_calls must be a sequence of ToolCall")
    out: list[ToolCall] = []
    for item in values:
        if isinstance(item, ToolCall):
            call = item
        elif isinstance(item, Mapping) and "name" in item:
            call = ToolCall(name=item["name"], error_code=item.get("error_code"))
        else:
            raise InvalidInputError(f"tool call must be a ToolCall, got {item!r:.80}")
        as_str("tool call name", call.name)
        as_opt_str("tool call error_code", call.error_code)
        out.append(call)
    return tuple(out)


def trace_row(m: TraceModel | Row[Any]) -> TraceRow:
    return TraceRow(
        id=m.id,
        session_id=m.session_id,
        episode_id=m.episode_id,
        ts=m.ts,
        user_text=m.user_text,
        agent_text=m.agent_text,
        reflection=m.reflection,
        value=m.value,
        tool_calls=tuple(ToolCall(c["name"], c.get("error_code")) for c in m.tool_calls or ()),
    )


def policy_row(m: PolicyModel | Row[Any]) -> PolicyRow:
    return PolicyRow(
        id=m.id,
        title=m.title,
        boundary=m.boundary,
        status=m.status,
        source_episode_ids=tuple(m.source_episode_ids or ()),
        updated_at=m.updated_at,
    )


def repair_row(m: DecisionRepairModel | Row[Any]) -> DecisionRepairRow:
    return DecisionRepairRow(
        id=m.id,
        ts=m.ts,
        context_hash=m.context_hash,
        tool_id=m.tool_id,
        context=m.context,
        trigger=m.trigger,
        session_id=m.session_id,
        preference=m.preference,
        anti_pattern=m.anti_pattern,
        severity=m.severity,
        confidence=m.confidence,
        high_value_trace_ids=tuple(m.high_value_trace_ids or ()),
        low_value_trace_ids=tuple(m.low_value_trace_ids or ()),
        validated=bool(m.validated),
        rejected=bool(m.rejected),
        category=m.category,
        project=m.project,
        status=m.status or "active",
        superseded_by=m.superseded_by,
        review_flagged_at=m.review_flagged_at,
        user=m.user_id,
    )


def like_literal(text: str) -> str:
    """``text`` for a LIKE pattern, its wildcards escaped with ``\\``."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@functools.lru_cache(maxsize=1024)
def _tool_call(name: str, error_code: str | None) -> ToolCall:
    # ToolCall is frozen: one shared object per distinct call is safe, and a
    # session's traces repeat the same few tools.
    return ToolCall(name, error_code)


@functools.lru_cache(maxsize=1024)
def _tool_calls_of_text(text: str) -> tuple[ToolCall, ...]:
    # A trace's tool calls as SQLite stores them (JSON text). A session's
    # traces repeat the same few lists, so most are decoded once per process
    # instead of once per read; the tuple of frozen ToolCalls is shareable.
    return _tool_calls_of_list(json.loads(text))


def _tool_calls_of_list(calls: Iterable[Mapping[str, Any]] | None) -> tuple[ToolCall, ...]:
    return tuple(_tool_call(c["name"], c.get("error_code")) for c in calls or ())


def _trace_of_tuple(r: Sequence[Any]) -> TraceRow:
    # Unpacked by position (``_TRACES_OF_SESSION``'s column order): a Row's
    # attribute lookups cost more than building the TraceRow itself, and
    # every repair reads a session's traces. The tool calls arrive as JSON
    # text from SQLite's driver, decoded from PostgreSQL's JSONB.
    id, session_id, episode_id, ts, user_text, agent_text, reflection, value, calls = r
    return TraceRow(
        id,
        session_id,
        episode_id,
        ts,
        user_text,
        agent_text,
        reflection,
        value,
        _tool_calls_of_text(calls) if isinstance(calls, str) else _tool_calls_of_list(calls),
    )


# The tool calls undecoded: _trace_of_tuple decodes them (cached).
_RUN_TRACES_OF_SESSION = Prepared(_TRACES_OF_SESSION, convert=False)


def rows_of(ex: Executor, prepared: Prepared, params: Mapping[str, Any]) -> Sequence[Sequence[Any]]:
    """A hot statement's rows: on the driver's cursor for a Core connection (see ``Prepared``).

    An ORM session keeps SQLAlchemy's path: it may hold unflushed changes
    that its own ``execute`` flushes first.
    """
    if isinstance(ex, Connection):
        return prepared.all(ex, params)
    return ex.execute(prepared.statement, params).all()


# A TraceRow per distinct SQLite row, keyed by the row itself: the
# driver's tuple (str, int, float, None only: hashable) holds every column
# _trace_of_tuple reads, and _trace_of_tuple is a pure function of it, so a
# hit returns exactly what a miss builds (TraceRow is immutable). Building
# one (a frozen dataclass: a setattr per field, the tool calls looked up)
# costs more than hashing the row, and every repair of a session reads the
# same rows again.
_trace_of_sqlite_row = functools.lru_cache(maxsize=4096)(_trace_of_tuple)


def session_traces(ex: Executor, session_id: str, limit: int) -> list[TraceRow]:
    """The session's newest ``limit`` traces, newest first (arguments already checked)."""
    rows = rows_of(ex, _RUN_TRACES_OF_SESSION, {"session_id": session_id, "limit": limit})
    if isinstance(ex, Connection) and ex.dialect.name == "sqlite":
        return [_trace_of_sqlite_row(r) for r in rows]
    return [_trace_of_tuple(r) for r in rows]


# Where a SQLite connection keeps the traces read in its current transaction.
_SHARED_TRACES = "memos_feedback_shared_traces"


def transaction_traces(conn: Connection, session_id: str, limit: int) -> Sequence[TraceRow]:
    """The session's traces, read once per SQLite transaction.

    The worker's group commit runs several jobs in one transaction, often
    of one session. On SQLite a transaction reads one snapshot (WAL), a
    write transaction (BEGIN IMMEDIATE) excludes every other writer, and
    nothing a repair writes touches ``traces``: reading them again in the
    same transaction would return the same rows, so the first read's rows
    (immutable) are reused. PostgreSQL reads each time: under READ
    COMMITTED a later statement may see traces committed meanwhile.
    """
    transaction = conn.get_transaction()
    if conn.dialect.name != "sqlite" or transaction is None:
        return session_traces(conn, session_id, limit)
    shared = conn.info.get(_SHARED_TRACES)
    if shared is None or shared[0]() is not transaction:
        # A weak reference: the entry must neither outlive nor keep the transaction.
        shared = (weakref.ref(transaction), {})
        conn.info[_SHARED_TRACES] = shared
    read: dict[tuple[str, int], tuple[TraceRow, ...]] = shared[1]
    traces = read.get((session_id, limit))
    if traces is None:
        traces = read[session_id, limit] = tuple(session_traces(conn, session_id, limit))
    return traces


@functools.cache
def _newest_of(family: tuple[str, ...]) -> Prepared:
    # The family's triggers as fixed OR terms, not an IN list: an IN list is
    # re-rendered on every call, and this runs twice per repair.
    return Prepared(
        select(func.max(DecisionRepairModel.ts)).where(
            DecisionRepairModel.context_hash == bindparam("context_hash"),
            or_(*(DecisionRepairModel.trigger == t for t in family)),
            # A stale or superseded repair stopped applying; it must not hold
            # back the next attempt at its context.
            DecisionRepairModel.status.is_(None),
        )
    )


def newest_in_family(ex: Executor, context_hash: str, family: tuple[str, ...]) -> int | None:
    """When the newest active repair of ``context_hash`` by one of ``family``'s triggers was written."""
    stmt = _newest_of(family)
    params = {"context_hash": context_hash}
    if isinstance(ex, Connection):  # the worker's path: through the driver on SQLite
        row = stmt.first(ex, params)
        newest = None if row is None else row[0]
    else:
        newest = ex.execute(stmt.statement, params).scalar()
    return None if newest is None else int(newest)


def policies_with_episodes(ex: Executor, episode_ids: Iterable[str], status: str | None) -> list[PolicyRow]:
    """Policies (of ``status``; any when None) learned from any of ``episode_ids``, by id."""
    ids = sorted(set(episode_ids))
    if not ids:
        return []
    pg = dialect_of(ex) == "postgresql"
    params: dict[str, Any] = {"ids": list_param(ids, pg), "status": status}
    return [policy_of_tuple(r) for r in rows_of(ex, _RUN_POLICIES_WITH_EPISODES[pg], params)]


_RUN_POLICIES_WITH_EPISODES = tuple(Prepared(stmt) for stmt in _POLICIES_WITH_EPISODES)


# The same policies, only (id, boundary): what a repair attaches to. No
# JSON column to decode and no PolicyRow to build, for every repair.
_RUN_BOUNDARIES_WITH_EPISODES = tuple(
    Prepared(stmt.with_only_columns(POLICIES.c.id, POLICIES.c.boundary)) for stmt in _POLICIES_WITH_EPISODES
)


def policy_boundaries_with_episodes(
    ex: Executor, episode_ids: Iterable[str], status: str | None
) -> dict[str, str]:
    """``policies_with_episodes`` as id -> boundary, in id order."""
    ids = sorted(set(episode_ids))
    if not ids:
        return {}
    pg = dialect_of(ex) == "postgresql"
    params: dict[str, Any] = {"ids": list_param(ids, pg), "status": status}
    return {r[0]: r[1] for r in rows_of(ex, _RUN_BOUNDARIES_WITH_EPISODES[pg], params)}


def policy_of_tuple(r: Sequence[Any]) -> PolicyRow:
    # By position, in the table's column order (``POLICIES_ALL``).
    id, title, boundary, status, source_episode_ids, updated_at = r
    return PolicyRow(id, title, boundary, status, tuple(source_episode_ids or ()), updated_at)


def dialect_of(ex: Executor) -> str:
    bind = ex.get_bind() if isinstance(ex, Session) else ex
    return bind.dialect.name


_PROJECTS = (
    select(DecisionRepairModel.project, func.count())
    .group_by(DecisionRepairModel.project)
    .order_by(DecisionRepairModel.project.is_(None), DecisionRepairModel.project)
)


def repair_projects(ex: Executor) -> list[tuple[str | None, int]]:
    """Each ``project`` value repairs are stored with (None: global, last) and how many have it."""
    return [(r[0], int(r[1])) for r in ex.execute(_PROJECTS)]


_REPAIR_COUNT = select(func.count()).select_from(DecisionRepairModel)


def repair_count(ex: Executor) -> int:
    """How many repairs the store holds (every status)."""
    return int(ex.execute(_REPAIR_COUNT).scalar_one())
