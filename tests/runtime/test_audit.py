"""``AuditLog``: append-only JSON Lines (PIPELINE.md §11)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from memos_feedback.errors import AuditLogError, InvalidInputError, MemosFeedbackError
from memos_feedback.events import (
    EVENT_KINDS,
    FeedbackBus,
    FeedbackClassified,
    FeedbackEvent,
    RepairAttached,
    RepairDeleted,
    RepairJobDead,
    RepairJobDiscarded,
    RepairJobFailed,
    RepairJobPurged,
    RepairJobRequeued,
    RepairJobRetrying,
    RepairOutcome,
    RepairPersisted,
    RepairReviewed,
    RepairReviewFlagged,
    RepairSkipped,
    RepairStale,
    RepairSuperseded,
    RepairTriggered,
    event_to_dict,
)
from memos_feedback.runtime.audit import AuditLog
from tests.support.threads import run_threads


def read_lines(path: Path) -> list[str]:
    data = path.read_bytes()
    assert data == b"" or data.endswith(b"\n"), "the file must end with a whole line"
    return data.decode("ascii").splitlines()


def read_records(path: Path) -> list[dict[str, Any]]:
    records = []
    for line in read_lines(path):
        record = json.loads(line)
        assert isinstance(record, dict)
        records.append(record)
    return records


def test_each_write_is_one_json_object_per_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.write({"a": 1})
        log.write({"b": [1, 2], "c": None, "d": 0.5})
        # visible on disk right away: no buffering inside the library
        assert read_records(path) == [{"a": 1}, {"b": [1, 2], "c": None, "d": 0.5}]


def test_parent_directories_are_created(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "audit.jsonl"
    with AuditLog(path) as log:
        log.write({"x": 1})
    assert read_records(path) == [{"x": 1}]


def test_record_with_newlines_and_unicode_stays_one_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    record = {
        "preference": "Prefer: 用 pnpm\nnot npm\r\n\u2028and\u2029more",
        "anti_pattern": 'Avoid: "quotes" and \\ and \t tabs and \x00 nul',
        "emoji": "🚀",
        "nested": {"lines": ["a\nb", "c"]},
    }
    with AuditLog(path) as log:
        log.write(record)
    lines = read_lines(path)
    assert len(lines) == 1
    assert json.loads(lines[0]) == record


def test_values_json_cannot_encode_are_written_as_text(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    when = dt.datetime(2026, 1, 2, 3, 4, 5)
    with AuditLog(path) as log:
        log.write({"when": when, "ids": ("a", "b")})
    assert read_records(path) == [{"when": str(when), "ids": ["a", "b"]}]


def test_non_mapping_record_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        for bad in (["a"], "text", None, 3):
            with pytest.raises(InvalidInputError):
                log.write(bad)  # type: ignore[arg-type]
    assert read_lines(path) == []


def test_eight_threads_times_one_thousand_writes(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    threads_n, writes_n = 8, 1_000

    with AuditLog(path) as log:

        def work(t: int) -> None:
            for i in range(writes_n):
                # sizes vary so a torn write would show as a broken line
                log.write({"thread": t, "seq": i, "pad": "x" * ((t * 131 + i * 17) % 3_000)})

        errors = run_threads(work, threads_n)
    assert errors == []

    records = read_records(path)  # every line parses as one whole object
    assert len(records) == threads_n * writes_n
    per_thread: dict[int, list[int]] = {t: [] for t in range(threads_n)}
    for r in records:
        assert set(r) == {"thread", "seq", "pad"}
        assert r["pad"] == "x" * ((r["thread"] * 131 + r["seq"] * 17) % 3_000)
        per_thread[r["thread"]].append(r["seq"])
    for seqs in per_thread.values():
        assert seqs == list(range(writes_n))  # each thread's lines in its own order, none lost


def test_two_logs_on_one_file_do_not_interleave(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    logs = [AuditLog(path), AuditLog(path)]
    try:

        def work(n: int) -> None:
            for i in range(500):
                logs[n % 2].write({"w": n, "i": i, "pad": "y" * 2_000})

        assert run_threads(work, 4) == []
    finally:
        for log in logs:
            log.close()
    records = read_records(path)
    assert len(records) == 2_000
    assert {(r["w"], r["i"]) for r in records} == {(n, i) for n in range(4) for i in range(500)}


def test_appending_never_truncates(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text('{"earlier": "written by someone else"}\n', encoding="utf-8")
    with AuditLog(path) as log:
        log.write({"n": 1})
    with AuditLog(path) as log:
        log.write({"n": 2})
    with AuditLog(path):
        pass  # opening alone changes nothing
    assert read_records(path) == [{"earlier": "written by someone else"}, {"n": 1}, {"n": 2}]


def test_closed_log_raises_a_library_error(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.write({"n": 1})
    log.close()
    with pytest.raises(MemosFeedbackError, match="closed"):
        log.write({"n": 2})
    with pytest.raises(MemosFeedbackError):
        log.write_event(RepairSkipped(context_hash="h", trigger="manual", reason="r"))
    log.close()  # closing twice is fine
    assert read_records(path) == [{"n": 1}]


ALL_EVENTS: list[FeedbackEvent] = [
    RepairTriggered(context_hash="h", trigger="failure-burst", failure_count=3),
    RepairPersisted(context_hash="h", repair_id="dr1", confidence=0.6, severity="warn"),
    RepairSkipped(context_hash="h", trigger="manual", reason="cooldown"),
    RepairAttached(repair_id="dr1", policy_ids=("p1", "p2")),
    FeedbackClassified(shape="negative", confidence=0.8),
    RepairJobFailed(context_hash="h", error="boom"),
    RepairJobRetrying(job_id="j", context_hash="h", attempt=1, next_attempt_at=10, error="busy"),
    RepairJobDead(job_id="j", context_hash="h", attempts=5, error="boom"),
    RepairJobDiscarded(job_id="j", context_hash="h", reason="stale"),
    RepairReviewed(repair_id="dr1", verdict="validated"),
    RepairJobRequeued(job_id="j", context_hash="h"),
    RepairJobPurged(job_id="j"),
    # Outcomes (issue 11): not audited (the outcome tables are their record).
    RepairOutcome(repair_id="dr1", session_id="s", outcome="held"),
    RepairStale(repair_id="dr1", recurrences=3),
    RepairReviewFlagged(repair_id="dr1", recurrences=3),
    RepairSuperseded(repair_id="dr1", superseded_by="dr2", reason="prefers what it avoided"),
    RepairDeleted(repair_id="dr1", policy_ids=("p1",)),
]


def test_attach_records_only_persisted_and_attached(tmp_path: Path, bus: FeedbackBus) -> None:
    assert {e.kind for e in ALL_EVENTS} == set(EVENT_KINDS)
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.attach(bus)
        for event in ALL_EVENTS:
            bus.emit(event)
    records = read_records(path)
    assert [r["kind"] for r in records] == ["repair.persisted", "repair.attached"]
    assert records[0] == event_to_dict(ALL_EVENTS[1])
    assert records[1] == {**event_to_dict(ALL_EVENTS[3]), "policy_ids": ["p1", "p2"]}
    assert next(iter(records[0])) == "kind"


def test_close_detaches_from_the_bus(tmp_path: Path, bus: FeedbackBus) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.attach(bus)
    assert bus.listener_count("repair.persisted") == 1
    assert bus.listener_count("repair.attached") == 1
    bus.emit(ALL_EVENTS[1])
    log.close()
    assert bus.listener_count("repair.persisted") == 0
    assert bus.listener_count("repair.attached") == 0
    bus.emit(ALL_EVENTS[1])  # no error, nothing written
    assert len(read_lines(path)) == 1


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (every write fails: ENOSPC)")
def test_audit_failure_never_breaks_the_bus(bus: FeedbackBus, caplog: pytest.LogCaptureFixture) -> None:
    got: list[FeedbackEvent] = []
    with AuditLog("/dev/full") as log:
        log.attach(bus)
        bus.on_any(got.append)
        with caplog.at_level("ERROR", logger="memos_feedback.audit"):
            bus.emit(ALL_EVENTS[1])  # the write fails; emit must not raise
    assert got == [ALL_EVENTS[1]]
    failures = [r for r in caplog.records if r.name == "memos_feedback.audit"]
    assert len(failures) == 1
    assert "repair.persisted" in failures[0].getMessage()
    error = failures[0].exc_info[1] if failures[0].exc_info else None
    assert isinstance(error, AuditLogError) and isinstance(error.__cause__, OSError)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (every write fails: ENOSPC)")
def test_a_failed_write_is_a_library_error_for_a_direct_caller() -> None:
    with AuditLog("/dev/full") as log, pytest.raises(AuditLogError, match="cannot append") as caught:
        log.write({"n": 1})
    assert caught.value.path == "/dev/full" and isinstance(caught.value.__cause__, OSError)


def test_an_unopenable_path_is_a_library_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory is expected")
    with pytest.raises(AuditLogError, match="cannot open"):
        AuditLog(blocker / "audit.jsonl")
    with pytest.raises(MemosFeedbackError):
        AuditLog(tmp_path)  # a directory, not a file
