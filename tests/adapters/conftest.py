"""Fixtures for the adapter tests: a running subscriber on the test's store, and a broken one."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from memos_feedback.errors import TriggersNotPersistedError
from memos_feedback.runtime.subscriber import FeedbackSubscriber, attach_feedback_subscriber
from memos_feedback.store import Store


@pytest.fixture
def subscriber(store: Store) -> Iterator[FeedbackSubscriber]:
    sub = attach_feedback_subscriber(store, poll_interval=0.01)
    try:
        yield sub
    finally:
        sub.close(timeout=10)


@pytest.fixture
def broken_subscriber(store: Store) -> Iterator[FeedbackSubscriber]:
    """A running subscriber whose database lost every table after it started.

    A real fault, not a stand-in: every write (trace rows, queued user
    feedback, stored bursts) and every recall raises from the database.
    """
    sub = attach_feedback_subscriber(store, poll_interval=0.05)
    tables = sa.MetaData()
    tables.reflect(store.engine)
    # Through the store's write path (BEGIN IMMEDIATE on SQLite): a deferred
    # transaction's DROP after its reads failed with "database is locked" at
    # once when the running worker had committed in between (CI, session 9).
    with store.connection(write=True) as conn:
        tables.drop_all(conn)
    try:
        yield sub
    finally:
        # The bursts had no table to go to: close reports them, as it should. It keeps
        # trying until its deadline (by design), so the deadline is short: 5 s was 5 s
        # of every such test's teardown.
        with contextlib.suppress(TriggersNotPersistedError):
            sub.close(timeout=1)


def requests_made(sub: FeedbackSubscriber) -> int:
    """How many repair requests the subscriber took (queued, or merged into a queued one)."""
    m = sub.metrics()
    return int(m["enqueued"] or 0) + int(m["deduped"] or 0)


class Boom(RuntimeError):
    """What a broken user-supplied callable (``context_of``, ``session_id``) raises in the tests."""
