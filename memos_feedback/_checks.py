"""Argument checks shared by the public calls: one place that says how a bad
argument is reported (``InvalidInputError`` naming the argument)."""

from __future__ import annotations

from .errors import InvalidInputError

__all__ = ["check_step", "check_str", "check_tool_context"]


def check_str(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str, got {type(value).__name__}")


def check_step(value: object) -> None:
    # bool is an int subclass; True as a step is a bug in the caller.
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"step must be an int, got {type(value).__name__}")
    if value < 0:
        raise InvalidInputError(f"step must be >= 0, got {value}")


def check_tool_context(tool_id: object, context: object) -> None:
    check_str("tool_id", tool_id)
    if not tool_id:
        raise InvalidInputError("tool_id must not be empty")
    check_str("context", context)
