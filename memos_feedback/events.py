"""``FeedbackBus``: every pipeline step announced as a typed event.

Each bus owns its listeners: per kind, a tuple in subscription order,
replaced (never mutated) under a lock, so ``emit`` delivers in order
without holding the lock while listeners run. Two buses never see each
other's events. Listeners are held strongly: a lambda subscribed by a UI
must not vanish when the garbage collector runs. A listener that raises is
logged and skipped, so one broken listener never stops the others.

(A signal library would do the connecting, but none delivers in
subscription order through its public API, and that order is part of this
bus's contract.)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from .errors import InvalidInputError
from .types import now_ms

__all__ = [
    "EVENT_KINDS",
    "FeedbackBus",
    "FeedbackClassified",
    "FeedbackEvent",
    "Listener",
    "RepairAttached",
    "RepairDeleted",
    "RepairJobDead",
    "RepairJobDiscarded",
    "RepairJobFailed",
    "RepairJobPurged",
    "RepairJobRequeued",
    "RepairJobRetrying",
    "RepairOutcome",
    "RepairPersisted",
    "RepairReviewFlagged",
    "RepairReviewed",
    "RepairSkipped",
    "RepairStale",
    "RepairSuperseded",
    "RepairTriggered",
    "event_to_dict",
]

logger = logging.getLogger("memos_feedback.events")


@dataclass(frozen=True, slots=True, kw_only=True)
class FeedbackEvent:
    """Base of every event; ``at`` is epoch milliseconds."""

    kind: ClassVar[str] = ""
    at: int = field(default_factory=now_ms)


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairTriggered(FeedbackEvent):
    kind: ClassVar[str] = "repair.triggered"
    context_hash: str
    trigger: str
    failure_count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairPersisted(FeedbackEvent):
    kind: ClassVar[str] = "repair.persisted"
    context_hash: str
    repair_id: str
    confidence: float
    severity: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairSkipped(FeedbackEvent):
    kind: ClassVar[str] = "repair.skipped"
    context_hash: str
    trigger: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairAttached(FeedbackEvent):
    kind: ClassVar[str] = "repair.attached"
    repair_id: str
    policy_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class FeedbackClassified(FeedbackEvent):
    kind: ClassVar[str] = "feedback.classified"
    shape: str
    confidence: float


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairJobFailed(FeedbackEvent):
    kind: ClassVar[str] = "repair.job.failed"
    context_hash: str
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairJobRetrying(FeedbackEvent):
    kind: ClassVar[str] = "repair.job.retrying"
    job_id: str
    context_hash: str
    attempt: int
    next_attempt_at: int
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairJobDead(FeedbackEvent):
    kind: ClassVar[str] = "repair.job.dead"
    job_id: str
    context_hash: str
    attempts: int
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairJobDiscarded(FeedbackEvent):
    kind: ClassVar[str] = "repair.job.discarded"
    job_id: str
    context_hash: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairReviewed(FeedbackEvent):
    """An operator validated or rejected a repair (``verdict``: ``validated`` / ``rejected``)."""

    kind: ClassVar[str] = "repair.reviewed"
    repair_id: str
    verdict: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairDeleted(FeedbackEvent):
    """An operator deleted a repair for good (``repairs delete``, ``purge``); its blocks: ``policy_ids``."""

    kind: ClassVar[str] = "repair.deleted"
    repair_id: str
    policy_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairJobRequeued(FeedbackEvent):
    """An operator made a job pending again (``queue retry``)."""

    kind: ClassVar[str] = "repair.job.requeued"
    job_id: str
    context_hash: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairJobPurged(FeedbackEvent):
    """An operator deleted a job (``queue purge``)."""

    kind: ClassVar[str] = "repair.job.purged"
    job_id: str


# -- outcomes (memos_feedback.outcomes) -------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairOutcome(FeedbackEvent):
    """A serving of a repair was settled (committed): held, recurred or contradicted."""

    kind: ClassVar[str] = "repair.outcome"
    repair_id: str
    session_id: str
    outcome: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairStale(FeedbackEvent):
    """A repair stopped applying: it left guidance and every policy block."""

    kind: ClassVar[str] = "repair.stale"
    repair_id: str
    recurrences: int
    policy_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairReviewFlagged(FeedbackEvent):
    """A validated repair kept recurring: it stays, flagged for a person to review."""

    kind: ClassVar[str] = "repair.review_flagged"
    repair_id: str
    recurrences: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairSuperseded(FeedbackEvent):
    """A newer repair contradicts an older one of the same scope; the older one is retired."""

    kind: ClassVar[str] = "repair.superseded"
    repair_id: str
    superseded_by: str
    reason: str
    policy_ids: tuple[str, ...] = ()


_EVENT_TYPES: tuple[type[FeedbackEvent], ...] = (
    RepairTriggered,
    RepairPersisted,
    RepairSkipped,
    RepairAttached,
    FeedbackClassified,
    RepairJobFailed,
    RepairJobRetrying,
    RepairJobDead,
    RepairJobDiscarded,
    RepairReviewed,
    RepairDeleted,
    RepairJobRequeued,
    RepairJobPurged,
    RepairOutcome,
    RepairStale,
    RepairReviewFlagged,
    RepairSuperseded,
)
EVENT_KINDS: frozenset[str] = frozenset(t.kind for t in _EVENT_TYPES)

Listener = Callable[[FeedbackEvent], Any]


_FIELD_NAMES: dict[type[FeedbackEvent], tuple[str, ...]] = {}


def _field_names(cls: type[FeedbackEvent]) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:  # a race only computes the same tuple twice
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def event_to_dict(event: FeedbackEvent) -> dict[str, Any]:
    """A JSON-ready dict with the event's ``kind`` first."""
    # Not dataclasses.asdict: it deep-copies every value, and an event's
    # fields are all immutable (str, numbers, tuples of str). This runs for
    # every event logged, twice per repair on the worker's path.
    data = {name: getattr(event, name) for name in _field_names(type(event))}
    return {"kind": event.kind, **data}


