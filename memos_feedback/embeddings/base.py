"""What every embedder shares: the protocol check and the stored vector format.

Vectors are stored as little-endian float32 blobs (``pack``/``unpack_many``),
L2-normalised, so a dot product is the cosine similarity.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from ..errors import InvalidInputError
from ..types import Embedder

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["EXTRA_HINT", "check_embedder", "pack", "unpack_many"]

EXTRA_HINT = "install the embeddings extra: pip install 'memos-feedback[embeddings]'"

# Types whose instances passed ``isinstance(x, Embedder)``. That check against a
# runtime-checkable Protocol costs ~20 us, and ``guidance_for`` makes it on
# every call, for the same one or two embedder types.
_EMBEDDER_TYPES: set[type] = set()


def check_embedder(embedder: object) -> Embedder | None:
    """``embedder`` typed as an ``Embedder`` (None stays None); InvalidInputError otherwise.

    Checked once per type: a later instance of a type that passed is taken
    as an ``Embedder`` too.
    """
    if embedder is None:
        return None
    kind = type(embedder)
    if kind not in _EMBEDDER_TYPES:
        if not isinstance(embedder, Embedder):
            raise InvalidInputError(
                f"embedder must provide model_name, dimension and embed(), got {kind.__name__}"
            )
        _EMBEDDER_TYPES.add(kind)
    return cast(Embedder, embedder)


def pack(vector: npt.NDArray[np.float32]) -> bytes:
    """A vector as a little-endian float32 blob."""
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def unpack_many(blobs: Sequence[bytes], dimension: int) -> tuple[list[int], npt.NDArray[np.float32]]:
    """The blobs ``dimension`` floats long as the rows of one matrix, and their indexes in ``blobs``.

    A blob of another length (another model's, a damaged one) is left out.
    The kept blobs are joined and read as one array: unpacking them one by
    one cost more than reading the rows from the database (100k rows: 1.6 s
    against 0.7 s for the whole read, profiled).
    """
    import numpy as np

    width = 4 * dimension
    kept = [i for i, blob in enumerate(blobs) if len(blob) == width]
    matrix = np.frombuffer(b"".join(blobs[i] for i in kept), dtype="<f4").reshape(len(kept), dimension)
    return kept, matrix.astype(np.float32, copy=False)
