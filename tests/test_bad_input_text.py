"""Bad input to the public text/LLM calls (issue 9, item 15): always ``InvalidInputError``.

Wrong types and lone surrogates ("\\ud83d", which cannot be encoded as
UTF-8) must never surface as a raw TypeError, AttributeError or
UnicodeEncodeError from deep inside a call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memos_feedback.config import FeedbackConfig
from memos_feedback.errors import InvalidInputError
from memos_feedback.repair.attach import attach_repair_to_policies
from memos_feedback.synthesis.evidence import RepairEvidence
from memos_feedback.synthesis.llm import OpenAIRepairLLM, parse_json_object
from memos_feedback.synthesis.prompts import build_repair_messages, feedback_shape
from memos_feedback.synthesis.synthesize import synthesize_draft
from memos_feedback.text.blocks import (
    RepairBlock,
    merge_repair_block,
    parse_repair_block,
    remove_repair_lines,
    render_repair_block,
    strip_repair_block,
)
from memos_feedback.text.sanitize import check_text, sanitize_line
from memos_feedback.types import DecisionRepairDraft

LONE = "\ud83d"
EV = RepairEvidence(high=(), low=(), keyword=None, relaxed=False)
CFG = FeedbackConfig()
URL = "http://127.0.0.1:9/v1"


def _llm() -> OpenAIRepairLLM:
    return OpenAIRepairLLM("m", base_url=URL, api_key="k", timeout=1.0)


def _synth(**kw: Any) -> Any:
    args: dict[str, Any] = {
        "context_hash": "h", "trigger": "t", "tool_id": None, "evidence": EV, "config": CFG,
    }  # fmt: skip
    args.update(kw)
    return synthesize_draft(**args)


def _draft(**kw: Any) -> DecisionRepairDraft:
    args: dict[str, Any] = {
        "context_hash": "h", "preference": "p", "anti_pattern": "a", "severity": "info", "confidence": 0.5,
        "high_value_trace_ids": (), "low_value_trace_ids": (), "attach_to_policy_ids": ("po",),
    }  # fmt: skip
    args.update(kw)
    return DecisionRepairDraft(**args)


class _Feedback:
    shape = "preference"
    confidence = 0.9
    prefer: object = None
    avoid: object = None
    correction: object = None
    constraint: object = None


def _feedback(**kw: object) -> _Feedback:
    fb = _Feedback()
    for key, value in kw.items():
        setattr(fb, key, value)
    return fb


CALLS: dict[str, Callable[[], object]] = {
    "sanitize_line(None)": lambda: sanitize_line(None),  # type: ignore[arg-type]
    "sanitize_line(bytes)": lambda: sanitize_line(b"x"),  # type: ignore[arg-type]
    "sanitize_line(cap=str)": lambda: sanitize_line("x", "5"),  # type: ignore[arg-type]
    "check_text(int)": lambda: check_text("x", 1),
    "check_text(surrogate)": lambda: check_text("x", LONE),
    "parse_repair_block(None)": lambda: parse_repair_block(None),  # type: ignore[arg-type]
    "parse_repair_block(surrogate)": lambda: parse_repair_block("host" + LONE),
    "strip_repair_block(int)": lambda: strip_repair_block(3),  # type: ignore[arg-type]
    "render(None host)": lambda: render_repair_block(None, RepairBlock(("p",))),  # type: ignore[arg-type]
    "render(dict block)": lambda: render_repair_block("h", {"preference": ["p"]}),  # type: ignore[arg-type]
    "render(surrogate host)": lambda: render_repair_block(LONE, RepairBlock(("p",))),
    "RepairBlock(None)": lambda: RepairBlock(None),  # type: ignore[arg-type]
    "RepairBlock(str)": lambda: RepairBlock("abc"),  # type: ignore[arg-type]
    "RepairBlock([1])": lambda: RepairBlock((1,)),  # type: ignore[arg-type]
    "RepairBlock(surrogate)": lambda: RepairBlock((LONE,)),
    "merge(None)": lambda: merge_repair_block(None, ["p"]),  # type: ignore[arg-type]
    "merge(str lines)": lambda: merge_repair_block("h", "pnpm"),
    "merge(int lines)": lambda: merge_repair_block("h", 5),  # type: ignore[arg-type]
    "merge([None])": lambda: merge_repair_block("h", [None]),  # type: ignore[list-item]
    "merge(surrogate line)": lambda: merge_repair_block("h", ["p" + LONE]),
    "remove(None)": lambda: remove_repair_lines(None, ["p"]),  # type: ignore[arg-type]
    "remove([b'x'])": lambda: remove_repair_lines("h", [b"x"]),  # type: ignore[list-item]
    "synth(trigger=None)": lambda: _synth(trigger=None),
    "synth(context_hash surrogate)": lambda: _synth(context_hash=LONE),
    "synth(trigger surrogate)": lambda: _synth(trigger="t" + LONE),
    "synth(tool_id int)": lambda: _synth(tool_id=5),
    "synth(tool_id surrogate)": lambda: _synth(tool_id=LONE),
    "synth(feedback str)": lambda: _synth(feedback="use pnpm"),
    "synth(feedback prefer int)": lambda: _synth(feedback=_feedback(prefer=5)),
    "synth(feedback prefer surrogate)": lambda: _synth(feedback=_feedback(prefer=LONE)),
    "synth(llm str)": lambda: _synth(llm="gpt"),
    "synth(raise_transient str)": lambda: _synth(raise_transient="yes"),
    "synth(policy ids None)": lambda: _synth(attach_to_policy_ids=None),
    "synth(policy id surrogate)": lambda: _synth(attach_to_policy_ids=[LONE]),
    "attach(draft None)": lambda: attach_repair_to_policies(None, object()),  # type: ignore[arg-type]
    "attach(store None)": lambda: attach_repair_to_policies(_draft(), None),  # type: ignore[arg-type]
    "llm(model int)": lambda: OpenAIRepairLLM(5, base_url=URL, api_key="k"),  # type: ignore[arg-type]
    "llm(model surrogate)": lambda: OpenAIRepairLLM(LONE, base_url=URL, api_key="k"),
    "llm(base_url int)": lambda: OpenAIRepairLLM("m", base_url=5, api_key="k"),  # type: ignore[arg-type]
    "llm(api_key surrogate)": lambda: OpenAIRepairLLM("m", base_url=URL, api_key=LONE),
    "llm(timeout str)": lambda: OpenAIRepairLLM("m", base_url=URL, api_key="k", timeout="5"),  # type: ignore[arg-type]
    "llm(temperature str)": lambda: OpenAIRepairLLM("m", base_url=URL, api_key="k", temperature="0"),  # type: ignore[arg-type]
    "llm(max_tokens 0)": lambda: OpenAIRepairLLM("m", base_url=URL, api_key="k", max_tokens=0),
    "llm(client str)": lambda: OpenAIRepairLLM("m", base_url=URL, api_key="k", client="c"),  # type: ignore[arg-type]
    "llm(environ list)": lambda: OpenAIRepairLLM("m", base_url=URL, api_key="k", environ=[]),  # type: ignore[arg-type]
    "complete(None)": lambda: _llm().complete_json(None, "x"),  # type: ignore[arg-type]
    "complete(role list)": lambda: _llm().complete_json([{"role": ["user"], "content": "x"}], "x"),  # type: ignore[dict-item]
    "complete(surrogate)": lambda: _llm().complete_json([{"role": "user", "content": LONE}], "x"),
    "complete(schema int)": lambda: _llm().complete_json([{"role": "user", "content": "x"}], 5),  # type: ignore[arg-type]
    "parse_json_object(None)": lambda: parse_json_object(None),  # type: ignore[arg-type]
    "messages(evidence None)": lambda: build_repair_messages(trigger="t", tool_id=None, evidence=None),  # type: ignore[arg-type]
    "messages(trigger None)": lambda: build_repair_messages(trigger=None, tool_id=None, evidence=EV),  # type: ignore[arg-type]
    "messages(tool_id int)": lambda: build_repair_messages(trigger="t", tool_id=5, evidence=EV),  # type: ignore[arg-type]
    "messages(trigger surrogate)": lambda: build_repair_messages(trigger=LONE, tool_id=None, evidence=EV),
    "messages(config dict)": lambda: build_repair_messages(trigger="t", tool_id=None, evidence=EV, config={}),  # type: ignore[arg-type]
    "messages(feedback str)": lambda: build_repair_messages(
        trigger="t", tool_id=None, evidence=EV, feedback="x"
    ),  # type: ignore[arg-type]
    "feedback_shape(str)": lambda: feedback_shape("x"),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("name", list(CALLS))
def test_bad_input_raises_invalid_input_error(name: str) -> None:
    with pytest.raises(InvalidInputError):
        CALLS[name]()
