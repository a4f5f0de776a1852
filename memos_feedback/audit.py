"""``AuditLog``: an append-only JSON Lines record of what the pipeline wrote.

Each event is one ``os.write`` of one complete line on a file opened with
``O_APPEND``, under a lock: lines from many threads never interleave, and
the library never truncates or rewrites the file.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from .errors import InvalidInputError
from .events import FeedbackBus, FeedbackEvent, RepairAttached, RepairPersisted, event_to_dict

__all__ = ["AuditLog"]

logger = logging.getLogger("memos_feedback.audit")

# Events the audit trail keeps (pipeline.md §11).
AUDITED_KINDS = (RepairPersisted.kind, RepairAttached.kind)


class AuditLog:
    """Appends JSON objects, one per line, to ``path``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._unsubscribe: list[Callable[[], None]] = []

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record as a single line and flush it to the OS."""
        if not isinstance(record, Mapping):
            raise InvalidInputError(f"audit record must be a mapping, got {type(record).__name__}")
        # ensure_ascii keeps the line free of raw newlines in any field.
        line = (json.dumps(record, ensure_ascii=True, default=str, separators=(",", ":")) + "\n").encode()
        with self._lock:
            if self._fd is None:
                raise InvalidInputError(f"audit log {self.path} is closed")
            view = memoryview(line)
            while view:  # os.write may write less than asked on some filesystems
                written = os.write(self._fd, view)
                view = view[written:]

    def write_event(self, event: FeedbackEvent) -> None:
        self.write(event_to_dict(event))

    def attach(self, bus: FeedbackBus) -> None:
        """Record ``repair.persisted`` and ``repair.attached`` from ``bus``."""
        for kind in AUDITED_KINDS:
            self._unsubscribe.append(bus.on(kind, self._on_event))

    def _on_event(self, event: FeedbackEvent) -> None:
        try:
            self.write_event(event)
        except (OSError, InvalidInputError):
            logger.exception("could not append %s to the audit log %s", event.kind, self.path)

    def close(self) -> None:
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
