"""A line two active repairs share stays in the policy block until neither carries it."""

from __future__ import annotations

from memos_feedback.repair.attach import attach_repair_to_policies
from memos_feedback.store import Store
from memos_feedback.text.blocks import parse_repair_block
from memos_feedback.types import DecisionRepairDraft


def _repair(store: Store, policy_id: str, preference: str, anti_pattern: str) -> str:
    draft = DecisionRepairDraft(
        context_hash="c",
        preference=preference,
        anti_pattern=anti_pattern,
        severity="warn",
        confidence=0.5,
        high_value_trace_ids=(),
        low_value_trace_ids=(),
        attach_to_policy_ids=(policy_id,),
    )
    attach_repair_to_policies(draft, store)
    row = store.repairs.insert(
        context_hash="c", trigger="manual", preference=preference, anti_pattern=anti_pattern
    )
    return row.id


def _lines(store: Store, policy_id: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    _, block = parse_repair_block(store.policies.get(policy_id).boundary)
    return ((), ()) if block is None else (block.preference, block.anti_pattern)


def test_rejecting_one_repair_keeps_the_line_another_still_carries(store: Store) -> None:
    policy = store.policies.add("installs", boundary="Use the repo's tools.")
    pnpm = _repair(store, policy.id, "Prefer: pnpm", "Avoid: npm")
    yarn = _repair(store, policy.id, "Prefer: yarn", "Avoid: npm")
    assert _lines(store, policy.id) == (("Prefer: pnpm", "Prefer: yarn"), ("Avoid: npm",))

    store.repairs.reject(pnpm)
    assert _lines(store, policy.id) == (("Prefer: yarn",), ("Avoid: npm",))  # yarn's repair still says it

    store.repairs.reject(yarn)
    assert _lines(store, policy.id) == ((), ())  # nobody carries either line now
    assert store.policies.get(policy.id).boundary == "Use the repo's tools."


def test_a_rejected_or_retired_repair_carries_nothing(store: Store) -> None:
    from sqlalchemy import update

    from memos_feedback.store.models import DecisionRepairModel

    policy = store.policies.add("installs", boundary="Host.")
    stale = _repair(store, policy.id, "Prefer: pnpm", "Avoid: npm")
    with store.connection(write=True) as conn:  # retired by outcomes earlier
        conn.execute(
            update(DecisionRepairModel).where(DecisionRepairModel.id == stale).values(status="stale")
        )
    other = _repair(store, policy.id, "Prefer: bun", "Avoid: npm")
    store.repairs.reject(other)
    assert _lines(store, policy.id) == (("Prefer: pnpm",), ())
