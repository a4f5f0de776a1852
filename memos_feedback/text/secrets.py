"""``redact_secrets``: the one secret redaction every writer and the sanitiser use.

Agents paste credentials into commands and contexts (``git push
https://x:TOKEN@…``, ``export AWS_ACCESS_KEY_ID=…``, a DSN with a password).
Whatever this library stores or shows — a repair's context, a job's payload,
an event-log row, a served context, an audit or log line, a prompt line —
passes through this function first, so a secret is replaced by
``[redacted]`` before it reaches a table, a page or a log.

The redactor itself is ``text.redact``: one detector per family of secrets
(known-prefix tokens, private key blocks, URLs with credentials, auth
headers and cookies, assignments and entries by name, command lines by
tool, prose, Chinese labels, high-entropy runs), named filters for what
only stands for a secret, and one engine that merges the spans and replaces
them once. It is linear in the text's length and idempotent:
``redact_secrets`` of its own output changes nothing. Line breaks are kept
(stored contexts stay readable); ``sanitize_line`` joins lines itself.
"""

from __future__ import annotations

from ..limits import clean_text
from .redact import REDACTED, redact

__all__ = ["REDACTED", "redact_optional", "redact_secrets", "redact_value", "stored_optional", "stored_text"]


# Texts this function returned lately: each is a fixed point (redaction is
# idempotent), so redacting one again can return it as it is. A repair's
# lines are redacted where they are built and again by the column type as
# they are written (store.models.RedactedText); this makes the second pass
# a dict lookup. Short texts only, and cleared when full (no order kept:
# lookups and inserts stay atomic under the GIL, no lock is needed).
_FIXED_MAX_LEN = 4_096
_FIXED_CAP = 4_096
_fixed_points: dict[str, None] = {}


def redact_secrets(text: str) -> str:
    """``text`` with every recognised secret replaced by ``[redacted]``.

    Pure, linear in ``len(text)`` and idempotent. Line breaks are kept.
    Text that this function returned lately is returned at once.
    """
    short = len(text) <= _FIXED_MAX_LEN
    if short and text in _fixed_points:
        return text
    out = redact(text)
    if short and len(out) <= _FIXED_MAX_LEN:
        if len(_fixed_points) >= _FIXED_CAP:
            _fixed_points.clear()
        _fixed_points[out] = None
    return out


# What is read around the part of a text that a cap keeps: enough to see
# a whole token that straddles the cut.
_MARGIN = 1024


def stored_text(text: str, cap: int) -> str:
    """``text`` as a table keeps it: secrets redacted, then ``limits.clean_text(…, cap)``.

    Redaction comes first, so a cut never halves a token into pieces no
    pattern knows; only the parts the cap keeps (plus a margin) are read.
    """
    if len(text) > cap + 2 * _MARGIN:
        text = text[: cap + _MARGIN] + "\n" + text[len(text) - cap // 4 - _MARGIN :]
    return clean_text(redact_secrets(text), cap)


def stored_optional(text: str | None, cap: int) -> str | None:
    """``stored_text`` for an optional string."""
    return None if text is None else stored_text(text, cap)


def redact_optional(text: str | None) -> str | None:
    """``redact_secrets`` for an optional string."""
    return None if text is None else redact_secrets(text)


def redact_value(value: object) -> object:
    """A JSON-like ``value`` with every string in it redacted (dict keys stay)."""
    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v) for v in value]
    return value
