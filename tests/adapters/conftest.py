"""Fixtures for the adapter tests: a running subscriber on the test's store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memos_feedback.store import Store
from memos_feedback.subscriber import FeedbackSubscriber, attach_feedback_subscriber


@pytest.fixture
def subscriber(store: Store) -> Iterator[FeedbackSubscriber]:
    sub = attach_feedback_subscriber(store, poll_interval=0.01)
    try:
        yield sub
    finally:
        sub.close(timeout=10)


class Boom(RuntimeError):
    """What a broken adapter dependency raises in the tests."""
