"""``memos-feedback mcp`` over stdio, driven by the ``mcp`` SDK's own client session."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.runtimes import require_runtime

require_runtime("mcp.client.stdio", "mcp")

from mcp import ClientSession, MCPError  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TOOL, COMMAND = "Bash", "npm install"
MCP = (sys.executable, "-m", "memos_feedback", "mcp")


@pytest.fixture
def backend() -> str:
    return "sqlite"


def _text(result: Any) -> str:
    assert not result.is_error, result
    return "".join(getattr(block, "text", "") for block in result.content)


async def _session(db: str) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memos_feedback", "mcp", "--db", db],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=str(REPO),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"guidance", "report_outcome", "give_feedback", "review_repair"}
        assert all(len(t.description or "") > 80 for t in tools.values())

        assert _text(await client.call_tool("guidance", {"tool": TOOL, "context": COMMAND})) == ""
        for flags in ("", " --force", " --legacy-peer-deps"):
            out = _text(
                await client.call_tool(
                    "report_outcome",
                    {"tool": TOOL, "context": COMMAND + flags, "ok": False, "error": "npm ERR! ERESOLVE"},
                )
            )
        assert "a repair was written" in out

        reply = await client.call_tool(
            "give_feedback", {"text": "use pnpm instead of npm", "tool": TOOL, "context": COMMAND}
        )
        assert not reply.is_error, reply
        feedback = reply.structured_content or json.loads(_text(reply))
        assert feedback["shape"] == "preference" and feedback["repair_id"], feedback
        repair_id = feedback["repair_id"]

        block = _text(await client.call_tool("guidance", {"tool": TOOL, "context": COMMAND}))
        assert block.startswith("<memory-context>") and "pnpm" in block

        listed = await client.read_resource("memos-feedback://repairs")
        recent = json.loads(listed.contents[0].text)  # type: ignore[union-attr]
        assert repair_id in [r["id"] for r in recent]
        one = await client.read_resource(f"memos-feedback://repairs/{repair_id}")
        assert json.loads(one.contents[0].text)["preference"]  # type: ignore[union-attr]

        for r in recent:  # reject them all: nothing is left to serve
            out = _text(await client.call_tool("review_repair", {"repair_id": r["id"], "verdict": "reject"}))
            assert out.endswith("rejected")
        assert _text(await client.call_tool("guidance", {"tool": TOOL, "context": COMMAND})) == ""

        bad = await client.call_tool("review_repair", {"repair_id": "dr_nope", "verdict": "reject"})
        assert bad.is_error
        assert "no repair with id 'dr_nope'" in "".join(getattr(b, "text", "") for b in bad.content)


def test_an_mcp_client_session_over_stdio(tmp_path: Path) -> None:
    anyio.run(_session, f"sqlite:///{tmp_path / 'f.db'}")


def _error_text(result: Any) -> str:
    assert result.is_error, result
    return "".join(getattr(block, "text", "") for block in result.content)


async def _failed_calls(db: str) -> list[str]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memos_feedback", "mcp", "--db", db],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=str(REPO),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        calls = [
            ("review_repair", {"repair_id": "dr_nope", "verdict": "validate"}),
            ("review_repair", {"repair_id": "", "verdict": "reject"}),
            ("report_outcome", {"tool": " ", "context": COMMAND, "ok": False}),
            ("give_feedback", {"text": "   "}),
        ]
        texts = [_error_text(await client.call_tool(name, args)) for name, args in calls]
        with pytest.raises(MCPError, match="no repair with id 'dr_nope'"):
            await client.read_resource("memos-feedback://repairs/dr_nope")
        return texts


def test_a_failed_tool_call_tells_the_model_why(tmp_path: Path) -> None:
    """The library's one-line message reaches the model, not only "Error executing tool <name>"."""
    unknown, empty_id, empty_tool, empty_text = anyio.run(_failed_calls, f"sqlite:///{tmp_path / 'f.db'}")
    assert unknown.endswith("no repair with id 'dr_nope'"), unknown
    assert unknown.startswith("Error executing tool review_repair")
    assert empty_id.endswith("no repair with id ''"), empty_id
    assert empty_tool.endswith("tool must not be empty"), empty_tool
    assert empty_text.endswith("text must not be empty"), empty_text
    for text in (unknown, empty_id, empty_tool, empty_text):
        assert "\n" not in text and "Traceback" not in text


def test_http_elsewhere_than_loopback_needs_a_token(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "memos_feedback",
            "mcp",
            "--http",
            "--host",
            "0.0.0.0",
            "--db",
            f"sqlite:///{tmp_path}/f.db",
        ],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and "give --token" in proc.stderr and proc.stderr.count("\n") == 1


async def _http_session(url: str, token: str) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient() as plain:
        denied = await plain.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert denied.status_code == 401
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        assert {t.name for t in (await client.list_tools()).tools} >= {"guidance", "report_outcome"}
        out = await client.call_tool("report_outcome", {"tool": "npm", "context": "install", "ok": True})
        assert _text(out).startswith("recorded: npm worked")


@contextlib.contextmanager
def _http_server(tmp_path: Path, host: str, *flags: str) -> Iterator[str]:
    """``mcp --http`` on ``host`` (a free port), once it answers; yields its URL."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        s.bind((host, 0))
        port = int(s.getsockname()[1])
    server = subprocess.Popen(
        [
            *MCP,
            "--http",
            "--host",
            host,
            "--port",
            str(port),
            *flags,
            "--db",
            f"sqlite:///{tmp_path / 'f.db'}",
        ],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:  # until it listens (a 4xx is an answer)
            try:
                urllib.request.urlopen(url, timeout=2)
            except urllib.error.HTTPError:
                break
            except OSError:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(10)


def test_streamable_http_with_a_token(tmp_path: Path) -> None:
    with _http_server(tmp_path, "127.0.0.1", "--token", "s3cret-token") as url:
        anyio.run(_http_session, url, "s3cret-token")


def _initialize(url: str, headers: dict[str, str]) -> int:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("host", ["127.0.0.2", "127.1.2.3", "0:0:0:0:0:0:0:1"])
def test_a_loopback_alias_without_a_token_refuses_a_foreign_host(tmp_path: Path, host: str) -> None:
    """Issue 44 finding 4: bound to a loopback address the SDK does not know by that spelling, the
    server still checks Host and Origin (DNS rebinding): a request naming another host is refused."""
    with _http_server(tmp_path, host) as url:
        own = url.split("/")[2]
        assert _initialize(url, {"Host": "attacker.example:80"}) == 421
        assert _initialize(url, {"Host": own, "Origin": "http://attacker.example"}) == 403
        assert _initialize(url, {"Host": own, "Origin": f"http://{own}"}) == 200
