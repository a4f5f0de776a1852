"""An in-process matrix of repair embeddings, for nearest-neighbour candidates.

Scanning 100k embeddings in SQL per query is too slow, so each process keeps
one L2-normalised float32 matrix per (database, model), read once and then
extended incrementally with repairs whose id is newer than the last one
read (ids sort by creation time). A full re-read happens every
``_FULL_RELOAD_S`` seconds, which also picks up embeddings another process
backfilled into older rows (``indexing.backfill`` drops its own
process's matrix when it is done). Rejections and age limits are not
trusted from the cache: candidates are re-checked in SQL
(``search.eligible``).

The matrix also answers the cosine of any other candidate (found by text,
tool or context) and of two repairs with each other: ``guidance_for``
reads no embedding blobs from the database.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Integer, String, bindparam, select
from sqlalchemy.orm import Session

from ..store import Store
from ..store.models import DecisionRepairModel
from .embeddings import unpack

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["Similarities", "nearest", "reset_cache", "similarities"]

M = DecisionRepairModel
_FULL_RELOAD_S = 600.0
_READ_BATCH = 5_000
# Built once: the refresh runs on every call, usually to find nothing new.
_NEWER = (
    select(M.id, M.project, M.embedding)
    .where(
        M.id > bindparam("last_id", type_=String),
        M.embedding_model == bindparam("model", type_=String),
        M.embedding.is_not(None),
    )
    .order_by(M.id)
    .limit(bindparam("batch", type_=Integer))
)


@dataclass
class _Index:
    dimension: int
    loaded_at: float = 0.0
    last_id: str = ""
    ids: list[str] = field(default_factory=list)
    positions: dict[str, int] = field(default_factory=dict)
    codes: list[int] = field(default_factory=list)
    projects: dict[str | None, int] = field(default_factory=dict)
    chunks: list[npt.NDArray[np.float32]] = field(default_factory=list)
    matrix: npt.NDArray[np.float32] | None = None
    code_array: npt.NDArray[np.int32] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clear(self) -> None:
        # New containers, never emptied in place: a snapshot taken by a
        # reader (``Similarities``) stays whole.
        self.ids, self.positions, self.codes, self.projects, self.chunks = [], {}, [], {}, []
        self.matrix = self.code_array = None
        self.last_id = ""


_indexes: dict[tuple[str, str], _Index] = {}
_registry_lock = threading.Lock()


def reset_cache(url: str | None = None) -> None:
    """Forget the cached matrices of the database at ``url`` (every one when None)."""
    with _registry_lock:
        for key in [k for k in _indexes if url is None or k[0] == url]:
            del _indexes[key]


def _refresh(index: _Index, session: Session | Connection, model: str) -> None:
    import numpy as np

    now = time.monotonic()
    if now - index.loaded_at > _FULL_RELOAD_S:
        index.clear()
        index.loaded_at = now
    grew = False
    while True:
        params = {"last_id": index.last_id, "model": model, "batch": _READ_BATCH}
        rows = session.execute(_NEWER, params).all()
        if not rows:
            break
        vecs: list[npt.NDArray[np.float32]] = []
        for row in rows:
            index.last_id = row.id
            vec = unpack(row.embedding, index.dimension)
            if vec is None:
                continue
            vecs.append(vec)
            index.positions[row.id] = len(index.ids)
            index.ids.append(row.id)
            index.codes.append(index.projects.setdefault(row.project, len(index.projects)))
        if vecs:
            index.chunks.append(np.vstack(vecs))
            grew = True
        if len(rows) < _READ_BATCH:
            break
    if grew or index.matrix is None:
        dim = index.dimension
        index.matrix = np.vstack(index.chunks) if index.chunks else np.zeros((0, dim), dtype=np.float32)
        index.chunks = [index.matrix] if index.chunks else []
        index.code_array = np.asarray(index.codes, dtype=np.int32)


class Similarities:
    """The query's cosine with every indexed repair, and its ``k`` nearest.

    A snapshot: rows the index gains later are not seen (their position
    lies past this matrix).
    """

    __slots__ = ("_matrix", "_positions", "_sims", "top")

    def __init__(
        self,
        top: list[tuple[str, float]],
        sims: npt.NDArray[np.float32] | None,
        matrix: npt.NDArray[np.float32] | None,
        positions: dict[str, int],
    ) -> None:
        self.top = top
        self._sims = sims
        self._matrix = matrix
        self._positions = positions

    def _row(self, repair_id: str) -> int | None:
        pos = self._positions.get(repair_id)
        if pos is None or self._matrix is None or pos >= self._matrix.shape[0]:
            return None
        return pos

    def cosine(self, repair_id: str) -> float | None:
        """The query's cosine with ``repair_id``'s embedding (None: not indexed)."""
        pos = self._row(repair_id)
        return None if pos is None or self._sims is None else float(self._sims[pos])

    def between(self, a: str, b: str) -> float | None:
        """The cosine of two repairs' embeddings (None unless both are indexed)."""
        pa, pb = self._row(a), self._row(b)
        if pa is None or pb is None or self._matrix is None:
            return None
        return float(self._matrix[pa] @ self._matrix[pb])


_NOTHING = Similarities([], None, None, {})


def similarities(
    store: Store,
    session: Session | Connection,
    model: str,
    query: npt.NDArray[np.float32],
    project: str | None,
    k: int,
) -> Similarities:
    """The query against every repair embedded by ``model``; ``top`` is global or of ``project``."""
    import numpy as np

    key = (store.url, model)
    with _registry_lock:
        index = _indexes.get(key)
        if index is None or index.dimension != query.shape[0]:
            index = _indexes[key] = _Index(dimension=int(query.shape[0]))
    with index.lock:
        _refresh(index, session, model)
        matrix, codes = index.matrix, index.code_array
        ids, positions = index.ids, index.positions
        allowed = [index.projects[p] for p in {None, project} if p in index.projects]
    if matrix is None or codes is None or not matrix.shape[0]:
        return _NOTHING
    sims = matrix @ query.astype(np.float32, copy=False)
    if not allowed:
        return Similarities([], sims, matrix, positions)
    # One or two project codes: comparisons are cheaper than np.isin's set machinery.
    mask = codes == allowed[0]
    for code in allowed[1:]:
        mask |= codes == code
    k = min(k, int(mask.sum()))
    if k <= 0:
        return Similarities([], sims, matrix, positions)
    masked = np.where(mask, sims, -np.inf)
    top = np.argpartition(-masked, k - 1)[:k]
    top = top[np.argsort(-masked[top])]
    return Similarities([(ids[i], float(sims[i])) for i in top], sims, matrix, positions)


def nearest(
    store: Store,
    session: Session | Connection,
    model: str,
    query: npt.NDArray[np.float32],
    project: str | None,
    k: int,
) -> list[tuple[str, float]]:
    """Up to ``k`` (repair id, cosine) pairs, most similar first, global or of ``project``."""
    return similarities(store, session, model, query, project, k).top
