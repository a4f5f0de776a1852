"""A SQLite file deleted or replaced under a running subscriber fails loudly; nothing is said persisted.

SQLite only: the file is the point. The file is unlinked for real while
the subscriber's threads and pooled connections hold it open.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from memos_feedback.config import FeedbackConfig
from memos_feedback.errors import StoreError, TriggersNotPersistedError
from memos_feedback.runtime.subscriber import attach_feedback_subscriber
from memos_feedback.signals import context_hash_of
from memos_feedback.store import open_store

CONFIG = FeedbackConfig(use_llm=False, cooldown_ms=0, buffer_flush_ms=20)
TOOL = "npm.install"


def test_writes_after_the_file_was_deleted_fail_loudly(tmp_path: Path) -> None:
    path = tmp_path / "memos_feedback.db"
    store = open_store(f"sqlite:///{path}")
    sub = attach_feedback_subscriber(store, config=CONFIG, poll_interval=0.02)
    try:
        sub.submit_user_feedback("no, use pnpm instead of npm", "s0")[1].result(timeout=30)
        os.unlink(path)
        for i in range(10):
            with pytest.raises(StoreError, match="was deleted"):
                sub.submit_user_feedback(f"no, use pnpm instead of npm in app {i}", f"s{i}")
        for step in range(1, 4):
            sub.record_tool_failure(TOOL, "web/", step, "ERESOLVE", session_id="s1")
        sub.sync_signals()
    finally:
        with pytest.raises(TriggersNotPersistedError) as info:
            sub.close(timeout=2)
        store.close()
    # The burst recorded after the deletion is handed back, not dropped.
    assert [i.context_hash for i in info.value.inputs] == [context_hash_of(TOOL, "web/")]
    # And no empty database took the file's place behind the store's back.
    assert not path.exists()


def test_a_file_replaced_under_the_store_fails_loudly(tmp_path: Path) -> None:
    path = tmp_path / "memos_feedback.db"
    other = tmp_path / "other.db"
    open_store(f"sqlite:///{other}").close()
    store = open_store(f"sqlite:///{path}")
    try:
        store.traces.add("s1", agent_text="before", value=0.5)
        shutil.move(other, path)  # a migrated database of its own, at the same path
        with pytest.raises(StoreError, match="was replaced"):
            store.traces.add("s1", agent_text="after", value=0.5)
    finally:
        store.close()
