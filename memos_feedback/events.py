"""``FeedbackBus``: every pipeline step announced as a typed event.

Built on blinker signals in a private ``Namespace`` (never blinker's global
one, so two buses — or two libraries — never see each other's events).
Receivers are held strongly: a lambda subscribed by a UI must not vanish
when the garbage collector runs. blinker's own ``send`` stops at the first
receiver that raises, so ``emit`` walks the receivers itself and isolates
each one.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from blinker import Namespace

from .errors import InvalidInputError
from .types import now_ms

__all__ = [
    "EVENT_KINDS",
    "FeedbackBus",
    "FeedbackClassified",
    "FeedbackEvent",
    "Listener",
    "RepairAttached",
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
    """Typed events over blinker; listeners are isolated from each other."""

    _ANY_KIND = "*"

    def __init__(self) -> None:
        self._namespace = Namespace()
        self._lock = threading.Lock()

    def on(self, kind: str, fn: Listener) -> Callable[[], None]:
        """Call ``fn(event)`` for every event of ``kind``; returns an unsubscribe callable."""
        if kind not in EVENT_KINDS:
            raise InvalidInputError(f"unknown event kind {kind!r}; known: {sorted(EVENT_KINDS)}")
        return self._connect(kind, fn)

    def on_any(self, fn: Listener) -> Callable[[], None]:
        """Call ``fn(event)`` for every event; returns an unsubscribe callable."""
        return self._connect(self._ANY_KIND, fn)

    def _connect(self, name: str, fn: Listener) -> Callable[[], None]:
        if not callable(fn):
            raise InvalidInputError(f"listener must be callable, got {fn!r}")
        signal = self._namespace.signal(name)
        with self._lock:
            signal.connect(fn, weak=False)

        def unsubscribe() -> None:
            with self._lock:
                signal.disconnect(fn)

        return unsubscribe

    def emit(self, event: FeedbackEvent) -> None:
        """Deliver ``event`` to its kind's listeners, then to catch-all ones,
        each group in subscription order.

        A listener that raises is logged and skipped; the others still run
        and the caller never sees the error.
        """
        with self._lock:
            receivers = [
                *self._receivers(event.kind),
                *self._receivers(self._ANY_KIND),
            ]
        for receiver in receivers:
            try:
                receiver(event)
            except Exception:
                logger.exception("event listener %r failed on %s", receiver, event.kind)

    def _receivers(self, name: str) -> list[Callable[..., Any]]:
        # ``Signal.receivers`` is a dict in connection order; blinker's
        # ``receivers_for`` walks a set, so its order would be arbitrary.
        # Every receiver is connected strongly (weak=False), never a weakref.
        return [r for r in self._namespace.signal(name).receivers.values() if not isinstance(r, weakref.ref)]

    def listener_count(self, kind: str | None = None) -> int:
        """Listeners for ``kind`` (catch-all ones when None)."""
        name = self._ANY_KIND if kind is None else kind
        with self._lock:
            return len(self._namespace.signal(name).receivers)
