"""Exceptions raised by memos-feedback.

Every error the library raises on purpose derives from one root, so a host
can catch everything with a single ``except MemosFeedbackError``::

    MemosFeedbackError
    ├── ConfigError            invalid configuration key or value
    ├── StoreError             anything that went wrong talking to the database
    │   ├── NotFoundError      an id that is not in the table
    │   ├── StoreBusyError     transient: database locked/busy, deadlock
    │   ├── LeaseLostError     a repair job was taken over by another worker (its lease had lapsed)
    │   └── SchemaError        the database revision is unknown to this code
    ├── InvalidInputError      wrong type or value passed to a public call
    ├── AuditLogError          the audit file could not be opened or appended to
    ├── LLMError               the language model could not give a usable reply
    │   ├── LLMTransientError  timeout, connection error, HTTP 429 / 5xx
    │   └── LLMReplyError      a reply that is not the JSON object asked for
    ├── RepairJobDeadError     a queued repair ended in the dead-letter state
    ├── SubscriberClosedError  a call on a subscriber after ``close()``
    ├── TriggersNotPersistedError  ``close()`` gave up with triggers still only in memory
    ├── MissingExtraError      an adapter imported without its extra (also an ``ImportError``)
    └── TrainingUnavailableError  training asked for without scikit-learn (extra [train])

SQLAlchemy and driver exceptions never reach callers raw: the store wraps
them into ``StoreError`` (keeping the original as ``__cause__``).
"""

from __future__ import annotations

__all__ = [
    "AuditLogError",
    "ConfigError",
    "InvalidInputError",
    "LLMError",
    "LLMReplyError",
    "LLMTransientError",
    "LeaseLostError",
    "MemosFeedbackError",
    "MissingExtraError",
    "NotFoundError",
    "RepairJobDeadError",
    "SchemaError",
    "StoreBusyError",
    "StoreError",
    "SubscriberClosedError",
    "TrainingUnavailableError",
    "TriggersNotPersistedError",
]


class MemosFeedbackError(Exception):
    """Root of every error memos-feedback raises on purpose."""


class ConfigError(MemosFeedbackError):
    """A configuration key is unknown or its value is invalid.

    ``key`` and ``value`` name the offending setting.
    """

    def __init__(self, key: str, value: object, reason: str) -> None:
        self.key = key
        self.value = value
        self.reason = reason
        super().__init__(f"invalid config {key}={_short_repr(value)}: {reason}")


def _short_repr(value: object, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters, never raising.

    A message must not fail to build: ``repr`` of an int past 4300 digits
    raises ``ValueError``, and a megabyte value would bury the key.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"<int of {value.bit_length()} bits>"
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


class StoreError(MemosFeedbackError):
    """The database could not do what was asked."""


class NotFoundError(StoreError):
    """No row with the given id."""


class StoreBusyError(StoreError):
    """A transient database condition (locked, busy, deadlock); retrying may succeed."""


class LeaseLostError(StoreError):
    """The job was taken over by another worker (our lease had expired)."""


class SchemaError(StoreError):
    """The database schema revision is not one this code knows."""


class InvalidInputError(MemosFeedbackError):
    """A public call got an argument of the wrong type or value."""


class AuditLogError(MemosFeedbackError):
    """The audit file could not be opened or written (disk full, permissions).

    The ``OSError`` is kept as ``__cause__``; ``path`` names the file.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        super().__init__(f"audit log {path}: {reason}")


class LLMError(MemosFeedbackError):
    """The language model gave no usable reply."""


class LLMTransientError(LLMError):
    """A failure worth retrying: timeout, connection error, HTTP 429 or 5xx."""


class LLMReplyError(LLMError):
    """The model answered, but not with the JSON object asked for."""


class RepairJobDeadError(MemosFeedbackError):
    """A queued repair was given up (dead-lettered) by another worker.

    A future whose job died in this process carries the original exception;
    this one stands in when the job died elsewhere and only its row is known.
    ``job_id`` and ``last_error`` come from that row.
    """

    def __init__(self, job_id: str, last_error: str | None) -> None:
        self.job_id = job_id
        self.last_error = last_error
        super().__init__(f"repair job {job_id} is dead: {last_error or 'no error recorded'}")


class SubscriberClosedError(MemosFeedbackError):
    """The subscriber was closed; it accepts no more work."""


class TriggersNotPersistedError(MemosFeedbackError):
    """``close()`` ran out of time with triggers it could not store.

    The database stayed unwritable until the deadline. ``count`` says how
    many triggers were not persisted; ``inputs`` holds them (``RepairInput``
    objects), so the host can keep them elsewhere or queue them again.
    """

    def __init__(self, inputs: tuple[object, ...], reason: str) -> None:
        self.inputs = inputs
        self.count = len(inputs)
        super().__init__(f"{self.count} trigger(s) were not persisted: {reason}")


class MissingExtraError(MemosFeedbackError, ImportError):
    """An adapter module was imported without its agent runtime installed.

    Also an ``ImportError``, so ``try: import ... except ImportError`` keeps
    working. ``extra`` is what to install: ``pip install 'memos-feedback[extra]'``.
    """

    def __init__(self, module: str, extra: str, missing: str) -> None:
        self.extra = extra
        super().__init__(
            f"{module} needs the [{extra}] extra ({missing} is not installed): "
            f"pip install 'memos-feedback[{extra}]'"
        )


class TrainingUnavailableError(MemosFeedbackError):
    """scikit-learn, which only training needs, is not installed."""
