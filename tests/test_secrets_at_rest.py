"""No secret at rest, none in a view: a burst and a correction carrying a GitHub
token and an AWS key leave neither in any table, event, log line, CLI or web
output; ``db redact`` rewrites what the previous version stored."""

from __future__ import annotations

import json
import logging
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, select, table, text, update

from memos_feedback.config import FeedbackConfig
from memos_feedback.events import FeedbackBus, FeedbackEvent, event_to_dict
from memos_feedback.outcomes.ledger import write_batch
from memos_feedback.runtime.queue import RepairQueue
from memos_feedback.runtime.subscriber import attach_feedback_subscriber
from memos_feedback.signals import context_hash_of
from memos_feedback.store import Store, ToolCall
from memos_feedback.store.models import DecisionRepairModel, FeedbackEventModel, RepairJobModel
from memos_feedback.store.outcomes import Served
from memos_feedback.store.redact import redact_tables
from memos_feedback.store.repositories import repair_values, write_repair_row
from memos_feedback.types import RepairInput
from tests.cli.test_cli import cli
from tests.support.serve import serve_process

# Random values in the providers' formats; they belong to nobody.
TOKEN = "ghp_" + "Zq7LmR2xWv9KpT4sNb8YcHd3FgJ6uE1oAi5B"
AWS_KEY = "AKIA" + "QX7NR2KWZ4T6LBMV"
SECRETS = (TOKEN, AWS_KEY)
CONTEXT = f"git push https://x:{TOKEN}@github.com/acme/app.git && AWS_ACCESS_KEY_ID={AWS_KEY} make deploy"
REASON = f"remote rejected: token {TOKEN} lacks scope; key {AWS_KEY}"
CORRECTION = f"不对，use the deploy key instead of {TOKEN} and drop AWS_ACCESS_KEY_ID={AWS_KEY}"
TOOL = "shell.run"


def _dump(store: Store) -> str:
    """Every row of every table, as text (FTS shadow tables included on SQLite)."""
    parts: list[str] = []
    with store.engine.connect() as conn:
        for name in inspect(conn).get_table_names():
            rows = conn.execute(select(text("*")).select_from(table(name))).all()
            parts.extend(repr(tuple(r)) for r in rows)
    return "\n".join(parts)


def _raw_files(db_url: str) -> bytes:
    if not db_url.startswith("sqlite"):
        return b""
    path = Path(db_url.removeprefix("sqlite:///"))
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.exists())


def _assert_clean(where: str, blob: str | bytes) -> None:
    for secret in SECRETS:
        needle: Any = secret.encode() if isinstance(blob, bytes) else secret
        assert needle not in blob, f"{secret[:8]}… found in {where}"


def _scenario(store: Store, bus: FeedbackBus) -> list[FeedbackEvent]:
    events: list[FeedbackEvent] = []
    bus.on_any(events.append)
    store.traces.add(
        "s1", agent_text="ran make deploy with the deploy key, it worked", value=0.8, episode_id="ep1",
        tool_calls=[ToolCall(TOOL)], redact=True,
    )  # fmt: skip
    store.traces.add(
        "s1", agent_text=f"failed: {CONTEXT}", value=-0.7, episode_id="ep1",
        tool_calls=[ToolCall(TOOL, error_code="E403")], redact=True,
    )  # fmt: skip
    sub = attach_feedback_subscriber(store, bus=bus, config=FeedbackConfig(use_llm=False), poll_interval=0.02)
    try:
        for step in (1, 2, 3):
            sub.record_tool_failure(TOOL, CONTEXT, step, REASON, "s1", "ep1")
        sub.sync_signals()
        _, future = sub.submit_user_feedback(CORRECTION, "s1", episode_id="ep1")
        assert not future.result(timeout=30).skipped
        assert sub.flush(timeout=30)
    finally:
        sub.close(timeout=30)
    return events


def test_a_burst_and_a_correction_leave_no_secret_anywhere(
    store: Store, bus: FeedbackBus, db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="memos_feedback")
    events = _scenario(store, bus)
    repairs = store.repairs.list()
    assert len(repairs) >= 2, "the burst and the correction each made a repair"
    # The failures still group by the raw context: redaction never moves them.
    assert any(r.context_hash == context_hash_of(TOOL, CONTEXT) for r in repairs)
    assert any(r.context and "[redacted]" in r.context for r in repairs)
    _assert_clean("the database", _dump(store))
    _assert_clean("the SQLite files", _raw_files(db_url))
    _assert_clean("the events", json.dumps([event_to_dict(e) for e in events], default=str))
    _assert_clean("the log", caplog.text)
    store.close()
    outputs = [
        cli("--db", db_url, "repairs", "list", "--json"),
        cli("--db", db_url, "queue", "list", "--json"),
        cli("--db", db_url, "tail", "--json", "--since", "0", "--count", "3"),
        *(cli("--db", db_url, "repairs", "show", r.id, "--json") for r in repairs),
    ]
    for out in outputs:
        assert out.returncode == 0, out.stderr
        _assert_clean(f"CLI {out.args[3:5]}", out.stdout + out.stderr)
    with serve_process(db_url) as base:
        for path in ("api/repairs", "api/queue", "api/events", "api/policies"):
            with urllib.request.urlopen(base + path, timeout=30) as resp:
                _assert_clean(f"GET /{path}", resp.read().decode())


