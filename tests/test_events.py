"""``FeedbackBus`` and the event types (PIPELINE.md §8)."""

from __future__ import annotations

import dataclasses
import gc
import json
import logging
import threading
import time
import weakref
from typing import Any

import blinker
import pytest

from memos_feedback.errors import InvalidInputError
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

# One sample of every event kind, with its payload as PIPELINE.md §8 names it.
SAMPLES: dict[str, tuple[FeedbackEvent, dict[str, Any]]] = {
    "repair.triggered": (
        RepairTriggered(context_hash="h", trigger="failure-burst", failure_count=3),
        {"context_hash": "h", "trigger": "failure-burst", "failure_count": 3},
    ),
    "repair.persisted": (
        RepairPersisted(context_hash="h", repair_id="dr1", confidence=0.6, severity="warn"),
        {"context_hash": "h", "repair_id": "dr1", "confidence": 0.6, "severity": "warn"},
    ),
    "repair.skipped": (
        RepairSkipped(context_hash="h", trigger="manual", reason="cooldown"),
        {"context_hash": "h", "trigger": "manual", "reason": "cooldown"},
    ),
    "repair.attached": (
        RepairAttached(repair_id="dr1", policy_ids=("p1", "p2")),
        {"repair_id": "dr1", "policy_ids": ("p1", "p2")},
    ),
    "feedback.classified": (
        FeedbackClassified(shape="correction", confidence=0.9),
        {"shape": "correction", "confidence": 0.9},
    ),
    "repair.job.failed": (
        RepairJobFailed(context_hash="h", error="boom"),
        {"context_hash": "h", "error": "boom"},
    ),
    "repair.job.retrying": (
        RepairJobRetrying(job_id="j1", context_hash="h", attempt=2, next_attempt_at=5, error="busy"),
        {"job_id": "j1", "context_hash": "h", "attempt": 2, "next_attempt_at": 5, "error": "busy"},
    ),
    "repair.job.dead": (
        RepairJobDead(job_id="j1", context_hash="h", attempts=5, error="boom"),
        {"job_id": "j1", "context_hash": "h", "attempts": 5, "error": "boom"},
    ),
    "repair.job.discarded": (
        RepairJobDiscarded(job_id="j1", context_hash="h", reason="stale"),
        {"job_id": "j1", "context_hash": "h", "reason": "stale"},
    ),
    "repair.reviewed": (
        RepairReviewed(repair_id="dr_1", verdict="validated"),
        {"repair_id": "dr_1", "verdict": "validated"},
    ),
    "repair.job.requeued": (
        RepairJobRequeued(job_id="j1", context_hash="h"),
        {"job_id": "j1", "context_hash": "h"},
    ),
    "repair.job.purged": (RepairJobPurged(job_id="j1"), {"job_id": "j1"}),
    "repair.deleted": (
        RepairDeleted(repair_id="dr_1", policy_ids=("p1",)),
        {"repair_id": "dr_1", "policy_ids": ("p1",)},
    ),
    # Outcomes (issue 11).
    "repair.outcome": (
        RepairOutcome(repair_id="dr1", session_id="s1", outcome="held"),
        {"repair_id": "dr1", "session_id": "s1", "outcome": "held"},
    ),
    "repair.stale": (
        RepairStale(repair_id="dr1", recurrences=3, policy_ids=("p1",)),
        {"repair_id": "dr1", "recurrences": 3, "policy_ids": ("p1",)},
    ),
    "repair.review_flagged": (
        RepairReviewFlagged(repair_id="dr1", recurrences=3),
        {"repair_id": "dr1", "recurrences": 3},
    ),
    "repair.superseded": (
        RepairSuperseded(repair_id="dr1", superseded_by="dr2", reason="prefers what it avoided"),
        {"repair_id": "dr1", "superseded_by": "dr2", "reason": "prefers what it avoided", "policy_ids": ()},
    ),
}
SPEC_KINDS = {
    "repair.triggered",
    "repair.persisted",
    "repair.skipped",
    "repair.attached",
    "feedback.classified",
    "repair.job.failed",
}


