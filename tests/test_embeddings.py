"""The real SentenceTransformerEmbedder with the packaged all-MiniLM-L6-v2, end to end."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memos_feedback import FeedbackBus, ToolCall, attach_feedback_subscriber
from memos_feedback.config import FeedbackConfig
from memos_feedback.errors import ConfigError
from memos_feedback.recall import guidance_for
from memos_feedback.recall.embeddings import SentenceTransformerEmbedder
from memos_feedback.recall.indexing import backfill
from memos_feedback.store import Store

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