def _write_as_the_previous_version(store: Store) -> None:
    """Raw rows in the shapes the base commit stored: secrets verbatim."""
    failure = {"tool_id": TOOL, "context": CONTEXT[:256], "step": 1, "reason": REASON, "ts": 1}
    payload = {
        "trigger": "user.correction",
        "context_hash": "h1",
        "user_text": CORRECTION,
        "context": CONTEXT,
        "failures": [failure],
    }
    with store.session(write=True, action="seeding old rows") as s:
        for i in range(7):
            s.execute(
                RepairJobModel.__table__.insert().values(
                    id=f"job_{i}", context_hash="h1", trigger="user.correction", payload=payload,
                    status="done", attempts=1, next_attempt_at=1, created_at=1, updated_at=1,
                )
            )  # fmt: skip
            s.execute(
                FeedbackEventModel.__table__.insert().values(
                    ts=1, kind="repair.job_dead", context_hash="h1", job_id=f"job_{i}",
                    payload={"error": REASON, "attempts": 3},
                )
            )  # fmt: skip
    store.repairs.insert(context_hash="h1", trigger="user.correction", preference="Prefer: the deploy key",
                      anti_pattern="Avoid: tokens in URLs", tool_id=TOOL)  # fmt: skip
    # Raw SQL: the columns' type (store.models.RedactedText) would redact these, as
    # every write of ours now does; the previous version's rows were written verbatim.
    with store.session(write=True, action="seeding old rows") as s:
        s.execute(text("UPDATE decision_repairs SET context = :c, source_text = :c"), {"c": CONTEXT})
        s.execute(text("UPDATE repair_jobs SET last_error = :e"), {"e": f"RuntimeError: {REASON}"})


def test_db_redact_rewrites_old_rows_once(store: Store, db_url: str) -> None:
    _write_as_the_previous_version(store)
    assert TOKEN in _dump(store)
    first = redact_tables(store, batch=3)
    assert first.rewritten == {
        "decision_repairs": 1,
        "repair_jobs": 7,
        "feedback_events": 7,
        "repair_served": 0,
    }
    _assert_clean("the database after db redact", _dump(store))
    second = redact_tables(store, batch=3)
    assert set(second.rewritten.values()) == {0}
    assert second.scanned == first.scanned
    rows = store.repairs.list()
    assert rows[0].context is not None and "https://x:[redacted]@github.com" in rows[0].context


def test_db_redact_command_reports_and_a_second_run_changes_nothing(store: Store, db_url: str) -> None:
    _write_as_the_previous_version(store)
    store.close()
    first = cli("--db", db_url, "db", "redact", "--batch", "2", "--vacuum")
    assert first.returncode == 0, first.stderr
    assert "repair_jobs: 7 of 7 rows rewritten" in first.stdout
    second = cli("--db", db_url, "db", "redact")
    assert second.returncode == 0, second.stderr
    assert "repair_jobs: 0 of 7 rows rewritten" in second.stdout
    assert "decision_repairs: 0 of 1 rows rewritten" in second.stdout
    # With --vacuum no old copy stays in the file's free pages either.
    _assert_clean("the SQLite files after db redact --vacuum", _raw_files(db_url))


def _table_text(store: Store, name: str) -> str:
    with store.engine.connect() as conn:
        return "\n".join(
            repr(tuple(r)) for r in conn.execute(select(text("*")).select_from(table(name))).all()
        )


def test_untrusted_text_columns_redact_every_write_and_host_traces_stay_as_given(store: Store) -> None:
    """Issue 44, deliverable 3: the columns redact on write (store.models.RedactedText), whatever
    the writer — a repair row written with raw values (the worker's prebuilt INSERT on SQLite), a
    Core UPDATE, a serving written by the ledger, a job's error written by the queue's conditional
    UPDATE — while the host's traces keep what the host gave unless it asks (``redact=True``)."""
    values = repair_values(
        context_hash="h1", trigger="manual", preference="p", anti_pattern="a", tool_id=TOOL
    )
    # Raw values, as if a writer forgot to redact: the column type does it.
    values.update(context=CONTEXT, preference=f"Prefer: not {TOKEN}", anti_pattern=f"Avoid: {AWS_KEY}",
                  source_text=CORRECTION)  # fmt: skip
    with store.connection(write=True, action="writing a raw repair") as conn:
        write_repair_row(conn, values)
    with store.session(write=True, action="updating a repair") as s:
        s.execute(
            update(DecisionRepairModel).values(context=REASON).where(DecisionRepairModel.id == values["id"])
        )
    served = Served(id="sv_1", repair_id=values["id"], session_id="s1", tool_id=TOOL, context=CONTEXT, ts=1)
    write_batch(store, [served], [], stale_after=10**9)
    queue = RepairQueue(store)
    queue.enqueue(RepairInput(trigger="manual", context_hash="h2", session_id="s1", user_text="fix it"))
    job = queue.claim("w1")
    assert job is not None
    queue.bury(job, "w1", f"RuntimeError: {REASON}")
    for name in ("decision_repairs", "repair_served", "repair_jobs"):
        _assert_clean(name, _table_text(store, name))
    row = store.repairs.get(values["id"])
    assert row.context is not None and "token [redacted] lacks scope" in row.context
    assert (
        queue.get(job.id).last_error
        == "RuntimeError: remote rejected: token [redacted] lacks scope; key [redacted]"
    )
    # The host's own rows are the host's: kept as given, redacted when asked.
    kept = store.traces.add("s1", agent_text=CONTEXT)
    asked = store.traces.add("s1", agent_text=CONTEXT, redact=True)
    assert store.traces.get(kept.id).agent_text == CONTEXT
    _assert_clean("a trace added with redact=True", store.traces.get(asked.id).agent_text)
