"""The UI's request guard: host, token and cross-site checks, security headers.

* **Host.** Served on loopback, a request must name a loopback host in its
  ``Host`` header: a web page on another site cannot reach the server
  through DNS rebinding (its requests carry that site's host name).
* **Token.** When one is set (required for a non-loopback bind), every
  request must carry it: ``Authorization: Bearer T``, the cookie the page
  receives after opening ``/?token=T`` once, or ``?token=T``.
* **Cross-site writes.** Every state change is a POST, and a POST must
  carry the header ``X-Memos-Feedback: 1`` (a cross-site form cannot set
  headers, and a cross-site ``fetch`` with one needs a CORS preflight this
  server never grants), and when the browser says where it comes from —
  ``Sec-Fetch-Site`` or ``Origin`` — that must be this very origin.
* **Headers.** A strict Content-Security-Policy (scripts and styles from
  this server only, no inline script, no images from elsewhere), no
  sniffing, no framing, no referrer.
"""

from __future__ import annotations

import hmac
from urllib.parse import parse_qs

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["COOKIE", "CSRF_HEADER", "Guard", "is_loopback"]

COOKIE = "memos_feedback_token"
CSRF_HEADER = "x-memos-feedback"
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")
_SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        b"base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


def is_loopback(host: str) -> bool:
    return host in _LOOPBACK_NAMES or host.startswith("127.")


def _host_name(header: str) -> str:
    """The host of a ``Host`` header, without the port (IPv6 brackets kept off)."""
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class Guard:
    """ASGI middleware applying the checks of the module docstring."""

    def __init__(self, app: ASGIApp, *, token: str | None, loopback_only: bool) -> None:
        self.app = app
        self.token = token
        self.loopback_only = loopback_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        problem = self._problem(scope, headers, query)
        if problem is not None:
            status, message = problem
            await self._respond(scope, receive, send, status, message)
            return
        set_cookie = self.token is not None and query.get("token", [None])[0] == self.token

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = list(_SECURITY_HEADERS)
                if set_cookie:
                    assert self.token is not None
                    cookie = f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
                    extra.append((b"set-cookie", cookie.encode("latin-1")))
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _problem(self, scope: Scope, headers: Headers, query: dict[str, list[str]]) -> tuple[int, str] | None:
        host_header = headers.get("host", "")
        if self.loopback_only and not is_loopback(_host_name(host_header)):
            return 421, "this server answers only to a loopback host name"
        if self.token is not None and not self._has_token(headers, query):
            return 401, "a token is required (open the page as /?token=…, or send Authorization: Bearer …)"
        if scope["method"] not in ("GET", "HEAD"):
            if headers.get(CSRF_HEADER) != "1":
                return 403, f"state-changing requests need the header {CSRF_HEADER}: 1"
            site = headers.get("sec-fetch-site")
            if site is not None and site not in ("same-origin", "none"):
                return 403, "cross-site request refused"
            origin = headers.get("origin")
            if origin is not None and origin != f"{scope.get('scheme', 'http')}://{host_header}":
                return 403, "cross-origin request refused"
        return None

    def _has_token(self, headers: Headers, query: dict[str, list[str]]) -> bool:
        assert self.token is not None
        offered: list[str] = []
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            offered.append(auth[7:].strip())
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE:
                offered.append(value)
        offered.extend(query.get("token", []))
        want = self.token.encode()
        return any(hmac.compare_digest(o.encode(), want) for o in offered)

    @staticmethod
    async def _respond(scope: Scope, receive: Receive, send: Send, status: int, message: str) -> None:
        response = JSONResponse({"error": message}, status_code=status)

        async def with_headers(msg: Message) -> None:
            if msg["type"] == "http.response.start":
                msg["headers"] = [*msg.get("headers", []), *_SECURITY_HEADERS]
            await send(msg)

        await response(scope, receive, with_headers)
