"""memos-feedback: closes the feedback loop of LLM agents."""

from __future__ import annotations

from .config import FeedbackConfig
from .errors import (
    ConfigError,
    InvalidInputError,
    LLMError,
    LLMReplyError,
    LLMTransientError,
    MemosFeedbackError,
    NotFoundError,
    SchemaError,
    StoreBusyError,
    StoreError,
    SubscriberClosedError,
)
from .store import DecisionRepairRow, PolicyRow, Store, ToolCall, TraceRow, open_store

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "DecisionRepairRow",
    "FeedbackConfig",
    "InvalidInputError",
    "LLMError",
    "LLMReplyError",
    "LLMTransientError",
    "MemosFeedbackError",
    "NotFoundError",
    "PolicyRow",
    "SchemaError",
    "Store",
    "StoreBusyError",
    "StoreError",
    "SubscriberClosedError",
    "ToolCall",
    "TraceRow",
    "__version__",
    "open_store",
]
