"""``RepairQueue``: the durable, database-backed queue of repair jobs.

A job is a row in ``repair_jobs`` in the same database as the repairs, so
the repair row and the job's ``done`` status commit together (exactly one
repair per job, even across a crash). Life cycle::

    pending ──claim──▶ running ──ok──────────────▶ done
       ▲                  │  ├─transient error───▶ pending (next_attempt_at = now + backoff)
       │                  │  └─permanent error───▶ dead
       └──lease expired / owner process gone──────┘
    dead ──queue retry──▶ pending        pending older than stale_after ──▶ discarded (deleted)

Job ids are content addresses of the trigger, so re-triggering the same
situation while its job is waiting returns the existing job. When the same
situation comes back after its job finished, the finished row is archived
under ``<id>~<seq>`` (its history stays) and a new round takes the id.

Failure bursts are coalesced: a burst for a context that already has a
pending failure-burst job, or whose newest repair is still in cooldown,
adds no job (the pending job, or the repair, already covers it).

Every string of a trigger is cleaned before it is stored
(``limits.clean_text``: capped, NUL and lone surrogates replaced), and a
row whose payload cannot be read comes back with ``payload_error`` set
instead of raising, so the worker dead-letters it and goes on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import random
import socket
import threading
import time
import unicodedata
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any, cast

from sqlalchemy import Row, Table, Text, and_, bindparam, delete, exists, func, or_, select, update
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session, aliased

from ..config import FeedbackConfig
from ..errors import InvalidInputError, NotFoundError, StoreBusyError, StoreError
from ..limits import (
    CONTEXT_CHAR_CAP,
    ID_CHAR_CAP,
    REASON_CHAR_CAP,
    USER_TEXT_CHAR_CAP,
    clean_optional,
    clean_text,
)
from ..repair.run import cooldown_family
from ..repair.write import context_lock_key
from ..store import Store
from ..store.engine import Prepared
from ..store.models import DecisionRepairModel, RepairJobCountModel, RepairJobModel
from ..store.reads import Executor
from ..types import FailureRecord, RepairInput, now_ms

__all__ = [
    "CLOCK_SLACK_MS",
    "JOB_STATUSES",
    "MAX_CLAIM_BATCH",
    "PRUNE_BATCH",
    "EnqueueResult",
    "JobRow",
    "LeaseLostError",
    "RepairQueue",
    "backoff_ms",
    "clean_input",
    "input_from_payload",
    "job_id_for",
    "payload_of",
]

logger = logging.getLogger("memos_feedback.queue")

JOB_STATUSES = ("pending", "running", "done", "dead")
MAX_LIMIT = 10_000
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


class LeaseLostError(StoreError):
    """The job was taken over by another worker (our lease had expired)."""


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


def _read_payload(raw: object) -> tuple[dict[str, Any], str | None]:
    """The payload as a dict, or ``({}, reason)`` when it is not a JSON object."""
    if isinstance(raw, (str, bytes)):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            return {}, f"payload is not JSON: {exc}"
    if not isinstance(raw, dict):
        return {}, f"payload is a JSON {type(raw).__name__}, not an object"
    return raw, None


def _job_row(source: Row[Any]) -> JobRow:
    """A ``JobRow`` from a Core row of ``_JOB_COLUMNS`` (payload as JSON text)."""
    payload, error = _read_payload(source.payload)
    return JobRow(
        payload=payload, payload_error=error, **{name: getattr(source, name) for name in _JOB_FIELDS}
    )


def _job_row_of_tuple(source: Sequence[Any]) -> JobRow:
    """``_job_row`` for a plain tuple of ``_JOB_COLUMNS`` (a ``Prepared`` row)."""
    by_name = dict(zip(_JOB_COLUMN_NAMES, source, strict=True))
    payload, error = _read_payload(by_name["payload"])
    return JobRow(payload=payload, payload_error=error, **{name: by_name[name] for name in _JOB_FIELDS})


# -- payloads and ids -------------------------------------------------------


_INPUT_FIELDS = tuple(f.name for f in fields(RepairInput))


def payload_of(inp: RepairInput) -> dict[str, Any]:
    """The JSON payload that fully describes a ``RepairInput``."""
    # Field by field rather than dataclasses.asdict, which deep-copies
    # recursively and costs more than the rest of an enqueue.
    data: dict[str, Any] = {name: getattr(inp, name) for name in _INPUT_FIELDS}
    data["failures"] = [f._asdict() for f in inp.failures]
    return data


def input_from_payload(payload: dict[str, Any]) -> RepairInput:
    """The ``RepairInput`` a payload describes; ``InvalidInputError`` when it describes none."""
    if not isinstance(payload, dict):
        raise InvalidInputError(f"payload must be a JSON object, got {type(payload).__name__}")
    data = dict(payload)
    try:
        failures = tuple(FailureRecord(**f) for f in data.pop("failures", ()) or ())
        return RepairInput(failures=failures, **data)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"payload does not describe a repair: {exc}") from None


def _clean_record(f: FailureRecord) -> FailureRecord:
    return FailureRecord(
        clean_text(f.tool_id, ID_CHAR_CAP) or "?",
        # Every record of a burst shares the burst's context; the input keeps
        # it once, so each record keeps only a short excerpt.
        clean_text(f.context, 256),
        f.step,
        clean_text(f.reason, REASON_CHAR_CAP),
        f.ts,
        clean_optional(f.session_id, ID_CHAR_CAP),
        clean_optional(f.episode_id, ID_CHAR_CAP),
        clean_optional(f.trace_id, ID_CHAR_CAP),
    )


def clean_input(inp: RepairInput) -> RepairInput:
    """``inp`` with every string storable: capped, NUL and lone surrogates replaced.

    Raises ``InvalidInputError`` for a context hash no job can carry.
    """
    if len(inp.context_hash) > 64:
        raise InvalidInputError(f"context_hash must be at most 64 characters, got {len(inp.context_hash)}")
    return dataclasses.replace(
        inp,
        context_hash=clean_text(inp.context_hash, 64),
        tool_id=clean_optional(inp.tool_id, ID_CHAR_CAP),
        user_text=clean_optional(inp.user_text, USER_TEXT_CHAR_CAP),
        session_id=clean_optional(inp.session_id, ID_CHAR_CAP),
        episode_id=clean_optional(inp.episode_id, ID_CHAR_CAP),
        failures=tuple(_clean_record(f) for f in inp.failures),
        context=clean_optional(inp.context, CONTEXT_CHAR_CAP),
    )


def _normalise(text: str | None) -> str:
    if not text:
        return ""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def job_id_for(inp: RepairInput) -> str:
    """Content address: trigger, context hash, normalised input and the burst window."""
    window = [(f.step, f.ts) for f in inp.failures]
    key = json.dumps(
        [inp.trigger, inp.context_hash, _normalise(inp.user_text), inp.session_id or "", window],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    # surrogatepass: an input that was not cleaned still gets an id.
    return "job_" + hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _check_id(job_id: object) -> None:
    if not isinstance(job_id, str):
        raise InvalidInputError(f"job id must be a str, got {type(job_id).__name__}")
    try:
        job_id.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError("job id must be valid text (it holds a lone surrogate)") from None


def backoff_ms(attempt: int, config: FeedbackConfig, rng: random.Random) -> int:
    """Delay before retry number ``attempt`` (1-based): exponential, capped, jittered."""
    try:
        base = config.retry_initial_ms * config.retry_multiplier ** max(0, attempt - 1)
    except OverflowError:  # a huge multiplier or attempt count: the cap applies
        base = float(config.retry_max_ms)
    base = min(base, float(config.retry_max_ms))
    jitter = 1.0 + rng.uniform(-config.retry_jitter, config.retry_jitter)
    return max(0, int(base * jitter))


def default_owner() -> str:
    """host:pid:random — the pid lets a restart on the same host spot dead owners."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _owner_is_dead(owner: str | None) -> bool:
    if not owner:
        return True
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != socket.gethostname()[:60]:
        return False  # another host: only its lease can tell
    try:
        pid = int(parts[1])
    except ValueError:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


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
# claims in a row (one statement each, as before): a pick needs its
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


