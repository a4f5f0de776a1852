"""The repair path's pure-function caches give the uncached answers.

``looks_like_failure`` caches short texts; ``attach_in`` caches the merge
of two lines into a boundary; ``split_evidence`` keeps its answer per
trace objects, the template its line per trace, ``run_repair`` the search
text per set of parts. Each must answer exactly as the plain computation,
again and again, and keep raising what it raises.
"""

from __future__ import annotations

import dataclasses

import pytest

from memos_feedback.config import FeedbackConfig
from memos_feedback.errors import InvalidInputError
from memos_feedback.repair.attach import attach_in, attach_repair_to_policies
from memos_feedback.store import Store, ToolCall
from memos_feedback.synthesis.evidence import looks_like_failure, split_evidence
from memos_feedback.text.blocks import merge_repair_block
from memos_feedback.types import DecisionRepairDraft, TraceRow

TEXTS = [
    "pip install failed: error 3",
    "no errors, all green",
    "0 failed, 12 passed",
    "error fixed after retry",
    "构建失败",
    "没有错误",
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_short_and_long_texts_answer_alike(text: str) -> None:
    # The same ending behind a long prefix (past the cache's length) reads the same.
    long = "x " * 2_000 + text
    first = looks_like_failure(text)
    assert looks_like_failure(text) == first  # cached answer
    assert looks_like_failure(long) == (first if text else False)


def _draft(policy_ids: tuple[str, ...], preference: str = "Prefer: uv") -> DecisionRepairDraft:
    return DecisionRepairDraft(
        context_hash="ctx",
        preference=preference,
        anti_pattern="Avoid: pip",
        severity="info",
        confidence=0.5,
        high_value_trace_ids=(),
        low_value_trace_ids=(),
        attach_to_policy_ids=policy_ids,
    )


def test_attaching_the_same_lines_again_changes_nothing(store: Store) -> None:
    a = store.policies.add("a", boundary="host text")
    b = store.policies.add("b", boundary="host text")  # the same boundary: a cache hit
    draft = _draft((a.id, b.id))
    with store.connection(write=True) as conn:
        assert set(attach_in(conn, draft)) == {a.id, b.id}
    expected = merge_repair_block("host text", [draft.preference], [draft.anti_pattern])
    assert store.policies.get(a.id).boundary == store.policies.get(b.id).boundary == expected
    with store.connection(write=True) as conn:
        assert attach_in(conn, draft) == ()  # already there: unchanged
    assert store.policies.get(a.id).boundary == expected


def test_a_bad_line_raises_every_time(store: Store) -> None:
    policy = store.policies.add("p", boundary="host text")
    bad = _draft((policy.id,), preference="Prefer: \ud800")
    for _ in range(2):
        with pytest.raises(InvalidInputError):
            attach_repair_to_policies(bad, store)
    assert store.policies.get(policy.id).boundary == "host text"


def test_session_traces_read_again_are_the_rows_as_stored(store: Store) -> None:
    """SQLite's TraceRows are cached per stored row: a changed row is a new row, never a stale one."""
    from sqlalchemy import update

    from memos_feedback.store import ToolCall
    from memos_feedback.store.models import TraceModel
    from memos_feedback.store.reads import session_traces

    for i in range(3):
        store.traces.add("s1", agent_text=f"step {i}", value=0.5, ts=10 + i, tool_calls=[ToolCall("t", "E")])
    with store.connection() as conn:
        first = session_traces(conn, "s1", 10)
    with store.connection() as conn:
        again = session_traces(conn, "s1", 10)
    assert again == first
    assert again == store.traces.list("s1", limit=10)
    changed = first[1].id
    with store.session(write=True) as s:
        s.execute(
            update(TraceModel)
            .where(TraceModel.id == changed)
            .values(agent_text="edited", value=-0.25, tool_calls=[{"name": "u", "error_code": None}])
        )
    with store.connection() as conn:
        after = {t.id: t for t in session_traces(conn, "s1", 10)}
    assert (after[changed].agent_text, after[changed].value) == ("edited", -0.25)
    assert after[changed].tool_calls == (ToolCall("u", None),)
    assert [after[t.id] for t in first if t.id != changed] == [t for t in first if t.id != changed]


def _trace(i: int, value: float, text: str) -> TraceRow:
    return TraceRow(f"t{i}", "s", None, i, "", text, None, value, (ToolCall("pip.install", None),))


def test_evidence_of_the_same_trace_objects_is_the_evidence_made_afresh() -> None:
    """split_evidence keeps its answer per trace objects; new or changed objects are split again."""
    from memos_feedback.synthesis.evidence import _evidence

    config = FeedbackConfig()
    traces = [_trace(1, 0.8, "uv ok"), _trace(2, 0.3, "pip failed: error"), _trace(3, 0.5, "npm ok")]
    first = split_evidence(traces, "pip", None, config)
    assert split_evidence(traces, "pip", None, config) is first  # the kept answer
    assert first == _evidence(traces, "pip", config.evidence_limit, config)
    assert first.low == (traces[1],) and first.high == (traces[0], traces[2])  # relaxed: no text says pip
    # Equal copies are other objects: split again, to the same answer.
    copies = [dataclasses.replace(t) for t in traces]
    assert split_evidence(copies, "pip", None, config) == first
    # A changed trace (a new object) is never answered from the memo.
    changed = [traces[0], dataclasses.replace(traces[1], agent_text="pip ok", value=0.9), traces[2]]
    assert split_evidence(changed, "pip", None, config).low == ()
    # Nor are other arguments: the threshold decides the low side.
    strict = FeedbackConfig(min_low_value_threshold=0.0)
    assert split_evidence(traces, "pip", 1, strict) == _evidence(traces, "pip", 1, strict)


def test_error_signature_of_short_and_long_traces_answer_alike() -> None:
    from memos_feedback.synthesis.failure import _MEMO_TEXT, _signature, error_signature

    short = "pip install failed: error 3"
    long = "x " * _MEMO_TEXT + "\npip install failed: error 3"
    for text in (short, long):
        made = _signature(text)
        assert made == "pip install failed: error 3"
        assert error_signature(text) == made
        assert error_signature(text) == made  # again: the kept answer


def test_source_text_kept_is_build_source_text() -> None:
    from memos_feedback.recall.indexing import build_source_text
    from memos_feedback.repair.write import _source_text_memo

    args = ("Prefer: uv", "Avoid: pip", "pip.install", "ctx", "use uv", ("E1", "E1", "E2"), "trace tail")
    expected = build_source_text(
        preference=args[0],
        anti_pattern=args[1],
        tool_id=args[2],
        context=args[3],
        user_text=args[4],
        reasons=args[5],
        trace_text=args[6],
    )
    assert _source_text_memo(*args) == expected
    assert _source_text_memo(*args) == expected
