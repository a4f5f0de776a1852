"""Rows as callers see them: frozen dataclasses, detached from any session.

Repositories convert ORM objects into these so that nothing a caller holds
can lazily touch the database after the session is gone.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from dataclasses import dataclass, field

__all__ = [
    "DecisionRepairRow",
    "PolicyRow",
    "ToolCall",
    "TraceRow",
    "new_id",
    "now_ms",
]


def now_ms() -> int:
    """Wall-clock time in epoch milliseconds (the unit of every ``ts``)."""
    return time.time_ns() // 1_000_000


_counter = itertools.count()
_counter_lock = threading.Lock()
_PID_SALT = os.getpid() & 0xFFFF


def new_id(prefix: str) -> str:
    """A short id that sorts by creation time within a process.

    12 hex digits of epoch ms, 4 of the process id, 6 of a process-local
    counter: ``ORDER BY id`` breaks ties between rows written in the same
    millisecond in the order they were written.
    """
    with _counter_lock:
        n = next(_counter) & 0xFFFFFF
    return f"{prefix}{now_ms():012x}{_PID_SALT:04x}{n:06x}"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of a trace; ``error_code`` is set when it failed."""

    name: str
    error_code: str | None = None


@dataclass(frozen=True, slots=True)
class TraceRow:
    id: str
    session_id: str
    episode_id: str | None
    ts: int
    user_text: str
    agent_text: str
    reflection: str | None
    value: float
    tool_calls: tuple[ToolCall, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class PolicyRow:
    id: str
    title: str
    boundary: str
    status: str
    source_episode_ids: tuple[str, ...]
    updated_at: int


@dataclass(frozen=True, slots=True)
class DecisionRepairRow:
    id: str
    ts: int
    context_hash: str
    tool_id: str | None
    context: str | None
    trigger: str
    session_id: str | None
    preference: str
    anti_pattern: str
    severity: str
    confidence: float
    high_value_trace_ids: tuple[str, ...]
    low_value_trace_ids: tuple[str, ...]
    validated: bool
    rejected: bool
    # Recall (migration 0005): what kind of lesson, and the project it
    # belongs to (None = global). Defaults keep older constructors working.
    category: str | None = None
    project: str | None = None
    # Outcomes (migration 0008): "active", "stale" or "superseded".
    status: str = "active"
    superseded_by: str | None = None
    review_flagged_at: int | None = None
