"""A full disk loses no burst: they stay buffered, are stored when space returns, or come back from close().

How the disk is filled, per backend:

* SQLite: ``PRAGMA max_page_count`` on every connection of the store's
  engine (set through SQLAlchemy's connect event) and a side connection
  that fills the free pages with blobs until SQLite answers
  ``SQLITE_FULL`` ("database or disk is full"), the very error a full file
  system gives. Chosen over a loop-mounted file system because it runs
  unprivileged, on any CI host, and is freed exactly (delete the blobs).
  A real small file system is used too where this process may mount one
  (root): ``test_a_real_full_file_system_loses_no_burst``.
* PostgreSQL: a trigger on ``repair_jobs`` raising SQLSTATE 53100
  (``disk_full``), the code PostgreSQL answers when it cannot extend a
  file; dropping the trigger frees the "disk".

In both, a plain empty transaction still commits: that is what made the
enqueuer take every burst for poison and drop it after three refusals.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, event, text

from memos_feedback.config import FeedbackConfig
from memos_feedback.errors import TriggersNotPersistedError
from memos_feedback.runtime.queue import RepairQueue
from memos_feedback.runtime.subscriber import FeedbackSubscriber, attach_feedback_subscriber
from memos_feedback.signals import context_hash_of
from memos_feedback.store import Store, open_store
from memos_feedback.store.durability import probe_write
from memos_feedback.store.engine import create_store_engine, sqlite_file_path
from tests.support.freezing import wait_for

TOOL = "npm.install"
BURSTS = 20
CONFIG = FeedbackConfig(use_llm=False, buffer_flush_ms=20, cooldown_ms=0)
# Room for the subscriber's own start (recovery, counters) before the fill.
_SLACK_PAGES = 400
_BLOB = 64 * 1024


def contexts() -> list[str]:
    # Long, so that each burst's job needs pages of its own.
    return [f"ctx-{i}/" + "x" * 3_000 for i in range(BURSTS)]


def fire(sub: FeedbackSubscriber, ctx: str) -> None:
    for step in range(1, 4):
        sub.record_tool_failure(TOOL, ctx, step, "ERESOLVE " + "y" * 1_500, session_id="s1")


class SqliteDisk:
    """The store's file with a page limit, and a side connection that fills and frees it."""

    def __init__(self, path: str) -> None:
        self.side = sqlite3.connect(path, timeout=30, isolation_level=None)
        self.side.execute("CREATE TABLE IF NOT EXISTS filler (b BLOB)")
        pages = self.side.execute("PRAGMA page_count").fetchone()[0]
        self.limit = pages + _SLACK_PAGES
        self.side.execute(f"PRAGMA max_page_count={self.limit}")

    def limit_engine(self, engine: Any) -> None:
        @event.listens_for(engine, "connect")
        def _limit(dbapi_conn: Any, record: Any) -> None:
            dbapi_conn.execute(f"PRAGMA max_page_count={self.limit}")

    def fill(self) -> None:
        for size in (_BLOB, 4_096, 512, 64):
            with suppress(sqlite3.OperationalError):  # "database or disk is full"
                while True:
                    self.side.execute("INSERT INTO filler VALUES (zeroblob(?))", (size,))

    def free(self) -> None:
        self.side.execute("DELETE FROM filler")

    def close(self) -> None:
        self.side.close()


class PgDisk:
    """``repair_jobs`` refuses inserts with ``disk_full`` while filled."""

    def __init__(self, url: str) -> None:
        self.engine = create_engine(url)

    def fill(self) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                text(
                    "CREATE FUNCTION disk_is_full() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                    "RAISE EXCEPTION 'could not extend file: No space left on device' "
                    "USING ERRCODE = 'disk_full'; END $$"
                )
            )
            conn.execute(
                text(
                    "CREATE TRIGGER disk_is_full BEFORE INSERT OR UPDATE ON repair_jobs "
                    "FOR EACH ROW EXECUTE FUNCTION disk_is_full()"
                )
            )

    def free(self) -> None:
        with self.engine.begin() as conn:
            conn.execute(text("DROP TRIGGER IF EXISTS disk_is_full ON repair_jobs"))
            conn.execute(text("DROP FUNCTION IF EXISTS disk_is_full()"))

    def close(self) -> None:
        self.free()
        self.engine.dispose()


@pytest.fixture
def disk_and_store(db_url: str) -> Iterator[tuple[Any, Store]]:
    open_store(db_url).close()  # migrated
    path = sqlite_file_path(create_store_engine(db_url))
    if path is not None:
        disk: Any = SqliteDisk(path)
        engine = create_store_engine(db_url)
        disk.limit_engine(engine)
        store = Store(engine, db_url)
    else:
        disk = PgDisk(db_url)
        store = open_store(db_url)
    try:
        yield disk, store
    finally:
        disk.close()
        store.close()


def refusal_rounds(caplog: pytest.LogCaptureFixture) -> int:
    return sum("storing them one by one" in r.getMessage() for r in caplog.records)


