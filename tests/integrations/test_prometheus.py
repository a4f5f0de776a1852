"""The optional Prometheus exporter, scraped over real HTTP."""

from __future__ import annotations

import socket
import urllib.request

from memos_feedback.config import FeedbackConfig
from memos_feedback.integrations.prometheus import start_exporter
from memos_feedback.runtime.subscriber import attach_feedback_subscriber
from memos_feedback.store import Store
from memos_feedback.types import RepairInput


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_exporter_serves_subscriber_metrics(store: Store) -> None:
    store.traces.add("s", agent_text="worked", value=0.9)
    with attach_feedback_subscriber(store, config=FeedbackConfig(use_llm=False), poll_interval=0.01) as sub:
        sub.run_once(RepairInput(trigger="manual", context_hash="h", session_id="s")).result(timeout=10)
        port = free_port()
        start_exporter(sub, port=port)
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    assert "memos_feedback_jobs_done_total 1.0" in body
    assert "memos_feedback_jobs_enqueued_total 1.0" in body
    assert "memos_feedback_queue_depth 0.0" in body
