"""Caps and cleaning for text that crosses into the durable queue.

Tool contexts, failure reasons and user messages come from the agent
runtime and may be anything: megabytes of output, NUL bytes, lone
surrogates from a bad decode. None of that may stop a repair from being
stored: PostgreSQL rejects ``\\x00`` in text and JSONB, and no UTF-8
encoder takes a lone surrogate. So before a trigger becomes a job, every
string in it goes through ``clean_text``: NUL and lone surrogates become
U+FFFD (the replacement character, what a lenient decoder would have
produced) and the text is cut to a cap.

The context *hash* is always computed over the full, original text (see
``signals.context_hash_of``), so capping never merges two situations.
"""

from __future__ import annotations

__all__ = [
    "CONTEXT_CHAR_CAP",
    "ELISION",
    "ID_CHAR_CAP",
    "MAX_LIMIT",
    "REASON_CHAR_CAP",
    "REPLACEMENT",
    "USER_TEXT_CHAR_CAP",
    "clean_optional",
    "clean_text",
]

# What a job keeps of each kind of text. A repair needs the gist, not the
# whole output: the synthesis reads a few hundred characters at most.
CONTEXT_CHAR_CAP = 4_096
REASON_CHAR_CAP = 2_048
USER_TEXT_CHAR_CAP = 16_384
# Ids (session, episode, trace) are short by nature; a 10 MB "id" is a bug.
ID_CHAR_CAP = 255

# The most rows one listing call returns (repositories, queue, CLI): a
# bound on what a caller can make us read into memory at once.
MAX_LIMIT = 10_000

REPLACEMENT = "\ufffd"


# Marks the middle cut out of an over-long text.
ELISION = " … "


def clean_text(text: str, cap: int) -> str:
    """``text`` in at most ``cap`` characters, NUL and lone surrogates replaced by U+FFFD.

    An over-long text keeps its head and its last quarter, joined by
    ``ELISION``: the end of a message ("… — use pnpm") or of an error
    output is often the part that matters.
    """
    if len(text) > cap:
        tail = cap // 4
        head = max(0, cap - tail - len(ELISION))
        text = text[:head] + ELISION + text[len(text) - tail :] if tail else text[:cap]
    if text.isascii():
        # The common case: one C-level scan, and ASCII has no surrogates.
        return text.replace("\x00", REPLACEMENT) if "\x00" in text else text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = "".join(REPLACEMENT if "\ud800" <= ch <= "\udfff" else ch for ch in text)
    return text.replace("\x00", REPLACEMENT) if "\x00" in text else text


def clean_optional(text: str | None, cap: int) -> str | None:
    """``clean_text`` for an optional string."""
    return None if text is None else clean_text(text, cap)
