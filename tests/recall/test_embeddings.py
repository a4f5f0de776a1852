"""The real SentenceTransformerEmbedder with the packaged all-MiniLM-L6-v2, end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import update

from memos_feedback import FeedbackBus, ToolCall, attach_feedback_subscriber
from memos_feedback.config import FeedbackConfig
from memos_feedback.embeddings import SentenceTransformerEmbedder, pack
from memos_feedback.errors import ConfigError
from memos_feedback.recall import guidance_for
from memos_feedback.recall.indexing import backfill
from memos_feedback.recall.vectors import APPROXIMATE_FROM, reset_cache, settle, similarities
from memos_feedback.store import Store
from memos_feedback.store.models import DecisionRepairModel
from tests.support.rows import global_embedded_repairs

pytest.importorskip("sentence_transformers", reason="needs the [embeddings] extra (make test installs it)")


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


def test_packaged_model_embeds_offline(embedder: SentenceTransformerEmbedder) -> None:
    vecs = embedder.embed(["pip refuses to install", "pip install fails: externally managed", "bake a cake"])
    assert vecs.shape == (3, 384) and embedder.dimension == 384
    assert abs(float((vecs[0] ** 2).sum()) - 1.0) < 1e-4
    assert float(vecs[0] @ vecs[1]) > float(vecs[0] @ vecs[2])
    assert embedder.model_name == "all-MiniLM-L6-v2"


def test_a_missing_model_directory_is_a_config_error(tmp_path: object) -> None:
    with pytest.raises(ConfigError):
        SentenceTransformerEmbedder(str(tmp_path))


def test_import_memos_feedback_does_not_import_torch() -> None:
    code = (
        "import sys, memos_feedback, memos_feedback.recall; "
        "print('torch' in sys.modules, 'numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_tool_fails_three_times_then_a_new_session_gets_the_repair(
    store: Store, embedder: SentenceTransformerEmbedder
) -> None:
    """End to end: failure burst → repair (embedded in the worker) → different wording recalls it."""
    config = FeedbackConfig(use_llm=False)
    with attach_feedback_subscriber(store, embedder=embedder, bus=FeedbackBus(), config=config) as feedback:
        for step in (1, 2, 3):
            store.traces.add(
                "s1",
                agent_text="npm ERR! code ERESOLVE npm ERR! ERESOLVE unable to resolve dependency tree",
                value=-0.7,
                tool_calls=[ToolCall("npm.install", error_code="ERESOLVE")],
            )
            feedback.record_tool_failure(
                "npm.install", "install web/", step, reason="ERESOLVE", session_id="s1"
            )
        assert feedback.flush(timeout=30)
    [row] = store.repairs.list()
    found = guidance_for(
        store,
        tool_id="npm.install",
        context="add react-query to web/",
        query="npm could not resolve the dependency tree (ERESOLVE) while adding a package",
        embedder=embedder,
    )
    assert found.mode == "semantic"
    assert [i.repair_id for i in found.items] == [row.id]
    assert "ERESOLVE" in found.render()


def _embed_as_a_worker(
    store: Store, embedder: SentenceTransformerEmbedder, repair_id: str, text: str
) -> None:
    """Store ``text``'s embedding for a repair, as a worker with an embedder writes it."""
    with store.session(write=True) as s:
        s.execute(
            update(DecisionRepairModel)
            .where(DecisionRepairModel.id == repair_id)
            .values(embedding=pack(embedder.embed([text])[0]), embedding_model=embedder.model_name)
        )


def test_backfill_embeds_repairs_written_without_an_embedder(
    store: Store, embedder: SentenceTransformerEmbedder
) -> None:
    store.repairs.insert(
        context_hash="h1", trigger="manual", preference="Prefer: uv add", anti_pattern="Avoid: pip install"
    )
    report = backfill(store, embedder)
    assert (report.scanned, report.embedded, report.text_filled) == (1, 1, 1)
    assert backfill(store, embedder).scanned == 0
    found = guidance_for(store, query="use uv add rather than pip install", embedder=embedder)
    assert len(found.items) == 1


def test_backfill_makes_this_process_read_older_rows_again(
    store: Store, embedder: SentenceTransformerEmbedder
) -> None:
    older = store.repairs.insert(
        context_hash="h1", trigger="manual", preference="Prefer: uv add", anti_pattern="Avoid: pip install"
    )
    newer = store.repairs.insert(
        context_hash="h2", trigger="manual", preference="Prefer: pnpm", anti_pattern="Avoid: npm install"
    )
    # The newer one is embedded first (as a worker with an embedder would have).
    _embed_as_a_worker(store, embedder, newer.id, "use pnpm")
    qvec = embedder.embed(["use uv add rather than pip install"])[0]
    with store.connection() as s:
        # This process's matrix now ends at the newer row: an older one is not read again by itself.
        assert [i for i, _ in similarities(store, s, embedder.model_name, qvec, None, 5).top] == [newer.id]
    assert backfill(store, embedder).embedded == 1
    with store.connection() as s:
        found = [i for i, _ in similarities(store, s, embedder.model_name, qvec, None, 5).top]
    assert found == [older.id, newer.id]


