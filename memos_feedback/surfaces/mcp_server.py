"""``memos-feedback mcp``: the feedback loop as an MCP server (extra ``[mcp]``).

Built on the official ``mcp`` SDK (``MCPServer``). One long-lived
subscriber per server process, so failure windows, step counters and the
guidance cache live in memory as they do in-process (``AdapterCore``).

Tools (their descriptions below are what the client's model reads):

* ``guidance(tool, context, query)`` — the ``<memory-context>`` block;
* ``report_outcome(tool, context, ok, error)`` — one tool call's outcome;
* ``give_feedback(text)`` — the user's message: its shape and repair id;
* ``review_repair(repair_id, verdict)`` — validate or reject a repair.

Resources: ``memos-feedback://repairs`` (the newest repairs, JSON) and
``memos-feedback://repairs/{repair_id}`` (one repair, JSON).

Everything follows the server's scope (``--project-name``, else the
subscriber's ``default_project``, else global) exactly as ``guidance``
does: the resources list and show, and ``review_repair`` reviews, only the
repairs a read of that scope may see (global ones and the project's); any
other id is "no repair with id …", as an unknown one is.

Transports: stdio (the default), or streamable HTTP with ``--http`` on
127.0.0.1; any other address needs ``--token`` (clients send
``Authorization: Bearer <token>``). A loopback address, however spelled
(``127.0.0.2``, ``0:0:0:0:0:0:0:1``, ``localhost``), gets the SDK's guard
against DNS rebinding: a request whose ``Host`` is not that loopback name
gets 421, a browser's from another ``Origin`` 403 (the SDK itself guards
only ``127.0.0.1``, ``localhost`` and ``::1`` spelled so).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hmac
import ipaddress
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal

from ..errors import InvalidInputError, MemosFeedbackError, MissingExtraError, NotFoundError
from ..text.tool_context import default_context_of
from ..types import Scope

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    from ..adapters.core import AdapterCore
    from ..runtime.subscriber import FeedbackSubscriber

__all__ = ["INSTRUCTIONS", "build_server", "check_bind", "load_sdk", "rebinding_guard", "serve"]

_TEXT_CAP = 4_000
_FEEDBACK_WAIT_S = 10.0
_RECENT = 20
_DEFAULT_SESSION = "mcp"
_ERROR_CAP = 500

INSTRUCTIONS = (
    "memos-feedback remembers what went wrong in earlier work and what the user corrected. "
    "Before retrying a tool call that failed, or starting a task like one that failed before, call "
    "`guidance` and follow what it returns. After each tool call that matters, call `report_outcome`. "
    "When the user corrects you or states a preference, call `give_feedback` with their words."
)


def load_sdk() -> Any:
    """The SDK's ``MCPServer`` class, or ``MissingExtraError`` naming ``[mcp]``."""
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError as exc:
        missing = exc.name.partition(".")[0] if exc.name else str(exc)
        raise MissingExtraError("memos-feedback mcp", "mcp", missing) from exc
    return MCPServer


def _cap(name: str, value: Any, cap: int = _TEXT_CAP) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string")
    return value[:cap]


@contextlib.contextmanager
def _told_to_the_model() -> Iterator[None]:
    """Hand the library's own error text to the client as the tool's error result.

    The SDK treats any exception other than its ``ToolError`` as a crash and
    tells the model only "Error executing tool <name>", which leaves it nothing
    to correct. Our errors are deliberate and their messages are one line
    written for the caller (an empty argument, an unknown repair id), so they
    become ``ToolError``: the call returns ``is_error`` with that text. Anything
    else stays a crash and keeps its text on the server.
    """
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        yield
    except MemosFeedbackError as exc:
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ToolError(first_line[:_ERROR_CAP]) from exc


def _context(tool: str, context: str) -> str:
    # The same normalisation for reports and questions: retries that only
    # change flags or later words share one failure window and one repair.
    return default_context_of(tool, context) if context.strip() else tool


