"""Optional LLM tier of the feedback classifier.

``classify_feedback_llm(text, llm)`` first answers locally (rules + learned
tier, ``classify_feedback``). Only when that answer's calibrated confidence is
below ``threshold`` does it ask the LLM — one short prompt, a strict JSON
reply — and it falls back to the local answer on any failure: a transport
error or timeout (bounded by the client's own timeout, e.g.
``OpenAIRepairLLM(timeout=2.0)``), a reply that is not the expected object, a
shape that is not one of the eight. Fields the LLM returns are kept only when
they are the user's own words (a substring of the message).

``llm`` is anything with ``complete_json(messages, schema_name) -> dict``
(``llm.RepairLLM``'s interface, e.g. ``OpenAIRepairLLM``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final, Protocol

from ..types import EXTRACTED_FIELDS, ClassifiedFeedback, Shape
from .classifier import classify_feedback

__all__ = ["DEFAULT_THRESHOLD", "LLM_CONFIDENCE", "JsonLLM", "build_messages", "classify_feedback_llm"]

_log = logging.getLogger("memos_feedback.llm_classify")

# Below this calibrated confidence the local answer is unsure enough to ask.
DEFAULT_THRESHOLD: Final = 0.75
# Confidence reported for an answer the LLM gave.
LLM_CONFIDENCE: Final = 0.8
SCHEMA_NAME: Final = "feedback_shape"
_MAX_TEXT: Final = 2000
_ALLOWED: Final = {
    "preference": ("prefer", "avoid"),
    "correction": ("correction",),
    "constraint": ("constraint",),
}

_SYSTEM: Final = (
    "Classify the user's feedback on an AI agent's previous step. Reply with one JSON object: "
    '{"shape": one of "positive","negative","correction","constraint","preference","confusion",'
    '"instruction","unknown"; optional "prefer","avoid" (tool or approach, preference only), '
    '"correction" (the right value, correction only), "constraint" (the added requirement, constraint '
    "only); each field copied verbatim from the message}. "
    "preference: names what to use instead; correction: states the right value or fact; constraint: "
    "keeps the work but adds a requirement; negative: rejects or says it failed; positive: approves "
    '(also "no problem", "not bad"); confusion: asks why or what it means; instruction: a new next '
    "step; unknown: anything else."
)


class JsonLLM(Protocol):
    def complete_json(self, messages: Sequence[Mapping[str, str]], schema_name: str) -> dict[str, Any]: ...


def build_messages(text: str, agent_text: str | None = None) -> list[dict[str, str]]:
    """The one short prompt: a system message and the (bounded) message, with context if any."""
    payload: dict[str, str] = {"message": text[:_MAX_TEXT]}
    if agent_text:
        payload["agent_previous_turn"] = agent_text[-_MAX_TEXT:]
    return [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
    ]


def _parse(reply: object, text: str) -> ClassifiedFeedback | None:
    if not isinstance(reply, dict):
        return None
    try:
        shape = Shape(reply.get("shape"))
    except ValueError:
        return None
    fields: dict[str, str | None] = dict.fromkeys(EXTRACTED_FIELDS)
    for name in _ALLOWED.get(shape.value, ()):
        value = reply.get(name)
        if isinstance(value, str):
            value = value.strip().strip("`'\"")
            if value and value in text:
                fields[name] = value
    return ClassifiedFeedback(
        shape,
        LLM_CONFIDENCE,
        fields["prefer"],
        fields["avoid"],
        fields["correction"],
        fields["constraint"],
        text,
    )


def classify_feedback_llm(
    text: object,
    llm: JsonLLM | None,
    *,
    agent_text: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> ClassifiedFeedback:
    """The local answer, or the LLM's when the local one is unsure (see the module docstring)."""
    local = classify_feedback(text, agent_text=agent_text)
    if llm is None or not local.text or local.confidence >= threshold:
        return local
    try:
        reply = llm.complete_json(build_messages(local.text, agent_text), SCHEMA_NAME)
    except Exception as exc:  # any failure: the local answer stands
        _log.info("LLM tier failed (%s); keeping the local answer", type(exc).__name__)
        return local
    answer = _parse(reply, local.text)
    if answer is None:
        _log.info("LLM tier reply not usable; keeping the local answer")
        return local
    if answer.shape is local.shape:
        # Same shape: keep the local spans where the LLM gave none.
        return replace(
            answer,
            prefer=answer.prefer or local.prefer,
            avoid=answer.avoid or local.avoid,
            correction=answer.correction or local.correction,
            constraint=answer.constraint or local.constraint,
        )
    return answer
