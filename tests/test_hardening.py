"""Regression tests for the queue and subscriber hardening findings (issue 9).

One test (or one parametrized test) per finding, each on the real code
path: real SQLite files and PostgreSQL databases, the real background
threads, a real second process holding the database's write lock, the real
OpenAI SDK against the loopback chat server, the real CLI. Every test here
failed on the code before the fix (e498bab).
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time
from sqlalchemy import Text, create_engine, func, select, text
from sqlalchemy import cast as sql_cast

from memos_feedback.config import FeedbackConfig
from memos_feedback.errors import InvalidInputError, MemosFeedbackError
from memos_feedback.events import FeedbackBus, FeedbackEvent
from memos_feedback.runtime.queue import RepairQueue
from memos_feedback.runtime.subscriber import FeedbackSubscriber, attach_feedback_subscriber
from memos_feedback.signals import context_hash_of
from memos_feedback.store import Store, ToolCall
from memos_feedback.store.engine import sqlite_file_path
from memos_feedback.store.models import RepairJobModel
from memos_feedback.synthesis.llm import OpenAIRepairLLM
from memos_feedback.types import RepairInput, now_ms
from tests.support.chat_server import Behaviour, ChatServer
from tests.support.freezing import threaded_freezegun, wait_for  # noqa: F401  (fixture)
from tests.support.procs import expect_line

ROOT = Path(__file__).resolve().parents[1]
SESSION = "s1"
EPISODE = "ep1"
TOOL = "npm.install"
THREAD_PREFIX = "memos-feedback-"


# -- helpers ------------------------------------------------------------------


class Feed:
    """Thread-safe event recorder."""

    def __init__(self, bus: FeedbackBus) -> None:
        self.events: list[FeedbackEvent] = []
        self._lock = threading.Lock()
        bus.on_any(self._add)

    def _add(self, event: FeedbackEvent) -> None:
        with self._lock:
            self.events.append(event)

    def take(self) -> list[FeedbackEvent]:
        with self._lock:
            out, self.events = self.events, []
        return out


@pytest.fixture
def feed(bus: FeedbackBus) -> Feed:
    return Feed(bus)


def our_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)}


@pytest.fixture
def make_sub(store: Store, bus: FeedbackBus) -> Iterator[Callable[..., FeedbackSubscriber]]:
    """Start subscribers on ``store``; at the end close them and wait for their threads."""
    made: list[tuple[FeedbackSubscriber, set[threading.Thread]]] = []

    def make(config: FeedbackConfig | None = None, **kw: Any) -> FeedbackSubscriber:
        before = our_threads()
        kw.setdefault("poll_interval", 0.02)
        sub = attach_feedback_subscriber(store, bus=bus, config=config or FeedbackConfig(use_llm=False), **kw)
        made.append((sub, our_threads() - before))
        return sub

    yield make
    for sub, threads in made:
        with suppress(MemosFeedbackError):
            sub.close(timeout=10)
        for t in threads:
            t.join(timeout=60)  # never leave a thread using a store the fixture closes


def add_history(store: Store, session: str = SESSION) -> None:
    """A good and a bad trace of the same tool: enough evidence for a template repair."""
    store.traces.add(
        session,
        agent_text="ran pnpm install, 312 packages installed",
        reflection="pnpm install works in this repo",
        value=0.8,
        episode_id=EPISODE,
        tool_calls=[ToolCall(TOOL)],
    )
    store.traces.add(
        session,
        agent_text="npm ERR! ERESOLVE could not resolve dependency tree",
        reflection="npm install fails on peer dependencies",
        value=-0.7,
        episode_id=EPISODE,
        tool_calls=[ToolCall(TOOL, error_code="ERESOLVE")],
    )


def fire_burst(
    sub: FeedbackSubscriber,
    ctx: str = "web/",
    *,
    tool: str = TOOL,
    reason: str = "ERESOLVE",
    session: str | None = SESSION,
    episode: str | None = EPISODE,
    first_step: int = 1,
) -> None:
    # record_tool_failure only queues the step; sync_signals runs the
    # failure windows now, so the burst is counted before this returns.
    before = sub.signals.stats()["bursts"]
    for step in range(first_step, first_step + 3):
        sub.record_tool_failure(tool, ctx, step, reason, session, episode)
    sub.sync_signals()
    assert sub.signals.stats()["bursts"] > before, "three failures in a row make a burst"


def manual(ctx: str) -> RepairInput:
    return RepairInput(trigger="manual", context_hash=ctx, session_id=SESSION)


def jobs_of(store: Store) -> list[Any]:
    return RepairQueue(store).list(limit=10_000)


def run_bounded(fn: Callable[[], object], seconds: float) -> tuple[bool, BaseException | None, float]:
    """Run ``fn`` in a daemon thread: (finished within ``seconds``, what it raised, elapsed)."""
    outcome: list[BaseException | None] = []

    def call() -> None:
        try:
            fn()
        except BaseException as exc:  # reported to the test
            outcome.append(exc)
        else:
            outcome.append(None)

    started = time.monotonic()
    t = threading.Thread(target=call, name="test-bounded-call", daemon=True)
    t.start()
    t.join(seconds)
    return (not t.is_alive(), outcome[0] if outcome else None, time.monotonic() - started)


_SQLITE_LOCKER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("BEGIN IMMEDIATE")
print("LOCKED", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


@contextmanager
def writes_blocked(store: Store) -> Iterator[None]:
    """Make the database refuse every write for real until the block ends.

    SQLite: another process holds the write lock (``BEGIN IMMEDIATE``), so
    every insert waits in the busy handler. PostgreSQL: another connection
    holds ``repair_jobs`` in EXCLUSIVE mode (reads go on, writes wait).
    """
    if store.dialect == "sqlite":
        path = sqlite_file_path(store.engine)
        assert path is not None
        proc = subprocess.Popen(
            [sys.executable, "-c", _SQLITE_LOCKER, path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            expect_line(proc, "LOCKED")
            yield
        finally:
            with suppress(OSError):
                assert proc.stdin is not None
                proc.stdin.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return
    engine = create_engine(store.url)
    try:
        with engine.connect() as conn:
            conn.execute(text("LOCK TABLE repair_jobs IN EXCLUSIVE MODE"))
            try:
                yield
            finally:
                conn.rollback()
    finally:
        engine.dispose()


# -- 1. NUL and lone surrogates in a burst ---------------------------------------


def test_bursts_with_nul_or_lone_surrogates_are_stored_and_do_not_block_the_queue(
    store: Store, make_sub: Any
) -> None:
    add_history(store)
    sub = make_sub()
    poison = [
        {"ctx": "ctx-nul/\x00/end"},
        {"ctx": "ctx-surrogate/\ud83d/end"},
        {"ctx": "reason-nul/", "reason": "boom\x00boom"},
        {"ctx": "reason-surrogate/", "reason": "boom \ud83d"},
        {"ctx": "session-nul/", "session": "s\x00"},
        {"ctx": "session-surrogate/", "session": "s\ud83d"},
        {"ctx": "episode-nul/", "episode": "e\x00"},
        {"ctx": "episode-surrogate/", "episode": "e\ud83d"},
    ]
    for kw in poison:
        fire_burst(sub, **kw)
    fire_burst(sub, "web/")  # a normal burst after them
    assert sub.flush(timeout=60), "the bursts after the bad ones are stored and run"
    stored = {j.context_hash for j in jobs_of(store)}
    for kw in poison:
        assert context_hash_of(TOOL, kw["ctx"]) in stored, kw
    normal = context_hash_of(TOOL, "web/")
    assert normal in stored
    assert [r.context_hash for r in store.repairs.list(context_hash=normal)] == [normal]
    finished, error, _ = run_bounded(lambda: sub.close(timeout=30), 60)
    assert finished and error is None


# -- 2. a lone surrogate does not kill the enqueuer or dead-letter a job ------------


def test_lone_surrogate_session_id_keeps_the_enqueuer_alive(store: Store, make_sub: Any) -> None:
    before = our_threads()
    sub = make_sub()
    [enqueuer] = [t for t in our_threads() - before if t.name == "memos-feedback-enqueuer"]
    fire_burst(sub, "first/", session="s\ud83d")
    queue = RepairQueue(store)
    first = context_hash_of(TOOL, "first/")
    wait_for(lambda: any(j.context_hash == first for j in queue.list()), seconds=30)
    fire_burst(sub, "later/")
    later = context_hash_of(TOOL, "later/")
    wait_for(lambda: any(j.context_hash == later for j in queue.list()), seconds=30)
    assert enqueuer.is_alive()
    assert sub.flush(timeout=60)


def test_lone_surrogate_in_episode_or_context_is_processed_not_dead_lettered(
    store: Store, make_sub: Any
) -> None:
    add_history(store)
    sub = make_sub()
    fire_burst(sub, "web/", episode="e\ud83d")
    fire_burst(sub, "web/\ud83d/")
    assert sub.flush(timeout=60)
    jobs = jobs_of(store)
    assert {j.context_hash for j in jobs} == {
        context_hash_of(TOOL, "web/"),
        context_hash_of(TOOL, "web/\ud83d/"),
    }
    assert [(j.status, j.last_error) for j in jobs] == [("done", None)] * 2
    assert sub.metrics()["dead"] == 0


# -- 3. close() with triggers it cannot store ----------------------------------------


def test_close_raises_triggers_not_persisted_while_the_database_is_unwritable(
    store: Store, make_sub: Any
) -> None:
    sub = make_sub()  # started (and recovered) while the database is writable
    queue = RepairQueue(store)
    contexts = [f"ctx-{i}/" for i in range(10)]
    raised: list[BaseException | None] = []
    with writes_blocked(store):
        for ctx in contexts:
            fire_burst(sub, ctx)

        def close() -> None:
            try:
                sub.close(timeout=2)
            except BaseException as exc:
                raised.append(exc)
                raise
            raised.append(None)

        finished, _, elapsed = run_bounded(close, 90)
        assert finished, "close(timeout=2) must give up, not wait for the database"
        assert elapsed < 25, f"close(timeout=2) took {elapsed:.1f} s"
        assert queue.stats()["pending"] == 0, "nothing could be stored"
    [error] = raised
    assert error is not None, "close() returned normally with 10 bursts only in memory"
    assert type(error).__name__ == "TriggersNotPersistedError"
    assert getattr(error, "count", None) == 10
    inputs = getattr(error, "inputs", ())
    assert sorted(i.context_hash for i in inputs) == sorted(context_hash_of(TOOL, c) for c in contexts)
    assert all(isinstance(i, RepairInput) and i.trigger == "failure-burst" for i in inputs)


def test_context_manager_exit_gives_up_after_close_timeout_ms(store: Store, make_sub: Any) -> None:
    sub = make_sub(FeedbackConfig(use_llm=False, close_timeout_ms=2000))
    raised: list[BaseException] = []
    with writes_blocked(store):

        def use_as_context_manager() -> None:
            try:
                with sub:
                    fire_burst(sub, "cm/")
            except BaseException as exc:
                raised.append(exc)

        finished, _, elapsed = run_bounded(use_as_context_manager, 90)
        assert finished, "leaving the with block blocked while the database was unwritable"
        assert elapsed < 25, f"leaving the with block took {elapsed:.1f} s"
    [error] = raised
    assert type(error).__name__ == "TriggersNotPersistedError"
    assert getattr(error, "count", None) == 1


# -- 5. retry of a finished job, re-submitted triggers ----------------------------------


def test_retry_refuses_a_done_job_that_wrote_a_repair(store: Store, make_sub: Any) -> None:
    add_history(store)
    sub = make_sub(FeedbackConfig(use_llm=False, cooldown_ms=0))
    result = sub.run_once(manual("retry-me")).result(timeout=30)
    assert result.repair_id is not None
    sub.close(timeout=10)
    queue = RepairQueue(store)
    [job] = queue.list()
    assert job.status == "done" and job.repair_id == result.repair_id
    with pytest.raises(InvalidInputError):
        queue.retry(job.id)
    assert queue.get(job.id).status == "done"
    assert len(store.repairs.list()) == 1


def test_a_trigger_enqueued_again_after_its_job_finished_archives_the_old_row(
    store: Store, make_sub: Any
) -> None:
    add_history(store)
    sub = make_sub(FeedbackConfig(use_llm=False, cooldown_ms=0))
    result = sub.run_once(manual("again")).result(timeout=30)
    assert result.repair_id is not None
    sub.close(timeout=10)
    queue = RepairQueue(store)
    [done] = queue.list()
    again = queue.enqueue(manual("again"))
    assert again.job_id == done.id and not again.deduped
    fresh = queue.get(done.id)
    assert fresh.status == "pending" and fresh.repair_id is None
    archived = [j for j in queue.list() if j.id != done.id]
    assert [j.id for j in archived] == [f"{done.id}~{done.seq}"]
    old = queue.get(archived[0].id)  # the history stays readable
    assert (old.status, old.repair_id, old.outcome) == ("done", result.repair_id, "persisted")


# -- 6. close() reports a worker still inside a slow model call ----------------------------


def test_close_report_names_a_worker_still_in_a_slow_model_call(store: Store, make_sub: Any) -> None:
    add_history(store)
    with ChatServer() as server:
        server.script(Behaviour.hang())
        llm = OpenAIRepairLLM("m", base_url=server.base_url, api_key="k", timeout=30)
        sub = make_sub(FeedbackConfig(cooldown_ms=0), llm=llm)
        sub.run_once(manual("slow"))
        wait_for(lambda: len(server.requests) == 1, seconds=30)
        started = time.monotonic()
        report = sub.close(timeout=1)
        assert time.monotonic() - started < 15
        assert "memos-feedback-worker-0" in report.threads_alive
        assert report.cancelled == 1
    # Leaving the server released the request; the worker ends on its own.


# -- 7. unreadable payloads ---------------------------------------------------------------


def test_unreadable_payloads_are_dead_lettered_listed_and_shown_by_the_cli(
    store: Store, db_url: str, make_sub: Any
) -> None:
    add_history(store)
    queue = RepairQueue(store)
    # JSONB cannot hold invalid JSON; PostgreSQL gets the valid non-objects.
    raws = ["{not json", "null", "[1,2]"] if store.dialect == "sqlite" else ["null", "[1,2]"]
    bad = [queue.enqueue(manual(f"bad-{i}")).job_id for i in range(len(raws))]
    good = queue.enqueue(manual("good")).job_id
    value = ":p" if store.dialect == "sqlite" else "CAST(:p AS JSONB)"
    with store.engine.begin() as conn:
        for job_id, raw in zip(bad, raws, strict=True):
            conn.execute(
                text(f"UPDATE repair_jobs SET payload = {value} WHERE id = :id"), {"p": raw, "id": job_id}
            )

    listed = {j.id: j for j in queue.list()}
    assert set(listed) == {*bad, good}
    assert all(listed[j].payload_error for j in bad) and listed[good].payload_error is None
    for args in (["queue", "list"], ["queue", "list", "--json"]):
        out = subprocess.run(
            [sys.executable, "-m", "memos_feedback", *args, "--db", db_url],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
            env=dict(os.environ),
        )
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stderr and good in out.stdout

    sub = make_sub(FeedbackConfig(use_llm=False, cooldown_ms=0))
    wait_for(lambda: queue.get(good).status == "done", seconds=60)
    for job_id in bad:
        row = queue.get(job_id)
        assert row.status == "dead" and "payload" in (row.last_error or ""), row
    assert sub.metrics()["dead"] == len(bad)


# -- 8. bad constructor arguments -----------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"poll_interval": "0.2"},
        {"poll_interval": 1e300},
        {"poll_interval": float("nan")},
        {"poll_interval": -1},
        {"poll_interval": True},
        {"workers": 100_000},
        {"workers": 0},
        {"workers": 65},
        {"workers": True},
    ],
    ids=repr,
)
def test_bad_poll_interval_or_workers_is_refused_at_construction(
    sqlite_url: str, kwargs: dict[str, Any]
) -> None:
    from memos_feedback.store import open_store

    with open_store(sqlite_url) as store:
        before = our_threads()
        try:
            sub = attach_feedback_subscriber(store, config=FeedbackConfig(use_llm=False), **kwargs)
        except InvalidInputError:
            pass
        else:
            sub.close(timeout=10)
            pytest.fail(f"attach_feedback_subscriber(**{kwargs!r}) was accepted")
        assert our_threads() - before == set(), "no thread may start"


# -- 10. the wall clock set back -------------------------------------------------------------

T = datetime(2026, 11, 30, 12, 0, 0)
DAY_BEFORE = T - timedelta(days=1)


@pytest.mark.usefixtures("threaded_freezegun")
def test_a_repair_stamped_in_the_future_does_not_hold_its_context_in_cooldown(
    store: Store, make_sub: Any
) -> None:
    add_history(store)
    with freeze_time(T) as frozen:
        sub = make_sub()
        fire_burst(sub, "web/")
        assert sub.flush(timeout=60)
        assert len(store.repairs.list()) == 1
        frozen.move_to(DAY_BEFORE)  # the wall clock goes back a day
        fire_burst(sub, "web/")
        assert sub.flush(timeout=60)
    repairs = store.repairs.list()
    assert len(repairs) == 2, "a 60 s cooldown must not last a day"


def test_a_retry_due_before_the_clock_went_back_is_claimed_at_once(store: Store) -> None:
    queue = RepairQueue(store)
    with freeze_time(T) as frozen:
        enqueued = queue.enqueue(manual("retry-later"))
        job = queue.claim("me")
        assert job is not None
        queue.schedule_retry(job, "me", "LLMTransientError: 429", now_ms() + 1000)
        frozen.move_to(DAY_BEFORE)
        again = queue.claim("me")
    assert again is not None and again.id == enqueued.job_id, "a 1 s retry wait must not last a day"


def test_a_lease_written_a_day_in_the_future_is_recovered(store: Store) -> None:
    queue = RepairQueue(store)
    owner = "another-host:1:abcd1234"  # not this host: only its lease can tell
    with freeze_time(T) as frozen:
        enqueued = queue.enqueue(manual("leased"))
        job = queue.claim(owner)
        assert job is not None and job.lease_until is not None
        frozen.move_to(DAY_BEFORE)
        assert queue.recover() == 1
    row = queue.get(enqueued.job_id)
    assert row.status == "pending" and row.lease_owner is None


# -- 11. uncapped text, uncoalesced bursts -----------------------------------------------------


def _database_bytes(store: Store) -> int:
    if store.dialect == "sqlite":
        path = sqlite_file_path(store.engine)
        assert path is not None
        return sum(os.path.getsize(p) for p in (path, f"{path}-wal") if os.path.exists(p))
    with store.engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one())


def test_ten_failures_with_a_ten_megabyte_context_store_a_small_payload(store: Store, make_sub: Any) -> None:
    add_history(store)
    base = _database_bytes(store)
    huge = "npm ERR! " + "x" * 10_000_000 + " — see the log"
    sub = make_sub()
    for step in range(1, 11):
        sub.record_tool_failure(TOOL, huge, step, "E" * 100_000, SESSION, EPISODE)
    assert sub.flush(timeout=120)
    with store.session() as s:
        sizes = s.execute(select(func.length(sql_cast(RepairJobModel.payload, Text)))).scalars().all()
    assert sizes and max(sizes) <= 64 * 1024, sizes
    grown = _database_bytes(store) - base
    assert grown < 8 * 1024 * 1024, f"the database grew by {grown} bytes"


def test_ten_thousand_failures_of_one_tool_and_context_coalesce(store: Store, make_sub: Any) -> None:
    add_history(store)
    sub = make_sub()
    for step in range(1, 10_001):
        sub.record_tool_failure(TOOL, "web/", step, "ERESOLVE", SESSION, EPISODE)
    assert sub.flush(timeout=120)
    jobs = jobs_of(store)
    assert 1 <= len(jobs) <= 3, f"{len(jobs)} jobs for one repair"
    assert len(store.repairs.list()) == 1


def test_coalesced_metric_counts_every_burst_that_added_no_job(store: Store, make_sub: Any) -> None:
    sub = make_sub()
    # The first burst's insert waits on the blocked database, so every later
    # burst piles up in memory and is merged there.
    with writes_blocked(store):
        for step in range(1, 10_001):
            sub.record_tool_failure(TOOL, "web/", step, "ERESOLVE", SESSION, EPISODE)
    assert sub.flush(timeout=120)
    bursts = sub.signals.stats()["bursts"]
    jobs = jobs_of(store)
    assert bursts == 9_998 and 1 <= len(jobs) <= 3
    coalesced = sub.metrics()["coalesced"]
    assert coalesced is not None and coalesced >= bursts - len(jobs), (coalesced, bursts, len(jobs))


# -- 12. the hot path never logs ---------------------------------------------------------------


class SlowHandler(logging.Handler):
    """Sleeps 0.2 s per record (the first 10, to bound a failing run) and keeps them."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.sleeps = 10

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if self.sleeps > 0:
            self.sleeps -= 1
            time.sleep(0.2)


