"""Every Markdown table in the docs renders whole: a header, a separator, rows of as many cells.

A blank line inside a table ends it (the rows after it render as a
paragraph of pipes); a ``|`` inside a cell, even in backticks, splits the cell.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([*ROOT.glob("*.md"), *(ROOT / "docs").glob("*.md"), *(ROOT / "tests" / "data").glob("*.md")])
_SEPARATOR = re.compile(r"^\|(\s*:?-+:?\s*\|)+$")


def cells(row: str) -> int:
    # GFM splits a row on every unescaped pipe, code spans included.
    return len(re.split(r"(?<!\\)\|", row.strip().strip("|")))


def table_problems(text: str) -> list[str]:
    problems = []
    in_fence = False
    block: list[tuple[int, str]] = []
    for number, line in enumerate([*text.splitlines(), ""], 1):
        if line.startswith("```"):
            in_fence = not in_fence
        if not in_fence and line.startswith("|"):
            block.append((number, line))
            continue
        if block:
            first, header = block[0]
            if len(block) < 2 or not _SEPARATOR.match(block[1][1].strip()):
                problems.append(f"line {first}: rows with no header and separator above them")
            else:
                want = cells(header)
                bad = [(n, cells(r)) for n, r in block if cells(r) != want]
                problems += [f"line {n}: {got} cells, the header has {want}" for n, got in bad]
            block = []
    return problems


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_tables_render_whole(doc: Path) -> None:
    assert table_problems(doc.read_text(encoding="utf-8")) == []
