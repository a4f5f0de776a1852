"""Validate the labelled feedback sets (tests/data/feedback_*.jsonl).

    python scripts/check_labels.py [FILE ...]

Checks every line against the contract of docs/FEEDBACK_SHAPES.md: valid JSON
object, a unique ``id``, a string ``text``, a ``shape`` of the eight, ``lang``
one of en/zh/mixed, extracted fields only of the four known names, each a
non-empty verbatim substring of its text, and every triggering line that the
spec gives fields (correction, constraint, preference) carries them. Exit 1
with one line per problem.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SHAPES = {
    "positive", "negative", "correction", "constraint", "preference", "confusion", "instruction", "unknown"
}
LANGS = {"en", "zh", "mixed"}
FIELDS = ("prefer", "avoid", "correction", "constraint")
# Which fields a shape requires (preference needs at least one of prefer/avoid).
REQUIRED = {"correction": ("correction",), "constraint": ("constraint",)}
ALLOWED_KEYS = {"id", "text", "shape", "lang", "agent_text", *FIELDS}


def check(path: Path) -> list[str]:
    problems: list[str] = []
    ids: set[str] = set()
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        where = f"{path.name}:{n}"
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not JSON ({exc.msg})")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{where}: not an object")
            continue
        extra = set(obj) - ALLOWED_KEYS
        if extra:
            problems.append(f"{where}: unknown keys {sorted(extra)}")
        text, shape, ident = obj.get("text"), obj.get("shape"), obj.get("id")
        # An empty message is in scope: the spec makes it ``unknown``.
        if not isinstance(text, str) or (not text.strip() and shape != "unknown"):
            problems.append(f"{where}: missing text, or empty text not labelled unknown")
            continue
        # A context pair may name the replaced tool only in the agent's turn.
        source = text + "\n" + str(obj.get("agent_text") or "")
        if shape not in SHAPES:
            problems.append(f"{where}: shape {shape!r} not allowed")
        if obj.get("lang") not in LANGS:
            problems.append(f"{where}: lang {obj.get('lang')!r} not allowed")
        if not isinstance(ident, str) or ident in ids:
            problems.append(f"{where}: missing or duplicate id {ident!r}")
        ids.add(str(ident))
        for name in FIELDS:
            if name in obj:
                value = obj[name]
                if not isinstance(value, str) or not value.strip() or value not in source:
                    problems.append(f"{where}: {name} {value!r} is not in the text (or agent_text)")
                if shape not in ("preference", "correction", "constraint"):
                    problems.append(f"{where}: {name} on a {shape} line")
        # feedback_suite.jsonl is shape-only by design (see tests/data/README.md).
        shape_only = path.name == "feedback_suite.jsonl"
        for name in () if shape_only else REQUIRED.get(str(shape), ()):
            if name not in obj:
                problems.append(f"{where}: {shape} without {name}")
        if shape == "preference" and not shape_only and not ("prefer" in obj or "avoid" in obj):
            problems.append(f"{where}: preference without prefer/avoid")
    return problems


def main(argv: list[str]) -> int:
    root = Path(__file__).resolve().parents[1] / "tests" / "data"
    paths = [Path(a) for a in argv] or sorted(root.glob("feedback_*.jsonl"))
    problems = [p for path in paths for p in check(path)]
    for p in problems:
        print(p)
    total = sum(1 for path in paths for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    print(f"{len(paths)} files, {total} lines, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
