"""Recall's embedding columns: the reads of its in-process matrices and the backfill's reads and writes.

Recall keeps the vectors in memory (``recall.vectors``) and reads only the
rows embedded past the last id it holds; the backfill
(``recall.indexing.backfill``) walks the repairs lacking an embedding of a
model in id order and writes each batch's vectors back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Integer, String, bindparam, select, update

from ..engine import Prepared
from ..handles import Executor
from ..models import DecisionRepairModel

__all__ = ["ToEmbed", "embedded_after", "store_embedding", "to_embed"]

M = DecisionRepairModel

# Built once: recall's refresh runs on every call, usually to find nothing new.
_NEWER = (
    select(M.id, M.project, M.embedding)
    .where(
        M.id > bindparam("last_id", type_=String),
        M.embedding_model == bindparam("model", type_=String),
        M.embedding.is_not(None),
    )
    .order_by(M.id)
    .limit(bindparam("batch", type_=Integer))
)
# On SQLite's driver cursor (``Prepared``), for the same reason.
_NEWER_PREPARED = Prepared(_NEWER)


def embedded_after(ex: Executor, last_id: str, model: str, batch: int) -> Sequence[Sequence[Any]]:
    """Up to ``batch`` (id, project, embedding) of ``model``, ids past ``last_id``, in id order."""
    return _NEWER_PREPARED.all(ex, {"last_id": last_id, "model": model, "batch": batch})


class ToEmbed(NamedTuple):
    """A repair the backfill embeds: what its text is built from."""

    id: str
    preference: str
    anti_pattern: str
    tool_id: str | None
    context: str | None
    source_text: str | None


_TO_EMBED = select(M.id, M.preference, M.anti_pattern, M.tool_id, M.context, M.source_text).order_by(M.id)


def to_embed(ex: Executor, model: str, after: str, limit: int, *, redo: bool) -> list[ToEmbed]:
    """Up to ``limit`` repairs past id ``after`` without an embedding of ``model`` (any, with ``redo``)."""
    stmt = _TO_EMBED
    if not redo:
        stmt = stmt.where(M.embedding.is_(None) | M.embedding_model.is_(None) | (M.embedding_model != model))
    return [ToEmbed._make(r) for r in ex.execute(stmt.where(M.id > after).limit(limit))]


def store_embedding(ex: Executor, repair_id: str, values: dict[str, object]) -> None:
    """Write ``values`` (embedding, model, and maybe source text) into repair ``repair_id``."""
    ex.execute(update(M).where(M.id == repair_id).values(**values))
