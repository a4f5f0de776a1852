"""``AuditLog``: an append-only JSON Lines record of what the pipeline wrote.

Each event is one ``os.write`` of one complete line on a file opened with
``O_APPEND``, under a lock: lines from many threads never interleave, and
the library never truncates or rewrites the file.

An ``OSError`` (disk full, a revoked permission) becomes ``AuditLogError``
for a direct caller; attached to a bus, the log reports it through logging
and the pipeline goes on. If a write fails half-way, a line break is
attempted so the next record starts on a line of its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from ..errors import AuditLogError, InvalidInputError
from ..events import FeedbackBus, FeedbackEvent, RepairAttached, RepairPersisted, event_to_dict
from ..text.logs import library_logger

__all__ = ["AuditLog"]

logger = library_logger("memos_feedback.audit")

# Events the audit trail keeps (PIPELINE.md §11).
AUDITED_KINDS = (RepairPersisted.kind, RepairAttached.kind)


def _audit_path(path: object) -> Path:
    """``path`` as a ``Path``, or ``InvalidInputError`` for what no file system takes."""
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidInputError(f"audit log path must be a str or os.PathLike, got {type(path).__name__}")
    text = os.fspath(path)
    if not isinstance(text, str):
        raise InvalidInputError(f"audit log path must name a str path, got {type(text).__name__}")
    if not text.strip():
        raise InvalidInputError("audit log path must not be empty")
    if "\x00" in text:
        raise InvalidInputError(f"audit log path has a NUL character: {text!r:.80}")
    try:
        os.fsencode(text)  # undecodable bytes (surrogateescape) pass; a lone surrogate does not
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"audit log path is not encodable: {text!r:.80} ({exc.reason})") from exc
    return Path(text)


class AuditLog:
    """Appends JSON objects, one per line, to ``path``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = _audit_path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise AuditLogError(str(self.path), f"cannot open: {exc.strerror or exc}") from exc
        self._lock = threading.Lock()
        self._fd: int | None = fd
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
            try:
                while view:  # os.write may write less than asked on some filesystems
                    written = os.write(self._fd, view)
                    view = view[written:]
            except OSError as exc:
                if len(view) < len(line):
                    self._end_partial_line()
                raise AuditLogError(str(self.path), f"cannot append: {exc.strerror or exc}") from exc

    def _end_partial_line(self) -> None:
        # Best effort: the half-written record stays (we never rewrite the
        # file), but the next one should not be glued to it.
        assert self._fd is not None
        with contextlib.suppress(OSError):
            os.write(self._fd, b"\n")

    def write_event(self, event: FeedbackEvent) -> None:
        self.write(event_to_dict(event))

    def attach(self, bus: FeedbackBus) -> None:
        """Record ``repair.persisted`` and ``repair.attached`` from ``bus``."""
        for kind in AUDITED_KINDS:
            self._unsubscribe.append(bus.on(kind, self._on_event))

    def _on_event(self, event: FeedbackEvent) -> None:
        try:
            self.write_event(event)
        except (AuditLogError, InvalidInputError):
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