def sample(kind: str) -> FeedbackEvent:
    return SAMPLES[kind][0]


def test_samples_cover_every_kind() -> None:
    assert set(SAMPLES) == set(EVENT_KINDS)
    assert SPEC_KINDS <= EVENT_KINDS
    for kind, (event, _payload) in SAMPLES.items():
        assert event.kind == kind


# -- delivery -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_event_reaches_kind_and_catch_all_listeners(bus: FeedbackBus, kind: str) -> None:
    got_kind: list[FeedbackEvent] = []
    got_any: list[FeedbackEvent] = []
    got_other: list[FeedbackEvent] = []
    bus.on(kind, got_kind.append)
    bus.on_any(got_any.append)
    other = next(k for k in sorted(EVENT_KINDS) if k != kind)
    bus.on(other, got_other.append)

    event = sample(kind)
    bus.emit(event)
    assert got_kind == [event]
    assert got_any == [event]
    assert got_kind[0] is event  # the same frozen object, not a copy
    assert got_other == []


def test_listeners_run_in_subscription_order_kind_before_catch_all(bus: FeedbackBus) -> None:
    calls: list[str] = []
    bus.on_any(lambda e: calls.append("any-1"))
    for i in range(8):
        bus.on("repair.skipped", lambda e, i=i: calls.append(f"kind-{i}"))
    bus.on_any(lambda e: calls.append("any-2"))
    bus.emit(sample("repair.skipped"))
    assert calls == [f"kind-{i}" for i in range(8)] + ["any-1", "any-2"]


def test_emit_without_listeners_is_a_no_op(bus: FeedbackBus) -> None:
    bus.emit(sample("repair.persisted"))
    assert bus.listener_count("repair.persisted") == 0
    assert bus.listener_count() == 0


# -- isolation of failing listeners -------------------------------------------------------


def boom(_event: FeedbackEvent) -> None:
    raise RuntimeError("listener exploded")


@pytest.mark.parametrize("raising_first", [True, False], ids=["raising-first", "raising-last"])
def test_raising_listener_is_logged_and_the_others_run(
    bus: FeedbackBus, caplog: pytest.LogCaptureFixture, raising_first: bool
) -> None:
    got: list[str] = []
    if raising_first:
        bus.on("repair.persisted", boom)
    bus.on("repair.persisted", lambda e: got.append("kind"))
    if not raising_first:
        bus.on("repair.persisted", boom)
    bus.on_any(lambda e: got.append("any"))

    with caplog.at_level(logging.ERROR, logger="memos_feedback.events"):
        bus.emit(sample("repair.persisted"))  # does not raise
    assert got == ["kind", "any"]
    errors = [r for r in caplog.records if r.name == "memos_feedback.events"]
    assert len(errors) == 1
    assert errors[0].levelno == logging.ERROR
    assert errors[0].exc_info is not None
    assert isinstance(errors[0].exc_info[1], RuntimeError)
    assert "repair.persisted" in errors[0].getMessage()


@pytest.mark.parametrize("raising_first", [True, False], ids=["raising-first", "raising-last"])
def test_raising_catch_all_listener_is_isolated(
    bus: FeedbackBus, caplog: pytest.LogCaptureFixture, raising_first: bool
) -> None:
    got: list[str] = []
    if raising_first:
        bus.on_any(boom)
    bus.on_any(lambda e: got.append("any"))
    if not raising_first:
        bus.on_any(boom)
    bus.on("repair.skipped", lambda e: got.append("kind"))
    with caplog.at_level(logging.ERROR, logger="memos_feedback.events"):
        bus.emit(sample("repair.skipped"))
        bus.emit(sample("repair.skipped"))
    assert got == ["kind", "any", "kind", "any"]
    assert len([r for r in caplog.records if r.name == "memos_feedback.events"]) == 2


