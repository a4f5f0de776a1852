"""Outcomes of served guidance on both backends: every transition, the estimate, decay, retirement.

Real subscriber, real store, real recall; time moves with freezegun where
decay is the point.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from freezegun import freeze_time
from sqlalchemy import func, select, update

from memos_feedback.config import FeedbackConfig
from memos_feedback.errors import InvalidInputError
from memos_feedback.events import FeedbackBus, FeedbackEvent
from memos_feedback.limits import CONTEXT_CHAR_CAP
from memos_feedback.outcomes import (
    HELD,
    RECURRED,
    OutcomeCounts,
    OutcomePrior,
    Settlement,
    effectiveness,
    rank_factor,
)
from memos_feedback.outcomes.ledger import history, open_servings, status_counts, write_batch
from memos_feedback.outcomes.supersede import opposes, supersede_new, supersede_older
from memos_feedback.recall import guidance_for
from memos_feedback.recall.config import RecallConfig
from memos_feedback.runtime.subscriber import FeedbackSubscriber, attach_feedback_subscriber
from memos_feedback.signals import context_hash_of
from memos_feedback.store import Store
from memos_feedback.store.models import DecisionRepairModel, RepairOutcomeModel, RepairServedModel
from memos_feedback.text.blocks import merge_repair_block
from memos_feedback.types import DecisionRepairRow, now_ms

TOOL, CTX = "deploy", "staging cluster"
HOST = "Deploy with care.\nKeep the host text as it is.  "
DAY = 24 * 3_600_000


def add_repair(
    store: Store, preference: str, anti_pattern: str, *, ts: int | None = None
) -> DecisionRepairRow:
    return store.repairs.insert(
        context_hash=context_hash_of(TOOL, CTX),
        trigger="manual",
        preference=preference,
        anti_pattern=anti_pattern,
        tool_id=TOOL,
        context=CTX,
        ts=ts,
    )


def attach_lines(store: Store, row: DecisionRepairRow) -> str:
    """A policy holding the repair's lines in its @repair block; returns its id."""
    boundary = merge_repair_block(HOST, [row.preference], [row.anti_pattern])
    assert boundary is not None
    return store.policies.add("deploys", boundary=boundary).id


@pytest.fixture
def events() -> list[FeedbackEvent]:
    return []


@pytest.fixture
def sub(store: Store, events: list[FeedbackEvent]) -> Iterator[FeedbackSubscriber]:
    bus = FeedbackBus()
    bus.on_any(events.append)
    config = FeedbackConfig(use_llm=False, stale_after_recurrences=2, cooldown_ms=0)
    s = attach_feedback_subscriber(store, bus=bus, config=config, poll_interval=0.01)
    try:
        yield s
    finally:
        s.close(timeout=10)


def outcomes(store: Store) -> list[tuple[str, str, str]]:
    with store.session() as s:
        rows = s.execute(
            select(
                RepairOutcomeModel.repair_id, RepairOutcomeModel.session_id, RepairOutcomeModel.kind
            ).order_by(RepairOutcomeModel.ts, RepairOutcomeModel.id)
        )
        return [(r[0], r[1], r[2]) for r in rows]


def serve(sub: FeedbackSubscriber, session: str) -> list[str]:
    g = sub.guidance_for(tool_id=TOOL, context=CTX, session_id=session)
    return [i.repair_id for i in g.items]


def burst(sub: FeedbackSubscriber, session: str) -> None:
    for step in range(3):
        sub.record_tool_failure(TOOL, CTX, step, "E: refused", session_id=session)


# -- served -> outcome ------------------------------------------------------------------


def test_success_of_the_same_tool_and_context_holds(store: Store, sub: FeedbackSubscriber) -> None:
    r = add_repair(store, "Prefer: kubectl rollout", "Avoid: kubectl replace")
    assert serve(sub, "s1") == [r.id]
    sub.record_tool_success("other-tool", CTX, 1, session_id="s1")  # not what was served
    sub.record_tool_success(TOOL, "other context", 1, session_id="s1")
    assert sub.flush(10)
    assert outcomes(store) == []
    sub.record_tool_success(TOOL, CTX, 2, session_id="s1")
    sub.record_tool_success(TOOL, CTX, 3, session_id="s1")  # settled already: nothing more
    assert sub.flush(10)
    assert outcomes(store) == [(r.id, "s1", HELD)]
    assert [e.event for e in history(store, r.id)] == ["served", HELD]


