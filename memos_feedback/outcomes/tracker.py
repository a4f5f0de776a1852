"""In-memory open servings per session: what the next tool step or message settles.

This sits on the agent's hot path. A session without open servings costs
one dict lookup; only a session with some takes a lock (servings are added
from the thread that asked for guidance, settled from the tool-step thread).
Bounded like the failure windows: past ``max_sessions`` the oldest session's
servings are forgotten in memory (their rows stay open in the database).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from .states import HELD, RECURRED, Served, Settlement, served_context

__all__ = ["OpenServings"]

# (tool_id, context); context None = any context of that tool.
_Key = tuple[str | None, str | None]


class OpenServings:
    def __init__(self, max_sessions: int) -> None:
        self._max = max_sessions
        self._by_session: dict[str, dict[_Key, dict[str, Served]]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return sum(len(v) for keys in list(self._by_session.values()) for v in list(keys.values()))

    def add(self, served: Iterable[Served]) -> list[Served]:
        """Track new servings; returns the ones that were not already open (same repair, same key)."""
        fresh: list[Served] = []
        with self._lock:
            for v in served:
                keys = self._by_session.setdefault(v.session_id, {})
                open_here = keys.setdefault((v.tool_id, v.context), {})
                if v.repair_id in open_here:
                    continue  # still waiting for its outcome: one exposure, not two
                open_here[v.repair_id] = v
                fresh.append(v)
            while len(self._by_session) > self._max:
                self._by_session.pop(next(iter(self._by_session)))
        return fresh

    @property
    def sessions(self) -> dict[str, dict[_Key, dict[str, Served]]]:
        """The live map (read-only for callers: a membership test on the hot path)."""
        return self._by_session

    def has(self, session_id: str) -> bool:
        return session_id in self._by_session

    def on_tool(self, session_id: str, tool_id: str, context: str, kind: str, ts: int) -> list[Settlement]:
        """A success (``held``) or a failure burst (``recurred``) of (tool, context)."""
        assert kind in (HELD, RECURRED)
        kept = served_context(context)  # as the servings keep it
        with self._lock:
            keys = self._by_session.get(session_id)
            if not keys:
                return []
            out: list[Served] = []
            for key in ((tool_id, kept), (tool_id, None)):
                open_here = keys.pop(key, None)
                if open_here:
                    out += open_here.values()
            if not keys:
                self._by_session.pop(session_id, None)
        return [Settlement(v.id, v.repair_id, v.session_id, kind, ts) for v in out]

    def on_message(self, session_id: str, kind: str, ts: int) -> list[Settlement]:
        """A user message about the turn: it settles every open serving of the session."""
        with self._lock:
            keys = self._by_session.pop(session_id, None)
        if not keys:
            return []
        return [
            Settlement(v.id, v.repair_id, v.session_id, kind, ts) for d in keys.values() for v in d.values()
        ]