def test_every_raising_listener_is_logged(bus: FeedbackBus, caplog: pytest.LogCaptureFixture) -> None:
    got: list[FeedbackEvent] = []
    bus.on("repair.attached", boom)
    bus.on("repair.attached", lambda e: 1 / 0)
    bus.on("repair.attached", got.append)
    with caplog.at_level(logging.ERROR, logger="memos_feedback.events"):
        bus.emit(sample("repair.attached"))
    assert got == [sample("repair.attached")]
    kinds = [type(r.exc_info[1]) for r in caplog.records if r.exc_info]
    assert kinds == [RuntimeError, ZeroDivisionError]


# -- subscribe / unsubscribe -------------------------------------------------------------


def test_unsubscribe_stops_delivery_and_is_idempotent(bus: FeedbackBus) -> None:
    got: list[FeedbackEvent] = []
    off = bus.on("repair.triggered", got.append)
    off_any = bus.on_any(got.append)
    bus.emit(sample("repair.triggered"))
    assert len(got) == 2
    off()
    bus.emit(sample("repair.triggered"))
    assert len(got) == 3  # only the catch-all one
    off_any()
    off_any()
    off()
    bus.emit(sample("repair.triggered"))
    assert len(got) == 3
    assert bus.listener_count("repair.triggered") == 0
    assert bus.listener_count() == 0


def test_unsubscribe_leaves_other_listeners(bus: FeedbackBus) -> None:
    a: list[FeedbackEvent] = []
    b: list[FeedbackEvent] = []
    off_a = bus.on("repair.skipped", a.append)
    bus.on("repair.skipped", b.append)
    assert bus.listener_count("repair.skipped") == 2
    off_a()
    bus.emit(sample("repair.skipped"))
    assert (a, b) == ([], [sample("repair.skipped")])
    assert bus.listener_count("repair.skipped") == 1


def test_listener_may_unsubscribe_itself_while_being_called(bus: FeedbackBus) -> None:
    got: list[str] = []
    handle: dict[str, Any] = {}

    def once(_event: FeedbackEvent) -> None:
        got.append("once")
        handle["off"]()

    handle["off"] = bus.on("repair.skipped", once)
    bus.on("repair.skipped", lambda e: got.append("always"))
    bus.emit(sample("repair.skipped"))
    bus.emit(sample("repair.skipped"))
    assert got == ["once", "always", "always"]


def test_unknown_kind_is_rejected(bus: FeedbackBus) -> None:
    with pytest.raises(InvalidInputError, match=r"repair\.persist"):
        bus.on("repair.persist", print)
    with pytest.raises(InvalidInputError):
        bus.on("*", print)
    assert bus.listener_count() == 0


def test_non_callable_listener_is_rejected(bus: FeedbackBus) -> None:
    with pytest.raises(InvalidInputError):
        bus.on("repair.persisted", "not callable")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        bus.on_any(None)  # type: ignore[arg-type]


# -- strong references ---------------------------------------------------------------------


class Recorder:
    def __init__(self, sink: list[FeedbackEvent]) -> None:
        self.sink = sink

    def record(self, event: FeedbackEvent) -> None:
        self.sink.append(event)


def test_listeners_are_held_strongly(bus: FeedbackBus) -> None:
    sink: list[FeedbackEvent] = []
    bus.on("repair.persisted", lambda e: sink.append(e))
    bus.on("repair.persisted", Recorder(sink).record)  # no other reference to the Recorder
    bus.on_any(Recorder(sink).record)
    gc.collect()
    gc.collect()
    bus.emit(sample("repair.persisted"))
    assert len(sink) == 3
    assert bus.listener_count("repair.persisted") == 2


def test_unsubscribed_listener_can_be_collected(bus: FeedbackBus) -> None:
    recorder = Recorder([])
    ref = weakref.ref(recorder)
    off = bus.on("repair.persisted", recorder.record)
    del recorder
    gc.collect()
    assert ref() is not None  # the bus keeps it alive
    off()
    del off  # the handle itself refers to the listener
    gc.collect()
    assert ref() is None  # and the bus lets it go once unsubscribed