@pytest.fixture
def slow_handler() -> Iterator[SlowHandler]:
    handler = SlowHandler()
    root = logging.getLogger("memos_feedback")
    saved = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(saved)


def test_the_hot_path_never_logs_on_the_callers_thread(
    store: Store, make_sub: Any, slow_handler: SlowHandler
) -> None:
    add_history(store)
    sub = make_sub()
    caller = threading.get_ident()
    started = time.monotonic()
    for _ in range(1000):
        sub.record_tool_failure(None, "x", 1)  # type: ignore[arg-type]
    for i in range(20):
        fire_burst(sub, f"ctx-{i}/")
    elapsed = time.monotonic() - started
    assert sub.flush(timeout=120)
    on_caller = [r.getMessage() for r in list(slow_handler.records) if r.thread == caller]
    assert on_caller == [], "records emitted on the caller's thread"
    assert elapsed < 1.0, f"1,060 tool-step calls took {elapsed:.2f} s"
    sub.close(timeout=30)
    warnings = [
        r.getMessage()
        for r in slow_handler.records
        if r.levelno >= logging.WARNING and "ignored" in r.getMessage()
    ]
    assert 1 <= len(warnings) <= 2, warnings
    counts = [int(m.group(1)) for w in warnings if (m := re.search(r"ignored (\d+) ", w))]
    assert sum(counts) == 1000, warnings


