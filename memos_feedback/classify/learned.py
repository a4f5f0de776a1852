"""The learned tier of the feedback classifier: a linear model over character n-grams.

Inference only, in pure Python: no scikit-learn, no numpy. The model is a
multinomial logistic regression over TF-IDF weighted character n-grams
(1 to 4 characters, inside word boundaries, words padded with a space:
the ``char_wb`` analyzer of scikit-learn, re-implemented here as
``ngrams`` and used by the trainer too, so training and inference read a
message the same way). ``memos-feedback train`` fits it and
writes ``data/classifier_model.json``: JSON with sorted keys, floats to
six significant digits, no pickle. Per n-gram it stores the inverse
document frequency and one weight per shape.

Scoring one message:

1. ``ngrams(text)``: lower-case, collapse runs of white space, n-grams of
   each white-space separated word padded with one space each side;
2. term frequency ``tf`` of each n-gram in the vocabulary, sublinear
   (``1 + ln tf``), times its idf, and the vector scaled to unit length;
3. per shape, the dot product with its weights plus its intercept; a
   softmax turns the eight scores into probabilities.

The model is loaded on first use (a few MB of JSON, ~50 ms), never at
import. Only the first ``MAX_CHARS`` characters (head and tail) of a long
text are read, so the cost is bounded whatever the input size.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = [
    "MAX_CHARS",
    "MODEL_PATH",
    "LearnedModel",
    "analyze",
    "load_model",
    "ngrams",
    "shipped_model",
]

MODEL_PATH: Final = Path(__file__).resolve().parent / "data" / "classifier_model.json"
FORMAT: Final = 1
NGRAM_RANGE: Final = (1, 4)
# The model reads at most this many characters: half from the head, half from the tail.
MAX_CHARS: Final = 2000

_WHITE_SPACES = re.compile(r"\s\s+")


def _bounded(text: str) -> str:
    if len(text) <= MAX_CHARS:
        return text
    half = MAX_CHARS // 2
    return text[:half] + " " + text[-half:]


def ngrams(text: str, low: int = NGRAM_RANGE[0], high: int = NGRAM_RANGE[1]) -> list[str]:
    """Character n-grams inside word boundaries, as scikit-learn's ``char_wb`` makes them.

    The text is lower-cased and bounded (``MAX_CHARS``) first. A word shorter
    than ``n`` (with its padding) gives itself once.
    """
    doc = _WHITE_SPACES.sub(" ", _bounded(text).lower())
    out: list[str] = []
    append = out.append
    for word in doc.split():
        w = " " + word + " "
        w_len = len(w)
        for n in range(low, high + 1):
            offset = 0
            append(w[offset : offset + n])
            while offset + n < w_len:
                offset += 1
                append(w[offset : offset + n])
            if offset == 0:  # count a short word only once
                break
    return out


def analyze(doc: tuple[str, Sequence[str]]) -> list[str]:
    """What the model reads of (prepared text, extra tokens): the text's n-grams, then the tokens.

    The extra tokens are features of the (agent turn, message) pair
    (``context.pair_features``); none of them can be a character n-gram.
    """
    out = ngrams(doc[0])
    out.extend(doc[1])
    return out


@dataclass(frozen=True, slots=True)
class LearnedModel:
    """Vocabulary (n-gram -> idf and one weight per class), intercepts, metadata."""

    classes: tuple[str, ...]
    intercepts: tuple[float, ...]
    features: Mapping[str, Sequence[float]]  # n-gram -> [idf, w_class0, w_class1, ...]
    meta: Mapping[str, Any]

    def scores(self, text: str, extra: Sequence[str] = ()) -> list[float]:
        """Raw class scores (logits) of ``text`` and its ``extra`` tokens, in ``classes`` order."""
        counts: dict[str, int] = {}
        feats = self.features
        for g in analyze((text, extra)):
            if g in feats:
                counts[g] = counts.get(g, 0) + 1
        k = len(self.classes)
        acc = [0.0] * k
        norm = 0.0
        for g, tf in counts.items():
            row = feats[g]
            value = (1.0 + math.log(tf)) * row[0]
            norm += value * value
            for i in range(k):
                acc[i] += value * row[i + 1]
        scale = 1.0 / math.sqrt(norm) if norm > 0.0 else 0.0
        return [a * scale + b for a, b in zip(acc, self.intercepts, strict=True)]

    def probabilities(self, text: str, extra: Sequence[str] = ()) -> dict[str, float]:
        """Softmax of ``scores``: class -> probability."""
        logits = self.scores(text, extra)
        top = max(logits)
        exps = [math.exp(v - top) for v in logits]
        total = sum(exps)
        return {c: e / total for c, e in zip(self.classes, exps, strict=True)}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> LearnedModel:
        if obj.get("format") != FORMAT:
            raise ValueError(f"unsupported model format {obj.get('format')!r}")
        classes = tuple(str(c) for c in obj["classes"])
        intercepts = tuple(float(v) for v in obj["intercepts"])
        features: dict[str, list[float]] = obj["features"]
        if len(intercepts) != len(classes):
            raise ValueError("one intercept per class expected")
        for g, row in features.items():
            if len(row) != len(classes) + 1:
                raise ValueError(f"feature {g!r}: expected idf and {len(classes)} weights")
        meta = {k: v for k, v in obj.items() if k not in ("features", "intercepts", "classes")}
        return cls(classes, intercepts, features, meta)


def load_model(path: str | Path = MODEL_PATH) -> LearnedModel:
    """Read a model file written by ``memos_feedback.devtools.train``."""
    with open(path, encoding="utf-8") as fh:
        return LearnedModel.from_json(json.load(fh))


_lock = threading.Lock()
_shipped: LearnedModel | None = None
_missing = False


def shipped_model() -> LearnedModel | None:
    """The model that ships in the package, loaded once; ``None`` when the file is absent or unreadable."""
    global _shipped, _missing
    model = _shipped
    if model is not None or _missing:
        return model
    with _lock:
        if _shipped is None and not _missing:
            try:
                _shipped = load_model()
            except (OSError, ValueError, KeyError, TypeError):
                _missing = True
        return _shipped