def test_a_new_failure_burst_recurs(
    store: Store, sub: FeedbackSubscriber, events: list[FeedbackEvent]
) -> None:
    r = add_repair(store, "Prefer: kubectl rollout", "Avoid: kubectl replace")
    serve(sub, "s1")
    sub.record_tool_failure(TOOL, CTX, 1, "E", session_id="s1")  # one failure is not a burst
    assert sub.flush(10)
    assert outcomes(store) == []
    burst(sub, "s1")
    assert sub.flush(10)
    assert outcomes(store) == [(r.id, "s1", RECURRED)]
    assert any(e.kind == "repair.outcome" and getattr(e, "outcome", "") == RECURRED for e in events)


@pytest.mark.parametrize(
    ("text", "kind"), [("thanks, that worked", "held"), ("no, that is wrong", "contradicted")]
)
def test_the_users_next_message_settles(store: Store, sub: FeedbackSubscriber, text: str, kind: str) -> None:
    r = add_repair(store, "Prefer: kubectl rollout", "Avoid: kubectl replace")
    serve(sub, "s1")
    serve(sub, "s2")  # another session's serving stays open
    sub.submit_user_feedback(text, "s1")
    assert sub.flush(10)
    assert outcomes(store) == [(r.id, "s1", kind)]
    assert [v.session_id for v in open_servings(store, 0)] == ["s2"]


def test_serving_without_session_or_with_record_false_records_nothing(
    store: Store, sub: FeedbackSubscriber
) -> None:
    add_repair(store, "Prefer: kubectl rollout", "Avoid: kubectl replace")
    assert sub.guidance_for(tool_id=TOOL, context=CTX).items
    assert sub.guidance_for(tool_id=TOOL, context=CTX, session_id="s1", record=False).items
    assert guidance_for(store, tool_id=TOOL, context=CTX, session_id="s1", record=False).items
    sub.record_tool_success(TOOL, CTX, 1, session_id="s1")
    assert sub.flush(10)
    with store.session() as s:
        assert s.scalar(select(func.count()).select_from(RepairServedModel)) == 0
    # The module function records in its own short transaction.
    guidance_for(store, tool_id=TOOL, context=CTX, session_id="s9")
    assert [v.session_id for v in open_servings(store, 0)] == ["s9"]


def test_a_replayed_settlement_is_written_once(store: Store) -> None:
    r = add_repair(store, "Prefer: a", "Avoid: b")
    guidance_for(store, tool_id=TOOL, context=CTX, session_id="s1")
    (served,) = open_servings(store, 0)
    t = Settlement(served.id, r.id, "s1", HELD, now_ms())
    assert len(write_batch(store, [], [t], 3)) == 1
    assert write_batch(store, [], [t], 3) == []  # no event, no row
    assert outcomes(store) == [(r.id, "s1", HELD)]


def test_open_servings_are_settled_by_a_new_subscriber(store: Store) -> None:
    """A process that died before settling: the next one settles the open serving."""
    r = add_repair(store, "Prefer: a", "Avoid: b")
    guidance_for(store, tool_id=TOOL, context=CTX, session_id="s1")
    with attach_feedback_subscriber(store, config=FeedbackConfig(use_llm=False)) as fresh:
        fresh.record_tool_success(TOOL, CTX, 1, session_id="s1")
        assert fresh.flush(10)
    assert outcomes(store) == [(r.id, "s1", HELD)]


