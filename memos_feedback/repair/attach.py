"""``attach_repair_to_policies``: merge a repair into its policies' boundaries (PIPELINE.md §7)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..errors import InvalidInputError
from ..store.handles import Session
from ..store.reads import Executor
from ..store.repositories import merge_boundaries
from ..text.blocks import merge_repair_block
from ..text.logs import library_logger

if TYPE_CHECKING:
    from ..store import Store
    from ..types import DecisionRepairDraft

__all__ = ["attach_in", "attach_repair_to_policies"]

logger = library_logger("memos_feedback.repair")


def attach_repair_to_policies(
    draft: DecisionRepairDraft, store: Store, *, session: Session | None = None
) -> tuple[str, ...]:
    """Merge the draft's two lines into each target policy's ``@repair`` block.

    Returns the ids of the policies whose boundary actually changed. Each
    policy is rewritten under its row lock, in id order (a fixed lock
    order, so concurrent attachments cannot deadlock). A policy that has
    disappeared is skipped, not an error.
    """
    from ..types import DecisionRepairDraft  # runtime import: synthesize is the heavier module

    if not isinstance(draft, DecisionRepairDraft):
        raise InvalidInputError(f"draft must be a DecisionRepairDraft, got {type(draft).__name__}")
    if not callable(getattr(getattr(store, "policies", None), "update_boundary", None)):
        raise InvalidInputError(f"store must be a Store, got {type(store).__name__}")
    with store.session(write=True, action="attaching a repair", session=session) as s:
        return attach_in(s, draft)


@functools.lru_cache(maxsize=256)
def _merged(boundary: str, preference: str, anti_pattern: str) -> str | None:
    # The same two lines often meet the same boundary again (repairs of a
    # context repeat their lines; a boundary that already holds them does
    # not change): parse, merge and render once per distinct triple.
    # merge_repair_block is a pure function of its arguments, so this is
    # exact; an error it raises is not cached and is raised again.
    return merge_repair_block(boundary, [preference], [anti_pattern])


def attach_in(
    ex: Executor, draft: DecisionRepairDraft, known: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """``attach_repair_to_policies`` inside the caller's transaction (session or connection).

    ``known``: boundaries read earlier in the same write transaction (see
    ``merge_boundaries``).
    """
    ids = set(draft.attach_to_policy_ids)
    found, changed = merge_boundaries(
        ex, ids, lambda boundary: _merged(boundary, draft.preference, draft.anti_pattern), known
    )
    if found < len(ids):
        logger.warning("%d policy(ies) vanished before the repair could be attached", len(ids) - found)
    return tuple(row.id for row in changed)
