"""The SQL of ``repair_jobs``: the rows of the durable repair queue.

``runtime.queue.RepairQueue`` is the API (validation, transactions, the
group commit of enqueues, lease recovery); this module holds the statements,
the queries its methods run in the caller's transaction, and the row format
(``JobRow``, the JSON payload of a ``RepairInput``). A row whose payload
cannot be read comes back with ``payload_error`` set instead of raising.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, cast

from sqlalchemy import Row, Table, Text, and_, bindparam, delete, exists, func, or_, select, update
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session, aliased

from ..errors import InvalidInputError, LeaseLostError, NotFoundError
from ..types import RepairInput
from .engine import Prepared
from .models import DecisionRepairModel, RepairJobCountModel, RepairJobModel
from .payloads import payload_of, read_payload
from .reads import Executor

# The queries are called through the module (``jobs.claim(...)``); only
# the row format and the limits are names to import.
__all__ = [
    "CLOCK_SLACK_MS",
    "JOB_STATUSES",
    "MAX_CLAIM_BATCH",
    "PRUNE_BATCH",
    "EnqueueResult",
    "JobRow",
    "context_lock_key",
    "payload_of",
]

JOB_STATUSES = ("pending", "running", "done", "dead")
# Most jobs one claim_many takes.
MAX_CLAIM_BATCH = 64
# Done jobs deleted per transaction by retention pruning.
PRUNE_BATCH = 500
# A due time or lease end further ahead than anything this code writes,
# by more than this, means the wall clock went back (or a host's clock is
# far off): such a job is treated as due / its lease as expired, so a
# clock set back a day cannot park a job for a day. An hour is far beyond
# the clock skew of hosts that share a database.
CLOCK_SLACK_MS = 3_600_000


@dataclass(frozen=True, slots=True)
class JobRow:
    id: str
    seq: int
    context_hash: str
    trigger: str
    payload: dict[str, Any]
    status: str
    attempts: int
    next_attempt_at: int
    lease_until: int | None
    lease_owner: str | None
    last_error: str | None
    outcome: str | None
    repair_id: str | None
    created_at: int
    updated_at: int
    # Why ``payload`` could not be read (it is ``{}`` then), else None.
    payload_error: str | None = None


_JOB_FIELDS = tuple(f.name for f in fields(JobRow) if f.name not in ("payload", "payload_error"))


@dataclass(frozen=True, slots=True)
class EnqueueResult:
    """``job_id`` is the job that covers the trigger.

    ``deduped``: no new row was written. ``coalesced`` says why, for a
    failure burst absorbed by a pending job of its context (``"pending"``)
    or by a repair still in cooldown (``"cooldown"``; ``job_id`` is then
    empty: no job will run for it).
    """

    job_id: str
    deduped: bool
    coalesced: str | None = None


def context_lock_key(context_hash: str) -> int:
    """A signed 64-bit advisory-lock key for a context hash."""
    try:
        raw = int(context_hash[:16], 16)
    except ValueError:
        raw = int.from_bytes(hashlib.sha1(context_hash.encode()).digest()[:8], "big")
    return raw - (1 << 64) if raw >= 1 << 63 else raw


# -- rows and payloads --------------------------------------------------------


def _job_row(source: Row[Any]) -> JobRow:
    """A ``JobRow`` from a Core row of ``_JOB_COLUMNS`` (payload as JSON text)."""
    payload, error = read_payload(source.payload)
    return JobRow(
        payload=payload, payload_error=error, **{name: getattr(source, name) for name in _JOB_FIELDS}
    )


def _job_row_of_tuple(source: Sequence[Any]) -> JobRow:
    """``_job_row`` for a plain tuple of ``_JOB_COLUMNS`` (a ``Prepared`` row)."""
    by_name = dict(zip(_JOB_COLUMN_NAMES, source, strict=True))
    payload, error = read_payload(by_name["payload"])
    return JobRow(payload=payload, payload_error=error, **{name: by_name[name] for name in _JOB_FIELDS})


def _new_job_row(inp: RepairInput, job_id: str, now: int) -> dict[str, Any]:
    return {
        "id": job_id,
        "context_hash": inp.context_hash,
        "trigger": inp.trigger,
        "payload": payload_of(inp),
        "status": "pending",
        "attempts": 0,
        "next_attempt_at": now,
        "created_at": now,
        "updated_at": now,
    }


# -- statements ---------------------------------------------------------------

# Statements are built once: SQLAlchemy memoizes a statement object's cache
# key, so the claim (run for every job) skips re-compiling them.
_j = RepairJobModel
_other = aliased(RepairJobModel)
_BUSY_CONTEXT = exists().where(_other.context_hash == _j.context_hash, _other.status == "running")
_OLDER_WAITING = exists().where(
    _other.context_hash == _j.context_hash, _other.status == "pending", _other.seq < _j.seq
)
_DUE = (
    _j.status == "pending",
    or_(_j.next_attempt_at <= bindparam("now"), _j.next_attempt_at > bindparam("horizon")),
)
_JOBS = cast(Table, RepairJobModel.__table__)
# Every column, the payload as JSON text: decoding it is ours to do, so a
# row that is not valid JSON is reported, not raised while fetching.
_JOB_COLUMNS = (
    *[c for c in _JOBS.columns if c.name != "payload"],
    sql_cast(_JOBS.c.payload, Text).label("payload"),
)
_SELECT_JOBS = select(*_JOB_COLUMNS)

# SQLite: the claim runs under BEGIN IMMEDIATE (one writer at a time), so a
# single statement can pick the jobs and nobody can race it.
# SQLite must walk pending jobs in seq order (index status, seq) and stop
# once :limit qualify. Left alone, it picks the next_attempt_at
# index and sorts every due job — checking each one's context — on every
# claim; "+ 0" makes that index unusable for the filter, so it does not.
_CLAIM = (
    select(_j.seq)
    .where(
        _j.status == "pending",
        or_(_j.next_attempt_at + 0 <= bindparam("now"), _j.next_attempt_at + 0 > bindparam("horizon")),
        ~_BUSY_CONTEXT,
        ~_OLDER_WAITING,
    )
    .order_by(_j.seq)
)
# Up to :limit jobs in one statement. The same jobs as :limit one-job
# claims in a row (one statement each): a pick needs its
# context to have no running job and no older pending one, so at most the
# oldest pending job of an idle context qualifies, and taking it never
# lets another job of that context (or of any other) qualify or stop
# qualifying. So the first :limit qualifying jobs of the one snapshot are
# exactly what the one-job claims would take, in turn.
_RUN_TAKE_MANY_SQLITE = Prepared(
    update(_j)
    .where(_j.seq.in_(_CLAIM.limit(bindparam("limit"))))
    .values(
        status="running",
        attempts=_j.attempts + 1,
        lease_owner=bindparam("owner"),
        lease_until=bindparam("lease_until"),
        updated_at=bindparam("now"),
    )
    .returning(*_JOB_COLUMNS)
)
_JOB_COLUMN_NAMES = tuple(c.name for c in _JOB_COLUMNS)

# PostgreSQL: many claimers at once. Candidates are read without locks; for
# each, the context is taken with a transaction-scoped advisory try-lock
# (claimers of other contexts never wait), the context is checked for a
# running or older waiting job — a statement run after the lock sees every
# claim committed before it — and only then is the one row locked, with
# SKIP LOCKED so a claimer never waits on a row another transaction holds.
_CANDIDATES_PG = select(_j.seq, _j.context_hash).where(*_DUE).order_by(_j.seq).limit(bindparam("batch"))
_CONTEXT_BLOCKED_PG = select(
    exists().where(
        _j.context_hash == bindparam("context_hash"),
        or_(_j.status == "running", and_(_j.status == "pending", _j.seq < bindparam("seq"))),
    )
)
_LOCK_ROW_PG = (
    select(_j.seq).where(_j.seq == bindparam("seq"), _j.status == "pending").with_for_update(skip_locked=True)
)
_TAKE_PG = (
    update(_JOBS)
    .where(_JOBS.c.seq == bindparam("job_seq"))
    .values(
        status="running",
        attempts=_JOBS.c.attempts + 1,
        lease_owner=bindparam("owner"),
        lease_until=bindparam("lease_until"),
        updated_at=bindparam("now"),
    )
    .returning(*_JOB_COLUMNS)
)
_TRY_CONTEXT_LOCK_PG = select(func.pg_try_advisory_xact_lock(bindparam("key")))
_CLAIM_CANDIDATES = 32

_COUNTS_TABLE = cast(Table, RepairJobCountModel.__table__)
_COUNTS = select(_COUNTS_TABLE.c.status, func.sum(_COUNTS_TABLE.c.n)).group_by(_COUNTS_TABLE.c.status)
_OLDEST_PENDING = select(func.min(_JOBS.c.created_at)).where(_JOBS.c.status == "pending")
# Done jobs past retention, oldest first, a batch at a time.
_PRUNE_DONE = delete(_JOBS).where(
    _JOBS.c.seq.in_(
        select(_JOBS.c.seq)
        .where(_JOBS.c.status == "done", _JOBS.c.updated_at < bindparam("before"))
        .order_by(_JOBS.c.updated_at)
        .limit(bindparam("batch"))
        .scalar_subquery()
    )
)
_NEXT_DUE = select(func.min(_JOBS.c.next_attempt_at)).where(_JOBS.c.status == "pending")


_FINISH_STATEMENTS: dict[frozenset[str], Prepared] = {}


def _finish_statement(columns: frozenset[str]) -> Prepared:
    """The conditional UPDATE that ends a job, one prebuilt statement per column set.

    A Core update of the table (not the ORM's bulk update, which would try
    to synchronize the session); only three column sets exist.
    """
    stmt = _FINISH_STATEMENTS.get(columns)
    if stmt is None:
        table = cast(Table, RepairJobModel.__table__)
        update_stmt = (
            update(table)
            .where(
                table.c.id == bindparam("job_id"),
                table.c.status == "running",
                table.c.lease_owner == bindparam("owner"),
            )
            .values({name: bindparam(f"v_{name}") for name in sorted(columns)})
        )
        stmt = _FINISH_STATEMENTS.setdefault(columns, Prepared(update_stmt))
    return stmt


def _claim_lock_key(context_hash: str) -> int:
    # A key space apart from run_repair's per-context write lock, so a
    # claimer never skips a context just because its repair is committing.
    return context_lock_key(context_hash) ^ 0x5A5A5A5A5A5A5A5A


# -- enqueue --------------------------------------------------------------------


def insert(
    s: Session,
    cleaned: Sequence[RepairInput],
    ids: Sequence[str],
    now: int,
    *,
    cooldown_ms: int,
    cooldown_triggers: tuple[str, ...],
) -> list[EnqueueResult]:
    """Insert jobs for ``cleaned`` (ids ``ids``) in order; waiting duplicates are no-ops.

    Failure bursts are coalesced into a pending failure-burst job of their
    context, or dropped while the context's newest repair (of a trigger in
    ``cooldown_triggers``) is younger than ``cooldown_ms``.
    """
    table = _JOBS
    existing = (
        select(table.c.id, table.c.status, table.c.seq).where(table.c.id.in_(set(ids))).with_for_update()
    )
    known = {row[0]: (row[1], row[2]) for row in s.execute(existing)}
    # The same situation again after its job finished: a new round on
    # the same id. The finished row is archived under "<id>~<seq>",
    # so its history (and the repair it names) stays readable.
    for job_id, (status, seq) in known.items():
        if status in ("done", "dead"):
            s.execute(update(table).where(table.c.seq == seq).values(id=f"{job_id}~{seq}"))
    waiting = {job_id for job_id, (status, _) in known.items() if status in ("pending", "running")}
    absorbed = _coalesce(s, cleaned, now, cooldown_ms, cooldown_triggers)
    results: list[EnqueueResult] = []
    rows: list[dict[str, Any]] = []
    for inp, job_id in zip(cleaned, ids, strict=True):
        if job_id in waiting:
            results.append(EnqueueResult(job_id, deduped=True))
            continue
        cover = absorbed.get(inp.context_hash) if inp.trigger == "failure-burst" else None
        if cover is not None:
            reason, cover_id = cover
            results.append(EnqueueResult(cover_id, deduped=True, coalesced=reason))
            continue
        waiting.add(job_id)  # a repeat inside this batch dedupes too
        if inp.trigger == "failure-burst":
            absorbed[inp.context_hash] = ("pending", job_id)
        results.append(EnqueueResult(job_id, deduped=False))
        rows.append(_new_job_row(inp, job_id, now))
    if rows:
        # ON CONFLICT DO NOTHING: on PostgreSQL another process may
        # insert the same id between our read and our insert; theirs
        # stands and ours counts as a duplicate.
        dialect_insert = pg_insert if s.get_bind().dialect.name == "postgresql" else sqlite_insert
        stmt = dialect_insert(table).on_conflict_do_nothing(index_elements=["id"]).returning(table.c.id)
        inserted = set(s.execute(stmt, rows).scalars())
        if len(inserted) != len(rows):
            results = [
                r if r.deduped or r.job_id in inserted else EnqueueResult(r.job_id, deduped=True)
                for r in results
            ]
    return results


def _coalesce(
    s: Session,
    inputs: Sequence[RepairInput],
    now: int,
    cooldown: int,
    cooldown_triggers: tuple[str, ...],
) -> dict[str, tuple[str, str]]:
    """Contexts whose failure bursts need no new job: hash -> (reason, covering job id)."""
    contexts = sorted({inp.context_hash for inp in inputs if inp.trigger == "failure-burst"})
    if not contexts:
        return {}
    out: dict[str, tuple[str, str]] = {}
    if cooldown > 0:
        newest = select(DecisionRepairModel.context_hash, func.max(DecisionRepairModel.ts)).where(
            DecisionRepairModel.context_hash.in_(contexts),
            DecisionRepairModel.trigger.in_(cooldown_triggers),
            DecisionRepairModel.status.is_(None),  # outcomes: a retired repair holds nothing back
        )
        for context_hash, ts in s.execute(newest.group_by(DecisionRepairModel.context_hash)):
            # abs(): a repair "from the future" (the clock went back) does
            # not hold its context in cooldown for longer than cooldown_ms.
            if ts is not None and abs(now - int(ts)) < cooldown:
                out[context_hash] = ("cooldown", "")
    pending = select(_JOBS.c.context_hash, _JOBS.c.id).where(
        _JOBS.c.context_hash.in_(contexts),
        _JOBS.c.status == "pending",
        _JOBS.c.trigger == "failure-burst",
    )
    for context_hash, job_id in s.execute(pending.order_by(_JOBS.c.seq)):
        out.setdefault(context_hash, ("pending", job_id))
    return out


# -- leases and claiming ----------------------------------------------------------


def running_leases(s: Session) -> list[tuple[str, int | None, str | None]]:
    """(id, lease_until, lease_owner) of every running job."""
    rows = s.execute(
        select(_JOBS.c.id, _JOBS.c.lease_until, _JOBS.c.lease_owner).where(_JOBS.c.status == "running")
    ).all()
    return [(row[0], row[1], row[2]) for row in rows]


def return_to_pending(s: Session, job_ids: Sequence[str], now: int) -> None:
    """Make the running jobs among ``job_ids`` pending again, unleased."""
    s.execute(
        update(_JOBS)
        .where(_JOBS.c.id.in_(job_ids), _JOBS.c.status == "running")
        .values(status="pending", lease_owner=None, lease_until=None, updated_at=now)
    )


def claim(s: Connection, owner: str, limit: int, now: int, horizon: int, lease_until: int) -> list[JobRow]:
    """Take up to ``limit`` due jobs, each of a different context, in the caller's transaction.

    On SQLite the batch is one statement (``_RUN_TAKE_MANY_SQLITE``, which
    takes the same jobs), returned in queue order.
    """
    values = {"now": now, "horizon": horizon, "owner": owner, "lease_until": lease_until}
    if s.dialect.name != "postgresql":
        # One statement picks and takes them all (SQLite >= 3.35
        # RETURNING, whose row order is unspecified: queue order here).
        rows = _RUN_TAKE_MANY_SQLITE.all(s, {**values, "limit": limit})
        return sorted((_job_row_of_tuple(row) for row in rows), key=lambda job: job.seq)
    taken: list[JobRow] = []
    for seq in _pick_postgres(s, now, horizon, limit):
        row = s.execute(_TAKE_PG, {**values, "job_seq": seq}).first()
        assert row is not None  # locked FOR UPDATE by _pick_postgres
        taken.append(_job_row(row))
    return taken


def _pick_postgres(s: Connection, now: int, horizon: int, limit: int) -> list[int]:
    params = {"now": now, "horizon": horizon, "batch": _CLAIM_CANDIDATES + limit}
    candidates = s.execute(_CANDIDATES_PG, params).all()
    picked: list[int] = []
    tried: set[str] = set()
    for seq, context_hash in candidates:
        if context_hash in tried:
            continue  # only the oldest waiting job of a context may go
        tried.add(context_hash)
        if not s.execute(_TRY_CONTEXT_LOCK_PG, {"key": _claim_lock_key(context_hash)}).scalar():
            continue  # another worker is claiming this context right now
        if s.execute(_CONTEXT_BLOCKED_PG, {"context_hash": context_hash, "seq": seq}).scalar():
            continue
        if s.execute(_LOCK_ROW_PG, {"seq": seq}).scalar() is None:
            continue  # claimed or changed since the candidate list was read
        picked.append(int(seq))
        if len(picked) >= limit:
            break
    return picked


def release(s: Connection, job_ids: Sequence[str], owner: str, now: int) -> int:
    """Make claimed, never started jobs pending again, the attempt not counted; count them."""
    result = s.execute(
        update(_JOBS)
        .where(_JOBS.c.id.in_(job_ids), _JOBS.c.status == "running", _JOBS.c.lease_owner == owner)
        .values(
            status="pending",
            attempts=func.max(_JOBS.c.attempts - 1, 0)
            if s.dialect.name == "sqlite"
            else func.greatest(_JOBS.c.attempts - 1, 0),
            lease_owner=None,
            lease_until=None,
            updated_at=now,
        )
    )
    return int(result.rowcount)


def renew(s: Session, job_ids: Sequence[str], owner: str, lease_until: int) -> None:
    """Extend to ``lease_until`` the leases of the jobs ``owner`` is still running."""
    s.execute(
        update(RepairJobModel)
        .where(
            RepairJobModel.id.in_(job_ids),
            RepairJobModel.status == "running",
            RepairJobModel.lease_owner == owner,
        )
        .values(lease_until=lease_until)
    )


# -- finishing --------------------------------------------------------------------


def finish(s: Executor, job: JobRow, owner: str, now: int, **values: Any) -> None:
    """Move a job out of ``running`` — only if it is still leased to ``owner``.

    ``LeaseLostError`` when it is not (another worker took it over).
    """
    values.update(updated_at=now, lease_until=None)
    params = {f"v_{k}": v for k, v in values.items()}
    params.update(job_id=job.id, owner=owner)
    prepared = _finish_statement(frozenset(values))
    if isinstance(s, Connection):  # the worker's path: through the driver on SQLite
        changed = prepared.rowcount(s, params)
    else:
        changed = getattr(s.execute(prepared.statement, params), "rowcount", 1)
    if changed != 1:
        raise LeaseLostError(f"job {job.id} is no longer leased to {owner}")


def delete_pending_before(s: Session, cutoff: int) -> list[JobRow]:
    """Delete pending jobs created before ``cutoff``; return them."""
    stmt = _SELECT_JOBS.where(_JOBS.c.status == "pending", _JOBS.c.created_at < cutoff)
    rows = [_job_row(r) for r in s.execute(stmt)]
    if rows:
        s.execute(delete(_JOBS).where(_JOBS.c.id.in_([r.id for r in rows])))
    return rows


def prune_done_batch(s: Connection, before: int, batch: int) -> int:
    """Delete at most ``batch`` done jobs that finished before ``before``, oldest first; count them."""
    return int(s.execute(_PRUNE_DONE, {"before": before, "batch": batch}).rowcount)


# -- reading and operator changes -------------------------------------------------


def get(s: Session, job_id: str) -> JobRow | None:
    row = s.execute(_SELECT_JOBS.where(_JOBS.c.id == job_id)).first()
    return None if row is None else _job_row(row)


def get_many(s: Session, job_ids: Sequence[str]) -> dict[str, JobRow]:
    """The jobs among ``job_ids`` that exist, by id (one query per 500 ids)."""
    found: dict[str, JobRow] = {}
    for i in range(0, len(job_ids), 500):
        stmt = _SELECT_JOBS.where(_JOBS.c.id.in_(job_ids[i : i + 500]))
        found.update((r.id, _job_row(r)) for r in s.execute(stmt))
    return found


def list_jobs(s: Session, status: str | None, limit: int) -> list[JobRow]:
    """Jobs in queue order, optionally of one status; at most ``limit``."""
    stmt = _SELECT_JOBS.order_by(_JOBS.c.seq).limit(limit)
    if status is not None:
        stmt = stmt.where(_JOBS.c.status == status)
    return [_job_row(r) for r in s.execute(stmt)]


def reset_for_retry(s: Session, job_id: str, now: int) -> JobRow:
    """Make a job pending and due at ``now``, attempts reset; refuse a running one or one with a repair."""
    row = s.execute(
        select(_JOBS.c.status, _JOBS.c.repair_id).where(_JOBS.c.id == job_id).with_for_update()
    ).first()
    if row is None:
        raise NotFoundError(f"no job with id {job_id!r}")
    status, repair_id = row
    if status == "running":
        raise InvalidInputError(f"job {job_id} is running; retry it once it has finished")
    if repair_id is not None:
        raise InvalidInputError(f"job {job_id} already wrote repair {repair_id}; not retrying it")
    s.execute(
        update(_JOBS)
        .where(_JOBS.c.id == job_id)
        .values(
            status="pending",
            attempts=0,
            next_attempt_at=now,
            updated_at=now,
            lease_owner=None,
            lease_until=None,
        )
    )
    fresh = s.execute(_SELECT_JOBS.where(_JOBS.c.id == job_id)).one()
    return _job_row(fresh)


def purge(s: Session, job_id: str) -> JobRow:
    """Delete one job (any status) and return it; ``NotFoundError`` when there is none."""
    row = s.execute(_SELECT_JOBS.where(_JOBS.c.id == job_id)).first()
    result = s.execute(delete(_JOBS).where(_JOBS.c.id == job_id))
    if row is None or getattr(result, "rowcount", 0) == 0:
        raise NotFoundError(f"no job with id {job_id!r}")
    return _job_row(row)


def counts_and_oldest_pending(s: Connection) -> tuple[dict[str, int], int | None]:
    """Jobs per status and the oldest pending job's ``created_at``.

    Both reads stay small however many jobs there are: the counters are a
    few rows per status (kept by triggers, migration 0006) and the oldest
    pending job is the first entry of (status, created_at).
    """
    counts = {status: int(n) for status, n in s.execute(_COUNTS)}
    oldest = s.execute(_OLDEST_PENDING).scalar()
    return counts, None if oldest is None else int(oldest)


def next_due(s: Connection) -> int | None:
    """The earliest ``next_attempt_at`` of a pending job, None when none is pending."""
    nxt = s.execute(_NEXT_DUE).scalar()
    return None if nxt is None else int(nxt)