def test_a_huge_context_is_stored_capped_and_still_settles(store: Store, sub: FeedbackSubscriber) -> None:
    """A 10 MB context is kept as its first and last characters, and the full one still settles."""
    big = CTX + "\nkubectl deploy output line" * 400_000  # ~10 MB
    r = add_repair(store, "Prefer: kubectl rollout", "Avoid: kubectl replace")
    served = [i.repair_id for i in sub.guidance_for(tool_id=TOOL, context=big, session_id="s1").items]
    assert served == [r.id]
    guidance_for(store, tool_id=TOOL, context=big, session_id="s2")  # the store's own path
    assert sub.flush(10)
    with store.session() as s:
        lengths = list(s.scalars(select(func.length(RepairServedModel.context))))
    assert len(lengths) == 2
    assert max(lengths) <= CONTEXT_CHAR_CAP
    # The caller's full context still settles them: in memory, and reloaded by a new subscriber.
    sub.record_tool_success(TOOL, big, 1, session_id="s1")
    assert sub.flush(10)
    with attach_feedback_subscriber(store, config=FeedbackConfig(use_llm=False)) as fresh:
        fresh.record_tool_success(TOOL, big, 1, session_id="s2")
        assert fresh.flush(10)
    assert sorted(outcomes(store)) == [(r.id, "s1", HELD), (r.id, "s2", HELD)]


# -- estimate, decay, ranking --------------------------------------------------------------


def test_estimate_is_the_beta_posterior_mean() -> None:
    cfg = RecallConfig()
    assert effectiveness(OutcomeCounts(), cfg) == 0.5
    assert effectiveness(OutcomeCounts(held=3), cfg) == 4 / 5
    assert effectiveness(OutcomeCounts(recurred=2, contradicted=1), cfg) == 1 / 5
    skeptical = RecallConfig(effectiveness_prior_held=1.0, effectiveness_prior_failed=3.0)
    assert effectiveness(OutcomeCounts(held=1), skeptical) == 2 / 5


def test_unvalidated_repairs_decay_by_half_life_validated_do_not(store: Store) -> None:
    cfg = RecallConfig(unvalidated_half_life_ms=2 * DAY)
    with freeze_time("2026-12-01 00:00:00") as clock:
        plain = add_repair(store, "Prefer: kubectl rollout", "Avoid: kubectl replace")
        vouched = store.repairs.insert(
            context_hash=context_hash_of(TOOL, CTX),
            trigger="manual",
            preference="Prefer: helm upgrade --atomic",
            anti_pattern="Avoid: helm install over a release",
            tool_id=TOOL,
            context=CTX,
        )
        store.repairs.validate(vouched.id)

        def factors() -> dict[str, float]:
            g = guidance_for(store, tool_id=TOOL, context=CTX, config=cfg)
            return {i.repair_id: i.effectiveness for i in g.items}

        assert factors() == {plain.id: 1.0, vouched.id: 1.0}
        clock.tick(2 * DAY / 1000)
        assert factors() == {plain.id: 0.5, vouched.id: 1.0}
        clock.tick(2 * DAY / 1000)
        assert factors() == {plain.id: 0.25, vouched.id: 1.0}
        # A held outcome restarts the clock: a lesson that keeps working stays fresh.
        guidance_for(store, tool_id=TOOL, context=CTX, session_id="s1", config=cfg)
        served = [v for v in open_servings(store, 0) if v.repair_id == plain.id]
        write_batch(store, [], [Settlement(served[0].id, plain.id, "s1", HELD, now_ms())], 3)
        assert factors()[plain.id] == round((2 / 3) / 0.5, 4)


def test_ranking_sinks_what_keeps_failing_and_raises_what_holds(store: Store) -> None:
    wrong = add_repair(store, "Prefer: kubectl replace --force", "Avoid: waiting for the rollout")
    right = add_repair(store, "Prefer: kubectl rollout status", "Avoid: kubectl delete pod")

    def order() -> list[str]:
        return [i.repair_id for i in guidance_for(store, tool_id=TOOL, context=CTX).items]

    settle: list[Settlement] = []
    for n in range(3):
        guidance_for(store, tool_id=TOOL, context=CTX, session_id=f"s{n}")
    for v in open_servings(store, 0):
        kind = RECURRED if v.repair_id == wrong.id else HELD
        settle.append(Settlement(v.id, v.repair_id, v.session_id, kind, now_ms()))
    write_batch(store, [], settle, 10)
    assert order() == [right.id, wrong.id]


def test_rank_factor_is_one_without_evidence() -> None:
    assert rank_factor(1_000, OutcomeCounts(), False, 1_000, RecallConfig()) == 1.0


