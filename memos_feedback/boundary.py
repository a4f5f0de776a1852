"""The ``@repair`` block at the end of a policy boundary (PIPELINE.md §7).

A boundary is free text owned by the host. Our guidance lives in exactly
one block, the boundary's last line::

    <host text>\\n@repair {"preference":[...],"anti_pattern":[...]}

``render`` always puts one newline between host text and block (none when
the host text is empty) and ``parse`` removes exactly that newline, so
``parse(render(host, block)) == (host, block)`` for every host text: the
host's bytes survive any number of merges unchanged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "REPAIR_MARKER",
    "RepairBlock",
    "merge_repair_block",
    "parse_repair_block",
    "render_repair_block",
    "strip_repair_block",
]

logger = logging.getLogger("memos_feedback.boundary")

REPAIR_MARKER = "@repair "
# A block line longer than this is not ours (or is garbage): replace it.
MAX_BLOCK_CHARS = 256 * 1024


@dataclass(frozen=True, slots=True)
class RepairBlock:
    preference: tuple[str, ...] = ()
    anti_pattern: tuple[str, ...] = ()

    def to_line(self) -> str:
        payload = {"preference": list(self.preference), "anti_pattern": list(self.anti_pattern)}
        # Compact, and json.dumps escapes newlines, so the block stays one line.
        return REPAIR_MARKER + json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _split(boundary: str) -> tuple[str, str | None]:
    """(host text, block line or None) — the block is the last line if it starts with the marker."""
    start = boundary.rfind("\n") + 1
    last = boundary[start:]
    if not last.startswith(REPAIR_MARKER.rstrip()):
        return boundary, None
    host = boundary[: start - 1] if start > 0 else ""
    return host, last


def _decode(line: str) -> RepairBlock | None:
    if len(line) > MAX_BLOCK_CHARS:
        return None
    try:
        data = json.loads(line[len(REPAIR_MARKER.rstrip()) :])
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    lists = []
    for key in ("preference", "anti_pattern"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return None
        lists.append(tuple(value))
    return RepairBlock(preference=lists[0], anti_pattern=lists[1])


def parse_repair_block(boundary: str) -> tuple[str, RepairBlock | None]:
    """Split a boundary into host text and its ``@repair`` block.

    A malformed block (bad JSON, wrong shape) comes back as ``None`` with
    the host text still separated from it, so a merge replaces it.
    """
    host, line = _split(boundary)
    if line is None:
        return host, None
    block = _decode(line)
    if block is None:
        logger.warning("malformed @repair block (%d chars) will be replaced", len(line))
    return host, block


def strip_repair_block(boundary: str) -> str:
    """The boundary without its ``@repair`` block (host text only)."""
    return _split(boundary)[0]


def render_repair_block(host: str, block: RepairBlock) -> str:
    """Host text followed by the block line."""
    if not block.preference and not block.anti_pattern:
        return host
    return f"{host}\n{block.to_line()}" if host else block.to_line()


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

    Duplicates (equal after trimming) are dropped and order is kept. A
    malformed block is replaced by a fresh one holding the new lines.
    """
    host, block = parse_repair_block(boundary)
    old = block or RepairBlock()
    merged = RepairBlock(
        preference=_merge_lines(old.preference, preference),
        anti_pattern=_merge_lines(old.anti_pattern, anti_pattern),
    )
    if block is not None and merged == block:
        return None
    result = render_repair_block(host, merged)
    return None if result == boundary else result
