"""The durable event log on real SQLite and PostgreSQL: transactional writes, order, follow, prune."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import inspect, text

from memos_feedback.config import FeedbackConfig
from memos_feedback.errors import InvalidInputError
from memos_feedback.events import (
    EVENT_KINDS,
    FeedbackBus,
    FeedbackClassified,
    RepairJobFailed,
    RepairPersisted,
    RepairSkipped,
    RepairTriggered,
)
from memos_feedback.feed import STATE_KINDS, EventRecord, FeedStore
from memos_feedback.feed.actions import purge_job, requeue_job, review_repair
from memos_feedback.runtime.queue import RepairQueue
from memos_feedback.runtime.subscriber import attach_feedback_subscriber
from memos_feedback.store import Store, migrate, open_store
from memos_feedback.types import RepairInput

CONFIG = FeedbackConfig(use_llm=False, cooldown_ms=0)


def persisted(i: int) -> RepairPersisted:
    return RepairPersisted(context_hash=f"ctx{i}", repair_id=f"dr_{i}", confidence=0.5, severity="info")


def seed(store: Store, session: str = "s1") -> None:
    store.traces.add(session, agent_text="ran the service on port 9000, healthy", value=0.9)
    store.traces.add(session, agent_text="error: connection refused on port 8000", value=-0.8)


@pytest.fixture
def feed(store: Store) -> Iterator[FeedStore]:
    f = FeedStore(store, CONFIG)
    yield f
    f.close()


# -- transactional writes -------------------------------------------------------------


def test_state_events_commit_and_roll_back_with_their_transaction(store: Store, feed: FeedStore) -> None:
    with store.session(write=True) as s:
        feed.write_in(s, [persisted(1)])
    with pytest.raises(RuntimeError), store.session(write=True) as s:
        feed.write_in(s, [persisted(2)])
        raise RuntimeError("the change fails after the event was inserted")
    rows = feed.read(0)
    assert [(r.kind, r.repair_id) for r in rows] == [("repair.persisted", "dr_1")]
    assert rows[0].payload == {
        "context_hash": "ctx1",
        "repair_id": "dr_1",
        "confidence": 0.5,
        "severity": "info",
    }


def test_buffered_events_go_out_with_the_next_write_in_order(store: Store, feed: FeedStore) -> None:
    feed.buffer(FeedbackClassified(shape="correction", confidence=0.9))
    feed.buffer(RepairTriggered(context_hash="c", trigger="manual", failure_count=0))
    feed.buffer(persisted(9))  # a state kind: its emitter logs it, the buffer ignores it
    assert feed.read(0) == []
    with store.session(write=True) as s:
        feed.write_in(s, [persisted(1)])
    assert [r.kind for r in feed.read(0)] == ["feedback.classified", "repair.triggered", "repair.persisted"]


def test_buffered_events_survive_a_rolled_back_write(store: Store, feed: FeedStore) -> None:
    feed.buffer(RepairSkipped(context_hash="c", trigger="manual", reason="cooldown"))
    with pytest.raises(RuntimeError), store.session(write=True) as s:
        feed.write_in(s, [persisted(1)])
        raise RuntimeError("boom")
    feed.flush()
    assert [r.kind for r in feed.read(0)] == ["repair.skipped"]


def test_payload_text_is_capped_and_cleaned(store: Store, feed: FeedStore) -> None:
    feed.log([RepairJobFailed(context_hash="c", error="x" * 100_000 + "\x00\ud800")])
    (r,) = feed.read(0)
    assert len(r.payload["error"]) <= 4000
    assert "\x00" not in r.payload["error"]


def test_unknown_kind_and_bad_arguments_are_refused(feed: FeedStore) -> None:
    with pytest.raises(InvalidInputError):
        feed.read(0, kinds=["repair.persist"])
    with pytest.raises(InvalidInputError):
        feed.read(-1)
    with pytest.raises(InvalidInputError):
        feed.read(0, limit=0)


# -- the pipeline writes every kind ----------------------------------------------------


def test_a_subscriber_repair_logs_its_events_once_in_order(store: Store) -> None:
    seed(store)
    bus = FeedbackBus()
    seen: list[str] = []
    bus.on_any(lambda e: seen.append(e.kind))
    with attach_feedback_subscriber(store, bus=bus, config=CONFIG, poll_interval=0.01) as sub:
        _fb, fut = sub.submit_user_feedback("wrong port, it's 9000 not 8000", "s1", tool_id="config")
        result = fut.result(timeout=30)
        assert result.repair_id is not None
        assert sub.events is not None
    rows = FeedStore(store).read(0)
    assert [r.kind for r in rows] == seen, "the log holds exactly what the bus announced, in order"
    assert [r.kind for r in rows] == ["feedback.classified", "repair.triggered", "repair.persisted"]
    assert rows[-1].repair_id == result.repair_id
    assert [r.seq for r in rows] == sorted(r.seq for r in rows)


def test_events_log_can_be_switched_off(store: Store) -> None:
    seed(store)
    config = FeedbackConfig(use_llm=False, cooldown_ms=0, events_log=False)
    with attach_feedback_subscriber(store, config=config, poll_interval=0.01) as sub:
        assert sub.events is None
        sub.run_once(RepairInput(trigger="manual", context_hash="c0ffee", session_id="s1")).result(30)
    assert FeedStore(store).read(0) == []


def test_operator_actions_log_their_change(store: Store) -> None:
    seed(store)
    with attach_feedback_subscriber(store, config=CONFIG, poll_interval=0.01) as sub:
        result = sub.run_once(RepairInput(trigger="manual", context_hash="c0ffee", session_id="s1")).result(
            30
        )
    assert result.repair_id is not None
    review_repair(store, result.repair_id, "validate")
    review_repair(store, result.repair_id, "reject")
    queue = RepairQueue(store, CONFIG)
    job = queue.list()[0]
    with store.session(write=True) as s:
        s.execute(
            text("UPDATE repair_jobs SET status = 'dead', repair_id = NULL WHERE id = :i"), {"i": job.id}
        )
    requeue_job(store, job.id)
    purge_job(store, job.id)
    kinds = [(r.kind, r.payload.get("verdict")) for r in FeedStore(store).read(0)][-4:]
    assert kinds == [
        ("repair.reviewed", "validated"),
        ("repair.reviewed", "rejected"),
        ("repair.job.requeued", None),
        ("repair.job.purged", None),
    ]


def test_every_bus_kind_is_either_logged_in_a_transaction_or_batched() -> None:
    batched = EVENT_KINDS - STATE_KINDS
    assert STATE_KINDS <= EVENT_KINDS
    assert batched == {
        "repair.triggered",
        "feedback.classified",
        "repair.skipped",
        "repair.job.failed",
        # Outcome events are batched too: the outcome tables are their record.
        "repair.outcome",
        "repair.stale",
        "repair.review_flagged",
        "repair.superseded",
    }


# -- order: two concurrent writers ---------------------------------------------------


def test_a_late_committing_writer_is_never_skipped_by_a_follower(store: Store, feed: FeedStore) -> None:
    """Writer A allocates its seq and stays open; writer B comes later but would commit first.

    With a plain sequence, B (seq n+1) would be visible before A (seq n): a
    follower past n+1 would skip A for ever. The log's lock makes B wait for
    A's commit, so seq order is commit order.
    """
    a_inserted, release_a = threading.Event(), threading.Event()
    b_done = threading.Event()

    def writer_a() -> None:
        with store.session(write=True) as s:
            feed.write_in(s, [persisted(1)])
            a_inserted.set()
            release_a.wait(10)

    def writer_b() -> None:
        a_inserted.wait(10)
        other = FeedStore(store, CONFIG)
        with store.session(write=True) as s:
            other.write_in(s, [persisted(2)])
        b_done.set()

    ta, tb = threading.Thread(target=writer_a), threading.Thread(target=writer_b)
    ta.start()
    tb.start()
    assert a_inserted.wait(10)
    # B is blocked on the log's lock (PostgreSQL) or the write lock (SQLite)
    # for as long as A is open; a follower meanwhile sees neither.
    assert not b_done.wait(0.5)
    assert feed.read(0) == []
    release_a.set()
    ta.join(10)
    tb.join(10)
    rows = feed.read(0)
    assert [r.repair_id for r in rows] == ["dr_1", "dr_2"]
    assert rows[0].seq < rows[1].seq


def test_follower_sees_every_event_of_concurrent_writers_once(db_url: str) -> None:
    writers, per = 4, 40
    stores = [open_store(db_url) for _ in range(writers)]
    reader = open_store(db_url)
    try:
        got: list[EventRecord] = []
        stop = threading.Event()
        follower = threading.Thread(
            target=lambda: got.extend(FeedStore(reader).follow(0, stop=stop, poll=0.01)), daemon=True
        )
        follower.start()

        def write(k: int) -> None:
            f = FeedStore(stores[k], CONFIG)
            for i in range(per):
                with stores[k].session(write=True) as s:
                    f.write_in(s, [persisted(k * 1000 + i)])

        threads = [threading.Thread(target=write, args=(k,)) for k in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        deadline = time.monotonic() + 30
        while len(got) < writers * per and time.monotonic() < deadline:
            time.sleep(0.02)
        stop.set()
        follower.join(10)
        table = FeedStore(reader).read(0, limit=10_000)
        assert [r.seq for r in got] == [r.seq for r in table], "every committed event, once, in seq order"
        assert len({r.repair_id for r in got}) == writers * per
    finally:
        for s in [*stores, reader]:
            s.close()


# -- following ---------------------------------------------------------------------------


def test_follow_starts_now_by_default_and_filters_kinds(store: Store, feed: FeedStore) -> None:
    feed.log([persisted(1)])
    stop = threading.Event()
    got: list[EventRecord] = []

    def run() -> None:
        for r in feed.follow(kinds=["repair.persisted"], stop=stop, poll=0.01):
            got.append(r)
            if len(got) == 2:
                stop.set()

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.3)  # the follower has read its starting point
    feed.log([RepairSkipped(context_hash="c", trigger="manual", reason="cooldown"), persisted(2)])
    feed.log([persisted(3)])
    t.join(15)
    assert not t.is_alive()
    assert [r.repair_id for r in got] == ["dr_2", "dr_3"]


def test_follow_ends_after_idle_timeout(feed: FeedStore) -> None:
    assert list(feed.follow(0, idle_timeout=0.2, poll=0.05)) == []


# -- retention -------------------------------------------------------------------------


def test_prune_by_age_and_count(store: Store) -> None:
    now = 10_000_000_000
    feed = FeedStore(store, FeedbackConfig(events_max_age_ms=1_000, events_max_count=3))
    old = [
        RepairPersisted(
            context_hash="c", repair_id=f"old{i}", confidence=0.1, severity="info", at=now - 5_000
        )
        for i in range(2)
    ]
    new = [
        RepairPersisted(context_hash="c", repair_id=f"new{i}", confidence=0.1, severity="info", at=now)
        for i in range(5)
    ]
    feed.log(old + new)
    assert feed.prune(now=now) == 4
    assert [r.repair_id for r in feed.read(0)] == ["new2", "new3", "new4"]
    assert feed.prune(now=now) == 0


def test_seq_never_goes_back_after_pruning_empties_the_log(store: Store) -> None:
    now = 10_000_000_000
    feed = FeedStore(store, FeedbackConfig(events_max_age_ms=1_000))
    old = [
        RepairPersisted(
            context_hash="c", repair_id=f"old{i}", confidence=0.1, severity="info", at=now - 5_000
        )
        for i in range(3)
    ]
    feed.log(old)
    last = feed.last_seq()
    assert feed.prune(now=now) == 3
    assert feed.read(0) == []
    feed.log([RepairPersisted(context_hash="c", repair_id="new", confidence=0.1, severity="info", at=now)])
    # A follower that saw ``last`` still gets the new event.
    assert [r.repair_id for r in feed.read(last)] == ["new"]
    assert feed.last_seq() > last
    # Also across a reopen of the database.
    feed.prune(now=now + 10_000)
    with open_store(store.url) as again:
        FeedStore(again).log([persisted(9)])
        assert [r.repair_id for r in FeedStore(again).read(last + 1)] == ["dr_9"]


def test_the_subscriber_prunes_the_log(store: Store) -> None:
    feed = FeedStore(store)
    feed.log([RepairPersisted(context_hash="c", repair_id="ancient", confidence=0.1, severity="info", at=1)])
    config = FeedbackConfig(use_llm=False, events_flush_ms=10, events_prune_every_ms=10)
    with attach_feedback_subscriber(store, config=config, poll_interval=0.01):
        deadline = time.monotonic() + 10
        while feed.read(0) and time.monotonic() < deadline:
            time.sleep(0.02)
    assert feed.read(0) == []


# -- schema ----------------------------------------------------------------------------


def test_migration_0007_up_and_down(db_url: str) -> None:
    with open_store(db_url) as s:
        assert "feedback_events" in inspect(s.engine).get_table_names()
        assert inspect(s.engine).get_indexes("feedback_events") == [], "no index slows the commits"
        FeedStore(s).log([persisted(1)])
        migrate.downgrade(s.engine, "0005")
        assert "feedback_events" not in inspect(s.engine).get_table_names()
        migrate.upgrade(s.engine)
        assert s.revision() == migrate.head_revision()
        assert FeedStore(s).read(0) == []
        FeedStore(s).log([persisted(2)])
        assert [r.repair_id for r in FeedStore(s).read(0)] == ["dr_2"]


def test_migration_0012_keeps_the_events_and_their_high_water_mark(db_url: str) -> None:
    with open_store(db_url) as s:
        migrate.downgrade(s.engine, "0011")
        feed = FeedStore(s)
        feed.log([persisted(i) for i in range(3)])
        last = feed.last_seq()
        migrate.upgrade(s.engine)
        assert [r.repair_id for r in feed.read(0)] == ["dr_0", "dr_1", "dr_2"]
        with s.session(write=True) as session:
            session.execute(text("DELETE FROM feedback_events"))
        feed.log([persisted(3)])
        assert [(r.seq > last, r.repair_id) for r in feed.read(0)] == [(True, "dr_3")]
        migrate.downgrade(s.engine, "0011")  # and down again, the rows kept
        assert [r.repair_id for r in feed.read(0)] == ["dr_3"]