def test_outcome_prior_is_the_value_recall_passes_down() -> None:
    cfg = RecallConfig(
        effectiveness_prior_held=2.0, effectiveness_prior_failed=3.0, unvalidated_half_life_ms=DAY
    )
    prior = cfg.outcome_prior
    assert prior == OutcomePrior(held=2.0, failed=3.0, half_life_ms=DAY)
    counts = OutcomeCounts(held=2, recurred=1, last_held=0)
    assert effectiveness(counts, prior) == effectiveness(counts, cfg) == 4 / 8
    assert rank_factor(0, counts, False, DAY, prior) == rank_factor(0, counts, False, DAY, cfg)
    bad_values: list[dict[str, object]] = [{"held": 0.0}, {"failed": float("nan")}, {"held": True}]
    for bad in [*bad_values, {"half_life_ms": 0}, {"half_life_ms": 1.5}]:
        with pytest.raises(InvalidInputError, match="OutcomePrior"):
            OutcomePrior(**bad)  # type: ignore[arg-type]


# -- stale, validated-not-retired, superseded --------------------------------------------------


def test_recurring_without_a_hold_goes_stale_and_leaves_blocks(
    store: Store, sub: FeedbackSubscriber, events: list[FeedbackEvent]
) -> None:
    r = add_repair(store, "Prefer: kubectl replace --force", "Avoid: waiting for the rollout")
    policy_id = attach_lines(store, r)
    for n in range(2):  # stale_after_recurrences=2
        assert serve(sub, f"s{n}") == [r.id]
        burst(sub, f"s{n}")
        assert sub.flush(10)
    row = store.repairs.get(r.id)
    assert row.status == "stale" and not row.rejected
    assert store.policies.get(policy_id).boundary == HOST  # host text byte for byte
    stale = [e for e in events if e.kind == "repair.stale"]
    assert len(stale) == 1 and getattr(stale[0], "policy_ids", ()) == (policy_id,)
    assert not guidance_for(store, tool_id=TOOL, context=CTX).items
    assert status_counts(store)["stale"] == 1


def test_a_hold_keeps_a_repair_from_going_stale(store: Store, sub: FeedbackSubscriber) -> None:
    r = add_repair(store, "Prefer: kubectl rollout", "Avoid: kubectl replace")
    serve(sub, "s0")
    sub.record_tool_success(TOOL, CTX, 1, session_id="s0")
    for n in range(1, 4):
        serve(sub, f"s{n}")
        burst(sub, f"s{n}")
        assert sub.flush(10)
    assert store.repairs.get(r.id).status == "active"


def test_a_validated_repair_is_flagged_for_review_not_retired(
    store: Store, sub: FeedbackSubscriber, events: list[FeedbackEvent]
) -> None:
    r = add_repair(store, "Prefer: kubectl replace --force", "Avoid: waiting for the rollout")
    store.repairs.validate(r.id)
    policy_id = attach_lines(store, r)
    before = store.policies.get(policy_id).boundary
    for n in range(3):
        serve(sub, f"s{n}")
        burst(sub, f"s{n}")
        assert sub.flush(10)
    row = store.repairs.get(r.id)
    assert row.status == "active" and row.review_flagged_at is not None
    assert store.policies.get(policy_id).boundary == before
    assert [e.kind for e in events].count("repair.review_flagged") == 1
    assert "repair.stale" not in [e.kind for e in events]
    assert [i.repair_id for i in guidance_for(store, tool_id=TOOL, context=CTX).items] == [r.id]


