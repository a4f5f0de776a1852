"""HTTP credentials: ``Authorization:`` headers, ``Bearer …`` and session cookies.

The header's name and the scheme word stay (``Authorization: Bearer
[redacted]``); a cookie line keeps every cookie but those named for a
session or a login (``sessionid``, ``auth_token``, ``remember_me``…).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from .engine import Scan, Span
from .filters import is_placeholder
from .rules import Rule, RuleDetector, value_is_secret

__all__ = ["AuthHeaders"]

_AUTH_HEADER = re.compile(
    r"\b(?:proxy-)?authorization[\"']?[ \t]{0,4}+[:=][ \t]{0,4}+[\"']?"
    r"(?:[a-z][a-z\-]{1,15}+[ \t]{1,4}+)?([^\s\"',;]{1,4096}+)",
    re.IGNORECASE,
)
_BEARER = re.compile(r"\bBearer[ \t]{1,4}+([A-Za-z0-9._~+/=\-]{8,4096}+)", re.IGNORECASE)
# A Cookie line, then each of its cookies: one pass over the line, whatever it holds.
_COOKIE_LINE = re.compile(r"(?:^|[\s\"'])(?:set-)?cookie[\"']?[ \t]{0,4}+:([^\n]{0,4096}+)", re.IGNORECASE)
_COOKIE = re.compile(r"(?<![^:;\s])([A-Za-z0-9_.\-]{1,128}+)=([^;\s\"']{6,4096}+)")
_SESSION = re.compile(r"sess|sid|auth|token|jwt|remember|csrf|xsrf|login", re.IGNORECASE)


def _session_cookies(text: str) -> Iterator[Span]:
    """The values of the cookies named for a session or a login, on each Cookie line."""
    for line in _COOKIE_LINE.finditer(text):
        start, end = line.span(1)
        for cookie in _COOKIE.finditer(text, start, end):
            if _SESSION.search(cookie.group(1)) and not is_placeholder(cookie.group(2)):
                yield cookie.span(2)


def _credential(match: re.Match[str], group: int) -> bool:
    # 'f"Bearer {token}"' leaves "f": a credential is longer than three characters.
    return len(match.group(group)) > 3 and value_is_secret(match, group)


class AuthHeaders(RuleDetector):
    """Authorization headers, bearer tokens and session cookies."""

    name = "auth_headers"
    rules = (
        Rule(_AUTH_HEADER, guard=("authorization",), pre=":=", accept=_credential),
        Rule(_BEARER, guard=("bearer",)),
    )
    examples = (
        ("curl -H 'Authorization: Basic YW5uOlRyMHViNGRvcg==' https://api", "YW5uOlRyMHViNGRvcg=="),
        ("401 with Bearer Zq7LmR2xWv9KpT4sNb8Y", "Zq7LmR2xWv9KpT4sNb8Y"),
        ("Cookie: theme=dark; sessionid=Zq7LmR2xWv9KpT4s", "Zq7LmR2xWv9KpT4s"),
    )

    def spans(self, scan: Scan) -> Iterable[Span]:
        yield from super().spans(scan)
        if "=" in scan.text and scan.has("cookie"):
            yield from _session_cookies(scan.text)

    lookalikes = (
        "Authorization: Bearer <token>",
        'headers = {"Authorization": f"Bearer {token}"}',
        "Cookie: theme=dark; lang=en",
        "the bearer token goes in the header",
    )
