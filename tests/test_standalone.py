"""The repository stands alone: no file points outside it, and the license ships.

A checkout (or the sdist) must build, document and test itself without any
sibling folder: the behaviour contract is ``docs/PIPELINE.md`` and
``docs/FEEDBACK_SHAPES.md``, the labelled data is ``tests/data/``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# What a reference to a folder outside the repository looks like.
OUTSIDE = re.compile(
    r"\.\./shared\b|/work/shared\b|\bshared/(?:spec|data)/|[\"']shared[\"']\s*/|parents\[\d+\]\.parent\b"
)
SCANNED = ("README.md", "ALGORITHMS.md", "Makefile", "pyproject.toml")
SCANNED += ("docs", "tests", "benchmarks", "memos_feedback")
SUFFIXES = {".py", ".md", ".toml", ".cfg", ".ini", ""}
# Files allowed to point outside (none).
PENDING: set[str] = set()


def _scanned_files() -> list[Path]:
    files: list[Path] = []
    for name in SCANNED:
        path = ROOT / name
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        files += [
            p
            for p in candidates
            if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts and p != Path(__file__)
        ]
    return files


def test_no_file_points_outside_the_repository() -> None:
    hits = []
    for path in _scanned_files():
        rel = path.relative_to(ROOT).as_posix()
        if rel in PENDING:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{rel}:{number}: {line.strip()}")
    assert not hits, "\n".join(hits)


def test_contract_and_data_are_in_the_repository() -> None:
    for rel in (
        "docs/PIPELINE.md",
        "docs/FEEDBACK_SHAPES.md",
        "tests/data/feedback_dev.jsonl",
        "tests/data/recall/web_shop.jsonl",
        "tests/data/RECALL.md",
    ):
        assert (ROOT / rel).is_file(), rel
    # every section code comments cite as PIPELINE.md §N exists
    pipeline = (ROOT / "docs" / "PIPELINE.md").read_text(encoding="utf-8")
    for section in range(12):
        assert re.search(rf"^## {section}\. ", pipeline, re.MULTILINE), f"PIPELINE.md §{section}"


def test_license_matches_the_metadata_and_ships_in_the_sdist() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert meta["project"]["license"] == {"text": "MIT"}
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 memos-feedback contributors" in text
    assert "LICENSE" in meta["tool"]["hatch"]["build"]["targets"]["sdist"]["include"]