@pytest.mark.parametrize("reverse", [False, True])
def test_a_newer_opposite_repair_supersedes_the_older(store: Store, reverse: bool) -> None:
    old = add_repair(store, "Prefer: kubectl replace --force", "Avoid: kubectl rollout restart")
    unrelated = add_repair(store, "Prefer: pin the image digest", "Avoid: the latest tag")
    policy_id = attach_lines(store, old)
    if reverse:  # avoids what the old one preferred
        new = add_repair(store, "Prefer: a canary first", "Avoid: kubectl replace --force")
    else:  # prefers what the old one avoided
        new = add_repair(store, "Prefer: kubectl rollout restart", "Avoid: deleting pods by hand")
    with store.session(write=True) as s:
        events = supersede_older(s, store, new.id)
    assert [(e.kind, getattr(e, "repair_id", ""), getattr(e, "superseded_by", "")) for e in events] == [
        ("repair.superseded", old.id, new.id)
    ]
    row = store.repairs.get(old.id)
    assert row.status == "superseded" and row.superseded_by == new.id
    assert store.policies.get(policy_id).boundary == HOST
    assert store.repairs.get(unrelated.id).status == "active"
    ids = [i.repair_id for i in guidance_for(store, tool_id=TOOL, context=CTX).items]
    assert old.id not in ids and new.id in ids


@pytest.mark.parametrize(
    ("new", "old", "why"),
    [
        # Lines one word apart: only a line nearer the other side crosses over.
        (("run x-right for ci", "run x-decoy for ci"), ("run x-decoy for ci", "run x-default for ci"),
         "avoids what it preferred"),
        (("run x-decoy for ci", "run x-default for ci"), ("run x-right for ci", "run x-decoy for ci"),
         "prefers what it avoided"),
        # The same lesson again, or one that changes only what it warns against.
        (("run x-right for ci", "run x-decoy for ci"), ("run x-right for ci", "run x-decoy for ci"), None),
        (("run x-right for ci", "run x-decoy for ci"), ("run x-right for ci", "run x-default for ci"), None),
        (("use uv to install packages", "use pip to install packages"),
         ("use uv to install packages", "use pip to install packages"), None),
        # Every line one word from every other: no side is nearer.
        (("run x-one for ci", "run x-two for ci"), ("run x-three for ci", "run x-four for ci"), None),
    ],
)  # fmt: skip
def test_opposes_needs_a_line_nearer_the_other_side(
    new: tuple[str, str], old: tuple[str, str], why: str | None
) -> None:
    assert opposes(f"Prefer: {new[0]}", f"Avoid: {new[1]}", f"Prefer: {old[0]}", f"Avoid: {old[1]}") == why


def test_a_repeat_of_a_lesson_supersedes_nothing(store: Store) -> None:
    # Both copies keep serving; the older one keeps its outcomes.
    old = add_repair(store, "Prefer: run pnpm install for web ci", "Avoid: run npm install for web ci")
    new = add_repair(store, "Prefer: run pnpm install for web ci", "Avoid: run npm install for web ci")
    assert supersede_in_core(store, new) == []
    with store.session(write=True) as s:
        assert supersede_older(s, store, new.id) == []
    assert store.repairs.get(old.id).status == "active"


def test_a_validated_older_repair_is_flagged_not_superseded(store: Store) -> None:
    old = add_repair(store, "Prefer: kubectl replace --force", "Avoid: kubectl rollout restart")
    store.repairs.validate(old.id)
    new = add_repair(store, "Prefer: kubectl rollout restart", "Avoid: deleting pods by hand")
    with store.session(write=True) as s:
        events = supersede_older(s, store, new.id)
    assert [e.kind for e in events] == ["repair.review_flagged"]
    row = store.repairs.get(old.id)
    assert row.status == "active" and row.review_flagged_at is not None


def supersede_in_core(store: Store, new: DecisionRepairRow) -> list[FeedbackEvent]:
    """The worker's path: a Core write transaction and the new row's values, no read-back."""
    values = {k: getattr(new, k) for k in ("id", "context_hash", "tool_id", "ts", "project")}
    values.update(preference=new.preference, anti_pattern=new.anti_pattern)
    with store.connection(write=True) as conn:
        return supersede_new(conn, store, values)


