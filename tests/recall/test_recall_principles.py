"""Recall's principle rules: the user's own word first, validated repairs always candidates."""

from __future__ import annotations

from memos_feedback.config import FeedbackConfig
from memos_feedback.recall import guidance_for
from memos_feedback.repair.deps import RepairDeps
from memos_feedback.repair.run import run_repair
from memos_feedback.signals import context_hash_of
from memos_feedback.store import Store
from memos_feedback.types import FailureRecord, RepairInput, ToolCall, now_ms

TOOL, CONTEXT = "bash", "bash command=npm install"
ERROR = "npm ERR! ERESOLVE unable to resolve dependency tree"
DEPS = {"config": FeedbackConfig(use_llm=False, cooldown_ms=0)}


def _run(store: Store, inp: RepairInput) -> str:
    result = run_repair(inp, RepairDeps(store=store, **DEPS))  # type: ignore[arg-type]
    assert result.repair_id is not None, result.skipped_reason
    return result.repair_id


def test_the_users_word_outranks_an_inferred_lesson_of_the_same_situation(store: Store) -> None:
    session = "s-1"
    for _ in range(3):
        store.traces.add(session, agent_text=ERROR, value=-0.7, tool_calls=[ToolCall(TOOL, error_code="1")])
    failures = tuple(FailureRecord(TOOL, CONTEXT, step, ERROR, session_id=session) for step in (1, 2, 3))
    key = {"context_hash": context_hash_of(TOOL, CONTEXT), "tool_id": TOOL, "context": CONTEXT}
    burst = _run(store, RepairInput(trigger="failure-burst", failures=failures, session_id=session, **key))
    user = _run(
        store,
        RepairInput(trigger="user.preference", user_text="use pnpm, not npm", session_id=session, **key),
    )
    # The next call in that situation (no query: the runtime's own tool step).
    got = guidance_for(store, tool_id=TOOL, context=CONTEXT)
    order = [item.repair_id for item in got.items]
    assert set(order) == {burst, user}
    assert order[0] == user, got.items
    # The same holds whatever the scores say: the user's lesson scores lower here.
    scores = {item.repair_id: item.score for item in got.items}
    assert scores[user] < scores[burst]


def test_a_validated_repair_stays_a_candidate_behind_many_newer_ones(store: Store) -> None:
    now = now_ms()
    key = {"context_hash": context_hash_of(TOOL, CONTEXT), "tool_id": TOOL, "context": CONTEXT}
    kept = store.repairs.insert(
        trigger="user.preference",
        preference="Prefer: corepack",
        anti_pattern="Avoid: global setup",
        ts=now - 10_000,
        **key,
    )
    store.repairs.validate(kept.id)
    for n in range(60):  # newer, unvalidated, same situation
        store.repairs.insert(
            trigger="failure-burst",
            preference=f"Prefer: retry step {n}",
            anti_pattern=f"Avoid: the same call {n}",
            ts=now - 5_000 + n,
            **key,
        )
    got = guidance_for(store, tool_id=TOOL, context=CONTEXT)
    assert got.items and got.items[0].repair_id == kept.id and got.items[0].validated
