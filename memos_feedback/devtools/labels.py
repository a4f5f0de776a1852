"""The classifier's labelled data: which files train, which calibrate, how they are read.

Shared by the n-gram tier's training (``ngram_train``), the semantic tier's
(``semantic_train``), leave-one-writer-out scoring (``cv``) and the commands
that check an artefact against its data (``train --check``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

__all__ = [
    "CALIBRATION_FILES",
    "HOLDOUT_FILES",
    "TRAINING_FILES",
    "WRITERS_DIR",
    "WRITER_FILES",
    "data_sha256",
    "default_data_dir",
    "load_records",
    "training_records",
]

WRITERS_DIR: Final = "classifier_writers"

# Labelled sets written by the process whose lines tuned the rules (tests/data/):
# training data only, never a figure of record. The former hold-outs are here too:
# they share that process's habits, so they said nothing about other writers.
TRAINING_FILES: Final = (
    "feedback_dev.jsonl",
    "feedback_generalisation.jsonl",
    "feedback_english_hard_phrasings.jsonl",
    "feedback_phrasing_variety.jsonl",
    "feedback_chinese_mixed.jsonl",
    "feedback_english_variety.jsonl",
    "feedback_families.jsonl",
    "feedback_composed.jsonl",
    "feedback_suite.jsonl",
    "feedback_families_more.jsonl",
    "feedback_holdout.jsonl",
    "feedback_holdout_many_voices.jsonl",
    "feedback_holdout_families.jsonl",
    "feedback_context_pairs.jsonl",
)
# Independent writers (tests/data/classifier_writers/, one file each): trained on
# in the shipped model, one left out at a time by ``eval --cv writer``.
WRITER_FILES: Final = tuple(
    f"classifier_writers/{name}.jsonl"
    for name in (
        "data_science_zh",
        "enterprise_formal_nonnative",
        "mobile_zh_traditional",
        "ops_code_switching",
        "research_long_messages",
        "web_startup_casual",
    )
)
# No hold-out is kept in the repository: the figures of record are leave-one-writer-out.
HOLDOUT_FILES: Final[tuple[str, ...]] = ()
# The combination is calibrated on leave-one-writer-out answers: the writers never
# saw the rules, so the rules' answers on them are as good as on unseen text.
CALIBRATION_FILES: Final = WRITER_FILES


def default_data_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "tests" / "data"


def data_sha256(data_dir: Path, files: Sequence[str] = TRAINING_FILES + WRITER_FILES) -> str:
    """sha256 over each training file's name and bytes, in manifest order."""
    digest = hashlib.sha256()
    for name in files:
        digest.update(name.encode("utf-8") + b"\0")
        digest.update((data_dir / name).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def load_records(data_dir: Path, files: Sequence[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in files:
        with open(data_dir / name, encoding="utf-8") as fh:
            for raw in fh:
                if raw.strip():
                    obj = json.loads(raw)
                    obj["_file"] = name
                    out.append(obj)
    return out


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def training_records(data_dir: Path, held: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The training lines less the writers in ``held``, and less any line whose text one of them has.

    The sets were written independently, so a few short lines ("happy friday
    everyone", "lgtm 👍") occur in two of them; a left-out writer's line is
    never trained on under another writer's name.
    """
    present = [f for f in held if (data_dir / f).is_file()]
    keys = {_key(r["text"]) for r in load_records(data_dir, present)}
    files = TRAINING_FILES + tuple(f for f in WRITER_FILES if f not in held)
    return [r for r in load_records(data_dir, files) if _key(r["text"]) not in keys]
