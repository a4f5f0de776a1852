"""An in-process matrix of repair embeddings, for nearest-neighbour candidates.

Scanning 100k embeddings in SQL per query is too slow, so each process keeps
one L2-normalised float32 matrix per (database, model), read once and then
extended incrementally with repairs whose id is newer than the last one
read (ids sort by creation time). A full re-read happens every
``_FULL_RELOAD_S`` seconds, which also picks up embeddings another process
backfilled into older rows. Rejections and age limits are not trusted from
the cache: candidates are re-checked in SQL (``search.eligible``).
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

__all__ = ["nearest", "reset_cache"]

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
    codes: list[int] = field(default_factory=list)
    projects: dict[str | None, int] = field(default_factory=dict)
    chunks: list[npt.NDArray[np.float32]] = field(default_factory=list)
    matrix: npt.NDArray[np.float32] | None = None
    code_array: npt.NDArray[np.int32] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clear(self) -> None:
        self.ids, self.codes, self.projects, self.chunks = [], [], {}, []
        self.matrix = self.code_array = None
        self.last_id = ""


_indexes: dict[tuple[str, str], _Index] = {}
_registry_lock = threading.Lock()


def reset_cache() -> None:
    """Forget every cached matrix (tests; after a bulk import)."""
    with _registry_lock:
        _indexes.clear()


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


def nearest(
    store: Store,
    session: Session | Connection,
    model: str,
    query: npt.NDArray[np.float32],
    project: str | None,
    k: int,
) -> list[tuple[str, float]]:
    """Up to ``k`` (repair id, cosine) pairs, most similar first, global or of ``project``."""
    import numpy as np

    key = (store.url, model)
    with _registry_lock:
        index = _indexes.get(key)
        if index is None or index.dimension != query.shape[0]:
            index = _indexes[key] = _Index(dimension=int(query.shape[0]))
    with index.lock:
        _refresh(index, session, model)
        matrix, codes = index.matrix, index.code_array
        ids = index.ids
        allowed = [index.projects[p] for p in {None, project} if p in index.projects]
    if matrix is None or codes is None or not len(ids) or not allowed:
        return []
    sims = matrix @ query.astype(np.float32, copy=False)
    # One or two project codes: comparisons are cheaper than np.isin's set machinery.
    mask = codes == allowed[0]
    for code in allowed[1:]:
        mask |= codes == code
    sims = np.where(mask, sims, -np.inf)
    k = min(k, int(mask.sum()))
    if k <= 0:
        return []
    top = np.argpartition(-sims, k - 1)[:k]
    top = top[np.argsort(-sims[top])]
    return [(ids[i], float(sims[i])) for i in top]