def build_server(core: AdapterCore, *, project: str | None = None) -> MCPServer[Any]:
    """The ``MCPServer`` with the four tools and the two resources, on ``core``'s subscriber."""
    import anyio

    from ..feed.actions import review_repair as review
    from ..store.outcomes import newest_repairs

    server_cls = load_sdk()
    server: MCPServer[Any] = server_cls("memos-feedback", instructions=INSTRUCTIONS)
    sub = core.subscriber
    # The scope ``guidance`` reads with (the subscriber resolves it the same way).
    scope = Scope.resolve(project, default_project=sub.recall.default_project)

    def in_scope(repair_id: str) -> Any:
        """The repair if this server's scope sees it; ``NotFoundError`` as for an unknown id otherwise."""
        row = sub.store.repairs.get(repair_id)
        if not scope.sees(row.project, row.user):
            raise NotFoundError(f"no repair with id {repair_id!r}")
        return row

    def reviewed(repair_id: str, verdict: str) -> Any:
        in_scope(repair_id)
        return review(sub.store, repair_id, verdict)

    def recent() -> list[Any]:
        with sub.store.session(action="listing repairs") as s:
            return newest_repairs(s, limit=_RECENT, visible_to=scope)

    async def run(fn: Any, *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args)

    @server.tool(
        description=(
            "Lessons from earlier repairs that apply to what you are about to do. Call it before a "
            "tool call that failed before (give `tool` and `context`: the command or the file), or "
            "with `query` (the task in your words) at the start of a task. Returns a "
            "<memory-context> block to follow, or an empty string when nothing applies."
        )
    )
    async def guidance(tool: str = "", context: str = "", query: str = "", session_id: str = "") -> str:
        with _told_to_the_model():
            t, c, q = _cap("tool", tool, 200), _cap("context", context), _cap("query", query)
            session = _cap("session_id", session_id, 255) or _DEFAULT_SESSION
            failed = [(t, _context(t, c))] if t else []
            return str(await run(lambda: _guidance(core, failed, q, project, session)))

    @server.tool(
        description=(
            "Report how one tool call went. `tool`: its name (e.g. Bash, npm, search); `context`: "
            "what it acted on (the command line, the file path, the query); `ok`: true if it worked; "
            "`error`: the error text when it failed. Three failures of one tool in one context make "
            "the library write a repair that `guidance` then returns."
        )
    )
    async def report_outcome(tool: str, context: str, ok: bool, error: str = "", session_id: str = "") -> str:
        with _told_to_the_model():
            t = _cap("tool", tool, 200)
            if not t.strip():
                raise InvalidInputError("tool must not be empty")
            c, e = _context(t, _cap("context", context)), _cap("error", error)
            session = _cap("session_id", session_id, 255) or _DEFAULT_SESSION
            if ok:
                await run(lambda: core.tool_succeeded(session, t, None, context=c))
                return f"recorded: {t} worked ({c})"
            burst = await run(lambda: core.tool_failed(session, t, None, e or "failed", context=c))
            if burst is None:
                return f"recorded: {t} failed ({c})"
            done = await run(sub.flush, _FEEDBACK_WAIT_S)
            state = "written" if done else "queued"
            return f"recorded: {t} failed ({c}); it keeps failing there, a repair was {state}: call guidance"

    @server.tool(
        description=(
            "Pass on what the user said about your work: a correction ('no, use pnpm'), a preference "
            "('always run the linter'), praise or a complaint, in their words. Returns the feedback's "
            "shape and, when it called for one, the id of the repair it wrote."
        )
    )
    async def give_feedback(
        text: str, session_id: str = "", tool: str = "", context: str = ""
    ) -> dict[str, Any]:
        with _told_to_the_model():
            body = _cap("text", text)
            if not body.strip():
                raise InvalidInputError("text must not be empty")
            session = _cap("session_id", session_id, 255) or _DEFAULT_SESSION
            t = _cap("tool", tool, 200) or None
            c = _context(t, _cap("context", context)) if t else None
            shape, future = await run(lambda: sub.submit_user_feedback(body, session, t, c, project=project))
            try:
                result = await run(future.result, _FEEDBACK_WAIT_S)
            except Exception as exc:
                queued = f"queued ({type(exc).__name__})"
                return {"shape": shape.shape.value, "repair_id": None, "status": queued}
            status = f"skipped: {result.skipped_reason}" if result.skipped else "written"
            return {"shape": shape.shape.value, "repair_id": result.repair_id, "status": status}

    @server.tool(
        description=(
            "Confirm or withdraw a repair after a person reviewed it: `verdict` 'validate' (it is "
            "right; rank it first from now on) or 'reject' (it is wrong; never serve it again)."
        )
    )
    async def review_repair(repair_id: str, verdict: Literal["validate", "reject"]) -> str:
        with _told_to_the_model():
            rid = _cap("repair_id", repair_id, 64)
            row = await run(reviewed, rid, verdict)
            return f"repair {row.id} {'validated' if row.validated else 'rejected'}"

    @server.resource(
        "memos-feedback://repairs",
        name="recent repairs",
        description="The newest repairs (preference / anti-pattern pairs), newest first, as JSON.",
        mime_type="application/json",
    )
    async def recent_repairs() -> str:
        rows = await run(recent)
        return json.dumps([_repair_json(r) for r in rows], ensure_ascii=False)

    @server.resource(
        "memos-feedback://repairs/{repair_id}",
        name="repair",
        description="One repair by id, as JSON.",
        mime_type="application/json",
    )
    async def one_repair(repair_id: str) -> str:
        from mcp.server.mcpserver.exceptions import ResourceNotFoundError

        try:
            row = await run(in_scope, repair_id[:64])
        except NotFoundError as exc:  # the client reads "no repair with id ...", not a crash
            raise ResourceNotFoundError(str(exc)) from exc
        return json.dumps(_repair_json(row), ensure_ascii=False)

    return server


