"""Rows written straight into a test database (bulk inserts, no pipeline)."""

from __future__ import annotations

from typing import Any

from memos_feedback.store.rows import new_id, now_ms

__all__ = ["repair_row"]


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
