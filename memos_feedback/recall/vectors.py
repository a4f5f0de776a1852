"""In-process matrices of repair embeddings, for nearest-neighbour candidates.

Scanning 100k embeddings in SQL per query is too slow, so each process keeps
L2-normalised float32 matrices per (database, model) — one per project, and
one for global repairs — read once and then extended incrementally with
repairs whose id is newer than the last one read (ids sort by creation
time). A full re-read happens every ``_FULL_RELOAD_S`` seconds, which also
picks up embeddings another process backfilled into older rows
(``indexing.backfill`` drops its own process's matrix when it is done). Rejections and age limits are not
trusted from the cache: candidates are re-checked in SQL
(``search.eligible``).

A query multiplies only the matrices it may be answered from (global and
its project's): the scan is memory-bound, and another project's repairs are
never eligible. The same matrices answer the cosine of any other candidate
(found by text, tool or context; eligible ones are global or of the
project) and of two repairs with each other: ``guidance_for`` reads no
embedding blobs from the database.
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

__all__ = ["Similarities", "reset_cache", "similarities"]

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


class _Part:
    """The embeddings of one project (or of global repairs), in id order.

    Rows live in a buffer with room to grow (doubled when full): a new
    repair is written past the rows in use instead of copying the matrix,
    and a reader's ``matrix`` (a view of the rows in use then) never sees
    a write, because rows are only ever appended.
    """

    __slots__ = ("buffer", "ids")

    def __init__(self, dimension: int) -> None:
        import numpy as np

        self.ids: list[str] = []
        self.buffer: npt.NDArray[np.float32] = np.zeros((64, dimension), dtype=np.float32)

    @property
    def matrix(self) -> npt.NDArray[np.float32]:
        return self.buffer[: len(self.ids)]

    def extend(self, ids: list[str], vectors: npt.NDArray[np.float32]) -> None:
        import numpy as np

        used, need = len(self.ids), len(self.ids) + len(ids)
        if need > self.buffer.shape[0]:
            bigger = np.zeros((max(need, 2 * self.buffer.shape[0]), self.buffer.shape[1]), dtype=np.float32)
            bigger[:used] = self.buffer[:used]
            self.buffer = bigger
        self.buffer[used:need] = vectors
        self.ids.extend(ids)


@dataclass
class _Index:
    dimension: int
    loaded_at: float = 0.0
    last_id: str = ""
    parts: dict[str | None, _Part] = field(default_factory=dict)
    # Repair id -> (project, row in that project's matrix).
    where: dict[str, tuple[str | None, int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clear(self) -> None:
        # New containers, never emptied in place: a snapshot taken by a
        # reader (``Similarities``) stays whole.
        self.parts, self.where = {}, {}
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
    while True:
        params = {"last_id": index.last_id, "model": model, "batch": _READ_BATCH}
        rows = session.execute(_NEWER, params).all()
        if not rows:
            break
        new: dict[str | None, tuple[list[str], list[npt.NDArray[np.float32]]]] = {}
        for row in rows:
            index.last_id = row.id
            vec = unpack(row.embedding, index.dimension)
            if vec is not None:
                ids, vecs = new.setdefault(row.project, ([], []))
                ids.append(row.id)
                vecs.append(vec)
        for project, (ids, vecs) in new.items():
            part = index.parts.get(project)
            if part is None:
                part = index.parts[project] = _Part(index.dimension)
            for i, repair_id in enumerate(ids, start=len(part.ids)):
                index.where[repair_id] = (project, i)
            part.extend(ids, np.vstack(vecs))
        if len(rows) < _READ_BATCH:
            break


class Similarities:
    """The query's cosine with every repair it may be answered from, and its ``k`` nearest.

    A snapshot of the global and the project's matrices: rows the index
    gains later are not seen (their row lies past this snapshot).
    """

    __slots__ = ("_matrices", "_sims", "_where", "top")

    def __init__(
        self,
        top: list[tuple[str, float]],
        matrices: dict[str | None, npt.NDArray[np.float32]],
        sims: dict[str | None, npt.NDArray[np.float32]],
        where: dict[str, tuple[str | None, int]],
    ) -> None:
        self.top = top
        self._matrices = matrices
        self._sims = sims
        self._where = where

    def _row(self, repair_id: str) -> tuple[str | None, int] | None:
        hit = self._where.get(repair_id)
        if hit is None:
            return None
        matrix = self._matrices.get(hit[0])
        return hit if matrix is not None and hit[1] < matrix.shape[0] else None

    def cosine(self, repair_id: str) -> float | None:
        """The query's cosine with ``repair_id``'s embedding (None: not in this snapshot)."""
        hit = self._row(repair_id)
        return None if hit is None else float(self._sims[hit[0]][hit[1]])

    def between(self, a: str, b: str) -> float | None:
        """The cosine of two repairs' embeddings (None unless both are in this snapshot)."""
        ha, hb = self._row(a), self._row(b)
        if ha is None or hb is None:
            return None
        return float(self._matrices[ha[0]][ha[1]] @ self._matrices[hb[0]][hb[1]])


def similarities(
    store: Store,
    session: Session | Connection,
    model: str,
    query: npt.NDArray[np.float32],
    project: str | None,
    k: int,
) -> Similarities:
    """The query against the repairs embedded by ``model``, global or of ``project``."""
    import numpy as np

    key = (store.url, model)
    with _registry_lock:
        index = _indexes.get(key)
        if index is None or index.dimension != query.shape[0]:
            index = _indexes[key] = _Index(dimension=int(query.shape[0]))
    with index.lock:
        _refresh(index, session, model)
        parts = {p: index.parts[p] for p in dict.fromkeys((None, project)) if p in index.parts}
        matrices = {p: part.matrix for p, part in parts.items()}
        ids = {p: part.ids for p, part in parts.items()}  # appended to only: rows past a matrix are unseen
        where = index.where
    q = query.astype(np.float32, copy=False)
    # einsum, not ``m @ q``: numpy's own single-threaded loop. OpenBLAS
    # splits a matrix-vector product over every core and waits for the
    # slowest; with another process on the other core of a small machine
    # that took 10-25 ms instead of 1 (docs/PERFORMANCE.md, "Recall").
    sims = {p: np.einsum("ij,j->i", m, q) for p, m in matrices.items()}
    best: list[tuple[str, float]] = []
    for p, values in sims.items():
        n = min(k, values.shape[0])
        if n <= 0:
            continue
        top = np.argpartition(-values, n - 1)[:n]
        best += [(ids[p][i], float(values[i])) for i in top]
    # Ties by id, so the order does not depend on which matrix a repair is in.
    best.sort(key=lambda pair: (-pair[1], pair[0]))
    return Similarities(best[:k], matrices, sims, where)
