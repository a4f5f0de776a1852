"""Train the semantic tier of the feedback classifier (``classify/semantic.py``).

    memos-feedback train [--tier semantic|ngrams|both]

The same labelled lines as the n-gram tier (``labels.TRAINING_FILES`` and the
six writers), the same leave-one-writer-out discipline for what is chosen
from data: the calibration map and the abstention threshold come from
answers on writers each fold's model was not trained on.

Features per (agent turn, message) pair: the TF-IDF character n-grams of the
prepared text (``learned.analyze``, the pair's rule-derived tokens left out)
beside ``semantic.pair_vector``: e5 of the message's prose, e5 of the agent's
turn, a flag for its presence. One multinomial logistic regression
(``C``, L-BFGS to a tight tolerance, so the same data gives the same weights
up to the rounding) reads both.

Embedding the ~12,000 distinct texts takes minutes, so the vectors are kept
on disk (``VectorCache``, keyed by the embedder's name and the exact text):
a second run, and every fold of ``eval --cv writer``, reads them back.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ..classify.learned import FORMAT as NGRAM_FORMAT
from ..classify.learned import NGRAM_RANGE, LearnedModel, analyze
from ..classify.semantic import FORMAT, MAX_CHARS, SEMANTIC_PATH, SemanticModel, SemanticTier, pair_vector
from . import labels, ngram_train

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ..classify.classifier import Combined

__all__ = [
    "ABSTAIN_TARGET",
    "C",
    "VectorCache",
    "fit_semantic",
    "fold_semantic",
    "lowo_semantic_rows",
    "train_semantic",
]

C: Final = 4.0
# False triggers allowed on the inner leave-one-writer-out answers when the
# threshold is chosen: half a point under the 3 % the classifier must hold on
# writers it has not seen (the n-gram tier keeps its own 1.5 %, ``train``).
ABSTAIN_TARGET: Final = 0.025
MIN_DF: Final = 2
TOL: Final = 1e-6
MAX_ITER: Final = 5000


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memos-feedback"


class VectorCache:
    """An ``Embedder`` over the e5 model that keeps every vector it computed on disk.

    Only the trainer uses it: at run time the shipped embedder's own
    in-memory cache serves the agent's turn.
    """

    def __init__(self, path: Path | None = None) -> None:
        from ..embeddings.e5 import E5Embedder

        self._inner = E5Embedder(max_chars=MAX_CHARS + 8, cache_size=0)
        name = hashlib.sha256(self._inner.model_name.encode()).hexdigest()[:16]
        self._path = path or cache_dir() / f"e5-vectors-{name}"
        self._vectors: dict[str, npt.NDArray[np.float32]] = {}
        self._dirty = False
        self._load()

    @property
    def model_name(self) -> str:
        return self._inner.model_name

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def token_count(self, text: str) -> int:
        return self._inner.token_count(text)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self._inner.embed(missing), strict=True))
            self._dirty = True
        return np.stack([self._vectors[t] for t in texts])

    def warm(self, texts: Sequence[str], log: Callable[[str], None] = lambda _m: None) -> None:
        """Embed the texts not cached yet, in batches, saving as it goes."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        log(f"{len(missing)} of {len(set(texts))} texts to embed")
        started = time.perf_counter()
        for i in range(0, len(missing), 256):
            self.embed(missing[i : i + 256])
            if i and i % 2048 == 0:
                self.save()
                log(f"  {i} embedded in {time.perf_counter() - started:.0f} s")
        self.save()

    def _load(self) -> None:
        import numpy as np

        texts_file, matrix_file = self._files()
        if not texts_file.is_file() or not matrix_file.is_file():
            return
        texts = json.loads(texts_file.read_text(encoding="utf-8"))
        matrix = np.load(matrix_file, allow_pickle=False)
        if len(texts) == len(matrix):
            self._vectors = dict(zip(texts, matrix, strict=True))

    def save(self) -> None:
        import numpy as np

        if not self._dirty:
            return
        texts_file, matrix_file = self._files()
        texts_file.parent.mkdir(parents=True, exist_ok=True)
        texts = list(self._vectors)
        tmp = matrix_file.with_suffix(".tmp.npy")
        np.save(tmp, np.stack([self._vectors[t] for t in texts]))
        tmp.replace(matrix_file)
        texts_file.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
        self._dirty = False

    def _files(self) -> tuple[Path, Path]:
        return self._path.with_suffix(".texts.json"), self._path.with_suffix(".npy")


def _agent(record: dict[str, Any], context: bool) -> str | None:
    agent = record.get("agent_text") if context else None
    return agent if isinstance(agent, str) else None


def texts_to_embed(records: Sequence[dict[str, Any]], embedder: VectorCache) -> list[str]:
    """Every text the features of ``records`` read, as ``pair_vector`` passes them to the embedder."""
    from ..classify.classifier import prepared_prose
    from ..classify.semantic import clip

    out: list[str] = []
    for rec in records:
        out.append(clip(embedder, prepared_prose(rec["text"])))
        agent = _agent(rec, True)
        if agent is not None:
            out.append(clip(embedder, agent))
    return out


def _dense(records: Sequence[dict[str, Any]], embedder: VectorCache) -> npt.NDArray[np.float32]:
    import numpy as np

    from ..classify.classifier import prepared_prose

    return np.stack([pair_vector(embedder, prepared_prose(r["text"]), _agent(r, True)) for r in records])


