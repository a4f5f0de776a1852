"""A job's payload: the JSON object that describes one ``RepairInput``, both ways.

``payload_of`` writes it when a job is queued, ``input_from_payload`` reads
it back in the worker, and ``read_payload`` turns the stored column into an
object (or says why it is not one: such a job is dead-lettered, never lost).
Kept in one place so the two directions cannot drift apart.
"""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any, Final

from ..errors import InvalidInputError
from ..types import ClassifiedFeedback, FailureRecord, RepairInput, Shape

__all__ = ["input_from_payload", "payload_of", "read_payload"]

_INPUT_FIELDS: Final = tuple(f.name for f in fields(RepairInput))
_EXTRACTED: Final = ("prefer", "avoid", "correction", "constraint")


def payload_of(inp: RepairInput) -> dict[str, Any]:
    """The JSON payload that fully describes a ``RepairInput``."""
    # Field by field rather than dataclasses.asdict, which deep-copies
    # recursively and costs more than the rest of an enqueue.
    data: dict[str, Any] = {name: getattr(inp, name) for name in _INPUT_FIELDS}
    data["failures"] = [f._asdict() for f in inp.failures]
    c = inp.classified
    if c is not None:
        # The message's text is ``user_text`` already: not stored twice.
        data["classified"] = {"shape": c.shape.value, "confidence": c.confidence} | {
            name: getattr(c, name) for name in _EXTRACTED
        }
    return data


def input_from_payload(payload: dict[str, Any]) -> RepairInput:
    """The ``RepairInput`` a payload describes; ``InvalidInputError`` when it describes none."""
    if not isinstance(payload, dict):
        raise InvalidInputError(f"payload must be a JSON object, got {type(payload).__name__}")
    data = dict(payload)
    try:
        failures = tuple(FailureRecord(**f) for f in data.pop("failures", ()) or ())
        classified = _classified_from(data.pop("classified", None), data.get("user_text"))
        return RepairInput(failures=failures, classified=classified, **data)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"payload does not describe a repair: {exc}") from None


def _classified_from(raw: object, text: object) -> ClassifiedFeedback | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise TypeError(f"classified must be an object, got {type(raw).__name__}")
    extracted = {name: raw.get(name) for name in _EXTRACTED}
    if not all(v is None or isinstance(v, str) for v in extracted.values()):
        raise TypeError("classified fields must be strings or null")
    confidence = raw.get("confidence")
    if not isinstance(confidence, (int, float)) or isinstance(confidence, bool):
        raise TypeError("classified confidence must be a number")
    text = text if isinstance(text, str) else ""
    return ClassifiedFeedback(Shape(raw.get("shape")), float(confidence), text=text, **extracted)


def read_payload(raw: object) -> tuple[dict[str, Any], str | None]:
    """The payload as a dict, or ``({}, reason)`` when it is not a JSON object."""
    if isinstance(raw, (str, bytes)):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            return {}, f"payload is not JSON: {exc}"
    if not isinstance(raw, dict):
        return {}, f"payload is a JSON {type(raw).__name__}, not an object"
    return raw, None