class FeedbackBus:
    """Typed events to listeners that are isolated from each other."""

    _ANY_KIND = "*"

    def __init__(self) -> None:
        self._listeners: dict[str, tuple[Listener, ...]] = {}
        self._lock = threading.Lock()

    def on(self, kind: str, fn: Listener) -> Callable[[], None]:
        """Call ``fn(event)`` for every event of ``kind``; returns an unsubscribe callable."""
        if not isinstance(kind, str) or kind not in EVENT_KINDS:
            raise InvalidInputError(f"unknown event kind {kind!r:.80}; known: {sorted(EVENT_KINDS)}")
        return self._connect(kind, fn)

    def on_any(self, fn: Listener) -> Callable[[], None]:
        """Call ``fn(event)`` for every event; returns an unsubscribe callable."""
        return self._connect(self._ANY_KIND, fn)

    def _connect(self, name: str, fn: Listener) -> Callable[[], None]:
        if not callable(fn):
            raise InvalidInputError(f"listener must be callable, got {fn!r}")
        with self._lock:
            current = self._listeners.get(name, ())
            if fn not in current:  # subscribing twice delivers once
                self._listeners[name] = (*current, fn)

        def unsubscribe() -> None:
            with self._lock:
                self._listeners[name] = tuple(r for r in self._listeners.get(name, ()) if r != fn)

        return unsubscribe

    def emit(self, event: FeedbackEvent) -> None:
        """Deliver ``event`` to its kind's listeners, then to catch-all ones,
        each group in subscription order.

        A listener that raises is logged and skipped; the others still run
        and the caller never sees the error.
        """
        with self._lock:
            receivers = self._listeners.get(event.kind, ()) + self._listeners.get(self._ANY_KIND, ())
        for receiver in receivers:
            try:
                receiver(event)
            except Exception:
                logger.exception("event listener %r failed on %s", receiver, event.kind)

    def listener_count(self, kind: str | None = None) -> int:
        """Listeners for ``kind`` (catch-all ones when None)."""
        name = self._ANY_KIND if kind is None else kind
        with self._lock:
            return len(self._listeners.get(name, ()))
