"""Tokens with a documented format: a table of prefixes, alphabets and lengths.

Vendors give their tokens a prefix so they can be found (``ghp_``,
``xoxb-``, ``sk-proj-``, ``AKIA``…). ``FORMATS`` lists them as data; one
pattern built from the table is matched inside the *runs* of token
characters of a text (``token_runs``), which the high-entropy detector
reads too: both share one scan of the text.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator

from .engine import Detector, Scan, Span

__all__ = ["FORMATS", "KnownTokens", "Run", "token_runs", "tokens_in"]

# (prefix, alphabet, shortest, longest, what follows): the prefix and what
# follows are regular expressions; the body is ``alphabet{shortest,longest}``.
_B62 = "A-Za-z0-9"
_URLSAFE = "A-Za-z0-9_\\-"
FORMATS: tuple[tuple[str, str, int, int, str], ...] = (
    # cloud
    ("(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)", "A-Z0-9", 16, 16, "(?![A-Za-z0-9])"),
    ("AIza", _URLSAFE, 35, 35, ""),
    ("ya29\\.", _URLSAFE, 20, 2048, ""),
    ("GOCSPX-", _URLSAFE, 20, 64, ""),
    ("LTAI", _B62, 12, 28, ""),
    ("AKID", _B62, 13, 40, ""),
    ("AccountKey=", "A-Za-z0-9+/", 40, 128, "={0,2}"),
    ("do[opr]_v1_", "a-f0-9", 64, 64, ""),
    ("hv[sbr]\\.", _URLSAFE, 20, 512, ""),
    ("[A-Za-z0-9]{14}\\.atlasv1\\.", _URLSAFE, 40, 256, ""),
    ("dapi", "0-9a-f", 32, 32, "(?:-[0-9]{1,2})?"),
    # version control and CI
    ("gh[pousr]_", _B62, 30, 255, ""),
    ("github_pat_", "A-Za-z0-9_", 40, 255, ""),
    ("gl(?:pat|dt|ptt|rt|cbt|oas|ft|imt|soat)-", _URLSAFE, 20, 255, ""),
    # chat
    ("xox[abposre]-", "A-Za-z0-9\\-", 10, 255, ""),
    ("xapp-[0-9]-", "A-Za-z0-9\\-", 10, 255, ""),
    # LLM providers
    ("sk-(?:proj-|ant-|svcacct-|admin-)", _URLSAFE, 16, 255, ""),
    ("sk-(?=[A-Za-z_\\-]{0,255}+[0-9])", _URLSAFE, 16, 255, ""),
    ("lsv2_(?:pt|sk)_", "a-f0-9", 32, 32, "_[a-f0-9]{8,12}"),
    # payment, mail, commerce
    ("(?:sk|rk)_(?:live|test)_", _B62, 10, 255, ""),
    ("whsec_", _B62, 20, 255, ""),
    ("SG\\.", _URLSAFE, 16, 32, "\\.[A-Za-z0-9_\\-]{16,64}+"),
    ("key-", "0-9a-f", 32, 32, ""),
    ("shp(?:at|ss|ca|pa)_", "a-fA-F0-9", 32, 32, ""),
    ("", "0-9a-f", 32, 32, "-us[0-9]{1,2}(?![0-9])"),  # Mailchimp
    # package registries
    ("npm_", _B62, 36, 36, ""),
    ("pypi-", _URLSAFE, 50, 512, ""),
    ("dckr_pat_", _URLSAFE, 20, 64, ""),
    ("hf_", _B62, 30, 64, ""),
    ("oy2", "a-z0-9", 43, 43, ""),  # NuGet
    ("pul-", "a-f0-9", 40, 40, ""),  # Pulumi
    ("", "0-9a-f", 32, 32, "\\.[A-Za-z0-9]{16}(?![A-Za-z0-9])"),  # Zhipu (BigModel): id.secret
    # other SaaS, one shape: a prefix, then "_" or "-", then 20+ token characters
    ("(?:gsk|xai|pplx|nvapi|r8|glsa|glc|lin_api|figd|ntn|sntrys|PMAK|ATATT3|squ|sqp|bkua|CCIPAT|rubygems|NRAK)"
     "[_\\-]", _URLSAFE, 20, 512, ""),
    ("AGE-SECRET-KEY-1", "0-9A-Z", 50, 70, ""),
)  # fmt: skip


def _format(prefix: str, alphabet: str, shortest: int, longest: int, after: str) -> str:
    possessive = "+" if shortest != longest else ""
    return f"{prefix}[{alphabet}]{{{shortest},{longest}}}{possessive}{after}"


# Characters a token may not be glued to on its left: "xghp_…" is a word.
# "]" too: a marker glued to a token ("[redacted]ghp_…") stands where a word was.
_LEFT = r"(?<![A-Za-z0-9_\-\]])"
_PREFIXED = re.compile(_LEFT + "(?:" + "|".join(_format(*row) for row in FORMATS) + ")")
_JWT = re.compile(_LEFT + r"eyJ[A-Za-z0-9_\-]{8,2048}+\.eyJ[A-Za-z0-9_\-]{8,8192}+\.[A-Za-z0-9_\-]{0,2048}+")
# A Telegram bot token holds a ":", so it is no run's: matched on the text.
_TELEGRAM = re.compile(r"(?<![0-9\]])[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}")
# Every token and every blob lies in a run of these characters.
_RUN = re.compile(r"(?<![A-Za-z0-9+/_\-.])[A-Za-z0-9+/_\-.]{14,16384}+={0,2}")
# "AKIAXXXXXXXXXXXXXXXX", "ghp_000…", "sk-...your-key": a mask in a token's shape.
_MASKED_TOKEN = re.compile(r"xxxx|XXXX|\.\.\.|your|YOUR")

Run = tuple[int, int, tuple[Span, ...]]
_SHORTEST_RUN = 14


def tokens_in(text: str, start: int, end: int) -> list[Span]:
    """The spans of JWTs and prefixed tokens in ``text[start:end]`` (masks left out)."""
    part = text[start:end]
    found: list[Span] = []
    if "eyJ" in part:
        found += [(start + m.start(), start + m.end()) for m in _JWT.finditer(part)]
    for match in _PREFIXED.finditer(part):
        token = match.group(0)
        if len(set(token[4:])) <= 2 or _MASKED_TOKEN.search(token):
            continue
        found.append((start + match.start(), start + match.end()))
    return found


def token_runs(scan: Scan) -> list[Run]:
    """Each run of token characters with the tokens found in it (shared by two detectors).

    A run ends where public material starts or ends (a key block's marker):
    what lies beyond an edge is read as it will be once redacted.
    """
    cached = scan.cache.get("runs")
    if cached is None:
        spans = (m.span() for m in _RUN.finditer(scan.text))
        cached = [(start, end, tuple(tokens_in(scan.text, start, end)))
                  for start, end in (_cut(spans, scan.public) if scan.public else spans)]  # fmt: skip
        scan.cache["runs"] = cached
    return cached  # type: ignore[return-value]


def _cut(runs: Iterator[Span], public: list[Span]) -> Iterator[Span]:
    edges = sorted({edge for span in public for edge in span})
    i = 0
    for start, end in runs:
        while i < len(edges) and edges[i] <= start:
            i += 1
        j = i
        while j < len(edges) and edges[j] < end:
            yield from _long_enough(start, edges[j], public)
            start = edges[j]
            j += 1
        yield from _long_enough(start, end, public)


def _long_enough(start: int, end: int, public: list[Span]) -> Iterator[Span]:
    # Short pieces are no run (the pattern's minimum), nor is a piece of public material.
    if end - start < _SHORTEST_RUN:
        return
    at = bisect.bisect_right(public, (start, end)) - 1
    if not (at >= 0 and public[at][0] <= start and end <= public[at][1]):
        yield start, end


class KnownTokens(Detector):
    """Tokens whose format a vendor documents (``FORMATS``), JWTs and Telegram bot tokens."""

    name = "known_tokens"
    examples = (
        ("git push https://ghp_Zq7LmR2xWv9KpT4sNb8YcHd3FgJ6uE1oAi5B@github.com/a/b", "Zq7LmR2xWv9KpT4sNb8Y"),
        ("export AWS_ACCESS_KEY_ID=AKIAQX7NR2KWZ4T6LBMV", "AKIAQX7NR2KWZ4T6LBMV"),
        ("slack: xoxb-2419-88214-Zq7LmR2xWv9KpT4s", "xoxb-2419-88214-Zq7LmR2xWv9KpT4s"),
        ("OPENAI_API_KEY is sk-proj-Zq7LmR2xWv9KpT4sNb8YcHd3", "Zq7LmR2xWv9KpT4sNb8YcHd3"),
        ("bot 123456789:AAHk3Zq7LmR2xWv9KpT4sNb8YcHd3FgJ6uE failed", "AAHk3Zq7LmR2xWv9KpT4sNb8YcHd3FgJ6uE"),
    )
    lookalikes = (
        "AWS_ACCESS_KEY_ID=AKIAXXXXXXXXXXXXXXXX",
        "token: ghp_****************************ab12",
        "const s = Stripe('pk_live_51Hx2kQ9vLm3Zp8Rt4Wy7Nb6Cf1Dh5Js0');",
        "the skip-tests flag",
    )

    def spans(self, scan: Scan) -> Iterable[Span]:
        for _start, _end, tokens in token_runs(scan):
            yield from tokens
        if ":aa" in scan.low:
            yield from _telegram(scan.text)


def _telegram(text: str) -> Iterator[Span]:
    for match in _TELEGRAM.finditer(text):
        yield match.span()
