"""Thin typed repositories: ``store.traces``, ``store.policies``, ``store.repairs``.

Each method opens its own short transaction unless the caller passes a
``session`` to take part in a larger one (the repair orchestrator writes a
repair and finishes its job in one commit).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import (
    Table,
    bindparam,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Connection
from sqlalchemy.exc import NoResultFound
from sqlalchemy.orm import Session

from ..errors import InvalidInputError, NotFoundError
from ..text.secrets import redact_secrets
from ..types import DecisionRepairRow, PolicyRow, ToolCall, TraceRow, new_id, now_ms
from .checks import (
    ID_MAX,
    NAME_MAX,
    SEVERITIES,
    SHORT_MAX,
    as_opt_str,
    as_str,
    check_limit,
    check_millis,
    check_number,
    check_session,
    check_str_tuple,
    check_text,
)
from .engine import Prepared
from .models import DecisionRepairModel, PolicyModel, TraceModel
from .reads import (
    POLICIES,
    POLICIES_ALL,
    Executor,
    dialect_of,
    in_list,
    like_literal,
    list_param,
    policies_with_episodes,
    policy_of_tuple,
    policy_row,
    repair_row,
    rows_of,
    session_traces,
    tool_calls_of,
    trace_row,
)

if TYPE_CHECKING:
    from . import Store

__all__ = [
    "PolicyRepository",
    "RepairRepository",
    "TraceRepository",
    "insert_repair",
    "merge_boundaries",
    "repair_row_from_values",
    "repair_values",
    "write_repair_row",
]


_POLICIES_BY_STATUS = POLICIES_ALL.where(PolicyModel.status == bindparam("status"))


_REPAIRS = cast(Table, DecisionRepairModel.__table__)
# The policies to rewrite, locked in id order (a fixed lock order, so two
# transactions that rewrite overlapping sets cannot deadlock). SQLite has
# no row locks: its write transaction (BEGIN IMMEDIATE) already excludes.
_LOCK_POLICIES = tuple(
    select(POLICIES.c.id, POLICIES.c.boundary)
    .where(in_list(POLICIES.c.id, "ids", pg))
    .order_by(POLICIES.c.id)
    .with_for_update()
    for pg in (False, True)
)
_SET_BOUNDARY = (
    update(POLICIES)
    .where(POLICIES.c.id == bindparam("policy_id"))
    .values(boundary=bindparam("new_boundary"), updated_at=bindparam("now"))
    .returning(*POLICIES.columns)
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


# -- conversions ----------------------------------------------------------


class _Repository:
    def __init__(self, store: Store) -> None:
        self._store = store


def _redacted(value: str) -> str:
    # Only a str is redacted; anything else reaches the checks that reject it.
    return redact_secrets(value) if isinstance(value, str) else value


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
        redact: bool = False,
    ) -> TraceRow:
        """Store one trace row of the host's.

        The row is the host's data and is kept as given, unless ``redact``
        is true: then ``user_text``, ``agent_text`` and ``reflection`` are
        stored with their secrets replaced by ``[redacted]``
        (``text.secrets.redact_secrets``). The adapters pass ``redact=True``.
        """
        if redact:
            user_text, agent_text = _redacted(user_text), _redacted(agent_text)
            reflection = None if reflection is None else _redacted(reflection)
        model = TraceModel(
            id=new_id("tr_") if id is None else as_str("id", id, empty=False, max_len=ID_MAX),
            session_id=as_str("session_id", session_id, empty=False, max_len=NAME_MAX),
            episode_id=as_opt_str("episode_id", episode_id, max_len=NAME_MAX),
            ts=check_millis("ts", ts),
            user_text=as_str("user_text", user_text),
            agent_text=as_str("agent_text", agent_text),
            reflection=as_opt_str("reflection", reflection),
            value=check_number("value", value),
            tool_calls=[{"name": c.name, "error_code": c.error_code} for c in tool_calls_of(tool_calls)],
        )
        with self._store.session(write=True, action="adding a trace") as s:
            s.add(model)
            s.flush()
            return trace_row(model)

    def get(self, id: str) -> TraceRow:
        as_str("id", id)
        with self._store.session(action="reading a trace") as s:
            model = s.get(TraceModel, id)
            if model is None:
                raise NotFoundError(f"no trace with id {id!r}")
            return trace_row(model)

    def list(self, session_id: str, limit: int = 50) -> list[TraceRow]:
        """The session's traces, newest first."""
        as_str("session_id", session_id)
        check_limit(limit)
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
            id=new_id("po_") if id is None else as_str("id", id, empty=False, max_len=ID_MAX),
            title=as_str("title", title),
            boundary=as_str("boundary", boundary),
            status=as_str("status", status, empty=False, max_len=SHORT_MAX),
            source_episode_ids=list(check_str_tuple("source_episode_ids", source_episode_ids)),
            updated_at=now_ms(),
        )
        with self._store.session(write=True, action="adding a policy") as s:
            s.add(model)
            s.flush()
            return policy_row(model)

    def get(self, id: str) -> PolicyRow:
        as_str("id", id)
        with self._store.session(action="reading a policy") as s:
            model = s.get(PolicyModel, id)
            if model is None:
                raise NotFoundError(f"no policy with id {id!r}")
            return policy_row(model)

    def list(self, status: str | None = None) -> list[PolicyRow]:
        if status is None:
            stmt, params = POLICIES_ALL, {}
        else:
            stmt, params = _POLICIES_BY_STATUS, {"status": as_str("status", status)}
        with self._store.session(action="listing policies") as s:
            return [policy_row(m) for m in s.execute(stmt, params)]

    def with_source_episodes(
        self, episode_ids: Iterable[str], status: str | None = "active"
    ) -> builtins.list[PolicyRow]:  # ``list`` here is the method above
        """Policies (of ``status``; any when None) learned from any of ``episode_ids``, by id.

        The overlap is found through ``policy_episodes`` (migration 0006),
        whose primary key serves it on both backends.
        """
        ids = sorted(set(check_str_tuple("episode_ids", episode_ids)))
        if not ids:
            return []
        if status is not None:
            as_str("status", status)
        with self._store.connection(action="finding policies by episode") as conn:
            return policies_with_episodes(conn, ids, status)

    def upsert(self, row: PolicyRow) -> PolicyRow:
        """Insert the row, or overwrite every field of the policy with its id."""
        if not isinstance(row, PolicyRow):
            raise InvalidInputError(f"upsert takes a PolicyRow, got {type(row).__name__}")
        as_str("id", row.id, empty=False, max_len=ID_MAX)
        fields: dict[str, Any] = {
            "title": as_str("title", row.title),
            "boundary": as_str("boundary", row.boundary),
            "status": as_str("status", row.status, empty=False, max_len=SHORT_MAX),
            "source_episode_ids": list(check_str_tuple("source_episode_ids", row.source_episode_ids)),
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
        as_str("id", id)
        if not callable(change):
            raise InvalidInputError(f"change must be callable, got {type(change).__name__}")
        check_session(session)
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
    pg = dialect_of(ex) == "postgresql"
    locked: Sequence[tuple[str, str]]
    if not pg and known is not None and known.keys() >= set(ids):
        # SQLite: the boundaries were read earlier in this same write
        # transaction (BEGIN IMMEDIATE: no other writer since), so reading
        # them again would return the same text. PostgreSQL always locks.
        locked = [(i, known[i]) for i in ids]
    else:
        locked = [(r[0], r[1]) for r in rows_of(ex, _RUN_LOCK_POLICIES[pg], {"ids": list_param(ids, pg)})]
    for policy_id, boundary in locked:
        new = change(boundary)
        if new is not None:
            # Raising here rolls the transaction back: nothing half-written.
            as_str("the boundary returned by change", new)
        if new is None or new == boundary:
            continue
        rows = rows_of(ex, _RUN_SET_BOUNDARY, {"policy_id": policy_id, "new_boundary": new, "now": now})
        if len(rows) != 1:  # as Result.one() would (the row is locked: cannot happen)
            raise NoResultFound(f"policy {policy_id!r} vanished while its boundary was rewritten")
        changed.append(policy_of_tuple(rows[0]))
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
    conf = check_number("confidence", confidence)
    if not 0.0 <= conf <= 1.0:
        raise InvalidInputError(f"confidence must be in [0, 1], got {conf!r}")
    # check_text directly (not _str/_opt_str): every repair runs this, and
    # the wrappers were a third of its calls.
    return {
        "id": new_id("dr_") if id is None else check_text("id", id, empty=False, max_len=ID_MAX),
        "ts": check_millis("ts", ts),
        "context_hash": check_text("context_hash", context_hash, empty=False, max_len=ID_MAX),
        "tool_id": None if tool_id is None else check_text("tool_id", tool_id),
        # Repairs store no secret: their columns redact what is written
        # (store.models.RedactedText). These values are redacted here too
        # because they live on in memory — the row ``insert`` returns, the
        # supersede check that compares them with stored lessons — and must
        # read as the stored row does; idempotent, so the column's pass
        # changes nothing.
        "context": None if context is None else redact_secrets(check_text("context", context)),
        "trigger": check_text("trigger", trigger, empty=False, max_len=SHORT_MAX),
        "session_id": None if session_id is None else check_text("session_id", session_id, max_len=NAME_MAX),
        "preference": redact_secrets(check_text("preference", preference)),
        "anti_pattern": redact_secrets(check_text("anti_pattern", anti_pattern)),
        "severity": severity,
        "confidence": conf,
        "high_value_trace_ids": list(check_str_tuple("high_value_trace_ids", high_value_trace_ids)),
        "low_value_trace_ids": list(check_str_tuple("low_value_trace_ids", low_value_trace_ids)),
        "validated": False,
        "rejected": False,
        # Recall columns: the worker fills them in the same INSERT.
        "category": None,
        "project": None,
        "user_id": None,
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
        user=v["user_id"],
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
        check_session(session)
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
        as_str("id", id)
        with self._store.session(action="reading a repair") as s:
            model = s.get(DecisionRepairModel, id)
            if model is None:
                raise NotFoundError(f"no repair with id {id!r}")
            return repair_row(model)

    def list(self, context_hash: str | None = None, limit: int = 100) -> list[DecisionRepairRow]:
        """Repairs, newest first, optionally for one context hash."""
        params: dict[str, Any] = {"limit": check_limit(limit)}
        if context_hash is None:
            stmt = _LATEST_REPAIRS
        else:
            stmt = _LATEST_REPAIRS_OF_CONTEXT
            params["context_hash"] = as_str("context_hash", context_hash)
        with self._store.connection(action="listing repairs") as conn:
            return [repair_row(m) for m in conn.execute(stmt, params)]

    def recent_for_context(
        self, context_hash: str, *, session: Session | None = None
    ) -> DecisionRepairRow | None:
        """The newest repair for ``context_hash``, or None."""
        params = {"context_hash": as_str("context_hash", context_hash)}
        check_session(session)
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
        as_str("id", id)
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
        """Remove a repair's two lines from every policy ``@repair`` block holding them.

        A line another active repair still carries stays: blocks keep no
        record of which repair put a line there, and two repairs that share
        one ("Avoid: npm") both put it. The caller has already marked this
        repair inactive (rejected or retired) in ``s``.
        """
        from ..text.blocks import remove_repair_lines  # boundary imports nothing of the store

        lines = [line for line in (preference, anti_pattern) if line.strip()]
        if not lines:
            return ()
        # The block stores lines JSON-escaped; a policy whose boundary
        # contains neither escaped line cannot hold them.
        holds = [
            PolicyModel.boundary.like("%@repair%" + like_literal(_escaped(line)) + "%", escape="\\")
            for line in lines
        ]
        ids = s.scalars(
            select(PolicyModel.id).where(or_(*holds)).order_by(PolicyModel.id)  # lock order, as attach does
        ).all()
        if not ids:
            return ()
        M = DecisionRepairModel
        drop_preference = (
            [preference] if preference.strip() and not _carried(s, M.preference, preference) else []
        )
        drop_anti = (
            [anti_pattern] if anti_pattern.strip() and not _carried(s, M.anti_pattern, anti_pattern) else []
        )
        if not drop_preference and not drop_anti:
            return ()
        changed: list[str] = []
        for policy_id in ids:
            row = self._store.policies.update_boundary(
                policy_id,
                lambda boundary: remove_repair_lines(boundary, drop_preference, drop_anti),
                session=s,
            )
            if row is not None:
                changed.append(policy_id)
        return tuple(changed)


def _escaped(line: str) -> str:
    """``line`` as a ``@repair`` block stores it (trimmed, JSON-escaped, without the quotes)."""
    return json.dumps(line.strip(), ensure_ascii=False)[1:-1]


def _carried(s: Session, column: Any, line: str) -> bool:
    """Whether an active repair (not rejected, no outcome status) has ``line`` in ``column``, trimmed."""
    M = DecisionRepairModel
    stmt = (
        select(M.id)
        .where(M.rejected.is_(False), M.status.is_(None), func.trim(column) == line.strip())
        .limit(1)
    )
    return s.scalar(stmt) is not None
