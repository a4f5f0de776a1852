"""memos-feedback: closes the feedback loop of LLM agents.

``signals`` (stuck tools) and ``classify`` (user feedback) trigger; the
``runtime`` keeps the trigger durably in its queue; ``repair`` runs the
guards, reads the evidence, writes the lesson (``synthesis``) into the
``store`` and attaches it to policies as an ``@repair`` block (``text``);
``recall`` brings it back into the next prompt and ``outcomes`` learns
whether it worked. Every step goes out on the ``events`` bus.
docs/ARCHITECTURE.md draws the layers.

What a host needs is exported here (``__all__``, guarded by
tests/test_public_api.py); everything else is reachable through its
subpackage and may change between minor versions.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .classify.classifier import classify_feedback
    from .config import FeedbackConfig
    from .errors import (
        AuditLogError,
        ConfigError,
        InvalidInputError,
        LeaseLostError,
        LLMError,
        LLMReplyError,
        LLMTransientError,
        MemosFeedbackError,
        MissingExtraError,
        NotFoundError,
        RepairJobDeadError,
        SchemaError,
        StoreBusyError,
        StoreError,
        SubscriberClosedError,
        TrainingUnavailableError,
        TriggersNotPersistedError,
    )
    from .events import (
        FeedbackBus,
        FeedbackClassified,
        FeedbackEvent,
        RepairAttached,
        RepairDeleted,
        RepairJobDead,
        RepairJobDiscarded,
        RepairJobFailed,
        RepairJobPurged,
        RepairJobRequeued,
        RepairJobRetrying,
        RepairOutcome,
        RepairPersisted,
        RepairReviewed,
        RepairReviewFlagged,
        RepairSkipped,
        RepairStale,
        RepairSuperseded,
        RepairTriggered,
        event_to_dict,
    )
    from .recall import Guidance, GuidanceItem, RecallConfig, guidance_for
    from .repair.attach import attach_repair_to_policies
    from .repair.deps import RepairDeps
    from .repair.evidence import gather_repair_evidence
    from .repair.run import run_repair
    from .runtime.audit import AuditLog
    from .runtime.queue import RepairQueue
    from .runtime.subscriber import CloseReport, FeedbackSubscriber, attach_feedback_subscriber
    from .signals import FailureBurst, FailureSignals, context_hash_of
    from .store import DecisionRepairRow, PolicyRow, Store, ToolCall, TraceRow, open_store
    from .synthesis.evidence import cap_trace
    from .synthesis.llm import OpenAIRepairLLM, RepairLLM
    from .synthesis.synthesize import SynthesisOutcome, synthesize_draft
    from .text.blocks import (
        RepairBlock,
        merge_repair_block,
        parse_repair_block,
        render_repair_block,
        strip_repair_block,
    )
    from .types import (
        ClassifiedFeedback,
        DecisionRepairDraft,
        Embedder,
        FailureRecord,
        RepairEvidence,
        RepairInput,
        RepairResult,
        Shape,
    )

# Where each name lives: imported on first use (PEP 562), so `import memos_feedback`
# (and a command-line hook that needs a few of them) does not load the database
# driver, the recall engine and the classifier before anything asks for them.
_LAZY: dict[str, str] = {
    "AuditLog": "runtime.audit",
    "AuditLogError": "errors",
    "ClassifiedFeedback": "types",
    "CloseReport": "runtime.subscriber",
    "ConfigError": "errors",
    "DecisionRepairDraft": "types",
    "DecisionRepairRow": "store",
    "Embedder": "types",
    "FailureBurst": "signals",
    "FailureRecord": "types",
    "FailureSignals": "signals",
    "FeedbackBus": "events",
    "FeedbackClassified": "events",
    "FeedbackConfig": "config",
    "FeedbackEvent": "events",
    "FeedbackSubscriber": "runtime.subscriber",
    "Guidance": "recall",
    "GuidanceItem": "recall",
    "InvalidInputError": "errors",
    "LLMError": "errors",
    "LLMReplyError": "errors",
    "LLMTransientError": "errors",
    "LeaseLostError": "errors",
    "MemosFeedbackError": "errors",
    "MissingExtraError": "errors",
    "NotFoundError": "errors",
    "OpenAIRepairLLM": "synthesis.llm",
    "PolicyRow": "store",
    "RecallConfig": "recall",
    "RepairAttached": "events",
    "RepairDeleted": "events",
    "RepairBlock": "text.blocks",
    "RepairDeps": "repair.deps",
    "RepairEvidence": "types",
    "RepairInput": "types",
    "RepairJobDead": "events",
    "RepairJobDeadError": "errors",
    "RepairJobDiscarded": "events",
    "RepairJobFailed": "events",
    "RepairJobPurged": "events",
    "RepairJobRequeued": "events",
    "RepairJobRetrying": "events",
    "RepairLLM": "synthesis.llm",
    "RepairOutcome": "events",
    "RepairPersisted": "events",
    "RepairQueue": "runtime.queue",
    "RepairResult": "types",
    "RepairReviewFlagged": "events",
    "RepairReviewed": "events",
    "RepairSkipped": "events",
    "RepairStale": "events",
    "RepairSuperseded": "events",
    "RepairTriggered": "events",
    "SchemaError": "errors",
    "Shape": "types",
    "Store": "store",
    "StoreBusyError": "errors",
    "StoreError": "errors",
    "SubscriberClosedError": "errors",
    "SynthesisOutcome": "synthesis.synthesize",
    "ToolCall": "store",
    "TraceRow": "store",
    "TrainingUnavailableError": "errors",
    "TriggersNotPersistedError": "errors",
    "attach_feedback_subscriber": "runtime.subscriber",
    "attach_repair_to_policies": "repair.attach",
    "cap_trace": "synthesis.evidence",
    "classify_feedback": "classify.classifier",
    "context_hash_of": "signals",
    "event_to_dict": "events",
    "gather_repair_evidence": "repair.evidence",
    "guidance_for": "recall",
    "merge_repair_block": "text.blocks",
    "open_store": "store",
    "parse_repair_block": "text.blocks",
    "render_repair_block": "text.blocks",
    "run_repair": "repair.run",
    "strip_repair_block": "text.blocks",
    "synthesize_draft": "synthesis.synthesize",
}

__version__ = "0.1.0"

__all__ = [
    "AuditLog",
    "AuditLogError",
    "ClassifiedFeedback",
    "CloseReport",
    "ConfigError",
    "DecisionRepairDraft",
    "DecisionRepairRow",
    "Embedder",
    "FailureBurst",
    "FailureRecord",
    "FailureSignals",
    "FeedbackBus",
    "FeedbackClassified",
    "FeedbackConfig",
    "FeedbackEvent",
    "FeedbackSubscriber",
    "Guidance",
    "GuidanceItem",
    "InvalidInputError",
    "LLMError",
    "LLMReplyError",
    "LLMTransientError",
    "LeaseLostError",
    "MemosFeedbackError",
    "MissingExtraError",
    "NotFoundError",
    "OpenAIRepairLLM",
    "PolicyRow",
    "RecallConfig",
    "RepairAttached",
    "RepairBlock",
    "RepairDeleted",
    "RepairDeps",
    "RepairEvidence",
    "RepairInput",
    "RepairJobDead",
    "RepairJobDeadError",
    "RepairJobDiscarded",
    "RepairJobFailed",
    "RepairJobPurged",
    "RepairJobRequeued",
    "RepairJobRetrying",
    "RepairLLM",
    "RepairOutcome",
    "RepairPersisted",
    "RepairQueue",
    "RepairResult",
    "RepairReviewFlagged",
    "RepairReviewed",
    "RepairSkipped",
    "RepairStale",
    "RepairSuperseded",
    "RepairTriggered",
    "SchemaError",
    "Shape",
    "Store",
    "StoreBusyError",
    "StoreError",
    "SubscriberClosedError",
    "SynthesisOutcome",
    "ToolCall",
    "TraceRow",
    "TrainingUnavailableError",
    "TriggersNotPersistedError",
    "__version__",
    "attach_feedback_subscriber",
    "attach_repair_to_policies",
    "cap_trace",
    "classify_feedback",
    "context_hash_of",
    "event_to_dict",
    "gather_repair_evidence",
    "guidance_for",
    "merge_repair_block",
    "open_store",
    "parse_repair_block",
    "render_repair_block",
    "run_repair",
    "strip_repair_block",
    "synthesize_draft",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