def fit_semantic(records: Sequence[dict[str, Any]], embedder: VectorCache) -> SemanticModel:
    """The semantic tier fitted on labelled lines (no calibration, no threshold)."""
    import scipy.sparse as sp  # type: ignore[import-untyped]
    from sklearn.feature_extraction.text import TfidfVectorizer  # type: ignore[import-untyped]
    from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]

    vectorizer = TfidfVectorizer(
        analyzer=analyze, sublinear_tf=True, norm="l2", smooth_idf=True, min_df=MIN_DF
    )
    sparse = vectorizer.fit_transform([ngram_train.model_doc(r, context=False) for r in records])
    matrix = sp.hstack([sparse, sp.csr_matrix(_dense(records, embedder))]).tocsr()
    clf = LogisticRegression(C=C, tol=TOL, max_iter=MAX_ITER, random_state=ngram_train.SEED)
    clf.fit(matrix, [r["shape"] for r in records])
    classes = tuple(str(c) for c in clf.classes_)
    width = sparse.shape[1]
    coef, idf, r = clf.coef_, vectorizer.idf_, ngram_train.round_weight
    features = {
        str(g): [r(float(idf[col]))] + [r(float(coef[k, col])) for k in range(len(classes))]
        for g, col in vectorizer.vocabulary_.items()
    }
    ngrams = LearnedModel(
        classes, tuple(r(float(v)) for v in clf.intercept_), features, {"format": NGRAM_FORMAT}
    )
    dense = tuple(tuple(r(float(v)) for v in coef[k, width:]) for k in range(len(classes)))
    meta = {"format": FORMAT, "kind": "semantic", "embedder": embedder.model_name}
    return SemanticModel(ngrams, dense, meta)


def lowo_semantic_rows(
    data_dir: Path, writers: Sequence[str], embedder: VectorCache, held: Sequence[str] = ()
) -> list[tuple[Combined, str]]:
    """Leave-one-writer-out answers of the semantic tier on ``writers`` (also without ``held``)."""
    from ..classify.classifier import combine_raw

    rows: list[tuple[Combined, str]] = []
    for name in writers:
        part = SemanticTier(
            fit_semantic(labels.training_records(data_dir, (*held, name)), embedder), embedder
        )
        for rec in labels.load_records(data_dir, (name,)):
            rows.append((combine_raw(rec["text"], part, rec.get("agent_text")), rec["shape"]))
    return rows


def _with_choices(model: SemanticModel, rows: Sequence[tuple[Combined, str]]) -> SemanticModel:
    from ..classify.classifier import fit_calibration

    return model.with_meta(
        calibration=fit_calibration(rows), abstain=ngram_train.choose_threshold(rows, ABSTAIN_TARGET)
    )


def fold_semantic(data_dir: Path, held: Sequence[Path], embedder: VectorCache) -> SemanticTier:
    """The tier trained without the writers in ``held``; its calibration and threshold from the others."""
    names = tuple(f"{labels.WRITERS_DIR}/{p.name}" for p in held)
    model = fit_semantic(labels.training_records(data_dir, names), embedder)
    inner = [w for w in labels.WRITER_FILES if w not in names]
    model = _with_choices(model, lowo_semantic_rows(data_dir, inner, embedder, names))
    return SemanticTier(model, embedder)


@contextmanager
def warmed_cache(data_dir: Path, log: Callable[[str], None] = lambda _m: None) -> Iterator[VectorCache]:
    """A ``VectorCache`` holding every training text's vector; saved on the way out."""
    cache = VectorCache()
    files = labels.TRAINING_FILES + labels.WRITER_FILES
    cache.warm(texts_to_embed(labels.load_records(data_dir, files), cache), log)
    try:
        yield cache
    finally:
        cache.save()


def train_semantic(
    data_dir: Path | None = None, *, log: Callable[[str], None] = lambda _m: None
) -> SemanticModel:
    """Fit the semantic tier on every line, calibrate it leave-one-writer-out; returns the model."""
    data_dir = data_dir or labels.default_data_dir()
    with warmed_cache(data_dir, log) as cache:
        records = labels.training_records(data_dir)
        model = fit_semantic(records, cache)
        log(f"fitted on {len(records)} messages, {len(model.ngrams.features)} n-grams + e5")
        rows = lowo_semantic_rows(data_dir, labels.CALIBRATION_FILES, cache)
    model = _with_choices(model, rows)
    threshold = model.meta["abstain"]
    log(f"calibrated on {len(rows)} out-of-fold answers; abstain below repair probability {threshold}")
    return model.with_meta(
        analyzer={"kind": "char_wb", "ngram_range": list(NGRAM_RANGE), "lowercase": True},
        tfidf={"sublinear_tf": True, "smooth_idf": True, "norm": "l2", "min_df": MIN_DF},
        estimator={
            "kind": "LogisticRegression",
            "C": C,
            "solver": "lbfgs",
            "tol": TOL,
            "seed": ngram_train.SEED,
        },
        max_chars=MAX_CHARS,
        training_files=list(labels.TRAINING_FILES + labels.WRITER_FILES),
        training_count=len(records),
        data_sha256=labels.data_sha256(data_dir),
        abstain_target=ABSTAIN_TARGET,
    )


def write_semantic(model: SemanticModel, out: Path = SEMANTIC_PATH) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(model.to_json(), encoding="utf-8")
    return out