def test_a_process_that_read_the_matrix_earlier_ranks_a_newly_embedded_repair_as_a_fresh_one_would(
    store: Store, embedder: SentenceTransformerEmbedder
) -> None:
    # The in-process matrix was read before the repair was embedded. On
    # PostgreSQL guidance learns of the newer row from the candidates'
    # statement and reads it before scoring; on SQLite it reads newer rows
    # first. Either way the repair's cosine counts, as in a fresh process.
    store.repairs.insert(
        context_hash="h1", trigger="manual", preference="Prefer: uv add", anti_pattern="Avoid: pip install"
    )
    backfill(store, embedder)
    query = "npm install keeps failing on the web app"
    assert guidance_for(store, query=query, embedder=embedder).items == ()
    newer = store.repairs.insert(
        context_hash="h2", trigger="manual", preference="Prefer: pnpm", anti_pattern="Avoid: npm install"
    )
    # Embedded as a worker of another process would (a backfill here would
    # also make this process read its matrix again).
    _embed_as_a_worker(store, embedder, newer.id, "use pnpm, not npm install")
    seen_late = guidance_for(store, query=query, embedder=embedder)
    reset_cache(store.url)
    fresh = guidance_for(store, query=query, embedder=embedder)
    assert [i.repair_id for i in fresh.items] == [newer.id]
    assert seen_late.items == fresh.items


def test_evidence_by_meaning_keeps_a_paraphrased_failure_and_leaves_unrelated_ones(
    store: Store, embedder: SentenceTransformerEmbedder
) -> None:
    from memos_feedback.repair.evidence import gather_repair_evidence

    said = {
        "npm ERR! code ERESOLVE npm ERR! ERESOLVE unable to resolve dependency tree, peer react@17": "npm",
        "could not resolve the peer dependency tree while installing packages for web": "paraphrase",
        "docker: Got permission denied while trying to connect to the Docker daemon socket": "docker",
        "Traceback: KeyError 'user_id' in api/app/routers/auth.py": "keyerror",
    }
    ids = {
        store.traces.add(
            "s-ev", agent_text=text, value=-0.7, tool_calls=[ToolCall("shell", error_code="1")]
        ).id: name
        for text, name in said.items()
    }
    about = "npm.install install web/ deps ERESOLVE"
    # No trace names the normalised tool id: without an embedder the scan relaxes to every failure.
    plain = gather_repair_evidence("s-ev", "npm.install", None, store)
    assert plain.relaxed and {ids[t.id] for t in plain.low} == set(said.values())
    meant = gather_repair_evidence("s-ev", "npm.install", None, store, embedder=embedder, about=about)
    assert not meant.relaxed
    assert {ids[t.id] for t in meant.low} == {"npm", "paraphrase"}
    assert {ids[i] for i in meant.similar} == {"npm", "paraphrase"}
    # Nothing close enough: the scan still relaxes, as without an embedder.
    far = gather_repair_evidence("s-ev", "npm.install", None, store, embedder=embedder, about="bake a cake")
    assert far.relaxed and far.similar == ()


def test_a_chinese_lesson_is_embedded_with_its_english_glosses(
    store: Store, embedder: SentenceTransformerEmbedder
) -> None:
    row = store.repairs.insert(
        context_hash="h2", trigger="manual", preference="Prefer: 走只读副本", anti_pattern="Avoid: 在主库上跑"
    )
    assert backfill(store, embedder).embedded == 1
    from memos_feedback.recall.indexing import embedding_text
    from memos_feedback.recall.terms import glossed

    text = embedding_text("do: Prefer: 走只读副本\navoid: Avoid: 在主库上跑")
    assert glossed(text).endswith("\nread-only readonly replica primary")
    # An English query finds the Chinese lesson: by the glossed terms and the glossed embedding.
    found = guidance_for(store, query="run it on a read-only replica, not the primary", embedder=embedder)
    assert [i.repair_id for i in found.items] == [row.id]


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if len(value) >= 10 else []
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


def test_the_projection_finds_the_exact_nearest_of_real_embeddings(
    store: Store, embedder: SentenceTransformerEmbedder
) -> None:
    # Real texts (the recall cases' repairs, traces and queries), embedded,
    # and mixed two by two into more rows than the projection starts at.
    lines = (Path(__file__).parents[1] / "data" / "recall_dev.jsonl").read_text(encoding="utf-8").splitlines()
    texts = list(dict.fromkeys(t for line in lines for t in _texts(json.loads(line))))
    real = embedder.embed(texts)
    rng = np.random.default_rng(0)
    n = APPROXIMATE_FROM + 1_000
    a, b = rng.integers(0, len(real), n), rng.integers(0, len(real), n)
    share = rng.uniform(0.3, 0.7, (n, 1)).astype(np.float32)
    mixed = (
        share * real[a] + (1 - share) * real[b] + rng.normal(0, 0.03, (n, real.shape[1])).astype(np.float32)
    )
    mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
    ids = global_embedded_repairs(store, embedder.model_name, mixed, tag="mix")
    reset_cache(store.url)
    found = 0
    queries = real[rng.integers(0, len(real), 40)]
    with store.connection() as s:  # loads the matrix; the projection is fitted on its own thread
        similarities(store, s, embedder.model_name, queries[0], None, 25)
    assert settle(60)
    with store.connection() as s:
        for query in queries:
            got = {rid for rid, _ in similarities(store, s, embedder.model_name, query, None, 25).top}
            found += len(got & {ids[i] for i in np.argsort(-(mixed @ query))[:25]})
    # Measured: all 1,000 of the exact nearest are found (docs/PERFORMANCE.md).
    assert found / (25 * len(queries)) >= 0.98
