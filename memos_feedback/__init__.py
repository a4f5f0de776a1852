"""memos-feedback: closes the feedback loop of LLM agents.

The pipeline, in the order the package's modules read: ``signals`` (stuck
tools) and ``classifier`` (user feedback) trigger; ``queue`` keeps the
trigger durably; ``repair`` runs the guards, ``evidence`` and
``synthesize`` (``llm``, ``prompts``, ``sanitize``), persists into the
``store`` and merges into policy ``boundary`` blocks (``attach``); every
step goes out on the ``events`` bus and into the ``audit`` log.
``subscriber`` wires it all for a host.
"""

from __future__ import annotations

from .classify.classifier import classify_feedback
from .config import FeedbackConfig
from .errors import (
    AuditLogError,
    ConfigError,
    InvalidInputError,
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
    TriggersNotPersistedError,
)
from .events import (
    FeedbackBus,
    FeedbackClassified,
    FeedbackEvent,
    RepairAttached,
    RepairJobDead,
    RepairJobDiscarded,
    RepairJobFailed,
    RepairJobRetrying,
    RepairPersisted,
    RepairSkipped,
    RepairTriggered,
)
from .recall import Guidance, GuidanceItem, RecallConfig, guidance_for
from .repair.attach import attach_repair_to_policies
from .repair.run import RepairDeps, run_repair
from .runtime.audit import AuditLog
from .runtime.queue import RepairQueue
from .runtime.subscriber import CloseReport, FeedbackSubscriber, attach_feedback_subscriber
from .signals import FailureBurst, FailureSignals, context_hash_of
from .store import DecisionRepairRow, PolicyRow, Store, ToolCall, TraceRow, open_store
from .synthesis.evidence import RepairEvidence, cap_trace, gather_repair_evidence
from .synthesis.llm import OpenAIRepairLLM, RepairLLM
from .synthesis.synthesize import SynthesisOutcome, synthesize_draft
from .text.blocks import (
    RepairBlock,
    merge_repair_block,
    parse_repair_block,
    render_repair_block,
    strip_repair_block,
)
from .types import ClassifiedFeedback, DecisionRepairDraft, FailureRecord, RepairInput, RepairResult, Shape

__version__ = "0.1.0"

__all__ = [
    "AuditLog",
    "AuditLogError",
    "ClassifiedFeedback",
    "CloseReport",
    "ConfigError",
    "DecisionRepairDraft",
    "DecisionRepairRow",
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
    "MemosFeedbackError",
    "MissingExtraError",
    "NotFoundError",
    "OpenAIRepairLLM",
    "PolicyRow",
    "RecallConfig",
    "RepairAttached",
    "RepairBlock",
    "RepairDeps",
    "RepairEvidence",
    "RepairInput",
    "RepairJobDead",
    "RepairJobDeadError",
    "RepairJobDiscarded",
    "RepairJobFailed",
    "RepairJobRetrying",
    "RepairLLM",
    "RepairPersisted",
    "RepairQueue",
    "RepairResult",
    "RepairSkipped",
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
    "TriggersNotPersistedError",
    "__version__",
    "attach_feedback_subscriber",
    "attach_repair_to_policies",
    "cap_trace",
    "classify_feedback",
    "context_hash_of",
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
