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


# -- the claims about the contracts ------------------------------------------------------


def _doc() -> str:
    return (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")


def _contracts() -> list[dict[str, object]]:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _contract_layers() -> list[frozenset[str]]:
    """The layers contract, highest first, as sets of top-level names."""
    (layers,) = [c["layers"] for c in _contracts() if c["name"] == "Layers, highest first"]
    assert isinstance(layers, list)
    return [
        frozenset(part.strip().removeprefix("memos_feedback.") for part in str(layer).split("|"))
        for layer in layers
    ]


def _picture_layers() -> list[frozenset[str]]:
    block = _doc().split("## The picture", 1)[1].split("```", 2)[1]
    rows = []
    for line in block.splitlines():
        if not line.strip() or line.startswith("    "):  # devtools, drawn beside the stack
            continue
        names = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        rows.append(frozenset(n.strip() for n in names.split("│")))
    return rows


def test_the_picture_is_the_layers_contract() -> None:
    assert _picture_layers() == _contract_layers()


def test_the_package_table_names_each_entrys_layer_as_the_contract_places_it() -> None:
    table = _doc().split("## The packages", 1)[1].split("\n\n", 2)[1]
    where = {name: i for i, layer in enumerate(_contract_layers()) for name in layer}
    wrong = {}
    rows = re.findall(r"^\| `([^`]+)` \| ([^|]+) \|", table, re.MULTILINE)
    assert len(rows) == len(_documented_entries())
    for entry, layer in rows:
        module, layer = entry.removesuffix("/").removesuffix(".py"), layer.strip()
        if layer in ("—", "beside"):  # the package root, its data, and devtools: outside the stack
            if module in where:
                wrong[entry] = f"{layer}, but the contract places it"
            continue
        if where.get(module) != where.get(layer) or layer not in where:
            wrong[entry] = layer
    assert not wrong, wrong


def test_the_contract_table_names_every_contract() -> None:
    section = _doc().split("## The contracts", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| ([^|`]+?) \| ", section, re.MULTILINE)) - {"contract"}
    assert documented == {str(c["name"]) for c in _contracts()}


def test_annotation_imports_count_as_the_document_says() -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["tool"]["importlinter"]["exclude_type_checking_imports"] is False
    assert "`exclude_type_checking_imports = false`" in " ".join(_doc().split())
