"""A fake Anthropic Messages API on 127.0.0.1 for running the real Claude Code CLI offline.

``FakeMessagesAPI(script)`` serves ``POST /v1/messages`` (streamed as
server-sent events the way the real API streams, or as one JSON body when
``stream`` is false) and records every request body. Which reply a request
gets is decided by the conversation, not by arrival order, because the CLI
also makes side calls (titles, summaries) that must not consume the script:

* a request that offers tools and whose messages hold *n* ``tool_result``
  blocks gets ``script[n]`` (a reply is a list of content blocks);
* any other request gets a short text reply.

Everything else (``count_tokens``, settings, telemetry a CLI may try) gets
an empty JSON object, so nothing leaves the machine.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeMessagesAPI", "text_block", "tool_use_block"]

Reply = list[dict[str, Any]]


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_use_block(tool_use_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}


def count_tool_results(body: dict[str, Any]) -> int:
    n = 0
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            n += sum(1 for block in content if isinstance(block, dict) and block.get("type") == "tool_result")
    return n


def _sse_events(message_id: str, model: str, blocks: Reply) -> Iterator[tuple[str, dict[str, Any]]]:
    usage = {"input_tokens": 10, "output_tokens": 1}
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        },
    )
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield "message_stop", {"type": "message_stop"}


class FakeMessagesAPI:
    """The server (module docstring). Use as a context manager; ``url`` is its base URL."""

    def __init__(self, script: list[Reply]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []  # every /v1/messages body, in arrival order
        self.other_paths: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def scripted_requests(self) -> list[dict[str, Any]]:
        """The requests that were answered from the script (the agent's own turns)."""
        with self._lock:
            return [r for r in self.requests if r.get("tools")]

    def reply_for(self, body: dict[str, Any]) -> Reply:
        if body.get("tools"):
            n = count_tool_results(body)
            if n < len(self.script):
                return self.script[n]
        return [text_block("ok")]

    def __enter__(self) -> FakeMessagesAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet: the test reads api.requests instead

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                with api._lock:
                    api.other_paths.append(f"GET {self.path}")
                self._json(200, {})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                path = self.path.split("?", 1)[0]
                if path != "/v1/messages":
                    with api._lock:
                        api.other_paths.append(f"POST {self.path}")
                    self._json(200, {"input_tokens": 10} if path.endswith("count_tokens") else {})
                    return
                body = json.loads(raw or b"{}")
                with api._lock:
                    api.requests.append(body)
                    message_id = f"msg_{len(api.requests)}"
                blocks = api.reply_for(body)
                model = str(body.get("model") or "claude-fake")
                if not body.get("stream"):
                    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
                    self._json(
                        200,
                        {
                            "id": message_id,
                            "type": "message",
                            "role": "assistant",
                            "model": model,
                            "content": blocks,
                            "stop_reason": stop,
                            "stop_sequence": None,
                            "usage": {"input_tokens": 10, "output_tokens": 5},
                        },
                    )
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                for event, data in _sse_events(message_id, model, blocks):
                    self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()
                self.close_connection = True

        return Handler
