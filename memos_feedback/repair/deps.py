"""What ``run_repair`` works with: its collaborators, and the hooks a
caller (the durable queue) gives it to commit its own state with the repair."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..config import FeedbackConfig
from ..embeddings import Embedder
from ..events import FeedbackBus
from ..recall.config import RecallConfig
from ..store import Store
from ..store.unit import EventWriter, Finalizer
from ..synthesis.llm import RepairLLM
from ..types import now_ms

# Finalizer and EventWriter are the store's (store/unit.py): a RepairUnit
# runs the one and hands rows back to the other.
__all__ = ["EventWriter", "Finalizer", "RepairDeps"]


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
    # The durable event log: repair.persisted/attached commit with the repair
    # (run_repair's own transactions; stage_repair logs through its unit's).
    events: EventWriter | None = None
