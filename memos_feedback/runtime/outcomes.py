"""``SubscriberOutcomes``: the outcome loop as ``FeedbackSubscriber`` drives it.

Servings are handed to the background recorder (``guidance_for`` on the
caller's thread writes nothing; the recorder commits them within
``buffer_flush_ms``). Tool steps and user messages settle open servings in
memory and hand the settlements over the same way. At start, servings the
database still holds open (younger than ``served_open_ms``) are tracked
again, so a settlement lost to a crash is made by the next signal instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import FeedbackConfig
from ..errors import StoreError
from ..events import FeedbackBus
from ..outcomes.ledger import open_servings, storable
from ..outcomes.recorder import OutcomeRecorder
from ..outcomes.states import HELD, RECURRED, Served, outcome_of_feedback, served_context
from ..outcomes.tracker import OpenServings
from ..store import Store
from ..text.logs import library_logger
from ..types import Shape, new_id, now_ms

if TYPE_CHECKING:
    from ..recall.guidance import Guidance

__all__ = ["SubscriberOutcomes"]

logger = library_logger("memos_feedback.outcomes")


class SubscriberOutcomes:
    def __init__(self, store: Store, bus: FeedbackBus, config: FeedbackConfig) -> None:
        self.open = OpenServings(config.max_tracked_contexts)
        self.recorder = OutcomeRecorder(
            store, bus, stale_after=config.stale_after_recurrences, flush_ms=config.buffer_flush_ms
        )
        try:
            reopened = open_servings(store, now_ms() - config.served_open_ms)
        except StoreError as exc:  # a start must not fail on bookkeeping
            logger.warning("could not reload open servings: %s", exc)
            reopened = []
        self.open.add(reopened)

    def served(self, guidance: Guidance, session_id: str, tool_id: str | None, context: str | None) -> None:
        if not guidance.items:
            return
        context = served_context(context)
        if not storable(session_id, tool_id, context):
            return
        ts = now_ms()
        fresh = self.open.add(
            Served(new_id("sv_"), item.repair_id, session_id, tool_id, context, ts) for item in guidance.items
        )
        if fresh:
            self.recorder.serve(fresh)

    def tool_step(self, session_id: str, tool_id: str, context: str, ok: bool) -> None:
        settled = self.open.on_tool(session_id, tool_id, context, HELD if ok else RECURRED, now_ms())
        if settled:
            self.recorder.settle(settled)

    def message(self, session_id: str, shape: Shape) -> None:
        kind = outcome_of_feedback(shape)
        if kind is None or not self.open.has(session_id):
            return
        settled = self.open.on_message(session_id, kind, now_ms())
        if settled:
            self.recorder.settle(settled)

    def pending(self) -> int:
        return self.recorder.pending()

    def close(self, timeout: float) -> int:
        return self.recorder.close(timeout)
