"""In-process matrices of repair embeddings, for nearest-neighbour candidates.

Scanning 100k embeddings in SQL per query is too slow, so each process keeps
L2-normalised float32 matrices per (database, model) — one per project, and
one for global repairs — read once and then extended incrementally with
repairs whose id is newer than the last one read (ids sort by creation
time). A full re-read happens every ``_FULL_RELOAD_S`` seconds, which also
picks up embeddings another process backfilled into older rows
(``indexing.backfill`` drops its own process's matrix when it is done).
Rejections and age limits are not trusted from the cache: candidates are
re-checked in SQL (``eligibility.eligible``).

Only the first read of a database runs on the caller's thread. The full
re-read and the projection's fit (below) run on a background thread while
queries go on against the matrices already held, and are swapped in when
done: at 100k repairs a re-read costs about a second, and no agent step
should wait for it. An in-memory SQLite database (one shared connection)
is re-read in line. ``settle`` waits for the background work (tests,
benchmarks).

A query multiplies only the matrices it may be answered from (global and
its project's): the scan is memory-bound, and another project's repairs are
never eligible. A matrix of ``APPROXIMATE_FROM`` rows or more is first
scanned through a 96-dimensional projection (principal components of a
sample of the rows, fitted when a matrix first gets that large and again
at each full re-read; scanned exactly until the fit is done): a quarter of
the bytes. The best ``8·k`` (at least
200) of that scan are then scored exactly, and the exact ``k`` best kept.
On mixtures of real embeddings this finds the exact 25 nearest of 50k
rows (recall 1.000, worst query 0.96) in a third of the time
(docs/PERFORMANCE.md). The same matrices answer the cosine of any other candidate
(found by text, tool or context; eligible ones are global or of the
project) and of two repairs with each other: ``guidance_for`` reads no
embedding blobs from the database.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..embeddings import unpack_many
from ..store import Store
from ..store.handles import Executor
from ..store.search.embeddings import embedded_after
from ..text.logs import library_logger

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["Similarities", "reset_cache", "settle", "similarities"]

logger = library_logger("memos_feedback.recall")

# A matrix this large is scanned through the projection first (module docstring).
APPROXIMATE_FROM = 1_500
_REDUCED = 96
_SHORTLIST_MIN = 200
_SHORTLIST_PER_RESULT = 8
_FIT_SAMPLE = 5_000
_FULL_RELOAD_S = 600.0
_READ_BATCH = 5_000


class _Part:
    """The embeddings of one project (or of global repairs), in id order.

    Rows live in a buffer with room to grow (doubled when full): a new
    repair is written past the rows in use instead of copying the matrix,
    and a reader's ``matrix`` (a view of the rows in use then) never sees
    a write, because rows are only ever appended.
    """

    __slots__ = ("buffer", "ids", "reduced")

    def __init__(self, dimension: int) -> None:
        import numpy as np

        self.ids: list[str] = []
        self.buffer: npt.NDArray[np.float32] = np.zeros((64, dimension), dtype=np.float32)
        # The rows through the index's projection, once it has one (same growth).
        self.reduced: npt.NDArray[np.float32] | None = None

    @property
    def matrix(self) -> npt.NDArray[np.float32]:
        return self.buffer[: len(self.ids)]

    def extend(
        self, ids: list[str], vectors: npt.NDArray[np.float32], projection: npt.NDArray[np.float32] | None
    ) -> None:
        used = len(self.ids)
        self.buffer = _append(self.buffer, used, vectors)
        if projection is not None and self.reduced is not None:
            self.reduced = _append(self.reduced, used, vectors @ projection)
        self.ids.extend(ids)
        if projection is not None and self.reduced is None:
            self.project(projection)  # a project first seen after the projection was fitted

    def project(
        self, projection: npt.NDArray[np.float32], done: npt.NDArray[np.float32] | None = None
    ) -> None:
        """Set ``reduced``: ``done`` holds the first rows already projected (off the lock)."""
        import numpy as np

        reduced = np.zeros((self.buffer.shape[0], projection.shape[1]), dtype=np.float32)
        start = 0
        if done is not None:
            start = done.shape[0]
            reduced[:start] = done
        reduced[start : len(self.ids)] = self.matrix[start:] @ projection
        self.reduced = reduced


def _append(
    buffer: npt.NDArray[np.float32], used: int, rows: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """``rows`` written past the first ``used`` rows of ``buffer`` (a doubled copy when full)."""
    import numpy as np

    need = used + rows.shape[0]
    if need > buffer.shape[0]:
        bigger = np.zeros((max(need, 2 * buffer.shape[0]), buffer.shape[1]), dtype=np.float32)
        bigger[:used] = buffer[:used]
        buffer = bigger
    buffer[used:need] = rows
    return buffer


@dataclass
class _Index:
    dimension: int
    loaded_at: float = 0.0
    last_id: str = ""
    parts: dict[str | None, _Part] = field(default_factory=dict)
    # Repair id -> (project, row in that project's matrix).
    where: dict[str, tuple[str | None, int]] = field(default_factory=dict)
    # dimension x _REDUCED, once a matrix reached APPROXIMATE_FROM rows.
    projection: npt.NDArray[np.float32] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    # A background fit or full re-read of this index is running.
    busy: bool = False
    # Bumped by ``clear``: a fit of the rows before it is not installed after it.
    generation: int = 0

    def clear(self) -> None:
        # New containers, never emptied in place: a snapshot taken by a
        # reader (``Similarities``) stays whole.
        self.parts, self.where = {}, {}
        self.last_id = ""
        self.projection = None
        self.generation += 1

    def needs_projection(self) -> bool:
        if self.projection is not None or self.dimension <= 2 * _REDUCED:
            return False
        return max((len(part.ids) for part in self.parts.values()), default=0) >= APPROXIMATE_FROM

    def fit_projection(self) -> None:
        """Fit and install the projection now (the caller holds the lock, or owns the index)."""
        if self.needs_projection():
            snapshot = {p: part.matrix for p, part in self.parts.items()}
            projection, done = _fit(snapshot)
            self.install(projection, done)

    def install(
        self, projection: npt.NDArray[np.float32], done: dict[str | None, npt.NDArray[np.float32]]
    ) -> None:
        """Use ``projection``; ``done``: each part's first rows already projected (under the lock)."""
        self.projection = projection
        for p, part in self.parts.items():
            part.project(projection, done.get(p))


