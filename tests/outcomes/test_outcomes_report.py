"""Operator view of outcomes: ``repairs list|show`` columns, filter and history; Prometheus gauges."""

from __future__ import annotations

import json
import socket
import urllib.request

import pytest

from memos_feedback.config import FeedbackConfig
from memos_feedback.outcomes import HELD, RECURRED, Settlement
from memos_feedback.outcomes.ledger import open_servings, write_batch
from memos_feedback.recall import guidance_for
from memos_feedback.runtime.subscriber import attach_feedback_subscriber
from memos_feedback.signals import context_hash_of
from memos_feedback.store import Store
from memos_feedback.types import now_ms
from tests.cli.test_cli import cli

TOOL, CTX = "deploy", "staging"


def seed(store: Store) -> tuple[str, str]:
    """A repair that held once and one that recurred twice (stale after two)."""
    ids = []
    for pref, avoid in (
        ("Prefer: kubectl rollout", "Avoid: kubectl replace"),
        ("Prefer: sleep 60", "Avoid: x"),
    ):
        ids.append(
            store.repairs.insert(
                context_hash=context_hash_of(TOOL, CTX),
                trigger="manual",
                preference=pref,
                anti_pattern=avoid,
                tool_id=TOOL,
                context=CTX,
            ).id
        )
    good, bad = ids
    for n in range(2):
        guidance_for(store, tool_id=TOOL, context=CTX, session_id=f"s{n}")
    settle = []
    for v in open_servings(store, 0):
        if v.repair_id == bad:
            settle.append(Settlement(v.id, bad, v.session_id, RECURRED, now_ms()))
        elif v.session_id == "s0":
            settle.append(Settlement(v.id, good, v.session_id, HELD, now_ms()))
    write_batch(store, [], settle, 2)
    return good, bad


def test_list_columns_status_filter_and_show_history(store: Store, db_url: str) -> None:
    good, bad = seed(store)
    listed = json.loads(cli("repairs", "list", "--db", db_url, "--json").stdout)
    by_id = {r["id"]: r for r in listed}
    assert (by_id[good]["served"], by_id[good]["held"], by_id[good]["status"]) == (2, 1, "active")
    assert (by_id[bad]["served"], by_id[bad]["recurred"], by_id[bad]["status"]) == (2, 2, "stale")
    stale = cli("repairs", "list", "--db", db_url, "--status", "stale").stdout.splitlines()
    assert len(stale) == 1 and stale[0].startswith(bad)
    assert "served=2" in stale[0] and "recurred=2" in stale[0] and " stale " in stale[0]
    active = cli("repairs", "list", "--db", db_url, "--status", "active").stdout
    assert good in active and bad not in active
    assert cli("repairs", "list", "--db", db_url, "--status", "superseded").stdout.strip() == "no repairs"
    shown = cli("repairs", "show", bad, "--db", db_url).stdout
    assert "history: 4 event(s)" in shown and shown.count("recurred") >= 2
    history = json.loads(cli("repairs", "show", good, "--db", db_url, "--json").stdout)["history"]
    assert [h["event"] for h in history].count("served") == 2 and "held" in [h["event"] for h in history]


def test_prometheus_gauges_by_status_and_held_ratio(store: Store) -> None:
    pytest.importorskip("prometheus_client")
    from memos_feedback.integrations.prometheus import start_exporter

    seed(store)
    with attach_feedback_subscriber(store, config=FeedbackConfig(use_llm=False)) as sub:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        start_exporter(sub, port=port)
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    assert 'memos_feedback_repairs{status="active"} 1.0' in body
    assert 'memos_feedback_repairs{status="stale"} 1.0' in body
    assert "memos_feedback_repairs_held_ratio 0.3333" in body
