"""OpenAIEmbedder against a real HTTP server on 127.0.0.1 speaking the embeddings API."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from memos_feedback.config import FeedbackConfig
from memos_feedback.embeddings.openai import MAX_INPUT_CHARS, OpenAIEmbedder
from memos_feedback.errors import InvalidInputError, LLMReplyError, LLMTransientError
from memos_feedback.recall.guidance import guidance_for
from memos_feedback.repair.deps import RepairDeps
from memos_feedback.repair.run import run_repair
from memos_feedback.signals import context_hash_of
from memos_feedback.store import Store
from memos_feedback.types import RepairInput, ToolCall

DIM = 16


def vector(text: str) -> list[float]:
    """A deterministic vector per text: texts sharing words share components (bag of hashed words)."""
    out = [0.0] * DIM
    for word in text.lower().split():
        digest = hashlib.sha256(word.encode()).digest()
        out[digest[0] % DIM] += 1.0 + digest[1] / 255
    return out


class EmbeddingServer:
    """Answers POST /v1/embeddings; ``script`` holds what the next requests get (status, delay)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.script: list[tuple[int, float]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append(body)
                    status, delay = server.script.pop(0) if server.script else (200, 0.0)
                time.sleep(delay)
                if status != 200:
                    payload = json.dumps({"error": {"message": "scripted"}}).encode()
                else:
                    data = [
                        {"object": "embedding", "index": i, "embedding": vector(t)}
                        for i, t in enumerate(body["input"])
                    ]
                    data.reverse()  # servers may answer out of order: the index says which is which
                    payload = json.dumps({"object": "list", "data": data, "model": body["model"]}).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> EmbeddingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer() as s:
        yield s


def test_vectors_come_back_normalised_in_order_and_in_batches(server: EmbeddingServer) -> None:
    emb = OpenAIEmbedder("bge-m3", base_url=server.base_url, batch_size=2, max_retries=0)
    texts = ["pnpm install fails", "node version pin", "", "x" * (MAX_INPUT_CHARS + 50), "pnpm install"]
    out = emb.embed(texts)
    assert out.shape == (5, DIM) and out.dtype == np.float32
    # Unit length, except the empty text's zero vector (nothing to normalise).
    assert np.allclose(np.linalg.norm(out, axis=1), [1.0, 1.0, 0.0, 1.0, 1.0])
    expected = np.asarray(vector(texts[0]), dtype=np.float32)
    assert np.allclose(out[0], expected / np.linalg.norm(expected))
    assert [len(r["input"]) for r in server.requests] == [2, 2, 1]
    assert all(r["model"] == "bge-m3" for r in server.requests)
    assert max(len(t) for r in server.requests for t in r["input"]) == MAX_INPUT_CHARS
    assert server.requests[1]["input"][0] == " "  # an empty text is sent as a space
    assert emb.dimension == DIM and emb.model_name == "bge-m3"
    assert "key" not in repr(emb).lower()


def test_a_failed_request_is_retried_then_reported_clearly(server: EmbeddingServer) -> None:
    emb = OpenAIEmbedder("m", base_url=server.base_url, max_retries=1)
    server.script = [(503, 0.0)]
    assert emb.embed(["a b"]).shape == (1, DIM)
    assert len(server.requests) == 2
    server.script = [(503, 0.0), (503, 0.0)]
    with pytest.raises(LLMTransientError, match="HTTP 503"):
        emb.embed(["a b"])
    server.script = [(400, 0.0)]
    with pytest.raises(LLMReplyError, match="rejected the request: HTTP 400"):
        emb.embed(["a b"])


def test_a_slow_server_is_a_timeout(server: EmbeddingServer) -> None:
    emb = OpenAIEmbedder("m", base_url=server.base_url, timeout=0.3, max_retries=0)
    server.script = [(200, 1.5)]
    started = time.monotonic()
    with pytest.raises(LLMTransientError, match="timed out"):
        emb.embed(["a"])
    assert time.monotonic() - started < 1.4


def test_no_server_is_a_transient_error_and_bad_arguments_are_refused() -> None:
    emb = OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", timeout=2, max_retries=0)
    with pytest.raises(LLMTransientError, match="could not reach"):
        emb.embed(["a"])
    with pytest.raises(InvalidInputError):
        emb.embed("not a list")
    with pytest.raises(InvalidInputError):
        OpenAIEmbedder("", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(InvalidInputError):
        OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", batch_size=0)


def test_recall_with_the_served_embeddings(server: EmbeddingServer, store: Store) -> None:
    emb = OpenAIEmbedder("hashed-words", base_url=server.base_url, dimension=DIM)
    tool, context = "shell.run", "pnpm install in web/ after pulling main"
    trace = "ERR_PNPM_UNSUPPORTED_ENGINE Unsupported environment: expected node >=20.11 <21, got v22.3.0"
    store.traces.add("s-1", agent_text=trace, value=-0.6, tool_calls=[ToolCall(tool, error_code="failed")])
    inp = RepairInput(
        trigger="user.correction",
        context_hash=context_hash_of(tool, context),
        tool_id=tool,
        user_text="don't touch the engines field; run nvm use in web/ first, .nvmrc pins node 20.11",
        session_id="s-1",
        context=context,
        project="shop",
    )
    deps = RepairDeps(store=store, config=FeedbackConfig(use_llm=False, cooldown_ms=0), embedder=emb)
    rid = run_repair(inp, deps).repair_id
    assert rid is not None
    # The repair was embedded through the server.
    assert any(t.startswith("do:") or "engines" in t for r in server.requests for t in r["input"])
    found = guidance_for(
        store,
        tool_id="shell.run",
        context="pnpm install in api/",
        query="ERR_PNPM_UNSUPPORTED_ENGINE Unsupported environment: expected node >=20.11, got v22.3.0",
        embedder=emb,
        project="shop",
    )
    assert found.mode == "semantic"
    assert [i.repair_id for i in found.items] == [rid]
