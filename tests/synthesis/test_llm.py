"""``OpenAIRepairLLM`` through the real ``openai`` SDK against a real local HTTP server."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memos_feedback.errors import InvalidInputError, LLMError, LLMReplyError, LLMTransientError
from memos_feedback.synthesis.llm import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, OpenAIRepairLLM, RepairLLM
from tests.support.chat_server import Behaviour, ChatServer

MESSAGES = [
    {"role": "system", "content": "answer with JSON"},
    {
        "role": "user",
        "content": "=== BEGIN CURRENT_CONTEXT ===\ntool: pip.install\n=== END CURRENT_CONTEXT ===",
    },
]
REPLY = {"preference": "Prefer: uv", "anti_pattern": "Avoid: pip", "severity": "warn", "confidence": 0.8}
SECRET_KEY = "sk-test-0123456789abcdefSECRET"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as s:
        yield s


@pytest.fixture
def llm(server: ChatServer) -> OpenAIRepairLLM:
    return OpenAIRepairLLM("test-model", base_url=server.base_url, api_key=SECRET_KEY, timeout=2.0)


def test_ok_json_reply_and_request_shape(server: ChatServer, llm: OpenAIRepairLLM) -> None:
    server.script(Behaviour.ok(json.dumps(REPLY)))
    assert llm.complete_json(MESSAGES, "decision_repair") == REPLY
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.json["model"] == "test-model"
    assert request.json["messages"] == MESSAGES
    assert request.json["response_format"] == {"type": "json_object"}
    assert request.headers["authorization"] == f"Bearer {SECRET_KEY}"


def test_default_server_reply_is_derived_from_context(llm: OpenAIRepairLLM) -> None:
    reply = llm.complete_json(MESSAGES, "decision_repair")
    assert "tool: pip.install" in reply["preference"]
    assert reply["severity"] == "warn"


def test_it_is_a_repair_llm(llm: OpenAIRepairLLM) -> None:
    assert isinstance(llm, RepairLLM)


@pytest.mark.parametrize(
    "content",
    [
        "```json\n" + json.dumps(REPLY) + "\n```",
        "```\n" + json.dumps(REPLY) + "\n```",
        "  \n" + json.dumps(REPLY) + "\n\n",
        "```json " + json.dumps(REPLY) + "```",
    ],
    ids=["json-fence", "bare-fence", "whitespace", "one-line-fence"],
)
def test_fenced_or_padded_json_is_accepted(server: ChatServer, llm: OpenAIRepairLLM, content: str) -> None:
    server.script(Behaviour.ok(content))
    assert llm.complete_json(MESSAGES, "decision_repair") == REPLY


@pytest.mark.parametrize(
    "behaviour",
    [
        Behaviour.non_json(),
        Behaviour.ok("[1, 2, 3]"),
        Behaviour.ok('"just a string"'),
        Behaviour.ok('{"preference": "unterminated'),
        Behaviour.empty(),
        Behaviour.ok("   "),
        Behaviour.refuse(),
        Behaviour.malformed(),
        Behaviour.malformed(b"<html>gateway</html>", "text/html"),
        Behaviour.malformed(b'{"object": "chat.completion", "choices": []}'),
        Behaviour.error(400, "bad request"),
        Behaviour.error(401, "bad key"),
        Behaviour.error(404, "no such model"),
        Behaviour.error(422, "unprocessable"),
    ],
    ids=[
        "prose",
        "json-list",
        "json-string",
        "broken-json",
        "empty",
        "blank",
        "refusal",
        "truncated-body",
        "html-body",
        "no-choices",
        "400",
        "401",
        "404",
        "422",
    ],
)
def test_unusable_replies_raise_reply_error(
    server: ChatServer, llm: OpenAIRepairLLM, behaviour: Behaviour
) -> None:
    server.script(behaviour)
    with pytest.raises(LLMReplyError):
        llm.complete_json(MESSAGES, "decision_repair")


@pytest.mark.parametrize("status", [429, 500, 502, 503, 408])
def test_retryable_statuses_raise_transient(server: ChatServer, llm: OpenAIRepairLLM, status: int) -> None:
    server.script(Behaviour.error(status))
    with pytest.raises(LLMTransientError, match=str(status)):
        llm.complete_json(MESSAGES, "decision_repair")
    assert len(server.requests) == 1  # max_retries=0: no SDK retry behind the queue's back


def test_timeout_is_transient_and_bounded(server: ChatServer) -> None:
    llm = OpenAIRepairLLM("m", base_url=server.base_url, api_key="k", timeout=0.3)
    server.script(Behaviour.delay(30_000))
    started = time.monotonic()
    with pytest.raises(LLMTransientError, match="timed out"):
        llm.complete_json(MESSAGES, "decision_repair")
    # Far below the server's 30 s: the client gave up on its own bound
    # (loose, so a loaded machine does not fail it).
    assert time.monotonic() - started < 10.0


@pytest.mark.parametrize("phase", ["headers", "body"])
def test_timeout_is_a_deadline_for_a_server_that_drips_bytes(server: ChatServer, phase: str) -> None:
    # One byte every 0.2 s for up to 60 s: each read is far inside the 1 s
    # timeout, so only a deadline over the whole call can end it.
    llm = OpenAIRepairLLM("m", base_url=server.base_url, api_key="k", timeout=1.0)
    server.script(Behaviour.drip("headers" if phase == "headers" else "body", interval_ms=200))
    started = time.monotonic()
    with pytest.raises(LLMTransientError, match="1 s deadline"):
        llm.complete_json(MESSAGES, "decision_repair")
    elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 8.0, elapsed  # generous slack for a loaded 2-core machine


def test_a_call_can_shorten_its_deadline_but_not_lengthen_it(server: ChatServer) -> None:
    # Recall's reading judge passes its own deadline (judge_timeout_s) this way.
    llm = OpenAIRepairLLM("m", base_url=server.base_url, api_key="k", timeout=30.0)
    server.script(Behaviour.drip("body", interval_ms=100))
    started = time.monotonic()
    with pytest.raises(LLMTransientError, match=r"0\.3 s deadline"):
        llm.complete_json(MESSAGES, "relevance", timeout=0.3)
    assert time.monotonic() - started < 8.0  # far below the client's 30 s
    short = OpenAIRepairLLM("m", base_url=server.base_url, api_key="k", timeout=0.3)
    server.script(Behaviour.drip("body", interval_ms=100))
    with pytest.raises(LLMTransientError, match=r"0\.3 s deadline"):
        short.complete_json(MESSAGES, "relevance", timeout=20.0)
    server.script(Behaviour.ok(json.dumps(REPLY)))
    assert llm.complete_json(MESSAGES, "relevance", timeout=2.0) == REPLY
    for bad in (0, -1.0, float("nan"), True, "1"):
        with pytest.raises(InvalidInputError, match="timeout must be a positive number"):
            llm.complete_json(MESSAGES, "relevance", timeout=bad)  # type: ignore[arg-type]


def test_deadline_does_not_leak_into_the_next_call(server: ChatServer) -> None:
    llm = OpenAIRepairLLM("m", base_url=server.base_url, api_key="k", timeout=1.0)
    server.script(Behaviour.drip("body", interval_ms=100), Behaviour.ok(json.dumps(REPLY), delay_ms=300))
    with pytest.raises(LLMTransientError):
        llm.complete_json(MESSAGES, "decision_repair")
    assert llm.complete_json(MESSAGES, "decision_repair") == REPLY


def test_a_read_reply_hands_its_connection_back_for_the_next_call(server: ChatServer) -> None:
    # The transport's body stream must close httpcore's on response close;
    # otherwise the connection stays checked out and every call opens a new one.
    llm = OpenAIRepairLLM("m", base_url=server.base_url, api_key="k", timeout=2.0)
    server.script(Behaviour.ok(json.dumps(REPLY)), Behaviour.ok(json.dumps(REPLY)))
    assert llm.complete_json(MESSAGES, "decision_repair") == REPLY
    assert llm.complete_json(MESSAGES, "decision_repair") == REPLY
    ports = [r.client_port for r in server.requests]
    assert len(ports) == 2 and ports[0] == ports[1] != 0, ports


def test_hang_is_a_timeout(server: ChatServer) -> None:
    llm = OpenAIRepairLLM("m", base_url=server.base_url, api_key="k", timeout=0.3)
    server.script(Behaviour.hang())
    with pytest.raises(LLMTransientError):
        llm.complete_json(MESSAGES, "decision_repair")


def test_connection_refused_is_transient() -> None:
    with ChatServer() as s:
        url = s.base_url
    llm = OpenAIRepairLLM("m", base_url=url, api_key="k", timeout=1.0)
    with pytest.raises(LLMTransientError, match="could not reach"):
        llm.complete_json(MESSAGES, "decision_repair")


def test_sdk_retries_when_asked(server: ChatServer) -> None:
    llm = OpenAIRepairLLM("m", base_url=server.base_url, api_key="k", timeout=2.0, max_retries=1)
    server.script(Behaviour.error(503), Behaviour.ok(json.dumps(REPLY)))
    assert llm.complete_json(MESSAGES, "decision_repair") == REPLY
    assert len(server.requests) == 2


def test_missing_model_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_MODEL, raising=False)
    with pytest.raises(LLMError, match=ENV_MODEL):
        OpenAIRepairLLM(base_url="http://127.0.0.1:9/v1", api_key="k")
    with pytest.raises(LLMError, match="model"):
        OpenAIRepairLLM("   ", base_url="http://127.0.0.1:9/v1", api_key="k")


def test_missing_key_without_base_url_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_API_KEY, raising=False)
    monkeypatch.delenv(ENV_BASE_URL, raising=False)
    with pytest.raises(LLMError, match=ENV_API_KEY):
        OpenAIRepairLLM("m")


def test_environment_configures_the_client(server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_MODEL, "env-model")
    monkeypatch.setenv(ENV_BASE_URL, server.base_url)
    monkeypatch.delenv(ENV_API_KEY, raising=False)
    llm = OpenAIRepairLLM(timeout=2.0)
    llm.complete_json(MESSAGES, "decision_repair")
    (request,) = server.requests
    assert request.json["model"] == "env-model"
    # A local server without a key gets a placeholder, not an error.
    assert request.headers["authorization"].startswith("Bearer ")


def test_arguments_win_over_environment(server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_MODEL, "env-model")
    monkeypatch.setenv(ENV_BASE_URL, "http://127.0.0.1:9/v1")
    llm = OpenAIRepairLLM("arg-model", base_url=server.base_url, api_key="k", timeout=2.0)
    llm.complete_json(MESSAGES, "decision_repair")
    assert server.requests[0].json["model"] == "arg-model"


def test_invalid_arguments() -> None:
    with pytest.raises(InvalidInputError):
        OpenAIRepairLLM("m", base_url="http://x/v1", api_key="k", timeout=0)
    with pytest.raises(InvalidInputError):
        OpenAIRepairLLM("m", base_url="http://x/v1", api_key="k", timeout=float("nan"))
    with pytest.raises(InvalidInputError):
        OpenAIRepairLLM("m", base_url="http://x/v1", api_key="k", max_retries=-1)
    llm = OpenAIRepairLLM("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    with pytest.raises(InvalidInputError):
        llm.complete_json([], "x")
    with pytest.raises(InvalidInputError):
        llm.complete_json([{"role": "wizard", "content": "hi"}], "x")


def test_api_key_never_logged_or_shown(
    server: ChatServer, llm: OpenAIRepairLLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.script(Behaviour.ok(json.dumps(REPLY)), Behaviour.error(401, "bad key"))
    llm.complete_json(MESSAGES, "decision_repair")
    with pytest.raises(LLMReplyError) as info:
        llm.complete_json(MESSAGES, "decision_repair")
    assert SECRET_KEY not in repr(llm)
    assert SECRET_KEY not in str(info.value)
    assert SECRET_KEY not in caplog.text


def test_standalone_server_process() -> None:
    # The crash tests run the server as its own process; check that mode works.
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.chat_server", "--mode", "ok", "--port", "0"],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().split()
        assert first[0] == "PORT"
        llm = OpenAIRepairLLM("m", base_url=f"http://127.0.0.1:{first[1]}/v1", api_key="k", timeout=5.0)
        reply = llm.complete_json(MESSAGES, "decision_repair")
        assert "tool: pip.install" in reply["preference"]
    finally:
        proc.terminate()
        try:
            # Generous: on a loaded CI machine the exit once took over 10 s.
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
    assert code == 0