# -- 15. bad input to public queue and subscriber calls -------------------------------------------

BAD_CALLS: list[tuple[str, Callable[[RepairQueue, FeedbackSubscriber], object]]] = [
    ("get(2**70)", lambda q, s: q.get(2**70)),  # type: ignore[arg-type]
    ("get(lone surrogate)", lambda q, s: q.get("\ud83d")),
    ("get_many('abc')", lambda q, s: q.get_many("abc")),
    ("list(limit='x')", lambda q, s: q.list(limit="x")),  # type: ignore[arg-type]
    ("list(limit=10**23)", lambda q, s: q.list(limit=10**23)),
    ("list(status='bogus')", lambda q, s: q.list(status="bogus")),
    ("retry(None)", lambda q, s: q.retry(None)),  # type: ignore[arg-type]
    ("purge(3)", lambda q, s: q.purge(3)),  # type: ignore[arg-type]
    ("enqueue('x')", lambda q, s: q.enqueue("x")),  # type: ignore[arg-type]
    ("flush(timeout='x')", lambda q, s: s.flush(timeout="x")),  # type: ignore[arg-type]
    ("close(timeout=nan)", lambda q, s: s.close(timeout=float("nan"))),
    ("submit_user_feedback(123, 's')", lambda q, s: s.submit_user_feedback(123, "s")),  # type: ignore[arg-type]
    (
        "submit_user_feedback(session_id=5)",
        lambda q, s: s.submit_user_feedback("use uv", session_id=5),  # type: ignore[arg-type]
    ),
    ("run_once('x')", lambda q, s: s.run_once("x")),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("call", [c for _, c in BAD_CALLS], ids=[name for name, _ in BAD_CALLS])
def test_bad_input_to_public_calls_raises_a_library_error(
    store: Store, make_sub: Any, call: Callable[[RepairQueue, FeedbackSubscriber], object]
) -> None:
    sub = make_sub()
    with pytest.raises(MemosFeedbackError):
        call(RepairQueue(store), sub)
    # The handle is still usable afterwards.
    assert sub.flush(timeout=30)


# -- 18. feedback.classified under cooldown; close() ends the signal state -------------------------


def test_a_correction_in_cooldown_is_classified_then_skipped(store: Store, feed: Feed, make_sub: Any) -> None:
    add_history(store)
    sub = make_sub()
    shape, first = sub.submit_user_feedback("wrong port, it's 8080 not 8000", SESSION)
    assert shape.shape.value == "correction"
    assert first.result(timeout=30).repair_id is not None
    feed.take()
    shape, second = sub.submit_user_feedback("wrong host, it's db-2 not db-1", SESSION)
    assert shape.shape.value == "correction"
    result = second.result(timeout=30)
    assert result.skipped and result.skipped_reason == "cooldown"
    events = feed.take()
    assert [e.kind for e in events] == ["feedback.classified", "repair.skipped"]
    assert events[1].reason == "cooldown"  # type: ignore[attr-defined]


def test_close_drops_the_signal_state_and_later_failures_change_nothing(store: Store, make_sub: Any) -> None:
    sub = make_sub()
    sub.record_tool_failure(TOOL, "web/", 1, "E", SESSION)
    sub.record_tool_failure(TOOL, "web/", 2, "E", SESSION)
    sub.sync_signals()
    assert sub.signals.stats()["states"] == 1
    sub.close(timeout=30)
    stats = sub.signals.stats()
    assert stats["states"] == 0
    # The third failure would make a burst on an open handle.
    sub.record_tool_failure(TOOL, "web/", 3, "E", SESSION)
    assert sub.record_tool_failure_now(TOOL, "web/", 4, "E", SESSION) is None
    sub.sync_signals()
    assert sub.signals.stats() == stats
    assert jobs_of(store) == []
