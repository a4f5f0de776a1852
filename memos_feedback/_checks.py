"""Argument checks shared by the public calls: one place that says how a bad
argument is reported (``InvalidInputError`` naming the argument)."""

from __future__ import annotations

import math

from .errors import InvalidInputError

__all__ = [
    "check_int",
    "check_number",
    "check_optional_strs",
    "check_step",
    "check_str",
    "check_tool_context",
]


def check_str(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str, got {type(value).__name__}")


def check_optional_strs(**values: object) -> None:
    """Each keyword's value is a str or None, or ``InvalidInputError`` naming it."""
    for name, value in values.items():
        if value is not None and not isinstance(value, str):
            raise InvalidInputError(f"{name} must be a str or None, got {type(value).__name__}")


def check_int(name: str, value: object, *, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` as an int within ``[lo, hi]`` (either bound optional), or ``InvalidInputError``."""
    # bool is an int subclass; True as a count or a step is a bug in the caller.
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{name} must be an int, got {type(value).__name__}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        if hi is None:
            raise InvalidInputError(f"{name} must be >= {lo}, got {value}")
        if lo is None:
            raise InvalidInputError(f"{name} must be <= {hi}, got {value}")
        raise InvalidInputError(f"{name} must be an int in [{lo}, {hi}], got {value}")
    return value


def check_number(name: str, value: object, low: float, high: float) -> float:
    """``value`` as a finite float within ``[low, high]``, or ``InvalidInputError``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInputError(f"{name} must be a finite number, got {value!r}")
    if not low <= value <= high:
        raise InvalidInputError(f"{name} must be in [{low}, {high}], got {value!r}")
    return float(value)


def check_step(value: object) -> None:
    check_int("step", value, lo=0)


def check_tool_context(tool_id: object, context: object) -> None:
    check_str("tool_id", tool_id)
    if not tool_id:
        raise InvalidInputError("tool_id must not be empty")
    check_str("context", context)
