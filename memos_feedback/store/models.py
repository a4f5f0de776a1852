"""SQLAlchemy ORM models. The schema itself is owned by the Alembic
migrations in ``migrations/``; a test checks the two never drift apart."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, Float, Index, Integer, LargeBinary, MetaData, String, Text, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import BigInteger, TypeDecorator

from ..text.secrets import redact_secrets

__all__ = [
    "NAMING_CONVENTION",
    "SQLITE_FTS_TABLE",
    "Base",
    "DecisionRepairModel",
    "FeedbackEventModel",
    "JsonType",
    "PolicyEpisodeModel",
    "PolicyModel",
    "RedactedText",
    "RepairJobCountModel",
    "RepairJobModel",
    "RepairOutcomeModel",
    "RepairServedModel",
    "StoreProbeModel",
    "TraceModel",
    "exists_on",
    "is_search_shadow_table",
]

# Stable, predictable constraint names on every backend, so later
# migrations can drop or alter a constraint by name.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# JSON everywhere, JSONB on PostgreSQL (indexable, compact).
JsonType = JSON().with_variant(JSONB(), "postgresql")

# Epoch milliseconds overflow a 32-bit INTEGER.
Millis = BigInteger


def _only_on(dialect: str, index: Index) -> Index:
    """An index created on one dialect only (``ddl_if``), marked so schema
    comparisons know not to expect it elsewhere (``exists_on``)."""
    index.info["only_on"] = dialect
    return index.ddl_if(dialect=dialect)


def exists_on(obj: Any, dialect: str) -> bool:
    """Whether a schema object of the models is created on ``dialect``.

    Alembic's autogenerate does not read ``ddl_if``; pass this (through
    ``include_object``) so a PostgreSQL-only index is not reported missing
    on SQLite.
    """
    info = getattr(obj, "info", None) or {}
    return bool(info.get("only_on", dialect) == dialect)


# The FTS5 table (and the shadow tables SQLite makes for it) that migration
# 0005 creates for recall; triggers keep it in sync with decision_repairs.
# It is not a model: schema comparisons skip it (``is_search_shadow_table``).
SQLITE_FTS_TABLE = "decision_repairs_fts"


def is_search_shadow_table(name: object) -> bool:
    """True for the SQLite FTS5 table of recall and its shadow tables."""
    return isinstance(name, str) and name.startswith(SQLITE_FTS_TABLE)


class RedactedText(TypeDecorator[str]):
    """``Text`` that holds untrusted text: its secrets become ``[redacted]`` as it is written.

    The one place our tables' untrusted text is redacted (docs/SECURITY.md):
    every INSERT or UPDATE of such a column, Core, ORM or ``Prepared``,
    binds the redacted value, so no writer can forget. Redaction is
    idempotent: text a writer redacted already (to cap it safely) is not
    changed again. A comparison with such a column binds a redacted value
    too, which is what the column holds. The host's ``traces`` are not of
    this type: they are the host's (``traces.add(redact=True)``).
    """

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        return redact_secrets(value) if isinstance(value, str) else value


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class TraceModel(Base):
    __tablename__ = "traces"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(255))
    episode_id: Mapped[str | None] = mapped_column(String(255), index=True)
    ts: Mapped[int] = mapped_column(Millis)
    user_text: Mapped[str] = mapped_column(Text, default="")
    agent_text: Mapped[str] = mapped_column(Text, default="")
    reflection: Mapped[str | None] = mapped_column(Text)
    value: Mapped[float] = mapped_column(Float, default=0.0)
    tool_calls: Mapped[list[dict[str, Any]]] = mapped_column(JsonType, default=list)

    __table_args__ = (Index("ix_traces_session_id_ts", "session_id", "ts"),)


class PolicyModel(Base):
    __tablename__ = "policies"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    title: Mapped[str] = mapped_column(Text)
    boundary: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(32), default="active", index=True)
    source_episode_ids: Mapped[list[str]] = mapped_column(JsonType, default=list)
    updated_at: Mapped[int] = mapped_column(Millis)

    # Finding the policies a repair came from ("any of these episodes") is
    # a ``?|`` on PostgreSQL, served by a GIN index; SQLite has no such index
    # type and scans (fine at the policy counts one process has).
    __table_args__ = (
        _only_on(
            "postgresql",
            Index("ix_policies_source_episode_ids", "source_episode_ids", postgresql_using="gin"),
        ),
    )


class DecisionRepairModel(Base):
    __tablename__ = "decision_repairs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    ts: Mapped[int] = mapped_column(Millis)
    context_hash: Mapped[str] = mapped_column(String(64))
    tool_id: Mapped[str | None] = mapped_column(Text)
    context: Mapped[str | None] = mapped_column(RedactedText)
    trigger: Mapped[str] = mapped_column(String(32))
    session_id: Mapped[str | None] = mapped_column(String(255))
    preference: Mapped[str] = mapped_column(RedactedText)
    anti_pattern: Mapped[str] = mapped_column(RedactedText)
    severity: Mapped[str] = mapped_column(String(8))
    confidence: Mapped[float] = mapped_column(Float)
    high_value_trace_ids: Mapped[list[str]] = mapped_column(JsonType, default=list)
    low_value_trace_ids: Mapped[list[str]] = mapped_column(JsonType, default=list)
    validated: Mapped[bool] = mapped_column(Boolean, default=False)
    rejected: Mapped[bool] = mapped_column(Boolean, default=False)
    # Recall (migration 0005; see memos_feedback.recall). NULL on rows
    # written before it; ``memos-feedback repairs embed`` backfills them.
    category: Mapped[str | None] = mapped_column(String(32))
    project: Mapped[str | None] = mapped_column(String(255))
    source_text: Mapped[str | None] = mapped_column(RedactedText)
    embedding: Mapped[bytes | None] = mapped_column(LargeBinary)
    embedding_model: Mapped[str | None] = mapped_column(String(255))
    # Outcomes (migration 0008; see memos_feedback.outcomes). ``status`` is
    # NULL while the repair is active, else "stale" or "superseded": NULL,
    # not a default, so old rows migrate without rewriting the table (SQLite
    # would need a copy to add a NOT NULL column, and it carries FTS triggers).
    status: Mapped[str | None] = mapped_column(String(16))
    superseded_by: Mapped[str | None] = mapped_column(String(64))
    # Set when a validated repair kept recurring: never retired, shown for review.
    review_flagged_at: Mapped[int | None] = mapped_column(Millis)
    # The user (tenant) beside the project (migration 0014): NULL = every user's.
    user_id: Mapped[str | None] = mapped_column(String(255))

    __table_args__ = (
        Index("ix_decision_repairs_context_hash_ts", "context_hash", "ts"),
        Index("ix_decision_repairs_ts", "ts"),
        Index("ix_decision_repairs_project_ts", "project", "ts"),
        Index("ix_decision_repairs_tool_id_ts", "tool_id", "ts"),
        # Validated repairs of a situation, always recall candidates (migration 0014).
        Index(
            "ix_decision_repairs_validated_context",
            "context_hash",
            "ts",
            sqlite_where=text("validated = 1"),
            postgresql_where=text("validated"),
        ),
        # Supersede's tool range read from the index alone (migration 0009).
        _only_on(
            "sqlite",
            Index(
                "ix_decision_repairs_tool_lines",
                "tool_id",
                "ts",
                "id",
                "status",
                "rejected",
                "project",
                "user_id",
                "preference",
                "anti_pattern",
            ),
        ),
        # Substring search (``ILIKE '%term%'``) for recall; SQLite uses FTS5.
        _only_on(
            "postgresql",
            Index(
                "ix_decision_repairs_source_text_trgm",
                "source_text",
                postgresql_using="gin",
                postgresql_ops={"source_text": "gin_trgm_ops"},
            ),
        ),
    )


# The integer key orders the queue; SQLite only auto-increments INTEGER.
_JobSeq = BigInteger().with_variant(Integer(), "sqlite")


class RepairJobModel(Base):
    """One durable repair job (see ``memos_feedback.queue``)."""

    __tablename__ = "repair_jobs"

    seq: Mapped[int] = mapped_column(_JobSeq, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(64), unique=True)
    context_hash: Mapped[str] = mapped_column(String(64))
    trigger: Mapped[str] = mapped_column(String(32))
    payload: Mapped[dict[str, Any]] = mapped_column(JsonType)
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[int] = mapped_column(Millis)
    lease_until: Mapped[int | None] = mapped_column(Millis)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    last_error: Mapped[str | None] = mapped_column(RedactedText)
    outcome: Mapped[str | None] = mapped_column(String(64))
    repair_id: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[int] = mapped_column(Millis)
    updated_at: Mapped[int] = mapped_column(Millis)

    __table_args__ = (
        Index("ix_repair_jobs_status_next_attempt_at", "status", "next_attempt_at"),
        Index("ix_repair_jobs_status_seq", "status", "seq"),
        Index("ix_repair_jobs_context_hash_status", "context_hash", "status"),
        # Migration 0006: the oldest pending job (stats) and finished jobs
        # past their retention (pruning) are found at an index's edge.
        Index("ix_repair_jobs_status_created_at", "status", "created_at"),
        Index("ix_repair_jobs_status_updated_at", "status", "updated_at"),
    )


class FeedbackEventModel(Base):
    """One committed event of the durable event log (``memos_feedback.feed``; migration 0007).

    ``seq`` orders the log in commit order: every writer takes the log's
    lock before it allocates a ``seq`` and holds it until commit (see
    ``memos_feedback.feed.log``), so a follower reading ``seq > last``
    never skips a row that commits late.
    """

    __tablename__ = "feedback_events"
    # SQLite: a seq is never handed out twice, even after pruning emptied
    # the table (migration 0012); PostgreSQL's sequence never goes back.
    __table_args__ = ({"sqlite_autoincrement": True},)

    seq: Mapped[int] = mapped_column(_JobSeq, primary_key=True, autoincrement=True)
    ts: Mapped[int] = mapped_column(Millis)
    kind: Mapped[str] = mapped_column(String(64))
    context_hash: Mapped[str | None] = mapped_column(String(64))
    repair_id: Mapped[str | None] = mapped_column(String(64))
    job_id: Mapped[str | None] = mapped_column(String(64))
    payload: Mapped[dict[str, Any]] = mapped_column(JsonType)
    # No secondary index, on purpose: each would add a page write to every
    # repair's commit. Readers walk the primary key (``seq > last``, kinds
    # filtered on the way) and pruning deletes a prefix of it.


class RepairServedModel(Base):
    """One repair shown to one session for one (tool, context); open until settled."""

    __tablename__ = "repair_served"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    repair_id: Mapped[str] = mapped_column(String(64))
    session_id: Mapped[str] = mapped_column(String(255))
    tool_id: Mapped[str | None] = mapped_column(Text)
    context: Mapped[str | None] = mapped_column(RedactedText)
    ts: Mapped[int] = mapped_column(Millis)

    __table_args__ = (
        Index("ix_repair_served_repair_id", "repair_id"),
        Index("ix_repair_served_ts", "ts"),
    )


class RepairOutcomeModel(Base):
    """What happened after a serving: held, recurred or contradicted.

    ``served_id`` is unique: a settlement replayed after a crash inserts
    nothing the second time.
    """

    __tablename__ = "repair_outcomes"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    served_id: Mapped[str] = mapped_column(String(64), unique=True)
    repair_id: Mapped[str] = mapped_column(String(64))
    session_id: Mapped[str] = mapped_column(String(255))
    kind: Mapped[str] = mapped_column(String(16))
    ts: Mapped[int] = mapped_column(Millis)

    __table_args__ = (Index("ix_repair_outcomes_repair_id_kind", "repair_id", "kind"),)


class RepairJobCountModel(Base):
    """How many ``repair_jobs`` rows have each status, kept by triggers (migration 0006).

    ``queue.stats()`` sums these rows instead of counting the job table.
    PostgreSQL spreads each status over shards (by backend pid) so that
    concurrent transactions rarely wait on the same counter row; a shard's
    ``n`` may go negative, only the sum per status means anything.
    """

    __tablename__ = "repair_job_counts"

    status: Mapped[str] = mapped_column(String(16), primary_key=True)
    shard: Mapped[int] = mapped_column(Integer, primary_key=True)
    n: Mapped[int] = mapped_column(BigInteger)


class PolicyEpisodeModel(Base):
    """One (episode, policy) pair of ``policies.source_episode_ids``, kept by triggers (0006).

    Finding the policies of some episodes is then a primary-key range read
    on either backend, instead of ``json_each`` over every policy (SQLite).
    """

    __tablename__ = "policy_episodes"

    episode_id: Mapped[str] = mapped_column(Text, primary_key=True)
    policy_id: Mapped[str] = mapped_column(String(64), primary_key=True)

    # The triggers replace a policy's pairs by policy id.
    __table_args__ = (Index("ix_policy_episodes_policy_id", "policy_id"),)


class StoreProbeModel(Base):
    """The one row a write probe rewrites (``store/durability.py``; migration 0013)."""

    __tablename__ = "store_probe"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    ts: Mapped[int] = mapped_column(BigInteger)
