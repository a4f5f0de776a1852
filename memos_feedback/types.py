"""The values every layer shares: rows, feedback shapes, failures, drafts,
a repair's input and result, and the clock.

The lowest layer of the package: it imports only the error tree and the
argument checks, so any module may import it. Rows are frozen dataclasses
detached from any session: repositories convert ORM objects into these so
that nothing a caller holds can lazily touch the database later.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol, get_args, runtime_checkable

from ._checks import check_int, check_step, check_str, check_tool_context
from .errors import InvalidInputError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "EXTRACTED_FIELDS",
    "REPAIR_SHAPES",
    "REPAIR_SHAPE_VALUES",
    "SCOPE_CHAR_CAP",
    "SEVERITIES",
    "TRIGGERS",
    "ClassifiedFeedback",
    "DecisionRepairDraft",
    "DecisionRepairRow",
    "Embedder",
    "FailureRecord",
    "PolicyRow",
    "RepairEvidence",
    "RepairInput",
    "RepairResult",
    "Scope",
    "Severity",
    "Shape",
    "ToolCall",
    "TraceRow",
    "Trigger",
    "new_id",
    "now_ms",
]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of one fixed dimension.

    Here, in the lowest layer, because the classifier, synthesis and recall
    all read text through one (``memos_feedback.embeddings`` has the
    implementations).
    """

    @property
    def model_name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """A ``(len(texts), dimension)`` float32 array, each row of unit length."""
        ...


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


# decision_repairs.project and .user_id are String(255).
SCOPE_CHAR_CAP = 255


