"""The optional LLM tier of the classifier, against the loopback chat server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from memos_feedback.classify.classifier import ABSTAIN_CONFIDENCE, classify_feedback
from memos_feedback.classify.llm import build_messages, classify_feedback_llm
from memos_feedback.synthesis.llm import OpenAIRepairLLM
from memos_feedback.types import Shape
from tests.support.chat_server import Behaviour, ChatServer

ALWAYS = 1.01  # a threshold no local confidence reaches: always ask


@pytest.fixture()
def server() -> Iterator[ChatServer]:
    with ChatServer() as s:
        yield s


@pytest.fixture()
def llm(server: ChatServer) -> OpenAIRepairLLM:
    return OpenAIRepairLLM("clf-model", base_url=server.base_url, api_key="k", timeout=1.0)


def test_unsure_local_answer_asks_the_llm(server: ChatServer, llm: OpenAIRepairLLM) -> None:
    reply = {"shape": "preference", "prefer": "Notion", "avoid": "Confluence"}
    server.script(Behaviour.ok(json.dumps(reply)))
    text = "Notion, Confluence is where docs go to die"
    got = classify_feedback_llm(text, llm, threshold=ALWAYS)
    assert got.shape is Shape.PREFERENCE
    assert (got.prefer, got.avoid) == ("Notion", "Confluence")
    sent = server.requests[0].json
    assert sent["model"] == "clf-model"
    assert json.loads(sent["messages"][-1]["content"])["message"] == text


def test_confident_local_answer_does_not_call(server: ChatServer, llm: OpenAIRepairLLM) -> None:
    local = classify_feedback("use `uv` instead of pip.")
    got = classify_feedback_llm("use `uv` instead of pip.", llm, threshold=local.confidence)
    assert got == local
    assert server.requests == []


def test_no_llm_is_the_local_answer() -> None:
    assert classify_feedback_llm("stop that", None, threshold=ALWAYS) == classify_feedback("stop that")


@pytest.mark.parametrize(
    "behaviour",
    [
        Behaviour.error(500),
        Behaviour.error(429),
        Behaviour.non_json(),
        Behaviour.empty(),
        Behaviour.refuse(),
        Behaviour.ok(json.dumps({"shape": "furious"})),
        Behaviour.ok(json.dumps(["negative"])),
    ],
)
def test_any_failure_falls_back_to_the_local_answer(
    server: ChatServer, llm: OpenAIRepairLLM, behaviour: Behaviour
) -> None:
    server.script(behaviour)
    text = "stop that"
    assert classify_feedback_llm(text, llm, threshold=ALWAYS) == classify_feedback(text)


def test_timeout_falls_back_quickly(server: ChatServer) -> None:
    llm = OpenAIRepairLLM("m", base_url=server.base_url, api_key="k", timeout=0.3)
    server.script(Behaviour.hang())
    start = time.monotonic()
    assert classify_feedback_llm("almost", llm, threshold=ALWAYS) == classify_feedback("almost")
    assert time.monotonic() - start < 10.0


def test_fields_must_be_the_users_words(server: ChatServer, llm: OpenAIRepairLLM) -> None:
    server.script(Behaviour.ok(json.dumps({"shape": "correction", "correction": "eight thousand eighty"})))
    got = classify_feedback_llm("hmm, the port", llm, threshold=ALWAYS)
    assert got.shape is Shape.CORRECTION and got.correction is None


def test_prompt_is_short_and_bounded() -> None:
    messages = build_messages("x" * 100_000, agent_text="y" * 100_000)
    assert len(messages) == 2
    assert sum(len(m["content"]) for m in messages) < 6_000


def test_an_abstained_answer_is_decided_by_the_llm(server: ChatServer, llm: OpenAIRepairLLM) -> None:
    # "who asked for this?": the tier's repair probability is below the artefact's
    # abstention threshold, so locally no repair triggers; the LLM tier decides.
    local = classify_feedback("who asked for this?")
    assert local.shape is Shape.UNKNOWN and local.confidence <= ABSTAIN_CONFIDENCE
    server.script(Behaviour.ok(json.dumps({"shape": "negative"})))
    got = classify_feedback_llm("who asked for this?", llm)  # the default threshold
    assert got.shape is Shape.NEGATIVE and len(server.requests) == 1