def _guidance(
    core: AdapterCore, failed: list[tuple[str, str]], query: str, project: str | None, session: str
) -> str:
    from ..adapters.core import merged_guidance

    found = merged_guidance(core.subscriber, failed, query, project=project, session_id=session, limit=5)
    return found.render()


def _repair_json(row: Any) -> dict[str, Any]:
    data = dataclasses.asdict(row)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def rebinding_guard(host: str) -> TransportSecuritySettings | None:
    """The SDK's Host/Origin checks for a loopback ``host`` (any spelling of one); None for another.

    A page on any site can make a browser send requests to a loopback
    address through a name of its own (DNS rebinding): the checks accept
    only the loopback names as ``Host``, and as ``Origin`` only pages served
    from them.
    """
    if not _is_loopback(host):
        return None
    from mcp.server.transport_security import TransportSecuritySettings

    names = {"127.0.0.1", "localhost", "[::1]"}
    # The host as given, and as a URL writes it ("[::1]" for "0:0:0:0:0:0:0:1").
    names |= {f"[{host}]", f"[{ipaddress.ip_address(host).compressed}]"} if ":" in host else {host}
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted(n + port for n in names for port in ("", ":*")),
        allowed_origins=sorted(f"http://{n}{port}" for n in names for port in ("", ":*")),
    )


def check_bind(host: str, token: str | None) -> None:
    """A non-loopback address needs a token (``InvalidInputError`` otherwise)."""
    if not _is_loopback(host) and not token:
        raise InvalidInputError(
            f"--host {host} is not a loopback address: give --token (clients send it as a bearer token)"
        )


def _guarded(app: Any, token: str) -> Any:
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain")],
                    }
                )
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    return guarded


def serve(
    subscriber: FeedbackSubscriber,
    *,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    project: str | None = None,
) -> None:
    """Run the server until the client goes away (stdio) or Ctrl-C (HTTP)."""
    from ..adapters.core import AdapterCore

    server = build_server(AdapterCore(subscriber, project=project), project=project)
    if not http:
        server.run("stdio")
        return
    check_bind(host, token)
    import uvicorn

    app = server.streamable_http_app(host=host, transport_security=rebinding_guard(host))
    if token:
        app = _guarded(app, token)
    uvicorn.run(app, host=host, port=port, log_level="warning")