def _scope_part(name: str, value: object) -> str | None:
    """A project or user: a str, stripped, at most ``SCOPE_CHAR_CAP`` characters; None or blank is none."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str or None, got {type(value).__name__}")
    value = value.strip()
    if len(value) > SCOPE_CHAR_CAP:
        raise InvalidInputError(f"{name} must be at most {SCOPE_CHAR_CAP} characters, got {len(value)}")
    return value or None


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose a repair is, and whose repairs a read may serve (docs/RECALL.md, "Scope").

    ``project``: None is global; ``user`` (the tenant beside it): None is
    every user's. The one normaliser: each part is stripped, blank is None,
    anything but a str or None, or longer than ``SCOPE_CHAR_CAP``, raises
    ``InvalidInputError``. Resolved once where the host calls in
    (``resolve``: the host's ``RecallConfig.default_project`` when the call
    names no project), then carried as is: by ``RepairInput`` to the worker,
    which never applies a default of its own, and to every read.
    """

    project: str | None = None
    user: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "project", _scope_part("project", self.project))
        object.__setattr__(self, "user", _scope_part("user", self.user))

    @classmethod
    def resolve(
        cls, project: str | None = None, user: str | None = None, *, default_project: str | None = None
    ) -> Scope:
        """The scope of a host's call: its ``project``, else ``default_project``; its ``user``."""
        return cls(project, user).with_default(default_project)

    def with_default(self, default_project: str | None) -> Scope:
        """This scope, or, naming no project, this one in ``default_project`` (None: stays global)."""
        if self.project is not None or default_project is None:
            return self
        return Scope(default_project, self.user)

    @property
    def is_unscoped(self) -> bool:
        """Global and every user's."""
        return self.project is None and self.user is None

    def sees(self, project: str | None, user: str | None) -> bool:
        """Whether a read of this scope may show a repair stored with ``project`` and ``user``.

        Global or of this project, and every user's or of this user: what
        recall serves (``store.search.eligibility``) and what a surface scoped
        to one project lists, shows and reviews.
        """
        return project in (None, self.project) and user in (None, self.user)


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
class RepairEvidence:
    """Traces behind a repair, most recent first on each side.

    A plain value: the repair engine reads the traces from the store and
    synthesis chooses and reads them from here (``synthesis.evidence``).

    ``relaxed`` is true when the keyword filter left both sides empty and the
    scan was run again without it (even if that second scan found nothing).
    """

    high: tuple[TraceRow, ...]
    low: tuple[TraceRow, ...]
    keyword: str | None
    relaxed: bool
    # Traces kept for what they say rather than a literal keyword (ids).
    similar: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.high and not self.low

    def trace_ids(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(high ids, low ids)."""
        return tuple(t.id for t in self.high), tuple(t.id for t in self.low)


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
    # The user (tenant) scope beside the project (migration 0014; None = every user's).
    user: str | None = None


class Shape(enum.Enum):
    """What a feedback message means about the agent's previous step."""

    POSITIVE = "positive"
    NEGATIVE = "negative"
    CORRECTION = "correction"
    CONSTRAINT = "constraint"
    PREFERENCE = "preference"
    CONFUSION = "confusion"
    INSTRUCTION = "instruction"
    UNKNOWN = "unknown"

    @property
    def triggers_repair(self) -> bool:
        """True when the message asks the agent to change what it did."""
        return self in REPAIR_SHAPES


# The shapes that ask the agent to change what it did: each writes a repair.
REPAIR_SHAPES: frozenset[Shape] = frozenset(
    {Shape.NEGATIVE, Shape.CORRECTION, Shape.CONSTRAINT, Shape.PREFERENCE}
)
REPAIR_SHAPE_VALUES: frozenset[str] = frozenset(s.value for s in REPAIR_SHAPES)
# What a classification extracts from a message, in the order they are shown.
EXTRACTED_FIELDS: tuple[str, ...] = ("prefer", "avoid", "correction", "constraint")


@dataclass(frozen=True, slots=True)
class ClassifiedFeedback:
    """The classifier's answer for one message."""

    shape: Shape
    confidence: float
    prefer: str | None = None
    avoid: str | None = None
    correction: str | None = None
    constraint: str | None = None
    text: str = ""


Severity = Literal["info", "warn"]


SEVERITIES: tuple[Severity, ...] = ("info", "warn")


@dataclass(frozen=True, slots=True)
class DecisionRepairDraft:
    """A repair ready to persist: two lines of guidance and their grounds."""

    context_hash: str
    preference: str
    anti_pattern: str
    severity: Severity
    confidence: float
    high_value_trace_ids: tuple[str, ...]
    low_value_trace_ids: tuple[str, ...]
    attach_to_policy_ids: tuple[str, ...] = ()


Trigger = Literal[
    "failure-burst", "user.negative", "user.correction", "user.constraint", "user.preference", "manual"
]


TRIGGERS: tuple[str, ...] = get_args(Trigger)


@dataclass(frozen=True, slots=True)
class RepairInput:
    """What to repair. ``context`` (the tool context text) is optional extra detail."""

    trigger: str
    context_hash: str
    tool_id: str | None = None
    user_text: str | None = None
    session_id: str | None = None
    episode_id: str | None = None
    failures: tuple[FailureRecord, ...] = ()
    context: str | None = None
    # Its ``Scope``, resolved by the host (the subscriber applies its
    # ``RecallConfig.default_project`` before the job is queued; the worker
    # applies none): the project (None: global) and the user (tenant)
    # beside it (None: every user's). Normalised as ``Scope`` normalises.
    # Payloads carry them as the keys ``project``/``user`` (old ones too;
    # without them they load as None).
    project: str | None = None
    user: str | None = None
    # The agent's turn ``user_text`` answers: the classifier's context when the
    # repair re-reads the message. Payloads without it load as None.
    agent_text: str | None = None
    # The classifier's answer for ``user_text`` when the caller already has it
    # (the subscriber classified the message to decide a repair was due): the
    # worker uses it instead of classifying the same message a second time.
    classified: ClassifiedFeedback | None = None

    def __post_init__(self) -> None:
        if self.trigger not in TRIGGERS:
            raise InvalidInputError(f"trigger must be one of {TRIGGERS}, got {self.trigger!r}")
        if not isinstance(self.context_hash, str) or not self.context_hash:
            raise InvalidInputError("context_hash must be a non-empty str")
        for name in (
            "tool_id",
            "user_text",
            "session_id",
            "episode_id",
            "context",
            "agent_text",
        ):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise InvalidInputError(f"{name} must be a str or None, got {type(value).__name__}")
        if self.project is not None or self.user is not None:
            scope = Scope(self.project, self.user)
            object.__setattr__(self, "project", scope.project)
            object.__setattr__(self, "user", scope.user)
        if self.classified is not None and not isinstance(self.classified, ClassifiedFeedback):
            raise InvalidInputError(
                f"classified must be a ClassifiedFeedback or None, got {type(self.classified).__name__}"
            )
        raw = self.failures
        # A str or a mapping iterates, but is never a list of failures.
        if isinstance(raw, (str, bytes, dict)) or not isinstance(raw, Iterable):
            raise InvalidInputError(f"failures must be a sequence of FailureRecord, got {type(raw).__name__}")
        failures = tuple(raw)  # once: a generator would be empty the second time
        if not all(isinstance(f, FailureRecord) for f in failures):
            raise InvalidInputError("failures must be FailureRecord instances")
        object.__setattr__(self, "failures", failures)

    @property
    def scope(self) -> Scope:
        """The ``Scope`` the repair is written in."""
        return Scope(self.project, self.user)

    def scoped(self, scope: Scope) -> RepairInput:
        """This input in ``scope``."""
        if scope == self.scope:
            return self
        return dataclasses.replace(self, project=scope.project, user=scope.user)


@dataclass(frozen=True, slots=True)
class RepairResult:
    trigger: str
    context_hash: str
    repair_id: str | None
    draft: DecisionRepairDraft | None
    skipped: bool
    skipped_reason: str | None
    started_at: int
    completed_at: int
    attached_policy_ids: tuple[str, ...] = ()


class _FailureRecordFields(NamedTuple):
    tool_id: str
    context: str
    step: int
    reason: str = ""
    ts: int = 0
    session_id: str | None = None
    episode_id: str | None = None
    trace_id: str | None = None


class FailureRecord(_FailureRecordFields):
    """One failed tool call, as reported by the runtime (immutable).

    ``step`` is the runtime's monotonic step counter (an int >= 0); ``ts`` is
    the wall-clock time in epoch milliseconds (default: now).

    A named tuple rather than a frozen dataclass: records are built on the
    agent's hot path, and a frozen dataclass costs about three times as
    much to construct (every field goes through ``object.__setattr__``).
    """

    __slots__ = ()

    def __new__(
        cls,
        tool_id: str,
        context: str,
        step: int,
        reason: str = "",
        ts: int | None = None,
        session_id: str | None = None,
        episode_id: str | None = None,
        trace_id: str | None = None,
    ) -> FailureRecord:
        if ts is None:
            ts = _time_ns() // 1_000_000
        # One cheap combined test for the common case; the field-by-field
        # check (with a message naming the field) only runs when it fails.
        if not (
            type(step) is int
            and step >= 0
            and type(ts) is int
            and type(tool_id) is str
            and tool_id
            and type(context) is str
            and type(reason) is str
            and (session_id is None or type(session_id) is str)
            and (episode_id is None or type(episode_id) is str)
            and (trace_id is None or type(trace_id) is str)
        ):
            _check_record_fields(tool_id, context, step, reason, ts, session_id, episode_id, trace_id)
        return _tuple_new(cls, (tool_id, context, step, reason, ts, session_id, episode_id, trace_id))


_tuple_new = tuple.__new__


_time_ns = time.time_ns


def _check_record_fields(
    tool_id: object,
    context: object,
    step: object,
    reason: object,
    ts: object,
    session_id: object,
    episode_id: object,
    trace_id: object,
) -> None:
    """Raise ``InvalidInputError`` naming the first bad field, if any."""
    check_tool_context(tool_id, context)
    check_step(step)
    check_str("reason", reason)
    check_int("ts", ts)
    for name, value in (("session_id", session_id), ("episode_id", episode_id), ("trace_id", trace_id)):
        if value is not None and not isinstance(value, str):
            raise InvalidInputError(f"{name} must be a str or None, got {type(value).__name__}")