def _fit(
    matrices: dict[str | None, npt.NDArray[np.float32]],
) -> tuple[npt.NDArray[np.float32], dict[str | None, npt.NDArray[np.float32]]]:
    """Principal directions of a sample of every row, and every row projected onto them."""
    import numpy as np

    # A share of each matrix's rows, seeded: the same rows give the same
    # projection in every process.
    rng = np.random.default_rng(0)
    total = sum(m.shape[0] for m in matrices.values())
    picks = []
    for m in matrices.values():
        take = min(m.shape[0], -(-_FIT_SAMPLE * m.shape[0] // total))
        picks.append(m[np.sort(rng.choice(m.shape[0], take, replace=False))])
    sample = np.vstack(picks)
    _, _, vt = np.linalg.svd(sample - sample.mean(axis=0), full_matrices=False)
    projection = np.ascontiguousarray(vt[:_REDUCED].T, dtype=np.float32)
    return projection, {p: m @ projection for p, m in matrices.items()}


_indexes: dict[tuple[str, str], _Index] = {}
_registry_lock = threading.Lock()
# Background fits and re-reads still running (``settle`` waits for them).
_running: set[threading.Thread] = set()


def reset_cache(url: str | None = None) -> None:
    """Forget the cached matrices of the database at ``url`` (every one when None)."""
    with _registry_lock:
        for key in [k for k in _indexes if url is None or k[0] == url]:
            del _indexes[key]


def settle(timeout: float | None = None) -> bool:
    """Wait for the background fits and re-reads started so far; False if one still runs at ``timeout``."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        with _registry_lock:
            threads = list(_running)
        if not threads:
            return True
        for thread in threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                return False


def _start(what: str, work: Callable[[], None]) -> None:
    """Run ``work`` on a daemon thread; a failure is logged and the matrices held stay in use."""

    def run() -> None:
        try:
            work()
        except Exception:
            logger.warning("%s failed; recall goes on with the embeddings it holds", what, exc_info=True)
        finally:
            with _registry_lock:
                _running.discard(threading.current_thread())

    thread = threading.Thread(target=run, name=f"memos-feedback: {what}", daemon=True)
    with _registry_lock:
        _running.add(thread)
    thread.start()


def _in_background(store: Store) -> bool:
    # An in-memory SQLite database is one connection, shared: not from two threads at once.
    return not store.one_connection


def _read_newer(index: _Index, session: Executor, model: str) -> None:
    """Append the embeddings written since ``index.last_id`` (all of them the first time)."""
    while True:
        rows = embedded_after(session, index.last_id, model, _READ_BATCH)
        if not rows:
            break
        index.last_id = rows[-1][0]
        new: dict[str | None, tuple[list[str], list[bytes]]] = {}
        for repair_id, project, blob in rows:  # never NULL: the WHERE says so
            ids, blobs = new.setdefault(project, ([], []))
            ids.append(repair_id)
            blobs.append(blob)
        for project, (ids, blobs) in new.items():
            kept, vectors = unpack_many(blobs, index.dimension)
            if not kept:
                continue
            part = index.parts.get(project)
            if part is None:
                part = index.parts[project] = _Part(index.dimension)
            kept_ids = [ids[i] for i in kept]
            first = len(part.ids)
            index.where.update((repair_id, (project, first + n)) for n, repair_id in enumerate(kept_ids))
            part.extend(kept_ids, vectors, index.projection)
        if len(rows) < _READ_BATCH:
            break


def _refresh(
    index: _Index,
    session: Executor,
    model: str,
    store: Store,
    key: tuple[str, str],
    read: bool = True,
) -> None:
    """Bring ``index`` up to date for a query (the caller holds ``index.lock``).

    ``read=False``: the caller asks the database itself whether there is
    anything newer (in a statement it runs anyway) and comes back with
    ``read=True`` if so; only the first read of the index happens here then.
    """
    now = time.monotonic()
    if index.loaded_at == 0.0:
        index.loaded_at = now  # the first read, below: in line, there is nothing to answer from yet
        read = True
    elif now - index.loaded_at > _FULL_RELOAD_S:
        index.loaded_at = now  # the next one an interval from now, whether this one works or not
        if not _in_background(store):
            index.clear()
        elif not index.busy:
            index.busy = True
            _start("re-reading repair embeddings", lambda: _reload(store, key, model, index))
    if read:
        _read_newer(index, session, model)
    if index.needs_projection() and not index.busy:
        index.busy = True
        snapshot = {p: part.matrix for p, part in index.parts.items()}
        generation = index.generation
        _start("fitting the embedding projection", lambda: _fit_into(index, generation, snapshot))


def _reload(store: Store, key: tuple[str, str], model: str, old: _Index) -> None:
    """Read every embedding into a new index, fit it, and put it in ``old``'s place."""
    try:
        fresh = _Index(dimension=old.dimension, loaded_at=time.monotonic())
        with store.connection(action="re-reading repair embeddings") as conn:
            _read_newer(fresh, conn, model)
        fresh.fit_projection()  # nobody else sees ``fresh`` yet: no lock needed
        with _registry_lock:
            if _indexes.get(key) is old:  # not reset meanwhile
                _indexes[key] = fresh
    finally:
        with old.lock:
            old.busy = False


def _fit_into(index: _Index, generation: int, snapshot: dict[str | None, npt.NDArray[np.float32]]) -> None:
    """Fit a projection of ``snapshot`` off the lock; install it unless the index was cleared."""
    fitted = None
    try:
        fitted = _fit(snapshot)
    finally:
        with index.lock:
            index.busy = False
            if fitted is not None and index.generation == generation and index.projection is None:
                index.install(*fitted)


class Similarities:
    """The query's cosine with every repair it may be answered from, and its ``k`` nearest.

    A snapshot of the global and the project's matrices: rows the index
    gains later are not seen (their row lies past this snapshot).
    """

    __slots__ = ("_matrices", "_query", "_sims", "_where", "last_id", "top")

    def __init__(
        self,
        top: list[tuple[str, float]],
        matrices: dict[str | None, npt.NDArray[np.float32]],
        sims: dict[str | None, npt.NDArray[np.float32]],
        where: dict[str, tuple[str | None, int]],
        query: npt.NDArray[np.float32] | None = None,
        last_id: str = "",
    ) -> None:
        self.top = top
        # The greatest repair id the snapshot was read up to (``refresh=False``'s question).
        self.last_id = last_id
        self._matrices = matrices
        # Every row's cosine, for matrices scanned whole; the others' are computed when asked.
        self._sims = sims
        self._where = where
        self._query = query

    def _row(self, repair_id: str) -> tuple[str | None, int] | None:
        hit = self._where.get(repair_id)
        if hit is None:
            return None
        matrix = self._matrices.get(hit[0])
        return hit if matrix is not None and hit[1] < matrix.shape[0] else None

    def cosine(self, repair_id: str) -> float | None:
        """The query's cosine with ``repair_id``'s embedding (None: not in this snapshot)."""
        return self.cosines((repair_id,))[0]

    def cosines(self, repair_ids: Sequence[str]) -> list[float | None]:
        """The query's cosine with each of ``repair_ids`` (None: not in this snapshot).

        A matrix scanned whole has every row's cosine already; the rows asked
        of a matrix scanned through the projection are gathered into one product.
        """
        import numpy as np

        out: list[float | None] = [None] * len(repair_ids)
        gather: dict[str | None, tuple[list[int], list[int]]] = {}
        # ``_row`` inlined, with the matrices' row counts read once: this runs
        # for every candidate of every call.
        where, sims = self._where, self._sims
        sizes = {p: m.shape[0] for p, m in self._matrices.items()}
        for n, repair_id in enumerate(repair_ids):
            hit = where.get(repair_id)
            if hit is None or hit[1] >= sizes.get(hit[0], 0):
                continue
            values = sims.get(hit[0])
            if values is not None:
                out[n] = float(values[hit[1]])
            else:
                positions, rows = gather.setdefault(hit[0], ([], []))
                positions.append(n)
                rows.append(hit[1])
        for p, (positions, rows) in gather.items():
            assert self._query is not None  # a matrix scanned through the projection
            found = np.einsum("ij,j->i", self._matrices[p][rows], self._query).tolist()
            for n, value in zip(positions, found, strict=True):
                out[n] = value
        return out

    def between(self, a: str, b: str) -> float | None:
        """The cosine of two repairs' embeddings (None unless both are in this snapshot)."""
        ha, hb = self._row(a), self._row(b)
        if ha is None or hb is None:
            return None
        return float(self._matrices[ha[0]][ha[1]] @ self._matrices[hb[0]][hb[1]])


def similarities(
    store: Store,
    session: Executor,
    model: str,
    query: npt.NDArray[np.float32],
    project: str | None,
    k: int,
    *,
    refresh: bool = True,
) -> Similarities:
    """The query against the repairs embedded by ``model``, global or of ``project``.

    ``refresh=False``: the repairs embedded since the last read are not
    looked for (save the index's first read); the caller asks whether there
    are any, with the result's ``last_id``, and calls again if so.
    """
    import numpy as np

    key = (store.url, model)
    with _registry_lock:
        index = _indexes.get(key)
        if index is None or index.dimension != query.shape[0]:
            index = _indexes[key] = _Index(dimension=int(query.shape[0]))
    with index.lock:
        _refresh(index, session, model, store, key, refresh)
        last_id = index.last_id
        parts = {p: index.parts[p] for p in dict.fromkeys((None, project)) if p in index.parts}
        matrices = {p: part.matrix for p, part in parts.items()}
        ids = {p: part.ids for p, part in parts.items()}  # appended to only: rows past a matrix are unseen
        reduced = {
            p: part.reduced[: len(part.ids)]
            for p, part in parts.items()
            if part.reduced is not None and len(part.ids) >= APPROXIMATE_FROM
        }
        projection = index.projection
        where = index.where
    q = query.astype(np.float32, copy=False)
    sims: dict[str | None, npt.NDArray[np.float32]] = {}
    best: list[tuple[str, float]] = []
    for p, m in matrices.items():
        n = min(k, m.shape[0])
        if n <= 0:
            continue
        r = reduced.get(p)
        if r is not None and projection is not None:
            # The projection's scan picks a shortlist; its exact cosines pick the k.
            approx = np.einsum("ij,j->i", r, q @ projection)
            short = min(r.shape[0], max(_SHORTLIST_MIN, _SHORTLIST_PER_RESULT * k))
            rows = np.argpartition(-approx, short - 1)[:short]
            values = np.einsum("ij,j->i", m[rows], q)
        else:
            # einsum, not ``m @ q``: numpy's own single-threaded loop. OpenBLAS
            # splits a matrix-vector product over every core and waits for the
            # slowest; with another process on the other core of a small machine
            # that took 10-25 ms instead of 1 (docs/PERFORMANCE.md, "Recall").
            values = sims[p] = np.einsum("ij,j->i", m, q)
            rows = None
        top = np.argpartition(-values, n - 1)[:n]
        chosen = top if rows is None else rows[top]
        best += [(ids[p][i], float(v)) for i, v in zip(chosen.tolist(), values[top].tolist(), strict=True)]
    # Ties by id, so the order does not depend on which matrix a repair is in.
    best.sort(key=lambda pair: (-pair[1], pair[0]))
    return Similarities(best[:k], matrices, sims, where, q, last_id)
