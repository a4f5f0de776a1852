"""The ``@repair`` block at the end of a policy boundary (PIPELINE.md §7).

A boundary is free text owned by the host. Our guidance lives in exactly
one block, the boundary's last line::

    <host text>\\n@repair {"preference":[...],"anti_pattern":[...]}

Only a last line that *is* such a block counts as ours: the marker
``@repair `` followed by a JSON object whose keys are ``preference`` and/or
``anti_pattern``, each a list of strings, the line at most
``MAX_BLOCK_CHARS`` long. Any other last line — including a host line that
merely starts with ``@repair`` (``@repair crew: never deploy on Fridays``)
or a damaged block — is host text, kept byte for byte; a merge then writes
a fresh block after it.

``render`` always puts one newline between host text and block (none when
the host text is empty) and ``parse`` removes exactly that newline, so
``parse(render(host, block)) == (host, block)`` for every host text and
every block within the caps below: the host's bytes survive any number of
merges unchanged.

The block is capped so it can never outgrow ``MAX_BLOCK_CHARS`` (and turn
into host text) however many repairs are merged: each list keeps its
newest ``MAX_BLOCK_LINES`` lines, a line longer than ``MAX_LINE_CHARS`` is
cut (ending in ``…``), and while the rendered line is longer than
``MAX_RENDERED_CHARS`` the oldest line of the longer list is dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import InvalidInputError
from .logs import library_logger
from .sanitize import check_text

__all__ = [
    "MAX_BLOCK_CHARS",
    "MAX_BLOCK_LINES",
    "MAX_LINE_CHARS",
    "MAX_RENDERED_CHARS",
    "REPAIR_MARKER",
    "RepairBlock",
    "merge_repair_block",
    "parse_repair_block",
    "remove_repair_lines",
    "render_repair_block",
    "strip_repair_block",
]

logger = library_logger("memos_feedback.boundary")

REPAIR_MARKER = "@repair "
# Our block always starts like this (compact JSON object right after the marker).
_BLOCK_PREFIX = REPAIR_MARKER + "{"
_KEYS = frozenset({"preference", "anti_pattern"})
# A last line longer than this is never decoded (bounded work on hostile
# input): it is host text. Our own block stays far below it (caps below).
MAX_BLOCK_CHARS = 256 * 1024
# Newest lines kept per list. A policy collects one pair per repair attached
# to it; past this many, the oldest guidance is the least likely to matter.
MAX_BLOCK_LINES = 32
# One guidance line; ours are at most 240 characters (sanitize.DEFAULT_CAP).
MAX_LINE_CHARS = 1000
# The rendered block line. JSON escaping can grow a character to six
# ("\u0000"), so one pair of capped lines is at most ~12 KB and always fits.
MAX_RENDERED_CHARS = 32 * 1024
_ELLIPSIS = "…"


def _lines(name: str, value: object) -> tuple[str, ...]:
    # A str is iterable too, but merging "abc" as three lines is never meant.
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidInputError(f"{name} must be an iterable of str, got {type(value).__name__}")
    return tuple(check_text(f"{name} line", line) for line in value)


@dataclass(frozen=True, slots=True)
class RepairBlock:
    """The two lists of the block; any iterable of str is accepted and kept as a tuple."""

    preference: tuple[str, ...] = ()
    anti_pattern: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Frozen dataclass: normalise through object.__setattr__.
        object.__setattr__(self, "preference", _lines("preference", self.preference))
        object.__setattr__(self, "anti_pattern", _lines("anti_pattern", self.anti_pattern))

    def to_line(self) -> str:
        payload = {"preference": list(self.preference), "anti_pattern": list(self.anti_pattern)}
        # Compact, and json.dumps escapes newlines, so the block stays one line.
        return REPAIR_MARKER + json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _decode(line: str) -> RepairBlock | None:
    """The block this line holds, or None when the line is not one of ours."""
    if not line.startswith(_BLOCK_PREFIX) or len(line) > MAX_BLOCK_CHARS:
        return None
    try:
        data = json.loads(line[len(REPAIR_MARKER) :])
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not data or not set(data) <= _KEYS:
        return None
    lists: list[tuple[str, ...]] = []
    for key in ("preference", "anti_pattern"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return None
        lists.append(tuple(value))
    try:
        return RepairBlock(preference=lists[0], anti_pattern=lists[1])
    except InvalidInputError:
        return None  # "\ud83d" escapes decode to lone surrogates: not a block we wrote


def _split(boundary: str) -> tuple[str, RepairBlock | None]:
    start = boundary.rfind("\n") + 1
    last = boundary[start:]
    block = _decode(last)
    if block is None:
        if last.startswith(REPAIR_MARKER.rstrip()):
            logger.debug("last line starts with @repair but is not a block; kept as host text")
        return boundary, None
    host = boundary[: start - 1] if start > 0 else ""
    return host, block


def parse_repair_block(boundary: str) -> tuple[str, RepairBlock | None]:
    """Split a boundary into host text and its ``@repair`` block.

    Without a block of ours on the last line, the whole boundary is host
    text and the block is None. Raises ``InvalidInputError`` for a
    non-str boundary or one with a lone surrogate.
    """
    return _split(check_text("boundary", boundary))


def strip_repair_block(boundary: str) -> str:
    """The boundary without its ``@repair`` block (host text only)."""
    return parse_repair_block(boundary)[0]


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + _ELLIPSIS


def _fit(block: RepairBlock) -> RepairBlock:
    """``block`` within the caps: lines cut, newest lines kept per list, line size bounded."""
    preference = [_cut(line) for line in block.preference[-MAX_BLOCK_LINES:]]
    anti_pattern = [_cut(line) for line in block.anti_pattern[-MAX_BLOCK_LINES:]]
    fitted = RepairBlock(tuple(preference), tuple(anti_pattern))
    # At most 2 * MAX_BLOCK_LINES rounds of a line under MAX_RENDERED_CHARS: cheap.
    while len(fitted.to_line()) > MAX_RENDERED_CHARS and len(preference) + len(anti_pattern) > 2:
        longer = preference if len(preference) >= len(anti_pattern) else anti_pattern
        del longer[0]
        fitted = RepairBlock(tuple(preference), tuple(anti_pattern))
    return fitted


def render_repair_block(host: str, block: RepairBlock) -> str:
    """Host text followed by the block line (the block fitted to the caps first).

    An empty block renders as the host text alone.
    """
    check_text("host", host)
    if not isinstance(block, RepairBlock):
        raise InvalidInputError(f"block must be a RepairBlock, got {type(block).__name__}")
    if not block.preference and not block.anti_pattern:
        return host
    line = _fit(block).to_line()
    return f"{host}\n{line}" if host else line


def _merge_lines(existing: tuple[str, ...], new: Iterable[str]) -> tuple[str, ...]:
    seen = {line.strip() for line in existing}
    out = list(existing)
    for line in new:
        key = line.strip()
        if key and key not in seen:
            seen.add(key)
            out.append(key)
    return tuple(out)


def merge_repair_block(
    boundary: str, preference: Iterable[str] = (), anti_pattern: Iterable[str] = ()
) -> str | None:
    """Append guidance lines to the boundary's block; None when nothing would change.

    Duplicates (equal after trimming) are dropped and order is kept; the
    result is fitted to the caps, so the oldest lines go first. Without a
    block of ours, a new one is written after the host text. Raises
    ``InvalidInputError`` for wrong types (a bare str as a list of lines
    included) and lone surrogates.
    """
    host, block = parse_repair_block(boundary)
    new_preference, new_anti_pattern = _lines("preference", preference), _lines("anti_pattern", anti_pattern)
    old = block or RepairBlock()
    merged = RepairBlock(
        preference=_merge_lines(old.preference, new_preference),
        anti_pattern=_merge_lines(old.anti_pattern, new_anti_pattern),
    )
    if merged == old:
        return None
    result = render_repair_block(host, merged)
    return None if result == boundary else result


def remove_repair_lines(
    boundary: str, preference: Iterable[str] = (), anti_pattern: Iterable[str] = ()
) -> str | None:
    """Remove guidance lines (equal after trimming) from the block; None when nothing changes.

    Host text stays byte for byte; a block left empty is removed with the
    newline before it. For recalling a rejected repair's two lines.
    """
    host, block = parse_repair_block(boundary)
    drop_preference = {line.strip() for line in _lines("preference", preference)}
    drop_anti_pattern = {line.strip() for line in _lines("anti_pattern", anti_pattern)}
    if block is None:
        return None
    kept = RepairBlock(
        preference=tuple(line for line in block.preference if line.strip() not in drop_preference),
        anti_pattern=tuple(line for line in block.anti_pattern if line.strip() not in drop_anti_pattern),
    )
    if kept == block:
        return None
    return render_repair_block(host, kept)
