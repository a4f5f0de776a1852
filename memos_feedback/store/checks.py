"""Argument checks of the repositories: a bad value is the caller's mistake,
reported as ``InvalidInputError`` naming the argument before any SQL runs
(PostgreSQL would refuse an over-long value; SQLite would keep it)."""

from __future__ import annotations

import math
from collections.abc import Iterable

from sqlalchemy.orm import Session

from .._checks import check_int
from ..errors import InvalidInputError
from ..limits import MAX_LIMIT
from ..types import now_ms

__all__ = [
    "ID_MAX",
    "MAX_LIMIT",
    "MAX_MILLIS",
    "NAME_MAX",
    "SEVERITIES",
    "SHORT_MAX",
    "as_opt_str",
    "as_str",
    "check_limit",
    "check_millis",
    "check_number",
    "check_session",
    "check_str_tuple",
    "check_text",
]


SEVERITIES = ("info", "warn")


# Column widths (VARCHAR(n)) of the models: a longer value is the caller's
# mistake, said before PostgreSQL would refuse it (SQLite would not).
ID_MAX = 64


NAME_MAX = 255


SHORT_MAX = 32


# BIGINT, the type of every epoch-ms column.
MAX_MILLIS = 2**63 - 1


def check_text(name: str, value: object, *, empty: bool = True, max_len: int | None = None) -> str:
    """``value`` if it is a str both backends can store, else ``InvalidInputError``.

    Refused: non-str, empty (when ``empty`` is False), longer than
    ``max_len``, NUL characters (PostgreSQL cannot store them) and lone
    surrogates such as ``"\\ud83d"`` (not Unicode text; no driver can
    encode them).
    """
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str, got {type(value).__name__}")
    if not empty and not value.strip():
        raise InvalidInputError(f"{name} must not be empty")
    if max_len is not None and len(value) > max_len:
        raise InvalidInputError(f"{name} must be at most {max_len} characters, got {len(value)}")
    if "\x00" in value:
        raise InvalidInputError(f"{name} must not contain NUL characters")
    if not value.isascii():  # the common case skips the encode below
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInputError(
                f"{name} is not valid Unicode text (lone surrogate at position {exc.start})"
            ) from None
    return value


def as_str(name: str, value: object, *, empty: bool = True, max_len: int | None = None) -> str:
    return check_text(name, value, empty=empty, max_len=max_len)


def as_opt_str(name: str, value: object, *, max_len: int | None = None) -> str | None:
    return None if value is None else as_str(name, value, max_len=max_len)


def check_number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{name} must be a finite number, got {value!r:.80}")
    try:
        number = float(value)  # an int beyond the float range overflows here
    except OverflowError:
        raise InvalidInputError(f"{name} must be a finite number, got a huge int") from None
    if not math.isfinite(number):
        raise InvalidInputError(f"{name} must be a finite number, got {value!r}")
    return number


def check_millis(name: str, value: object) -> int:
    if value is None:
        return now_ms()
    return check_int(name, value, lo=0, hi=MAX_MILLIS)


def check_limit(value: object) -> int:
    return check_int("limit", value, lo=1, hi=MAX_LIMIT)


def check_str_tuple(name: str, values: object) -> tuple[str, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InvalidInputError(f"{name} must be a sequence of str")
    out = tuple(values)
    item = name + " item"
    for v in out:
        check_text(item, v)
    return out


def check_session(session: object) -> None:
    if session is not None and not isinstance(session, Session):
        raise InvalidInputError(f"session must be a SQLAlchemy Session or None, got {type(session).__name__}")