def record_while_full(
    sub: FeedbackSubscriber, caplog: pytest.LogCaptureFixture, rounds: int = 5
) -> Callable[[], int]:
    for ctx in contexts():
        fire(sub, ctx)
    sub.sync_signals()
    # Well past the three refusals after which a burst used to be dropped
    # (or until one was: then the assertion below says so).
    wait_for(lambda: refusal_rounds(caplog) >= rounds or sub.metrics()["rejected"], seconds=60)
    return lambda: int(sub.metrics()["rejected"] or 0)


def test_bursts_recorded_during_a_full_disk_are_stored_when_space_returns(
    disk_and_store: tuple[Any, Store], caplog: pytest.LogCaptureFixture
) -> None:
    disk, store = disk_and_store
    caplog.set_level(logging.WARNING, logger="memos_feedback.subscriber")
    sub = attach_feedback_subscriber(store, config=CONFIG, poll_interval=0.02)
    try:
        disk.fill()
        rejected = record_while_full(sub, caplog)
        assert rejected() == 0, "bursts were dropped as poison during a full disk"
        assert RepairQueue(store).stats()["pending"] == 0, "the disk was not full"
        disk.free()
        wanted = {context_hash_of(TOOL, c) for c in contexts()}
        wait_for(lambda: wanted <= {j.context_hash for j in RepairQueue(store).list(limit=1_000)}, 60)
    finally:
        sub.close(timeout=30)
    assert rejected() == 0


def test_close_during_a_full_disk_hands_back_every_burst(
    disk_and_store: tuple[Any, Store], caplog: pytest.LogCaptureFixture
) -> None:
    disk, store = disk_and_store
    caplog.set_level(logging.WARNING, logger="memos_feedback.subscriber")
    sub = attach_feedback_subscriber(store, config=CONFIG, poll_interval=0.02)
    disk.fill()
    record_while_full(sub, caplog)
    with pytest.raises(TriggersNotPersistedError) as info:
        sub.close(timeout=2)
    assert info.value.count == BURSTS
    assert {i.context_hash for i in info.value.inputs} == {context_hash_of(TOOL, c) for c in contexts()}


def test_a_trigger_the_database_refuses_alone_is_still_dropped(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """Poison (refused with an ordinary error while a trivial row writes) is still dropped."""
    bad, good = "poison/", "fine/"
    bad_hash = context_hash_of(TOOL, bad)
    with store.connection(write=True) as conn:
        if store.dialect == "sqlite":
            conn.exec_driver_sql(
                "CREATE TRIGGER refuse_one BEFORE INSERT ON repair_jobs "
                f"WHEN NEW.context_hash = '{bad_hash}' BEGIN SELECT RAISE(ABORT, 'refused'); END"
            )
        else:
            conn.exec_driver_sql(
                "CREATE FUNCTION refuse_one() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"IF NEW.context_hash = '{bad_hash}' THEN RAISE EXCEPTION 'refused' "
                "USING ERRCODE = 'check_violation'; END IF; RETURN NEW; END $$"
            )
            conn.exec_driver_sql(
                "CREATE TRIGGER refuse_one BEFORE INSERT ON repair_jobs "
                "FOR EACH ROW EXECUTE FUNCTION refuse_one()"
            )
    caplog.set_level(logging.WARNING, logger="memos_feedback.subscriber")
    sub = attach_feedback_subscriber(store, config=CONFIG, poll_interval=0.02)
    try:
        fire(sub, bad)
        fire(sub, good)
        sub.sync_signals()
        wait_for(lambda: sub.metrics()["rejected"] == 1, seconds=60)
        assert {j.context_hash for j in RepairQueue(store).list()} == {context_hash_of(TOOL, good)}
    finally:
        sub.close(timeout=10)


# -- a real file system, where this process may mount one -------------------------


@contextmanager
def small_file_system(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    mount = shutil.which("mount")
    done = subprocess.run(
        [mount or "mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {done.stderr.decode().strip()[:120]}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_real_full_file_system_loses_no_burst(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="memos_feedback.subscriber")
    with small_file_system(tmp_path / "disk", "8m") as disk:
        url = f"sqlite:///{disk / 'memos_feedback.db'}"
        store = open_store(url)
        sub = attach_feedback_subscriber(store, config=CONFIG, poll_interval=0.02)
        filler = disk / "filler"
        try:
            with filler.open("wb") as f, suppress(OSError):  # ENOSPC: the disk is full
                while True:
                    f.write(b"\0" * 65_536)
                    f.flush()
            rejected = record_while_full(sub, caplog)
            assert rejected() == 0, "bursts were dropped as poison during a full disk"
            # An empty transaction commits on a full disk; a trivial row does not.
            with store.session(write=True):
                pass
            assert not probe_write(store)
            filler.unlink()
            assert probe_write(store)
            wanted = {context_hash_of(TOOL, c) for c in contexts()}
            wait_for(lambda: wanted <= {j.context_hash for j in RepairQueue(store).list(limit=1_000)}, 60)
        finally:
            with suppress(TriggersNotPersistedError):
                sub.close(timeout=10)
            store.close()
