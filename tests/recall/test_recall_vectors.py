"""recall/vectors.py: the in-process embedding matrices, on real databases."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sqlalchemy import insert, update

from memos_feedback.embeddings import pack, unpack_many
from memos_feedback.recall import vectors
from memos_feedback.recall.vectors import APPROXIMATE_FROM, reset_cache, settle, similarities
from memos_feedback.store import Store, open_store
from memos_feedback.store.models import DecisionRepairModel
from tests.support.rows import global_embedded_repairs, repair_row

DIM = 16
MODEL = "test-model"
PROJECTS = (None, "a", "b")
# Repair id -> (project, embedding).
Repairs = dict[str, tuple[str | None, np.ndarray[Any, Any]]]


def _unit(rng: np.random.Generator) -> np.ndarray[Any, Any]:
    vec = rng.standard_normal(DIM).astype(np.float32)
    return vec / np.linalg.norm(vec)


def _add(store: Store, n: int, seed: int) -> Repairs:
    """``n`` repairs with random unit embeddings over three projects; id -> (project, vector)."""
    rng = np.random.default_rng(seed)
    rows = [
        repair_row(i, context_hash=f"h{seed}-{i}", project=PROJECTS[i % 3], embedding_model=MODEL)
        for i in range(n)
    ]
    out: Repairs = {}
    for row in rows:
        vec = _unit(rng)
        row["embedding"] = pack(vec)
        out[row["id"]] = (row["project"], vec)
    with store.session(write=True) as s:
        s.execute(insert(DecisionRepairModel), rows)
    return out


def _exact(repairs: Repairs, query: np.ndarray[Any, Any], project: str | None) -> list[tuple[str, float]]:
    scored = [(rid, float(vec @ query)) for rid, (p, vec) in repairs.items() if p in (None, project)]
    return sorted(scored, key=lambda pair: (-pair[1], pair[0]))


@pytest.fixture(autouse=True)
def _fresh_matrices(store: Store) -> None:
    reset_cache(store.url)


def test_the_nearest_are_the_exact_nearest_of_the_project_and_global_repairs(store: Store) -> None:
    # 150 rows: more than a matrix's first allocation, so it grows while loading.
    repairs = _add(store, 150, seed=1)
    query = _unit(np.random.default_rng(2))
    with store.connection() as s:
        got = similarities(store, s, MODEL, query, "a", 10)
    want = _exact(repairs, query, "a")[:10]
    assert [rid for rid, _ in got.top] == [rid for rid, _ in want]
    assert [c for _, c in got.top] == pytest.approx([c for _, c in want], abs=1e-5)
    for rid, (project, vec) in repairs.items():
        cosine = got.cosine(rid)
        if project == "b":
            # Never eligible for project "a": not scanned, no cosine.
            assert cosine is None
        else:
            assert cosine == pytest.approx(float(vec @ query), abs=1e-5)
    a_ids = [rid for rid, (p, _) in repairs.items() if p == "a"]
    pair = got.between(a_ids[0], a_ids[1])
    assert pair == pytest.approx(float(repairs[a_ids[0]][1] @ repairs[a_ids[1]][1]), abs=1e-5)
    assert got.cosine("dr_unknown") is None


def test_a_caller_without_a_project_is_answered_from_global_repairs_only(store: Store) -> None:
    repairs = _add(store, 30, seed=3)
    query = repairs[next(iter(repairs))][1]
    with store.connection() as s:
        got = similarities(store, s, MODEL, query, None, 50)
    assert {rid for rid, _ in got.top} == {rid for rid, (p, _) in repairs.items() if p is None}


def test_repairs_written_later_are_found_and_an_earlier_answer_stays_whole(store: Store) -> None:
    first = _add(store, 20, seed=4)
    query = _unit(np.random.default_rng(5))
    with store.connection() as s:
        before = similarities(store, s, MODEL, query, "b", 100)
    snapshot = [(rid, before.cosine(rid)) for rid in first]
    # Enough to outgrow the matrices' room: they are reallocated, not rewritten.
    later = _add(store, 200, seed=6)
    with store.connection() as s:
        after = similarities(store, s, MODEL, query, "b", 100)
    both = {**first, **later}
    assert [rid for rid, _ in after.top] == [rid for rid, _ in _exact(both, query, "b")[:100]]
    # The earlier answer knows nothing of the later rows and still has its own.
    assert all(before.cosine(rid) is None for rid in later)
    assert [(rid, before.cosine(rid)) for rid in first] == snapshot


def test_without_refresh_the_matrix_stays_as_read_and_says_how_far(store: Store) -> None:
    # refresh=False (PostgreSQL's guidance asks the database itself whether
    # anything newer exists): the first call still reads everything; later
    # ones answer from what was read, and ``last_id`` says up to where.
    first = _add(store, 12, seed=10)
    query = _unit(np.random.default_rng(11))
    with store.connection() as s:
        loaded = similarities(store, s, MODEL, query, None, 50, refresh=False)
    assert {rid for rid, _ in loaded.top} == {rid for rid, (p, _) in first.items() if p is None}
    assert loaded.last_id == max(first)
    later = _add(store, 12, seed=12)
    with store.connection() as s:
        stale = similarities(store, s, MODEL, query, None, 50, refresh=False)
        fresh = similarities(store, s, MODEL, query, None, 50)
    assert stale.top == loaded.top and stale.last_id == loaded.last_id
    both = {**first, **later}
    assert [rid for rid, _ in fresh.top] == [rid for rid, _ in _exact(both, query, None)]
    assert fresh.last_id == max(both)


def test_another_model_s_embeddings_are_not_used(store: Store) -> None:
    _add(store, 10, seed=7)
    query = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    with store.connection() as s:
        got = similarities(store, s, "another-model", query, "a", 5)
    assert got.top == []


def _clustered(store: Store, n: int, seed: int, start: int = 0) -> dict[str, np.ndarray[Any, Any]]:
    """``n`` global repairs with 384-dimensional embeddings around 300 topics; id -> vector."""
    rng = np.random.default_rng(seed)
    topics = rng.standard_normal((300, 384)).astype(np.float32)
    vecs = topics[rng.integers(0, 300, n)] + rng.standard_normal((n, 384)).astype(np.float32) * 0.6
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ids = global_embedded_repairs(store, MODEL, vecs, start=start, tag=f"c{seed}")
    return dict(zip(ids, vecs, strict=True))


def test_a_large_matrix_is_scanned_through_the_projection_with_exact_cosines(store: Store) -> None:
    # How many of the exact nearest the projection finds is measured on real
    # embeddings (test_embeddings.py); here: what it returns is exact.
    repairs = _clustered(store, APPROXIMATE_FROM + 500, seed=8)
    ids = list(repairs)
    matrix = np.vstack([repairs[i] for i in ids])
    rng = np.random.default_rng(9)
    query = matrix[17]
    with store.connection() as s:
        first = similarities(store, s, MODEL, query, None, 25)
    # The first query did not wait for the fit: it scanned the matrix exactly
    # (every row's cosine kept) while the fit started on its own thread.
    assert first._sims and first.top[0][0] == ids[17]
    assert settle(60)
    with store.connection() as s:
        got = similarities(store, s, MODEL, query, None, 25)
    assert not got._sims, "scanned through the projection once fitted"
    exact = matrix @ query
    assert len(got.top) == 25 and got.top[0][0] == ids[17]
    assert [c for _, c in got.top] == sorted((c for _, c in got.top), reverse=True)
    for rid, cosine in got.top:
        assert cosine == pytest.approx(float(repairs[rid] @ query), abs=1e-5)
    # Shortlisted or not, every cosine asked for is exact, one by one or batched.
    picked = rng.integers(0, len(ids), 50)
    for i in picked:
        assert got.cosine(ids[i]) == pytest.approx(float(exact[i]), abs=1e-5)
    batched = got.cosines([*(ids[i] for i in picked), "dr_not_a_repair"])
    assert batched[-1] is None
    assert batched[:-1] == pytest.approx([float(exact[i]) for i in picked], abs=1e-5)
    # A repair written after the projection was fitted is projected too, and found.
    ((new_id, new_vec),) = _clustered(store, 1, seed=10, start=len(ids)).items()
    with store.connection() as s:
        got = similarities(store, s, MODEL, new_vec, None, 5)
    assert got.top[0] == (new_id, pytest.approx(1.0, abs=1e-5))


def _re_embedded_after_a_read(store: Store, seed: int) -> tuple[np.ndarray[Any, Any], str, float]:
    """Read 30 repairs into the matrices, then re-embed an older one as the query
    (what another process's ``repairs embed --redo`` does): only a full re-read
    sees that. Returns the query, the re-embedded id and its old cosine."""
    repairs = _add(store, 30, seed=seed)
    query = _unit(np.random.default_rng(seed + 1))
    older = next(rid for rid, (p, _) in repairs.items() if p is None)
    with store.connection() as s:
        similarities(store, s, MODEL, query, None, 5)
    with store.session(write=True) as s:
        row = DecisionRepairModel.id == older
        s.execute(update(DecisionRepairModel).where(row).values(embedding=pack(query)))
    return query, older, float(repairs[older][1] @ query)


def test_the_full_re_read_runs_off_the_caller_s_thread_and_is_swapped_in(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the interval at 0 every query starts a re-read (when none runs);
    # the query that starts it is answered from the matrices already held,
    # and a later one from the re-read.
    query, older, before = _re_embedded_after_a_read(store, seed=11)
    monkeypatch.setattr(vectors, "_FULL_RELOAD_S", 0.0)
    with store.connection() as s:
        during = similarities(store, s, MODEL, query, None, 5)
    assert during.cosine(older) == pytest.approx(before, abs=1e-5)
    assert settle(60)
    with store.connection() as s:
        after = similarities(store, s, MODEL, query, None, 5)
    assert after.top[0] == (older, pytest.approx(1.0, abs=1e-5))
    assert settle(60)


def test_an_in_memory_database_is_re_read_in_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # One shared connection: never used from a second thread.
    with open_store("sqlite://") as store:
        query, older, _ = _re_embedded_after_a_read(store, seed=13)
        monkeypatch.setattr(vectors, "_FULL_RELOAD_S", 0.0)
        with store.connection() as s:
            got = similarities(store, s, MODEL, query, None, 5)
        assert got.top[0] == (older, pytest.approx(1.0, abs=1e-5))
        reset_cache(store.url)


def test_a_blob_of_another_length_is_skipped_and_the_rest_are_read(store: Store) -> None:
    repairs = _add(store, 12, seed=15)
    damaged, shorter = list(repairs)[:2]
    with store.session(write=True) as s:
        s.execute(
            update(DecisionRepairModel).where(DecisionRepairModel.id == damaged).values(embedding=b"\x00" * 7)
        )
        short = pack(np.ones(DIM // 2, dtype=np.float32))
        s.execute(
            update(DecisionRepairModel).where(DecisionRepairModel.id == shorter).values(embedding=short)
        )
    query = _unit(np.random.default_rng(16))
    with store.connection() as s:
        got = similarities(store, s, MODEL, query, "a", 50)
    kept = {rid: v for rid, v in repairs.items() if rid not in (damaged, shorter)}
    assert got.cosine(damaged) is None and got.cosine(shorter) is None
    assert [rid for rid, _ in got.top] == [rid for rid, _ in _exact(kept, query, "a")]


def test_unpack_many_reads_the_blobs_of_the_dimension_as_one_matrix() -> None:
    rng = np.random.default_rng(17)
    vecs = [_unit(rng) for _ in range(3)]
    blobs = [pack(vecs[0]), b"\x00" * 7, pack(vecs[1]), pack(vecs[2][: DIM // 2]), pack(vecs[2])]
    kept, matrix = unpack_many(blobs, DIM)
    assert kept == [0, 2, 4]
    assert matrix.dtype == np.float32 and matrix.shape == (3, DIM)
    assert np.array_equal(matrix, np.vstack(vecs))
    kept, matrix = unpack_many([b"\x00" * 7], DIM)
    assert kept == [] and matrix.shape == (0, DIM)
