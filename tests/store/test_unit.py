"""The repair unit hands the event log's buffered rows back when its work rolls back."""

from __future__ import annotations

import pytest

from memos_feedback.events import FeedbackClassified, RepairPersisted
from memos_feedback.store import Store
from memos_feedback.store.event_log import FeedStore
from memos_feedback.store.unit import repair_unit


def _buffered(feed: FeedStore, n: int) -> None:
    for i in range(n):
        feed.buffer(FeedbackClassified(shape="correction", confidence=i / 10))


def _persisted(i: int) -> RepairPersisted:
    return RepairPersisted(context_hash=f"c{i}", repair_id=f"r{i}", confidence=0.5, severity="low")


def test_a_failed_transaction_hands_the_taken_rows_back(store: Store) -> None:
    feed = FeedStore(store)
    _buffered(feed, 2)
    with pytest.raises(RuntimeError), repair_unit(store, feed) as unit:
        unit.log([_persisted(1)])
        raise RuntimeError("the write failed after the log")
    # The two buffered rows are back, in order; the failed write's own event is not.
    assert [row["kind"] for row in feed._pending] == ["feedback.classified"] * 2
    assert [row["payload"]["confidence"] for row in feed._pending] == [0.0, 0.1]
    assert feed.newest(10) == []


def test_a_savepoint_rolled_back_hands_back_only_its_rows(store: Store) -> None:
    if store.dialect != "sqlite":
        pytest.skip("savepoints are the SQLite group commit's")
    feed = FeedStore(store)
    _buffered(feed, 1)
    with repair_unit(store, feed, group=True) as unit:
        with unit.savepoint():
            unit.log([_persisted(1)])
        _buffered(feed, 1)
        with pytest.raises(RuntimeError), unit.savepoint():
            unit.log([_persisted(2)])
            raise RuntimeError("the second job failed")
        # The second savepoint's buffered row is back at once, before the commit.
        assert len(feed._pending) == 1
    logged = [r.kind for r in feed.newest(10)]
    assert logged == ["feedback.classified", "repair.persisted"]
    assert len(feed._pending) == 1