# -- isolation between buses -----------------------------------------------------------------


def test_two_buses_are_isolated() -> None:
    first, second = FeedbackBus(), FeedbackBus()
    got_first: list[FeedbackEvent] = []
    got_second: list[FeedbackEvent] = []
    first.on("repair.persisted", got_first.append)
    first.on_any(got_first.append)
    second.on("repair.skipped", got_second.append)
    first.emit(sample("repair.persisted"))
    assert got_second == []
    second.emit(sample("repair.persisted"))
    second.emit(sample("repair.skipped"))
    assert got_first == [sample("repair.persisted")] * 2
    assert got_second == [sample("repair.skipped")]


def test_bus_does_not_use_blinkers_global_namespace(bus: FeedbackBus) -> None:
    seen: list[Any] = []

    def spy(sender: Any, **kwargs: Any) -> None:
        seen.append(sender)

    global_signals = [blinker.signal(kind) for kind in EVENT_KINDS] + [blinker.signal("*")]
    for sig in global_signals:
        sig.connect(spy, weak=False)
    try:
        got: list[FeedbackEvent] = []
        bus.on("repair.persisted", got.append)
        for kind in EVENT_KINDS:
            bus.emit(sample(kind))
        assert seen == []
        assert len(got) == 1
        # and a send on the global signal never reaches the bus
        blinker.signal("repair.persisted").send(sample("repair.persisted"))
        assert len(got) == 1
    finally:
        for sig in global_signals:
            sig.disconnect(spy)


def test_concurrent_emit_and_subscribe(bus: FeedbackBus) -> None:
    counts = [0]
    lock = threading.Lock()

    def count(_e: FeedbackEvent) -> None:
        with lock:
            counts[0] += 1

    bus.on_any(count)
    offs: list[Any] = []

    def churn() -> None:
        for _ in range(200):
            offs.append(bus.on("repair.skipped", lambda e: None))
            offs.pop()()

    def emit() -> None:
        for _ in range(200):
            bus.emit(sample("repair.skipped"))

    threads = [threading.Thread(target=churn), threading.Thread(target=emit), threading.Thread(target=emit)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counts[0] == 400
    assert bus.listener_count("repair.skipped") == 0


# -- event values ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_events_are_frozen_dataclasses_with_epoch_ms(kind: str) -> None:
    event, payload = SAMPLES[kind]
    assert dataclasses.is_dataclass(event)
    assert isinstance(event, FeedbackEvent)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.at = 0  # type: ignore[misc]
    field = next(iter(payload))
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(event, field, None)
    names = {f.name for f in dataclasses.fields(event)}
    assert names == {"at", *payload}
    assert isinstance(event.at, int)
    assert 1_600_000_000_000 < event.at <= int(time.time() * 1000) + 1


def test_at_defaults_to_now_and_can_be_given() -> None:
    before = int(time.time() * 1000)
    event = RepairSkipped(context_hash="h", trigger="manual", reason="cooldown")
    after = int(time.time() * 1000)
    assert before - 1 <= event.at <= after + 1
    assert RepairSkipped(context_hash="h", trigger="manual", reason="r", at=42).at == 42


def test_event_fields_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        RepairSkipped("h", "manual", "cooldown")  # type: ignore[misc]


def test_events_compare_and_hash_by_value() -> None:
    a = RepairAttached(repair_id="r", policy_ids=("p",), at=1)
    b = RepairAttached(repair_id="r", policy_ids=("p",), at=1)
    assert a == b
    assert hash(a) == hash(b)


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_event_to_dict(kind: str) -> None:
    event, payload = SAMPLES[kind]
    data = event_to_dict(event)
    assert next(iter(data)) == "kind"
    assert data == {"kind": kind, "at": event.at, **payload}
    # JSON-ready
    decoded = json.loads(json.dumps(data))
    assert decoded["kind"] == kind
    assert decoded["at"] == event.at
