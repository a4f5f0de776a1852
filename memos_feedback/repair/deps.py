"""What ``run_repair`` works with: its collaborators, and the hooks a
caller (the durable queue) gives it to commit its own state with the repair."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from ..config import FeedbackConfig
from ..events import FeedbackBus, FeedbackEvent
from ..recall.config import RecallConfig
from ..recall.embeddings import Embedder
from ..store import Store
from ..synthesis.llm import RepairLLM
from ..types import now_ms

__all__ = ["EventWriter", "Finalizer", "RepairDeps"]


# Called inside the persisting transaction (a Core connection), after the
# repair row is written; raising aborts (rolls back) the whole write.
Finalizer = Callable[[Connection, str], None]


class EventWriter(Protocol):
    """Logs events inside a transaction (``memos_feedback.store.event_log.FeedStore``)."""

    def write_in(
        self, session: Session | Connection, events: Sequence[FeedbackEvent] = ()
    ) -> list[dict[str, Any]]: ...

    def hand_back(self, rows: list[dict[str, Any]]) -> None: ...


_DEFAULT_RECALL = RecallConfig()


@dataclass(slots=True)
class RepairDeps:
    """Collaborators of ``run_repair``; only ``store`` is required."""

    store: Store
    config: FeedbackConfig = field(default_factory=FeedbackConfig)
    bus: FeedbackBus | None = None
    llm: RepairLLM | None = None
    # When set, each repair's embedding is computed here, in the worker, and
    # stored with it.
    embedder: Embedder | None = None
    # One shared default (RecallConfig is frozen): validating a fresh one
    # costs more than a template repair's synthesis, and the worker builds
    # deps for every job.
    recall: RecallConfig = field(default_factory=lambda: _DEFAULT_RECALL)
    clock: Callable[[], int] = now_ms
    # The durable queue sets these per job: retry transient LLM errors
    # instead of degrading, and commit the job's state with the repair.
    raise_transient: bool = False
    finalize: Finalizer | None = None
    # The durable event log: repair.persisted/attached commit with the repair.
    events: EventWriter | None = None
