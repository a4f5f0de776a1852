"""docs/ARCHITECTURE.md lists what the package holds; modules and classes
stay small enough to hold in one's head."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "memos_feedback"
# Data kept as Python (rule tables, the generated gate): long by nature.
DATA_MODULES = {"classify/rules.py", "classify/gate_table.py"}
MAX_MODULE_LINES = 600
MAX_CLASS_LINES = 400


def _documented_entries() -> set[str]:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    table = text.split("## The packages", 1)[1].split("\n\n", 2)[1]
    return {m.group(1).rstrip("/") for m in re.finditer(r"^\| `([^`]+)` \|", table, re.MULTILINE)}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_package_table_matches_the_package() -> None:
    present = {p.name for p in PACKAGE.iterdir() if p.name != "__pycache__"}
    assert _documented_entries() == present


def test_modules_stay_under_the_line_cap() -> None:
    long = {
        rel: n
        for p in _modules()
        if (rel := p.relative_to(PACKAGE).as_posix()) not in DATA_MODULES
        and (n := len(p.read_text(encoding="utf-8").splitlines())) >= MAX_MODULE_LINES
    }
    assert not long, long


def test_classes_stay_under_the_line_cap() -> None:
    big = {}
    for p in _modules():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                size = node.end_lineno - node.lineno + 1
                if size >= MAX_CLASS_LINES:
                    big[f"{p.relative_to(PACKAGE).as_posix()}:{node.name}"] = size
    assert not big, big
