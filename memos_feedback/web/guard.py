"""The UI's request guard: host, token and cross-site checks, security headers.

* **Host.** Without a token, a request's ``Host`` header must be exactly
  ``127.0.0.1``, ``localhost``, ``[::1]`` or the bound address, with the
  served port. A page on another site that reaches the server through DNS
  rebinding carries its own host name (``127.1.attacker.example`` too), so
  it is refused; a prefix test would let it through.
* **Token.** When one is set (required for a non-loopback bind), every
  request must carry it: ``Authorization: Bearer T``, the cookie the page
  receives after opening ``/?token=T`` once, or ``?token=T``. A rebinding
  page has neither (the cookie belongs to the real host name), so with a
  token any ``Host`` is accepted, e.g. behind a reverse proxy.
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
import ipaddress
from urllib.parse import parse_qs

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["COOKIE", "CSRF_HEADER", "Guard", "is_loopback", "loopback_host"]

COOKIE = "memos_feedback_token"
CSRF_HEADER = "x-memos-feedback"
_LOOPBACK_NAMES = frozenset(("127.0.0.1", "localhost", "::1"))
_DEFAULT_PORTS = {"http": 80, "https": 443}
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


def is_loopback(address: str) -> bool:
    """Whether a *bind* address is on loopback (``127.0.0.0/8``, ``::1``, ``localhost``).

    Not for ``Host`` headers: a host name is not an address (see ``loopback_host``).
    """
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def _split_host(header: str, scheme: str) -> tuple[str, int] | None:
    """``(name, port)`` of a ``Host`` header (IPv6 brackets off), or None when malformed."""
    if header.startswith("["):
        name, bracket, port = header[1:].partition("]")
        if not bracket or (port and not port.startswith(":")):
            return None
        port = port[1:] if port else ""
        has_port = bool(port) or header.endswith(":")
    elif header.count(":") > 1:
        return None  # an IPv6 address must be bracketed in a Host header
    else:
        name, colon, port = header.partition(":")
        has_port = bool(colon)
    if not has_port:
        return name, _DEFAULT_PORTS.get(scheme, 80)
    if not (port.isascii() and port.isdigit() and len(port) <= 5):
        return None
    return name, int(port)


def loopback_host(header: str, scope: Scope) -> bool:
    """Whether ``Host`` names this loopback server exactly: a loopback name and the served port."""
    split = _split_host(header, scope.get("scheme", "http"))
    if split is None:
        return False
    name, port = split
    server = scope.get("server") or (None, None)
    if port != server[1]:
        return False
    # The bound address itself is an IP literal (127.0.0.2, say), never a name DNS could rebind.
    return name.lower() in _LOOPBACK_NAMES or (name == server[0] and is_loopback(name))


class Guard:
    """ASGI middleware applying the checks of the module docstring."""

    def __init__(self, app: ASGIApp, *, token: str | None) -> None:
        self.app = app
        self.token = token

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
        if self.token is None and not loopback_host(host_header, scope):
            return 421, "this server answers only to 127.0.0.1, localhost or [::1] with its port"
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
