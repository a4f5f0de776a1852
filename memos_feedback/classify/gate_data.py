"""The gate as plain data: derived from the rules, or read from ``gate_table``.

``_derive_gate_data`` cuts the cues into parts and derives every mask's,
cue part's and extraction frame's keys (``derive``; ~0.5 s). That result is
kept in the generated module ``gate_table.py`` (written by ``python -m
memos_feedback.devtools.gate --write-gate``), so importing the classifier
does not pay it: ``_load_gate_data`` reads the table, and derives it afresh,
with a warning, only when a fingerprint of the rule sources shows it stale.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

import regex

from . import rules
from .derive import _Deriver, _Required

# The classifier's logger: one name for every step of it.
_log = logging.getLogger("memos_feedback.classifier")


class _CuePart(NamedTuple):
    cue: int  # index in rules.CUES
    source: str
    flags: int
    required: _Required


def _cue_parts(cues: Sequence[rules.Cue], deriver: _Deriver) -> tuple[_CuePart, ...]:
    """Each cue cut into runs of its top-level alternatives that share gate keys.

    ``regex`` tries every alternative of one pattern at every position, which
    is slow for long alternations (the "x over y" cue has twelve), while a
    part whose keys are absent need not run at all. Searching the parts of a
    cue in order and keeping the leftmost match (the earlier part on a tie)
    finds the match the whole pattern finds.
    """
    parts: list[_CuePart] = []
    for index, cue in enumerate(cues):
        runs: list[tuple[_Required, list[str]]] = []
        for alt in (inner for top in rules.top_level_alternatives(cue.source) for inner in _distributed(top)):
            required = deriver.gate_keys(alt)
            if runs and runs[-1][0] == required:
                runs[-1][1].append(alt)
            else:
                runs.append((required, [alt]))
        parts += (_CuePart(index, "|".join(run), cue.flags, required) for required, run in runs)
    return tuple(parts)


def _distributed(alt: str) -> list[str]:
    r"""``\b(?:a|b)\b`` as its alternatives ``\b(?:a)\b``, ``\b(?:b)\b``.

    Only with nothing but an optional ``\b`` around the group: a ``\b``
    matches in one way only, so at any start the whole tries the alternatives
    in the order the parts are listed, and the leftmost match of the parts
    (the earlier part on a tie) is the match of the whole. The "praise" cue
    is one such group of ~80 words; cut, a message runs only the words it has.
    """
    prefix = r"\b" if alt.startswith(r"\b(?:") else ""
    if not alt.startswith("(?:", len(prefix)):
        return [alt]
    close = _group_end(alt, len(prefix))
    suffix = alt[close + 1 :]
    if close < 0 or suffix not in ("", r"\b"):
        return [alt]
    inner = rules.top_level_alternatives(alt[len(prefix) + 3 : close])
    return [f"{prefix}(?:{body}){suffix}" for body in inner] if len(inner) > 1 else [alt]


def _group_end(source: str, start: int) -> int:
    """Offset of the ``)`` that closes the group opened at ``start`` (-1: none)."""
    depth = 0
    i = start
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            i += 1
        elif ch == "[":
            i = rules.class_end(source, i)
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


# The extraction frames the gate knows, in the order of the generated data.
_GATED_FRAMES: Final[tuple[regex.Pattern[str], ...]] = (
    *rules.PREFER_FORWARD,
    *rules.PREFER_BACKWARD,
    rules.CONTRAST_AFTER,
    rules.AVOID_FORWARD,
    rules.AVOID_BACKWARD,
    rules.AVOID_REPLACED,
    *rules.CORRECTION_FRAMES,
    rules.VALUE_BEFORE_NOT,
    rules.COPULA,
    rules.YOU_CLAUSE,
    rules.CONNECTIVE,
    rules.CN_MODAL,
    rules.EN_MODAL,
    rules.TRAILING_SOFTENER,
    rules.TRAILING_OCCASION,
)

# A requirement as stored: whole words, characters and character pairs (told
# apart by their characters), then ASCII fragments.
_StoredRequirement = tuple[tuple[str, ...], tuple[str, ...]]
_Stored = tuple[_StoredRequirement, ...]


class _GateData(NamedTuple):
    """Everything the gate derives from the rules, as plain data.

    Derived by ``_derive_gate_data`` (reading the rules' sources with
    ``re._parser``, ~0.5 s); kept in the generated module
    ``gate_table.py`` so that importing the classifier does not pay it.
    """

    fingerprint: str  # of the rule sources it was derived from
    parts: tuple[tuple[int, str], ...]  # cue parts: (index in rules.CUES, source)
    required: tuple[_Stored, ...]  # per gate index: masks, then cue parts
    frames: tuple[_Stored, ...]  # per frame of _GATED_FRAMES


_GATE_MODULE: Final = "memos_feedback.classify.gate_table"
_REGENERATE: Final = "python -m memos_feedback.devtools.gate --write-gate"


def _rules_fingerprint() -> str:
    """A digest of every rule source and flag the gate is derived from."""
    digest = hashlib.sha256()
    for rule in (*rules.MASKS, *rules.CUES):
        digest.update(f"{rule.flags}\x00{rule.source}\x01".encode())
    for frame in _GATED_FRAMES:
        digest.update(f"{frame.flags}\x00{frame.pattern}\x01".encode())
    return digest.hexdigest()


def _store(required: _Required) -> _Stored:
    return tuple(
        (
            tuple(sorted(value for kind, value in keys if kind != "sub")),
            tuple(sorted(value for kind, value in keys if kind == "sub")),
        )
        for keys in required or ()
    )


def _derive_gate_data() -> _GateData:
    """Derive the gate from the rules' sources (the generator, and a stale table at import)."""
    deriver = _Deriver()
    parts = _cue_parts(rules.CUES, deriver)
    required = [_store(deriver.gate_keys(mask.source)) for mask in rules.MASKS]
    required += [_store(part.required) for part in parts]
    frames = tuple(_store(deriver.gate_keys(frame.pattern)) for frame in _GATED_FRAMES)
    return _GateData(_rules_fingerprint(), tuple((p.cue, p.source) for p in parts), tuple(required), frames)


def _read_stored(records: Sequence[str]) -> tuple[_Stored, ...]:
    loaded = json.loads("[" + ",".join(records) + "]")
    return tuple(tuple((tuple(keys), tuple(fragments)) for keys, fragments in r) for r in loaded)


def _load_gate_data() -> _GateData:
    """The generated gate; derived afresh (slow, with a warning) when stale or missing."""
    fingerprint = _rules_fingerprint()
    try:
        module: Any = importlib.import_module(_GATE_MODULE)
        if fingerprint == module.FINGERPRINT:
            parts = json.loads("[" + ",".join(module.PARTS) + "]")
            return _GateData(
                module.FINGERPRINT,
                tuple((cue, source) for cue, source in parts),
                _read_stored(module.REQUIRED),
                _read_stored(module.FRAMES),
            )
    except (ImportError, AttributeError, ValueError, TypeError):
        pass
    _log.warning(
        "classifier gate %s is missing or stale; deriving it now. Run: %s", _GATE_MODULE, _REGENERATE
    )
    return _derive_gate_data()


_GATE_DATA: Final = _load_gate_data()
