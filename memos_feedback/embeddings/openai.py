"""``OpenAIEmbedder``: embeddings from any server that speaks the OpenAI embeddings API.

A hosted API, or a multilingual model (bge-m3, multilingual-e5, ...) served
by Ollama, vLLM or text-embeddings-inference: ``base_url`` + ``model``.
Uses the ``openai`` SDK (a core dependency) and numpy (the ``[embeddings]``
extra), both imported when the embedder is built.

Texts go in batches of ``batch_size``; each request has ``timeout``
seconds, and the SDK retries a failed one ``max_retries`` times (with its
own backoff) before the call fails. A failure is one clear error:
``LLMTransientError`` (timeout, connection, HTTP 429 or 5xx: worth trying
later) or ``LLMReplyError`` (the server refused the request or sent
something that is not embeddings). Vectors are L2-normalised here, so a
dot product is the cosine whatever the server does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._checks import check_int
from ..errors import ConfigError, InvalidInputError, LLMError, LLMReplyError, LLMTransientError
from .base import EXTRA_HINT

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import openai

__all__ = ["MAX_INPUT_CHARS", "OpenAIEmbedder"]

ENV_API_KEY = "OPENAI_API_KEY"
ENV_BASE_URL = "OPENAI_BASE_URL"
_PLACEHOLDER_KEY = "unused"
# A text longer than this is cut before it is sent (a pasted log is not a query).
MAX_INPUT_CHARS = 8_000
_TRANSIENT_STATUS = frozenset({408, 409, 429})


class OpenAIEmbedder:
    """``Embedder`` over ``client.embeddings.create`` (module docstring).

    ``dimension`` may be given; otherwise the first call learns it (one
    probe request when ``dimension`` is read before any ``embed``).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimension: int | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        max_retries: int = 2,
        client: openai.OpenAI | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidInputError("model must be a non-empty str")
        self.model = model.strip()
        self.batch_size = check_int("batch_size", batch_size, lo=1, hi=2_048)
        self.max_retries = check_int("max_retries", max_retries, lo=0, hi=10)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 600:
            raise InvalidInputError(f"timeout must be seconds in (0, 600], got {timeout!r}")
        self.timeout = float(timeout)
        self._dimension = None if dimension is None else check_int("dimension", dimension, lo=1, hi=65_536)
        env = os.environ if environ is None else environ
        self.base_url = base_url or env.get(ENV_BASE_URL) or None
        try:
            import numpy  # noqa: F401
        except ImportError as exc:
            raise ConfigError("embedder", "numpy", f"not installed; {EXTRA_HINT}") from exc
        import openai

        if client is not None:
            if not isinstance(client, openai.OpenAI):
                raise InvalidInputError(f"client must be an openai.OpenAI, got {type(client).__name__}")
            self._client = client
            return
        key = api_key or env.get(ENV_API_KEY)
        if not key:
            if self.base_url is None:
                raise LLMError(f"no API key: pass api_key= or set {ENV_API_KEY} (or give base_url)")
            key = _PLACEHOLDER_KEY
        self._client = openai.OpenAI(
            api_key=key, base_url=self.base_url, timeout=self.timeout, max_retries=self.max_retries
        )

    def __repr__(self) -> str:
        # Never the key.
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def model_name(self) -> str:
        return self.model

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self.embed(["dimension"])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise InvalidInputError("texts must be a sequence of str")
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        # An empty input is refused by some servers; a space embeds as "nothing".
        inputs = [t[:MAX_INPUT_CHARS] or " " for t in texts]
        parts = [self._batch(inputs[i : i + self.batch_size]) for i in range(0, len(inputs), self.batch_size)]
        matrix = np.vstack(parts)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)

    def _batch(self, batch: list[str]) -> npt.NDArray[np.float32]:
        import numpy as np
        import openai

        try:
            response = self._client.embeddings.create(model=self.model, input=batch, encoding_format="float")
        except openai.OpenAIError as exc:
            raise _translate(exc, self.timeout) from exc
        except ValueError as exc:  # a broken JSON body
            raise LLMReplyError("embeddings: the server sent a body that is not JSON") from exc
        rows = _rows(response, len(batch))
        width = {len(r) for r in rows}
        if len(width) != 1 or 0 in width:
            raise LLMReplyError("embeddings: the server sent vectors of differing or zero length")
        dim = width.pop()
        if self._dimension is None:
            self._dimension = dim
        elif dim != self._dimension:
            raise LLMReplyError(f"embeddings: {dim} dimensions, expected {self._dimension}")
        out = np.asarray(rows, dtype=np.float32)
        if not np.all(np.isfinite(out)):
            raise LLMReplyError("embeddings: the server sent a vector that is not finite")
        return out


def _rows(response: Any, expected: int) -> list[list[float]]:
    try:
        data = sorted(response.data, key=lambda d: d.index)
        rows = [list(d.embedding) for d in data]
    except (AttributeError, TypeError) as exc:
        reason = type(exc).__name__
        raise LLMReplyError(f"embeddings: the reply is not a list of embeddings ({reason})") from exc
    if len(rows) != expected:
        raise LLMReplyError(f"embeddings: {len(rows)} vectors for {expected} texts")
    return rows


def _translate(exc: openai.OpenAIError, timeout: float) -> LLMError:
    import openai

    # APITimeoutError is a subclass of APIConnectionError: first.
    if isinstance(exc, openai.APITimeoutError):
        return LLMTransientError(f"embedding request timed out after {timeout:g} s")
    if isinstance(exc, openai.APIConnectionError):
        return LLMTransientError(f"could not reach the embedding server ({type(exc.__cause__).__name__})")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status >= 500 or status in _TRANSIENT_STATUS:
            return LLMTransientError(f"embedding server answered HTTP {status}")
        return LLMReplyError(f"embedding server rejected the request: HTTP {status}")
    return LLMReplyError(f"embedding call failed: {type(exc).__name__}")
