"""Rows written straight into a test database (bulk inserts, no pipeline)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert

from memos_feedback.store.models import DecisionRepairModel
from memos_feedback.types import new_id, now_ms

if TYPE_CHECKING:
    from memos_feedback.store import Store

__all__ = ["global_embedded_repairs", "repair_row"]


def repair_row(i: int, **values: Any) -> dict[str, Any]:
    """A ``decision_repairs`` row with every required column (number ``i``), overridden by ``values``."""
    row: dict[str, Any] = dict(
        id=new_id("dr_"),
        ts=now_ms(),
        context_hash=f"h{i}",
        trigger="manual",
        severity="warn",
        confidence=0.5,
        preference=f"lesson {i}",
        anti_pattern=f"mistake {i}",
        high_value_trace_ids=[],
        low_value_trace_ids=[],
    )
    row.update(values)
    return row


def global_embedded_repairs(
    store: Store, model: str, vectors: Iterable[Any], start: int = 0, tag: str = "v"
) -> list[str]:
    """One global repair per vector (embedded by ``model``), inserted in bulk; their ids in order."""
    from memos_feedback.embeddings import pack

    rows = [
        repair_row(
            start + i,
            context_hash=f"{tag}-{start + i}",
            project=None,
            embedding_model=model,
            embedding=pack(vec),
        )
        for i, vec in enumerate(vectors)
    ]
    with store.session(write=True) as s:
        for begin in range(0, len(rows), 2_000):
            s.execute(insert(DecisionRepairModel), rows[begin : begin + 2_000])
    return [str(row["id"]) for row in rows]