def test_every_older_repair_with_the_contradicting_lines_is_superseded(store: Store) -> None:
    # The scan reads distinct line pairs: three older repairs sharing one
    # pair are all retired, and one of another project is left alone.
    olds = [
        add_repair(store, "Prefer: kubectl replace --force", "Avoid: kubectl rollout restart")
        for _ in range(3)
    ]
    elsewhere = add_repair(store, "Prefer: kubectl replace --force", "Avoid: kubectl rollout restart")
    unrelated = add_repair(store, "Prefer: pin the image digest", "Avoid: the latest tag")
    with store.session(write=True) as s:
        s.execute(
            update(DecisionRepairModel).where(DecisionRepairModel.id == elsewhere.id).values(project="other")
        )
    new = add_repair(store, "Prefer: kubectl rollout restart", "Avoid: deleting pods by hand")
    events = supersede_in_core(store, new)
    assert sorted(getattr(e, "repair_id", "") for e in events) == sorted(o.id for o in olds)
    assert {e.kind for e in events} == {"repair.superseded"}
    assert all(store.repairs.get(o.id).superseded_by == new.id for o in olds)
    assert store.repairs.get(elsewhere.id).status == "active"
    assert store.repairs.get(unrelated.id).status == "active"


@pytest.mark.parametrize(("newer", "found"), [(19, True), (20, False)])
def test_supersede_compares_the_20_newest_of_a_scope(store: Store, newer: int, found: bool) -> None:
    t0 = now_ms() - DAY
    old = add_repair(store, "Prefer: kubectl replace --force", "Avoid: kubectl rollout restart", ts=t0)
    for i in range(newer):  # same context and tool, lines that contradict nothing
        add_repair(store, f"Prefer: step {i} of the runbook", f"Avoid: skipping step {i}", ts=t0 + 1 + i)
    new = add_repair(store, "Prefer: kubectl rollout restart", "Avoid: deleting pods by hand", ts=t0 + 100)
    events = supersede_in_core(store, new)
    assert [getattr(e, "repair_id", "") for e in events] == ([old.id] if found else [])
    assert store.repairs.get(old.id).status == ("superseded" if found else "active")


# -- configuration -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [("stale_after_recurrences", 0), ("served_open_ms", 0), ("stale_after_recurrences", True)],
)
def test_outcome_feedback_config_is_validated(key: str, value: object) -> None:
    from memos_feedback.errors import ConfigError

    with pytest.raises(ConfigError, match=key):
        FeedbackConfig.from_mapping({key: value})


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("effectiveness_prior_held", 0.0),
        ("effectiveness_prior_failed", -1.0),
        ("effectiveness_prior_held", 1e9),
        ("unvalidated_half_life_ms", 0),
    ],
)
def test_outcome_recall_config_is_validated(key: str, value: object) -> None:
    from memos_feedback.errors import ConfigError

    with pytest.raises(ConfigError, match=key):
        RecallConfig.from_mapping({key: value})


def test_outcome_config_from_env() -> None:
    cfg = FeedbackConfig.from_env({"MEMOS_FEEDBACK_STALE_AFTER_RECURRENCES": "5"})
    assert cfg.stale_after_recurrences == 5
    rc = RecallConfig.from_env({"MEMOS_FEEDBACK_RECALL_UNVALIDATED_HALF_LIFE_MS": "1000"})
    assert rc.unvalidated_half_life_ms == 1000


# -- bookkeeping never breaks guidance or the writer ------------------------------------------


def test_an_unstorable_session_id_is_served_but_not_recorded(store: Store, sub: FeedbackSubscriber) -> None:
    r = add_repair(store, "Prefer: kubectl rollout", "Avoid: kubectl replace")
    too_long = "s" * 300  # repair_served.session_id is VARCHAR(255)
    assert [
        i.repair_id for i in guidance_for(store, tool_id=TOOL, context=CTX, session_id=too_long).items
    ] == [r.id]
    assert serve(sub, too_long) == [r.id]
    sub.record_tool_success(TOOL, CTX, 1, session_id=too_long)
    # The writer is not stuck behind it: a normal serving still settles.
    serve(sub, "s1")
    sub.record_tool_success(TOOL, CTX, 2, session_id="s1")
    assert sub.flush(10)
    assert outcomes(store) == [(r.id, "s1", HELD)]


def test_guidance_on_a_read_only_store_records_nothing(store: Store, db_url: str) -> None:
    from memos_feedback.store import open_store

    add_repair(store, "Prefer: kubectl rollout", "Avoid: kubectl replace")
    with open_store(db_url, read_only=True) as reader:
        assert guidance_for(reader, tool_id=TOOL, context=CTX, session_id="s1").items
    assert open_servings(store, 0) == []