@dataclass(slots=True)
class _EnqueueRequest:
    inp: RepairInput
    result: EnqueueResult | None = None
    error: BaseException | None = None
    finished: bool = False


class RepairQueue:
    """Operations on ``repair_jobs``; every method is one short transaction."""

    def __init__(self, store: Store, config: FeedbackConfig | None = None) -> None:
        self.store = store
        self.config = config or FeedbackConfig()
        # Group commit: requests wait here; one leader at a time commits them.
        self._group = threading.Condition()
        self._waiting: list[_EnqueueRequest] = []
        self._committing = False

    # -- enqueue ------------------------------------------------------------

    def enqueue(self, inp: RepairInput) -> EnqueueResult:
        """Store one job durably; returns once it is committed.

        Concurrent callers share commits (group commit): when no commit is
        in progress, the caller that finds it so becomes the leader and
        writes every request waiting at that moment in one transaction;
        the others wait for the leader's notification, so a burst of
        producers costs a few transactions, not one each, and nobody waits
        behind more than one commit besides its own.
        """
        if not isinstance(inp, RepairInput):
            raise InvalidInputError(f"enqueue takes RepairInput, got {type(inp).__name__}")
        request = _EnqueueRequest(inp)
        # A follower waits for the leader's commit, which is itself bounded by
        # the store's busy timeout; past twice that something is stuck, and
        # the caller hears so instead of waiting for ever.
        patience = 2 * self.store.busy_timeout_ms / 1000 + 1.0
        deadline = time.monotonic() + patience
        with self._group:
            self._waiting.append(request)
            while not request.finished:
                if not self._committing:
                    # Become the leader: take everything waiting, commit it below.
                    self._committing = True
                    batch, self._waiting = self._waiting, []
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    if request in self._waiting:
                        self._waiting.remove(request)
                        raise StoreBusyError(f"enqueueing a repair job waited {patience:g} s for a commit")
                    # Taken by a leader already: its commit decides.
                    deadline = time.monotonic() + patience
                    continue
                self._group.wait(timeout=left)
            else:
                batch = []
        if batch:
            try:
                results = self.enqueue_many([r.inp for r in batch])
            except BaseException as exc:
                for r in batch:
                    r.error = exc
            else:
                for r, result in zip(batch, results, strict=True):
                    r.result = result
            finally:
                with self._group:
                    for r in batch:
                        r.finished = True
                    self._committing = False
                    self._group.notify_all()
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

    def enqueue_many(self, inputs: Sequence[RepairInput]) -> list[EnqueueResult]:
        """Insert jobs in order, in one transaction; waiting duplicates are no-ops.

        Every input is cleaned first (``clean_input``). Failure bursts are
        coalesced into a pending failure-burst job of their context, or
        dropped while the context's newest repair is in cooldown.
        """
        for inp in inputs:
            if not isinstance(inp, RepairInput):
                raise InvalidInputError(f"enqueue takes RepairInput, got {type(inp).__name__}")
        if not inputs:
            return []
        cleaned = [clean_input(inp) for inp in inputs]
        ids = [job_id_for(inp) for inp in cleaned]
        now = now_ms()
        table = _JOBS
        with self.store.session(write=True, action="enqueueing repair jobs") as s:
            existing = (
                select(table.c.id, table.c.status, table.c.seq)
                .where(table.c.id.in_(set(ids)))
                .with_for_update()
            )
            known = {row[0]: (row[1], row[2]) for row in s.execute(existing)}
            # The same situation again after its job finished: a new round on
            # the same id. The finished row is archived under "<id>~<seq>",
            # so its history (and the repair it names) stays readable.
            for job_id, (status, seq) in known.items():
                if status in ("done", "dead"):
                    s.execute(update(table).where(table.c.seq == seq).values(id=f"{job_id}~{seq}"))
            waiting = {job_id for job_id, (status, _) in known.items() if status in ("pending", "running")}
            absorbed = self._coalesce(s, cleaned, now)
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
                stmt = (
                    dialect_insert(table).on_conflict_do_nothing(index_elements=["id"]).returning(table.c.id)
                )
                inserted = set(s.execute(stmt, rows).scalars())
                if len(inserted) != len(rows):
                    results = [
                        r if r.deduped or r.job_id in inserted else EnqueueResult(r.job_id, deduped=True)
                        for r in results
                    ]
        return results

    def _coalesce(self, s: Session, inputs: Sequence[RepairInput], now: int) -> dict[str, tuple[str, str]]:
        """Contexts whose failure bursts need no new job: hash -> (reason, covering job id)."""
        contexts = sorted({inp.context_hash for inp in inputs if inp.trigger == "failure-burst"})
        if not contexts:
            return {}
        out: dict[str, tuple[str, str]] = {}
        cooldown = self.config.cooldown_ms
        if cooldown > 0:
            newest = select(DecisionRepairModel.context_hash, func.max(DecisionRepairModel.ts)).where(
                DecisionRepairModel.context_hash.in_(contexts),
                DecisionRepairModel.trigger.in_(cooldown_family("failure-burst")),
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

    # -- claiming -----------------------------------------------------------

    def recover(self, now: int | None = None) -> int:
        """Return expired or orphaned ``running`` jobs to ``pending``; count them."""
        now = now_ms() if now is None else now
        with self.store.session(write=True, action="recovering repair jobs") as s:
            return self._recover(s, now)

    def _recover(self, s: Session, now: int) -> int:
        running = s.execute(
            select(_JOBS.c.id, _JOBS.c.lease_until, _JOBS.c.lease_owner).where(_JOBS.c.status == "running")
        ).all()
        # A lease that ends further ahead than any this code grants was
        # written before the wall clock went back: it no longer protects.
        horizon = now + self.config.lease_ms + CLOCK_SLACK_MS
        stale = [
            job_id
            for job_id, lease_until, owner in running
            if (lease_until or 0) < now or (lease_until or 0) > horizon or _owner_is_dead(owner)
        ]
        if stale:
            s.execute(
                update(_JOBS)
                .where(_JOBS.c.id.in_(stale), _JOBS.c.status == "running")
                .values(status="pending", lease_owner=None, lease_until=None, updated_at=now)
            )
            logger.info("returned %d abandoned running job(s) to pending", len(stale))
        return len(stale)

    def claim(self, owner: str, now: int | None = None) -> JobRow | None:
        """Take the next due job whose context has nothing running and nothing older waiting.

        Expired leases are not swept here (``recover`` does that at start
        and on the subscriber's heartbeat), so a claim is two statements.
        """
        jobs = self.claim_many(owner, 1, now)
        return jobs[0] if jobs else None

    def claim_many(self, owner: str, limit: int, now: int | None = None) -> list[JobRow]:
        """Take up to ``limit`` due jobs, each of a different context, in one transaction.

        Each job is taken as ``claim`` takes one; a later pick in the same
        transaction sees the earlier ones running, so no two jobs of a
        context are ever taken together and a context's jobs still run in
        order. Saves a transaction per job for a worker that claims ahead.
        On SQLite the batch is one statement (``_RUN_TAKE_MANY_SQLITE``,
        which takes the same jobs), returned in queue order.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_CLAIM_BATCH:
            raise InvalidInputError(f"limit must be an int in [1, {MAX_CLAIM_BATCH}], got {limit!r:.80}")
        now = now_ms() if now is None else now
        horizon = self._due_horizon(now)
        values = {
            "now": now,
            "horizon": horizon,
            "owner": owner,
            "lease_until": now + self.config.lease_ms,
        }
        taken: list[JobRow] = []
        with self.store.connection(write=True, action="claiming a repair job") as s:
            if s.dialect.name != "postgresql":
                # One statement picks and takes them all (SQLite >= 3.35
                # RETURNING, whose row order is unspecified: queue order here).
                rows = _RUN_TAKE_MANY_SQLITE.all(s, {**values, "limit": limit})
                return sorted((_job_row_of_tuple(row) for row in rows), key=lambda job: job.seq)
            for seq in self._pick_postgres(s, now, horizon, limit):
                row = s.execute(_TAKE_PG, {**values, "job_seq": seq}).first()
                assert row is not None  # locked FOR UPDATE by _pick_postgres
                taken.append(_job_row(row))
        return taken

    def release(self, jobs: Iterable[JobRow], owner: str) -> int:
        """Give back claimed jobs that were never started: pending again, the attempt not counted."""
        ids = [job.id for job in jobs]
        if not ids:
            return 0
        with self.store.connection(write=True, action="releasing claimed jobs") as s:
            result = s.execute(
                update(_JOBS)
                .where(_JOBS.c.id.in_(ids), _JOBS.c.status == "running", _JOBS.c.lease_owner == owner)
                .values(
                    status="pending",
                    attempts=func.max(_JOBS.c.attempts - 1, 0)
                    if s.dialect.name == "sqlite"
                    else func.greatest(_JOBS.c.attempts - 1, 0),
                    lease_owner=None,
                    lease_until=None,
                    updated_at=now_ms(),
                )
            )
            return int(result.rowcount)

    def _due_horizon(self, now: int) -> int:
        """A ``next_attempt_at`` beyond this was written before the clock went back: due now."""
        return now + self.config.retry_max_ms + CLOCK_SLACK_MS

    @staticmethod
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

    def renew(self, job_ids: Iterable[str], owner: str, now: int | None = None) -> None:
        """Extend the leases of jobs this owner is still working on."""
        ids = list(job_ids)
        if not ids:
            return
        now = now_ms() if now is None else now
        with self.store.session(write=True, action="renewing job leases") as s:
            s.execute(
                update(RepairJobModel)
                .where(
                    RepairJobModel.id.in_(ids),
                    RepairJobModel.status == "running",
                    RepairJobModel.lease_owner == owner,
                )
                .values(lease_until=now + self.config.lease_ms)
            )

    # -- finishing ----------------------------------------------------------

    def _finish(self, s: Executor, job: JobRow, owner: str, now: int, **values: Any) -> None:
        """Move a job out of ``running`` — only if it is still leased to ``owner``."""
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

    def complete_in(self, s: Executor, job: JobRow, owner: str, outcome: str, repair_id: str | None) -> None:
        """Mark the job done inside the caller's transaction (the repair's own)."""
        self._finish(s, job, owner, now_ms(), status="done", outcome=outcome, repair_id=repair_id)

    def complete(self, job: JobRow, owner: str, outcome: str) -> None:
        with self.store.connection(write=True, action="completing a repair job") as s:
            self.complete_in(s, job, owner, outcome, None)

    def schedule_retry(
        self, job: JobRow, owner: str, error: str, next_attempt_at: int, *, session: Session | None = None
    ) -> None:
        with self.store.connection(write=True, action="rescheduling a repair job", session=session) as s:
            self._finish(
                s,
                job,
                owner,
                now_ms(),
                status="pending",
                lease_owner=None,
                next_attempt_at=next_attempt_at,
                last_error=error[:2000],
            )

    def bury(self, job: JobRow, owner: str, error: str, *, session: Session | None = None) -> None:
        with self.store.connection(write=True, action="dead-lettering a repair job", session=session) as s:
            self._finish(s, job, owner, now_ms(), status="dead", last_error=error[:2000])

    def discard_stale(self, now: int | None = None, *, session: Session | None = None) -> list[JobRow]:
        """Delete pending jobs older than ``stale_after_ms``; return them."""
        now = now_ms() if now is None else now
        cutoff = now - self.config.stale_after_ms
        with self.store.session(write=True, action="discarding stale jobs", session=session) as s:
            stmt = _SELECT_JOBS.where(_JOBS.c.status == "pending", _JOBS.c.created_at < cutoff)
            rows = [_job_row(r) for r in s.execute(stmt)]
            if rows:
                s.execute(delete(_JOBS).where(_JOBS.c.id.in_([r.id for r in rows])))
        return rows

    def prune_done(self, before: int, *, batch: int = PRUNE_BATCH, max_batches: int | None = None) -> int:
        """Delete ``done`` jobs that finished before ``before`` (epoch ms); count them.

        A batch of at most ``batch`` rows per transaction (found at the edge
        of the (status, updated_at) index), so pruning a large backlog never
        holds the write lock for long; stops after ``max_batches`` (None:
        until nothing is left). Dead jobs stay: they wait for an operator.
        """
        if isinstance(before, bool) or not isinstance(before, int):
            raise InvalidInputError(f"before must be epoch milliseconds (int), got {before!r:.80}")
        if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_LIMIT:
            raise InvalidInputError(f"batch must be an int in [1, {MAX_LIMIT}], got {batch!r:.80}")
        total = rounds = 0
        while max_batches is None or rounds < max_batches:
            with self.store.connection(write=True, action="pruning done jobs") as conn:
                deleted = conn.execute(_PRUNE_DONE, {"before": before, "batch": batch}).rowcount
            total += deleted
            rounds += 1
            if deleted < batch:
                break
        if total:
            logger.info("pruned %d done job(s) finished before %d", total, before)
        return total

    # -- operator surface ---------------------------------------------------

    def get(self, job_id: str) -> JobRow:
        """The job with ``job_id``; ``NotFoundError`` when there is none."""
        _check_id(job_id)
        with self.store.session(action="reading a job") as s:
            row = s.execute(_SELECT_JOBS.where(_JOBS.c.id == job_id)).first()
        if row is None:
            raise NotFoundError(f"no job with id {job_id!r}")
        return _job_row(row)

    def get_many(self, job_ids: Iterable[str]) -> dict[str, JobRow]:
        """The jobs among ``job_ids`` that exist, by id (one query per 500 ids)."""
        if isinstance(job_ids, (str, bytes)) or not isinstance(job_ids, Iterable):
            raise InvalidInputError("job_ids must be an iterable of str")
        ids = list(dict.fromkeys(job_ids))
        for job_id in ids:
            _check_id(job_id)
        found: dict[str, JobRow] = {}
        with self.store.session(action="reading jobs") as s:
            for i in range(0, len(ids), 500):
                stmt = _SELECT_JOBS.where(_JOBS.c.id.in_(ids[i : i + 500]))
                found.update((r.id, _job_row(r)) for r in s.execute(stmt))
        return found

    def list(self, status: str | None = None, limit: int = 100) -> list[JobRow]:
        """Jobs in queue order, optionally of one status; at most ``limit`` (1..10,000)."""
        if status is not None and status not in JOB_STATUSES:
            raise InvalidInputError(f"status must be one of {JOB_STATUSES}, got {status!r}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise InvalidInputError(f"limit must be an int in [1, {MAX_LIMIT}], got {limit!r}")
        stmt = _SELECT_JOBS.order_by(_JOBS.c.seq).limit(limit)
        if status is not None:
            stmt = stmt.where(_JOBS.c.status == status)
        with self.store.session(action="listing jobs") as s:
            return [_job_row(r) for r in s.execute(stmt)]

    def retry(self, job_id: str, *, session: Session | None = None) -> JobRow:
        """Make a job pending and due now, attempts reset: a dead one, one waiting out a
        backoff, or a done one that wrote no repair.

        A done job that wrote a repair is refused: running it again would
        write a second repair for the same trigger.
        """
        _check_id(job_id)
        now = now_ms()
        with self.store.session(write=True, action="retrying a job", session=session) as s:
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

    def purge(self, job_id: str, *, session: Session | None = None) -> JobRow:
        """Delete one job (any status) and return it; ``NotFoundError`` when there is none."""
        _check_id(job_id)
        with self.store.session(write=True, action="purging a job", session=session) as s:
            row = s.execute(_SELECT_JOBS.where(_JOBS.c.id == job_id)).first()
            result = s.execute(delete(_JOBS).where(_JOBS.c.id == job_id))
            if row is None or getattr(result, "rowcount", 0) == 0:
                raise NotFoundError(f"no job with id {job_id!r}")
        return _job_row(row)

    def stats(self, now: int | None = None) -> dict[str, int | None]:
        """Counts per status, depth (pending + running) and the oldest pending age in ms."""
        now = now_ms() if now is None else now
        # Both reads stay small however many jobs there are: the counters
        # are a few rows per status (kept by triggers, migration 0006) and
        # the oldest pending job is the first entry of (status, created_at).
        with self.store.connection(action="reading queue stats") as s:
            counts = {status: int(n) for status, n in s.execute(_COUNTS)}
            oldest = s.execute(_OLDEST_PENDING).scalar()
        out: dict[str, int | None] = {status: int(counts.get(status, 0)) for status in JOB_STATUSES}
        out["depth"] = int(counts.get("pending", 0)) + int(counts.get("running", 0))
        out["oldest_pending_age_ms"] = None if oldest is None else max(0, now - int(oldest))
        return out

    def wait_hint(self, now: int | None = None) -> int | None:
        """Milliseconds until the earliest pending job is due (0 if one is due), None if none."""
        now = now_ms() if now is None else now
        with self.store.connection(action="peeking the queue") as s:
            nxt = s.execute(_NEXT_DUE).scalar()
        if nxt is None:
            return None
        return 0 if int(nxt) > self._due_horizon(now) else max(0, int(nxt) - now)
