"""Generate the classifier's gate table (offline tooling).

``python -m memos_feedback.devtools.gate --write-gate`` derives the gate
from the rules (``classify.gate_data._derive_gate_data``) and writes it to
``memos_feedback/classify/gate_table.py``; ``--check-gate`` exits 1 when the
committed table differs from a fresh derivation. At run time the classifier
only reads that table.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ..classify import gate_data
from ..classify.gate_data import _REGENERATE, _derive_gate_data, _GateData

__all__: list[str] = []


def _render_gate_module(data: _GateData) -> str:
    """The source of ``classify/gate_table.py`` for ``data``.

    Records are JSON strings, one a line: a module of string constants
    compiles in a few milliseconds where the same data as nested tuples takes
    ~40 ms (imports compile from source when bytecode is not cached).
    """

    def record(value: object) -> str:
        return f"    {json.dumps(value, ensure_ascii=False, separators=(',', ':'))!r},"

    lines = [
        '"""Gate keys of the classifier\'s rules: GENERATED, do not edit.',
        "",
        "Derived from ``memos_feedback/classify/rules.py`` by",
        "``memos_feedback.classify.gate_data._derive_gate_data``.",
        "After changing a rule (or the derivation), regenerate with:",
        "",
        f"    {_REGENERATE}",
        "",
        "Each record is one JSON value. PARTS: the cue parts, [index in CUES, pattern",
        "source]; gate index = len(MASKS) + position. REQUIRED: per gate index (masks,",
        "then cue parts) its requirements, rarest first, every match containing one key",
        "of each: [[whole ASCII words, characters and character pairs], [ASCII",
        "fragments]]. FRAMES: the same per frame of gate_data._GATED_FRAMES.",
        '"""',
        "",
        "# fmt: off",
        "# ruff: noqa: E501",
        f"FINGERPRINT = {data.fingerprint!r}",
        "",
        "PARTS: tuple[str, ...] = (",
        *(record(part) for part in data.parts),
        ")",
        "",
        "REQUIRED: tuple[str, ...] = (",
        *(record(required) for required in data.required),
        ")",
        "",
        "FRAMES: tuple[str, ...] = (",
        *(record(required) for required in data.frames),
        ")",
        "",
    ]
    return "\n".join(lines)


def _gate_path() -> Path:
    """The generated module, beside the code that reads it."""
    return Path(gate_data.__file__).with_name("gate_table.py")


def _main(argv: Sequence[str] | None = None) -> int:
    """``--write-gate``: regenerate ``classify/gate_table.py``; ``--check-gate``: fail if stale."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m memos_feedback.devtools.gate")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write-gate", action="store_true", help="regenerate the gate module")
    group.add_argument("--check-gate", action="store_true", help="exit 1 if the gate module is stale")
    args = parser.parse_args(argv)
    text = _render_gate_module(_derive_gate_data())
    path = _gate_path()
    current = path.read_text(encoding="utf-8") if path.exists() else None
    if args.check_gate:
        if current != text:
            print(f"{path} is stale; regenerate with: {_REGENERATE}")
            return 1
        print(f"{path} is up to date")
        return 0
    if current != text:
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    else:
        print(f"{path} unchanged")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
