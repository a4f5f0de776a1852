"""A real, scriptable HTTP server speaking the OpenAI chat completions protocol.

Tests point the real ``openai`` SDK (through ``OpenAIRepairLLM``) at it, so
the whole client path — request encoding, HTTP, status handling, JSON
decoding — runs for real. Use it as a context manager::

    with ChatServer(reply='{"preference": "...", ...}') as server:
        llm = OpenAIRepairLLM("test-model", base_url=server.base_url, api_key="k")
        server.script(Behaviour.error(429), Behaviour.delay(500))
        ...
        assert server.requests[0].json["model"] == "test-model"

Each request consumes the next scripted ``Behaviour``; with the script empty
the server replies with ``reply`` (a fixed content string) or, when that is
None, with a valid repair JSON derived from the request (``derived_reply``).
Everything is bounded: delays and hangs end as soon as the server stops.

Standalone, for crash tests (prints ``PORT <n>`` and serves until killed)::

    python -m tests.support.chat_server --mode ok|hang|delay --delay-ms 200 --port 0
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

__all__ = ["Behaviour", "ChatServer", "RecordedRequest", "derived_reply", "main"]

Kind = Literal["reply", "error", "hang", "raw", "drip"]
DripPhase = Literal["headers", "body"]
CHAT_PATH = "/v1/chat/completions"
# The longest any single request may be held, even if nobody stops the server.
MAX_HOLD_SECONDS = 60.0


@dataclass(frozen=True)
class Behaviour:
    """What the server does with one request."""

    kind: Kind = "reply"
    content: str | None = None  # reply content; None → the server's default
    status: int = 200
    delay_ms: int = 0
    raw_body: bytes = b""
    content_type: str = "application/json"
    refusal: str | None = None
    finish_reason: str = "stop"
    drip_phase: DripPhase = "body"
    drip_interval_ms: int = 200

    @classmethod
    def ok(cls, content: str | None = None, *, delay_ms: int = 0) -> Behaviour:
        return cls(kind="reply", content=content, delay_ms=delay_ms)

    @classmethod
    def delay(cls, delay_ms: int, content: str | None = None) -> Behaviour:
        return cls(kind="reply", content=content, delay_ms=delay_ms)

    @classmethod
    def error(cls, status: int, message: str = "scripted error", *, delay_ms: int = 0) -> Behaviour:
        return cls(kind="error", status=status, content=message, delay_ms=delay_ms)

    @classmethod
    def hang(cls) -> Behaviour:
        """Hold the request open until the server stops (or ``MAX_HOLD_SECONDS``)."""
        return cls(kind="hang")

    @classmethod
    def drip(cls, phase: DripPhase = "body", *, interval_ms: int = 200) -> Behaviour:
        """Send one byte every ``interval_ms``, never finishing (until the server stops
        or ``MAX_HOLD_SECONDS``): in the status line and headers (``"headers"``), or
        after complete headers announcing a large body (``"body"``). Each byte comes
        well within any per-read timeout, so only a deadline ends the request."""
        return cls(kind="drip", drip_phase=phase, drip_interval_ms=interval_ms)

    @classmethod
    def non_json(cls, text: str = "Sure! Here is my advice: use pnpm.") -> Behaviour:
        """A well-formed completion whose content is prose, not JSON."""
        return cls(kind="reply", content=text)

    @classmethod
    def empty(cls) -> Behaviour:
        return cls(kind="reply", content="")

    @classmethod
    def refuse(cls, refusal: str = "I can't help with that.") -> Behaviour:
        return cls(kind="reply", content="", refusal=refusal)

    @classmethod
    def malformed(
        cls, body: bytes = b'{"id": "x", "choices": [', content_type: str = "application/json"
    ) -> Behaviour:
        """HTTP 200 with a broken body (truncated JSON by default)."""
        return cls(kind="raw", raw_body=body, content_type=content_type)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any = None
    received_at: float = field(default_factory=time.monotonic)
    # The client's source port: requests with the same one shared a connection.
    client_port: int = 0

    def messages(self) -> list[dict[str, Any]]:
        if isinstance(self.json, dict) and isinstance(self.json.get("messages"), list):
            return [m for m in self.json["messages"] if isinstance(m, dict)]
        return []

    def user_text(self) -> str:
        """The content of the last user message ("" when there is none)."""
        for message in reversed(self.messages()):
            if message.get("role") == "user" and isinstance(message.get("content"), str):
                return str(message["content"])
        return ""


def derived_reply(request_json: Any) -> str:
    """A valid repair reply built from the request, so it is deterministic.

    The preference mentions the first line of the prompt's CURRENT_CONTEXT
    section (or "no context" when there is none).
    """
    first = _first_context_line(request_json) or "no context"
    return json.dumps(
        {
            # Concrete lines: a placeholder would fail the lesson check and
            # send every test that relies on this reply to the template.
            "preference": f"Prefer: a pinned lockfile install ({first})",
            "anti_pattern": f"Avoid: installing without the lockfile ({first})",
            "severity": "warn",
            "confidence": 0.7,
        }
    )


def _first_context_line(request_json: Any) -> str | None:
    recorded = RecordedRequest("POST", CHAT_PATH, {}, b"", request_json)
    lines = recorded.user_text().splitlines()
    for i, line in enumerate(lines):
        if "BEGIN CURRENT_CONTEXT" in line:
            for candidate in lines[i + 1 :]:
                if "END CURRENT_CONTEXT" in candidate:
                    return None
                if candidate.strip():
                    return candidate.strip()
    return None


class ChatServer:
    """The server; start with ``with`` (or ``start()``/``stop()``)."""

    def __init__(self, reply: str | None = None, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.reply = reply
        self.default: Behaviour | None = None
        self._host = host
        self._port = port
        self._script: deque[Behaviour] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------

    def start(self) -> ChatServer:
        if self._httpd is not None:
            return self
        httpd = ThreadingHTTPServer((self._host, self._port), _make_handler(self))
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, name="chat-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; held requests (hang, delay) are released at once."""
        self._stopping.set()
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- scripting --------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """What to pass as the SDK's ``base_url`` (ends in ``/v1``)."""
        return f"http://{self._host}:{self.port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def script(self, *behaviours: Behaviour | Iterable[Behaviour]) -> None:
        """Queue behaviours for the next requests, in order."""
        with self._lock:
            for item in behaviours:
                if isinstance(item, Behaviour):
                    self._script.append(item)
                else:
                    self._script.extend(item)

    def pending(self) -> int:
        """Scripted behaviours not used yet."""
        with self._lock:
            return len(self._script)

    # -- used by the handler ------------------------------------------------------

    def _record(self, request: RecordedRequest) -> Behaviour:
        with self._lock:
            self._requests.append(request)
            if self._script:
                return self._script.popleft()
            return self.default or Behaviour.ok()

    def _hold(self, seconds: float) -> bool:
        """Wait up to ``seconds``; False when the server is stopping."""
        return not self._stopping.wait(min(seconds, MAX_HOLD_SECONDS))

    def _completion_body(self, request_json: Any, behaviour: Behaviour) -> bytes:
        content = behaviour.content
        if content is None:
            content = self.reply if self.reply is not None else derived_reply(request_json)
        model = request_json.get("model") if isinstance(request_json, dict) else None
        body = {
            "id": f"chatcmpl-test-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model if isinstance(model, str) else "test-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": behaviour.refusal},
                    "logprobs": None,
                    "finish_reason": behaviour.finish_reason,
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        return json.dumps(body).encode("utf-8")


def _error_body(status: int, message: str) -> bytes:
    if status == 429:
        kind = "rate_limit_error"
    else:
        kind = "server_error" if status >= 500 else "invalid_request_error"
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": None}}).encode()


def _make_handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes; with Nagle's algorithm
        # on, the body waits for the client's delayed ACK (~40 ms a reply).
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, json.dumps({"object": "list", "data": []}).encode())
            else:
                self._send(404, _error_body(404, f"no route {self.path}"))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length > 0 else b""
            try:
                parsed: Any = json.loads(body) if body else None
            except ValueError:
                parsed = None
            headers = {k.lower(): v for k, v in self.headers.items()}
            port = int(self.client_address[1])
            behaviour = server._record(
                RecordedRequest("POST", self.path, headers, body, parsed, client_port=port)
            )
            if self.path.rstrip("/") != CHAT_PATH:
                self._send(404, _error_body(404, f"no route {self.path}"))
                return
            if behaviour.delay_ms > 0 and not server._hold(behaviour.delay_ms / 1000):
                self.close_connection = True  # stopping: drop the connection unanswered
                return
            if behaviour.kind == "hang":
                server._hold(MAX_HOLD_SECONDS)
                self.close_connection = True
                return
            if behaviour.kind == "drip":
                self._drip(behaviour)
                self.close_connection = True
                return
            if behaviour.kind == "error":
                self._send(behaviour.status, _error_body(behaviour.status, behaviour.content or "error"))
            elif behaviour.kind == "raw":
                self._send(200, behaviour.raw_body, behaviour.content_type)
            else:
                self._send(behaviour.status, server._completion_body(parsed, behaviour))

        def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout); nothing to tell it

        def _drip(self, behaviour: Behaviour) -> None:
            if behaviour.drip_phase == "headers":
                # A header that never ends: the client never sees a response.
                head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Drip: "
            else:
                head = b""
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(10**9))
                self.end_headers()
                self.wfile.flush()
            until = time.monotonic() + MAX_HOLD_SECONDS
            sent = 0
            try:
                while time.monotonic() < until:
                    # Leading whitespace is valid JSON, so the body never turns bad either.
                    byte = head[sent : sent + 1] or (b"a" if behaviour.drip_phase == "headers" else b" ")
                    self.wfile.write(byte)
                    self.wfile.flush()
                    sent += 1
                    if not server._hold(behaviour.drip_interval_ms / 1000):
                        return
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up: what a deadline should do

        def handle(self) -> None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                super().handle()

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Scriptable OpenAI-compatible chat server for tests.")
    parser.add_argument("--mode", choices=("ok", "hang", "delay"), default="ok")
    parser.add_argument("--delay-ms", type=int, default=200)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)

    server = ChatServer(host=args.host, port=args.port)
    if args.mode == "hang":
        server.default = Behaviour.hang()
    elif args.mode == "delay":
        server.default = Behaviour.delay(args.delay_ms)
    done = threading.Event()

    def _stop(signum: int, frame: object) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    with server:
        print(f"PORT {server.port}", flush=True)
        while not done.wait(0.1):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
