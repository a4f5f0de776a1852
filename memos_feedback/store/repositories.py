"""Thin typed repositories: ``store.traces``, ``store.policies``, ``store.repairs``.

Each method opens its own short transaction unless the caller passes a
``session`` to take part in a larger one (the repair orchestrator writes a
repair and finishes its job in one commit).
"""

from __future__ import annotations

import builtins
import functools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import (
    ColumnElement,
    Row,
    Select,
    String,
    Table,
    Text,
    any_,
    bindparam,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection
from sqlalchemy.exc import NoResultFound
from sqlalchemy.orm import Session

from ..errors import InvalidInputError, NotFoundError
from ..types import DecisionRepairRow, PolicyRow, ToolCall, TraceRow, new_id, now_ms
from .engine import Prepared
from .models import DecisionRepairModel, PolicyEpisodeModel, PolicyModel, TraceModel

if TYPE_CHECKING:
    from . import Store

__all__ = [
    "MAX_LIMIT",
    "Executor",
    "PolicyRepository",
    "RepairRepository",
    "TraceRepository",
    "check_text",
    "in_list",
    "list_param",
    "merge_boundaries",
    "repair_values",
]

# Where a repository statement can run: an ORM session's transaction or a
# Core connection's (the worker's hot path uses the latter).
Executor = Session | Connection

SEVERITIES = ("info", "warn")
MAX_LIMIT = 10_000

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
_POLICIES_ALL = select(*PolicyModel.__table__.columns).order_by(PolicyModel.id)
_POLICIES_BY_STATUS = _POLICIES_ALL.where(PolicyModel.status == bindparam("status"))


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
    return _POLICIES_ALL.where(
        PolicyModel.id.in_(sources.scalar_subquery()), or_(status.is_(None), PolicyModel.status == status)
    )


# Built once per dialect (index: is it PostgreSQL?), like the statements above.
_POLICIES_WITH_EPISODES = (_policies_with_episodes(False), _policies_with_episodes(True))
_POLICIES = cast(Table, PolicyModel.__table__)
_REPAIRS = cast(Table, DecisionRepairModel.__table__)
# The policies to rewrite, locked in id order (a fixed lock order, so two
# transactions that rewrite overlapping sets cannot deadlock). SQLite has
# no row locks: its write transaction (BEGIN IMMEDIATE) already excludes.
_LOCK_POLICIES = tuple(
    select(_POLICIES.c.id, _POLICIES.c.boundary)
    .where(in_list(_POLICIES.c.id, "ids", pg))
    .order_by(_POLICIES.c.id)
    .with_for_update()
    for pg in (False, True)
)
_SET_BOUNDARY = (
    update(_POLICIES)
    .where(_POLICIES.c.id == bindparam("policy_id"))
    .values(boundary=bindparam("new_boundary"), updated_at=bindparam("now"))
    .returning(*_POLICIES.columns)
)
_RUN_LOCK_POLICIES = tuple(Prepared(stmt) for stmt in _LOCK_POLICIES)
_RUN_SET_BOUNDARY = Prepared(_SET_BOUNDARY)
# Every column a new repair row is written with, one prebuilt INSERT.
_INSERT_REPAIR = insert(_REPAIRS)
# The columns a DecisionRepairRow is made of (not the recall text or the
# embedding blob), newest first: read from the end of the ts index.
_LATEST_REPAIRS = (
    select(*(c for c in _REPAIRS.columns if c.name not in ("source_text", "embedding", "embedding_model")))
    .order_by(_REPAIRS.c.ts.desc(), _REPAIRS.c.id.desc())
    .limit(bindparam("limit"))
)
_LATEST_REPAIRS_OF_CONTEXT = _LATEST_REPAIRS.where(_REPAIRS.c.context_hash == bindparam("context_hash"))
_NEWEST_REPAIR_OF_CONTEXT = (
    select(DecisionRepairModel)
    .where(DecisionRepairModel.context_hash == bindparam("context_hash"))
    .order_by(DecisionRepairModel.ts.desc(), DecisionRepairModel.id.desc())
    .limit(1)
)


# -- argument checks ------------------------------------------------------


# Column widths (VARCHAR(n)) of the models: a longer value is the caller's
# mistake, said before PostgreSQL would refuse it (SQLite would not).
_ID_MAX = 64
_NAME_MAX = 255
_SHORT_MAX = 32
# BIGINT, the type of every epoch-ms column.
_MAX_MILLIS = 2**63 - 1


def check_text(name: str, value: object, *, empty: bool = True, max_len: int | None = None) -> str:
    """``value`` if it is a str both backends can store, else ``InvalidInputError``.

    Refused: non-str, empty (when ``empty`` is False), longer than
    ``max_len``, NUL characters (PostgreSQL cannot store them) and lone
    surrogates such as ``"\\ud83d"`` (not Unicode text; no driver can
    encode them).
    """
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str, got {type(value).__name__}")
    if not empty and not value.strip():
        raise InvalidInputError(f"{name} must not be empty")
    if max_len is not None and len(value) > max_len:
        raise InvalidInputError(f"{name} must be at most {max_len} characters, got {len(value)}")
    if "\x00" in value:
        raise InvalidInputError(f"{name} must not contain NUL characters")
    if not value.isascii():  # the common case skips the encode below
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInputError(
                f"{name} is not valid Unicode text (lone surrogate at position {exc.start})"
            ) from None
    return value


def _str(name: str, value: object, *, empty: bool = True, max_len: int | None = None) -> str:
    return check_text(name, value, empty=empty, max_len=max_len)


def _opt_str(name: str, value: object, *, max_len: int | None = None) -> str | None:
    return None if value is None else _str(name, value, max_len=max_len)


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{name} must be a finite number, got {value!r:.80}")
    try:
        number = float(value)  # an int beyond the float range overflows here
    except OverflowError:
        raise InvalidInputError(f"{name} must be a finite number, got a huge int") from None
    if not math.isfinite(number):
        raise InvalidInputError(f"{name} must be a finite number, got {value!r}")
    return number


def _millis(name: str, value: object) -> int:
    if value is None:
        return now_ms()
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_MILLIS:
        raise InvalidInputError(f"{name} must be epoch milliseconds (int in [0, 2**63-1]), got {value!r:.80}")
    return value


def _limit(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
        raise InvalidInputError(f"limit must be an int in [1, {MAX_LIMIT}], got {value!r:.80}")
    return value


def _str_tuple(name: str, values: object) -> tuple[str, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InvalidInputError(f"{name} must be a sequence of str")
    out = tuple(values)
    item = name + " item"
    for v in out:
        check_text(item, v)
    return out


def _session_arg(session: object) -> None:
    if session is not None and not isinstance(session, Session):
        raise InvalidInputError(f"session must be a SQLAlchemy Session or None, got {type(session).__name__}")


def _tool_calls(values: object) -> tuple[ToolCall, ...]:
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
        _str("tool call name", call.name)
        _opt_str("tool call error_code", call.error_code)
        out.append(call)
    return tuple(out)


# -- conversions ----------------------------------------------------------


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
    )


def _like_literal(text: str) -> str:
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


def _rows(ex: Executor, prepared: Prepared, params: Mapping[str, Any]) -> Sequence[Sequence[Any]]:
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
    rows = _rows(ex, _RUN_TRACES_OF_SESSION, {"session_id": session_id, "limit": limit})
    if isinstance(ex, Connection) and ex.dialect.name == "sqlite":
        return [_trace_of_sqlite_row(r) for r in rows]
    return [_trace_of_tuple(r) for r in rows]


def policies_with_episodes(ex: Executor, episode_ids: Iterable[str], status: str | None) -> list[PolicyRow]:
    """Policies (of ``status``; any when None) learned from any of ``episode_ids``, by id."""
    ids = sorted(set(episode_ids))
    if not ids:
        return []
    pg = _dialect(ex) == "postgresql"
    params: dict[str, Any] = {"ids": list_param(ids, pg), "status": status}
    return [_policy_of_tuple(r) for r in _rows(ex, _RUN_POLICIES_WITH_EPISODES[pg], params)]


_RUN_POLICIES_WITH_EPISODES = tuple(Prepared(stmt) for stmt in _POLICIES_WITH_EPISODES)
# The same policies, only (id, boundary): what a repair attaches to. No
# JSON column to decode and no PolicyRow to build, for every repair.
_RUN_BOUNDARIES_WITH_EPISODES = tuple(
    Prepared(stmt.with_only_columns(_POLICIES.c.id, _POLICIES.c.boundary)) for stmt in _POLICIES_WITH_EPISODES
)


def policy_boundaries_with_episodes(
    ex: Executor, episode_ids: Iterable[str], status: str | None
) -> dict[str, str]:
    """``policies_with_episodes`` as id -> boundary, in id order."""
    ids = sorted(set(episode_ids))
    if not ids:
        return {}
    pg = _dialect(ex) == "postgresql"
    params: dict[str, Any] = {"ids": list_param(ids, pg), "status": status}
    return {r[0]: r[1] for r in _rows(ex, _RUN_BOUNDARIES_WITH_EPISODES[pg], params)}


def _policy_of_tuple(r: Sequence[Any]) -> PolicyRow:
    # By position, in the table's column order (``_POLICIES_ALL``).
    id, title, boundary, status, source_episode_ids, updated_at = r
    return PolicyRow(id, title, boundary, status, tuple(source_episode_ids or ()), updated_at)


def _dialect(ex: Executor) -> str:
    bind = ex.get_bind() if isinstance(ex, Session) else ex
    return bind.dialect.name


class _Repository:
    def __init__(self, store: Store) -> None:
        self._store = store


class TraceRepository(_Repository):
    def add(
        self,
        session_id: str,
        user_text: str = "",
        agent_text: str = "",
        reflection: str | None = None,
        value: float = 0.0,
        tool_calls: Sequence[ToolCall] = (),
        episode_id: str | None = None,
        ts: int | None = None,
        id: str | None = None,
    ) -> TraceRow:
        model = TraceModel(
            id=new_id("tr_") if id is None else _str("id", id, empty=False, max_len=_ID_MAX),
            session_id=_str("session_id", session_id, empty=False, max_len=_NAME_MAX),
            episode_id=_opt_str("episode_id", episode_id, max_len=_NAME_MAX),
            ts=_millis("ts", ts),
            user_text=_str("user_text", user_text),
            agent_text=_str("agent_text", agent_text),
            reflection=_opt_str("reflection", reflection),
            value=_number("value", value),
            tool_calls=[{"name": c.name, "error_code": c.error_code} for c in _tool_calls(tool_calls)],
        )
        with self._store.session(write=True, action="adding a trace") as s:
            s.add(model)
            s.flush()
            return trace_row(model)

    def get(self, id: str) -> TraceRow:
        _str("id", id)
        with self._store.session(action="reading a trace") as s:
            model = s.get(TraceModel, id)
            if model is None:
                raise NotFoundError(f"no trace with id {id!r}")
            return trace_row(model)

    def list(self, session_id: str, limit: int = 50) -> list[TraceRow]:
        """The session's traces, newest first."""
        _str("session_id", session_id)
        _limit(limit)
        with self._store.connection(action="listing traces") as conn:
            return session_traces(conn, session_id, limit)


class PolicyRepository(_Repository):
    def add(
        self,
        title: str,
        boundary: str = "",
        source_episode_ids: Sequence[str] = (),
        status: str = "active",
        id: str | None = None,
    ) -> PolicyRow:
        model = PolicyModel(
            id=new_id("po_") if id is None else _str("id", id, empty=False, max_len=_ID_MAX),
            title=_str("title", title),
            boundary=_str("boundary", boundary),
            status=_str("status", status, empty=False, max_len=_SHORT_MAX),
            source_episode_ids=list(_str_tuple("source_episode_ids", source_episode_ids)),
            updated_at=now_ms(),
        )
        with self._store.session(write=True, action="adding a policy") as s:
            s.add(model)
            s.flush()
            return policy_row(model)

    def get(self, id: str) -> PolicyRow:
        _str("id", id)
        with self._store.session(action="reading a policy") as s:
            model = s.get(PolicyModel, id)
            if model is None:
                raise NotFoundError(f"no policy with id {id!r}")
            return policy_row(model)

    def list(self, status: str | None = None) -> list[PolicyRow]:
        if status is None:
            stmt, params = _POLICIES_ALL, {}
        else:
            stmt, params = _POLICIES_BY_STATUS, {"status": _str("status", status)}
        with self._store.session(action="listing policies") as s:
            return [policy_row(m) for m in s.execute(stmt, params)]

    def with_source_episodes(
        self, episode_ids: Iterable[str], status: str | None = "active"
    ) -> builtins.list[PolicyRow]:  # ``list`` here is the method above
        """Policies (of ``status``; any when None) learned from any of ``episode_ids``, by id.

        The overlap is found through ``policy_episodes`` (migration 0006),
        whose primary key serves it on both backends.
        """
        ids = sorted(set(_str_tuple("episode_ids", episode_ids)))
        if not ids:
            return []
        if status is not None:
            _str("status", status)
        with self._store.connection(action="finding policies by episode") as conn:
            return policies_with_episodes(conn, ids, status)

    def upsert(self, row: PolicyRow) -> PolicyRow:
        """Insert the row, or overwrite every field of the policy with its id."""
        if not isinstance(row, PolicyRow):
            raise InvalidInputError(f"upsert takes a PolicyRow, got {type(row).__name__}")
        _str("id", row.id, empty=False, max_len=_ID_MAX)
        fields: dict[str, Any] = {
            "title": _str("title", row.title),
            "boundary": _str("boundary", row.boundary),
            "status": _str("status", row.status, empty=False, max_len=_SHORT_MAX),
            "source_episode_ids": list(_str_tuple("source_episode_ids", row.source_episode_ids)),
            "updated_at": now_ms(),
        }
        with self._store.session(write=True, action="upserting a policy") as s:
            model = s.get(PolicyModel, row.id, with_for_update=True)
            if model is None:
                model = PolicyModel(id=row.id, **fields)
                s.add(model)
            else:
                for key, value in fields.items():
                    setattr(model, key, value)
            s.flush()
            return policy_row(model)

    def update_boundary(
        self, id: str, change: Callable[[str], str | None], *, session: Session | None = None
    ) -> PolicyRow | None:
        """Rewrite one policy's boundary under a row lock.

        ``change`` gets the current boundary and returns the new one, or
        None to leave it alone. Returns the updated row, or None when
        nothing changed. Concurrent callers are serialized per policy
        (``SELECT … FOR UPDATE``; ``BEGIN IMMEDIATE`` on SQLite), so two
        merges never overwrite each other.
        """
        _str("id", id)
        if not callable(change):
            raise InvalidInputError(f"change must be callable, got {type(change).__name__}")
        _session_arg(session)
        with self._store.session(write=True, action="updating a policy", session=session) as s:
            found, changed = merge_boundaries(s, [id], change)
            if not found:
                raise NotFoundError(f"no policy with id {id!r}")
            return changed[0] if changed else None


def merge_boundaries(
    ex: Executor,
    policy_ids: Iterable[str],
    change: Callable[[str], str | None],
    known: Mapping[str, str] | None = None,
) -> tuple[int, builtins.list[PolicyRow]]:
    """Rewrite the boundaries of ``policy_ids`` under their row locks, in id order.

    ``change`` gets a current boundary and returns the new one, or None to
    leave it alone. Returns how many of the policies exist (ids with no
    policy are skipped) and the rows that changed. Runs in the caller's
    transaction: one statement to lock, one per changed policy, and no ORM
    unit of work. ``known`` (id -> boundary) is what the caller read earlier
    *in this same write transaction*; on SQLite, whose write transaction
    already excludes every other writer, it replaces the lock read when it
    covers every id.
    """
    ids = sorted(set(policy_ids))
    if not ids:
        return 0, []
    now = now_ms()
    changed: builtins.list[PolicyRow] = []
    pg = _dialect(ex) == "postgresql"
    locked: Sequence[tuple[str, str]]
    if not pg and known is not None and known.keys() >= set(ids):
        # SQLite: the boundaries were read earlier in this same write
        # transaction (BEGIN IMMEDIATE: no other writer since), so reading
        # them again would return the same text. PostgreSQL always locks.
        locked = [(i, known[i]) for i in ids]
    else:
        locked = [(r[0], r[1]) for r in _rows(ex, _RUN_LOCK_POLICIES[pg], {"ids": list_param(ids, pg)})]
    for policy_id, boundary in locked:
        new = change(boundary)
        if new is not None:
            # Raising here rolls the transaction back: nothing half-written.
            _str("the boundary returned by change", new)
        if new is None or new == boundary:
            continue
        rows = _rows(ex, _RUN_SET_BOUNDARY, {"policy_id": policy_id, "new_boundary": new, "now": now})
        if len(rows) != 1:  # as Result.one() would (the row is locked: cannot happen)
            raise NoResultFound(f"policy {policy_id!r} vanished while its boundary was rewritten")
        changed.append(_policy_of_tuple(rows[0]))
    return len(locked), changed


def repair_values(
    *,
    context_hash: str,
    trigger: str,
    preference: str,
    anti_pattern: str,
    severity: str = "info",
    confidence: float = 0.5,
    tool_id: str | None = None,
    context: str | None = None,
    session_id: str | None = None,
    high_value_trace_ids: Sequence[str] = (),
    low_value_trace_ids: Sequence[str] = (),
    ts: int | None = None,
    id: str | None = None,
) -> dict[str, Any]:
    """The checked column values of a new repair row (``InvalidInputError`` when one is wrong)."""
    if not isinstance(severity, str) or severity not in SEVERITIES:
        raise InvalidInputError(f"severity must be one of {SEVERITIES}, got {severity!r:.80}")
    conf = _number("confidence", confidence)
    if not 0.0 <= conf <= 1.0:
        raise InvalidInputError(f"confidence must be in [0, 1], got {conf!r}")
    # check_text directly (not _str/_opt_str): every repair runs this, and
    # the wrappers were a third of its calls.
    return {
        "id": new_id("dr_") if id is None else check_text("id", id, empty=False, max_len=_ID_MAX),
        "ts": _millis("ts", ts),
        "context_hash": check_text("context_hash", context_hash, empty=False, max_len=_ID_MAX),
        "tool_id": None if tool_id is None else check_text("tool_id", tool_id),
        "context": None if context is None else check_text("context", context),
        "trigger": check_text("trigger", trigger, empty=False, max_len=_SHORT_MAX),
        "session_id": None if session_id is None else check_text("session_id", session_id, max_len=_NAME_MAX),
        "preference": check_text("preference", preference),
        "anti_pattern": check_text("anti_pattern", anti_pattern),
        "severity": severity,
        "confidence": conf,
        "high_value_trace_ids": list(_str_tuple("high_value_trace_ids", high_value_trace_ids)),
        "low_value_trace_ids": list(_str_tuple("low_value_trace_ids", low_value_trace_ids)),
        "validated": False,
        "rejected": False,
        # Recall columns: the worker fills them in the same INSERT.
        "category": None,
        "project": None,
        "source_text": None,
        "embedding": None,
        "embedding_model": None,
    }


# The INSERT compiled for exactly the columns ``repair_values`` fills.
_RUN_INSERT_REPAIR_KEYS = repair_values(
    context_hash="k", trigger="manual", preference="p", anti_pattern="a"
).keys()
_RUN_INSERT_REPAIR = Prepared(_INSERT_REPAIR, column_keys=builtins.list(_RUN_INSERT_REPAIR_KEYS))


def insert_repair(ex: Executor, values: dict[str, Any]) -> DecisionRepairRow:
    """Write one repair row (``repair_values`` output) in the caller's transaction."""
    write_repair_row(ex, values)
    return repair_row_from_values(values)


def write_repair_row(ex: Executor, values: dict[str, Any]) -> None:
    """``insert_repair`` without building the row it returns (the worker needs only the id)."""
    if isinstance(ex, Connection) and values.keys() == _RUN_INSERT_REPAIR_KEYS:
        _RUN_INSERT_REPAIR.rowcount(ex, values)
    else:
        ex.execute(_INSERT_REPAIR, values)


def repair_row_from_values(v: Mapping[str, Any]) -> DecisionRepairRow:
    return DecisionRepairRow(
        id=v["id"],
        ts=v["ts"],
        context_hash=v["context_hash"],
        tool_id=v["tool_id"],
        context=v["context"],
        trigger=v["trigger"],
        session_id=v["session_id"],
        preference=v["preference"],
        anti_pattern=v["anti_pattern"],
        severity=v["severity"],
        confidence=v["confidence"],
        high_value_trace_ids=tuple(v["high_value_trace_ids"]),
        low_value_trace_ids=tuple(v["low_value_trace_ids"]),
        validated=bool(v["validated"]),
        rejected=bool(v["rejected"]),
        category=v["category"],
        project=v["project"],
    )


class RepairRepository(_Repository):
    def insert(
        self,
        *,
        context_hash: str,
        trigger: str,
        preference: str,
        anti_pattern: str,
        severity: str = "info",
        confidence: float = 0.5,
        tool_id: str | None = None,
        context: str | None = None,
        session_id: str | None = None,
        high_value_trace_ids: Sequence[str] = (),
        low_value_trace_ids: Sequence[str] = (),
        ts: int | None = None,
        id: str | None = None,
        session: Session | None = None,
    ) -> DecisionRepairRow:
        _session_arg(session)
        values = repair_values(
            context_hash=context_hash,
            trigger=trigger,
            preference=preference,
            anti_pattern=anti_pattern,
            severity=severity,
            confidence=confidence,
            tool_id=tool_id,
            context=context,
            session_id=session_id,
            high_value_trace_ids=high_value_trace_ids,
            low_value_trace_ids=low_value_trace_ids,
            ts=ts,
            id=id,
        )
        with self._store.session(write=True, action="inserting a repair", session=session) as s:
            return insert_repair(s, values)

    def get(self, id: str) -> DecisionRepairRow:
        _str("id", id)
        with self._store.session(action="reading a repair") as s:
            model = s.get(DecisionRepairModel, id)
            if model is None:
                raise NotFoundError(f"no repair with id {id!r}")
            return repair_row(model)

    def list(self, context_hash: str | None = None, limit: int = 100) -> list[DecisionRepairRow]:
        """Repairs, newest first, optionally for one context hash."""
        params: dict[str, Any] = {"limit": _limit(limit)}
        if context_hash is None:
            stmt = _LATEST_REPAIRS
        else:
            stmt = _LATEST_REPAIRS_OF_CONTEXT
            params["context_hash"] = _str("context_hash", context_hash)
        with self._store.connection(action="listing repairs") as conn:
            return [repair_row(m) for m in conn.execute(stmt, params)]

    def recent_for_context(
        self, context_hash: str, *, session: Session | None = None
    ) -> DecisionRepairRow | None:
        """The newest repair for ``context_hash``, or None."""
        params = {"context_hash": _str("context_hash", context_hash)}
        _session_arg(session)
        with self._store.session(action="reading recent repairs", session=session) as s:
            model = s.scalars(_NEWEST_REPAIR_OF_CONTEXT, params).first()
            return None if model is None else repair_row(model)

    def validate(self, id: str, *, session: Session | None = None) -> DecisionRepairRow:
        """Mark a repair as approved (the UI thumbs-up); clears a rejection."""
        return self._set_verdict(id, validated=True, session=session)

    def reject(self, id: str, *, session: Session | None = None) -> DecisionRepairRow:
        """Mark a repair as rejected (clears a validation) and remove its lines from every policy block."""
        return self._set_verdict(id, validated=False, session=session)

    def _set_verdict(self, id: str, *, validated: bool, session: Session | None = None) -> DecisionRepairRow:
        _str("id", id)
        with self._store.session(write=True, action="updating a repair", session=session) as s:
            model = s.get(DecisionRepairModel, id, with_for_update=True)
            if model is None:
                raise NotFoundError(f"no repair with id {id!r}")
            model.validated = validated
            model.rejected = not validated
            s.flush()
            if not validated:
                # Rejected means gone: its lines leave every policy block in
                # this same transaction, so no prompt can read them again.
                self._detach(s, model.preference, model.anti_pattern)
            return repair_row(model)

    def detach(self, s: Session, preference: str, anti_pattern: str) -> tuple[str, ...]:
        """Inside ``s``: remove a repair's lines from every policy block; the policies changed.

        Outcomes retire stale and superseded repairs through this.
        """
        return self._detach(s, preference, anti_pattern)

    def _detach(self, s: Session, preference: str, anti_pattern: str) -> tuple[str, ...]:
        """Remove a repair's two lines from every policy ``@repair`` block holding them."""
        from ..text.blocks import remove_repair_lines  # boundary imports nothing of the store

        # The block stores lines JSON-escaped; a policy whose boundary does
        # not contain the escaped preference cannot hold the line.
        needle = json.dumps(preference.strip(), ensure_ascii=False)[1:-1]
        pattern = "%@repair%" + _like_literal(needle) + "%"
        ids = s.scalars(
            select(PolicyModel.id)
            .where(PolicyModel.boundary.like(pattern, escape="\\"))
            .order_by(PolicyModel.id)  # lock order, as attach does
        ).all()
        changed: list[str] = []
        for policy_id in ids:
            row = self._store.policies.update_boundary(
                policy_id,
                lambda boundary: remove_repair_lines(boundary, [preference], [anti_pattern]),
                session=s,
            )
            if row is not None:
                changed.append(policy_id)
        return tuple(changed)
