"""Free-standing random blobs: runs of base64 that look random and decode to nothing readable.

A run of 32+ token characters with digits, upper- and lower-case letters
that switch class the way random text does (about 62% of neighbours differ;
identifiers and paths switch at word boundaries only), and that is not
base64 of readable text, of a file or of an SSH public key. Public and
non-secret runs are filtered by their context: a run the text names a
digest, an id, public material or data (``sha256:``, ``request-id:``,
``public key``, ``;base64,``), a ConfigMap's ``binaryData``, a MIME part's
base64 body, a publishable key, an IPFS content id.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import re
from collections.abc import Iterable, Iterator

from .engine import Detector, Scan, Span
from .tokens import token_runs

__all__ = ["HighEntropyRuns"]

_DIGEST_PREFIX = re.compile(r"(?:sha(?:1|224|256|384|512)|md5)[\-:]", re.IGNORECASE)
# Words before a run that name it a digest, an id, data or public material.
_DIGEST_NAME = re.compile(
    r"(?:sha[0-9]{0,3}|md5|checksum|digest|integrity|hash|etag|\bh1|(?:\b|[_\-])s?id(?:-[0-9])?|;base64"
    r"|public[_\- ]?key|pubkey|公钥|公鑰|certificate(?:-authority)?-data|fingerprint|\"n\"|recipient"
    # an SSH public key's kind, a WireGuard peer (its public key)
    r"|ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp[0-9]{3}|\bpeer)"
    r"(?:[ \t]{1,2}(?:is|are|是|为))?[\s:=,\"'\-：]{0,4}$",
    re.IGNORECASE,
)
# Public by design: a publishable key, an IPFS content id (base58 "Qm…").
_PUBLIC_RUN = re.compile(r"pk_(?:live|test)_[A-Za-z0-9]{10,255}|Qm[1-9A-HJ-NP-Za-km-z]{44}")
_SEPARATORS = re.compile(r"[/_\-+=]")
_HEX_ONLY = re.compile(r"[0-9a-fA-F]{2,4096}+")
_MIN_SWITCH_RATE = 0.35
_SHORTEST = 32


class HighEntropyRuns(Detector):
    """Random-looking base64 runs that are no digest, id, file or public key by their context."""

    name = "high_entropy"
    examples = (
        ("secret: Zq7LmR2xWv9KpT4sNb8YcHd3FgJ6uE1oAi5BxQ0", "Zq7LmR2xWv9KpT4sNb8YcHd3FgJ6uE1oAi5BxQ0"),
        (
            "the signing key\nkX9vQ2mZ8rT4wY7pL3nB6cF1dH5jS0aEuR2oI8gV4Mq\n",
            "kX9vQ2mZ8rT4wY7pL3nB6cF1dH5jS0aE",
        ),
    )
    lookalikes = (
        "sha256:kX9vQ2mZ8rT4wY7pL3nB6cF1dH5jS0aEuR2oI8gV4Mq",
        "the peer's public key is kX9vQ2mZ8rT4wY7pL3nB6cF1dH5jS0aE+uR2oI8gV4M=",
        "git checkout 07defb06252f3a6a32a5dd872b3463a5947baf3c",
        "src/components/UserProfileSettings/AccountPreferencesPanel.tsx",
        "aGVsbG8gd29ybGQsIHRoaXMgaXMgcGxhaW4gdGV4dCBpbiBiYXNlNjQ=",
        "GET /v1/messages/0G8231CNPV57BM2KHQ7HQNKAH1 200 12ms",
        "peer: ts+QqGnElhEgOMIpTylwch67YT/kx6u6rU3qOIb2Ipw=",
    )

    def spans(self, scan: Scan) -> Iterable[Span]:
        text = scan.text
        for start, end, tokens in token_runs(scan):
            if end - start < _SHORTEST or _PUBLIC_RUN.fullmatch(text, start, end):
                continue
            if tokens:
                # What is left beside a token is judged as a run of its own.
                yield from _blobs_between(text, start, end, tokens)
                continue
            if _DIGEST_NAME.search(text, max(0, start - 32), start) or _is_data(text, start):
                continue
            found = list(_blobs(text, start, end))
            if found and not _in_mime_part(text, start):
                yield from found


def _blobs_between(text: str, start: int, end: int, tokens: tuple[Span, ...]) -> Iterator[Span]:
    last = start
    for token_start, token_end in (*tokens, (end, end)):
        if token_start - last >= _SHORTEST:
            yield from _blobs(text, last, token_start)
        last = max(last, token_end)


def _blobs(text: str, start: int, end: int) -> Iterator[Span]:
    # A dotted run ("header.payload.sig") is judged part by part.
    at = start
    for part in text[start:end].split("."):
        if _is_blob(part):
            yield at, at + len(part)
        at += len(part) + 1


def _is_blob(run: str) -> bool:
    if len(run) < _SHORTEST or _DIGEST_PREFIX.match(run) or not _looks_random(run):
        return False
    return not _decodes_to_text(run)


def _is_data(text: str, start: int) -> bool:
    # A ConfigMap's binary data is a file, not a secret (a Secret's is "data:").
    return text.find("binaryData:", max(0, start - 512), start) != -1


def _looks_random(run: str) -> bool:
    segments = [seg for seg in _SEPARATORS.split(run) if seg]
    # A path or identifier is mostly words and hex ids ("Users/Ann/9a/Py3");
    # random base64 seldom has a separator, let alone a word between two.
    words = sum(1 for seg in segments if (len(seg) >= 3 and seg.isalpha()) or _HEX_ONLY.fullmatch(seg))
    if words >= 2 and 2 * words > len(segments):
        return False
    # Random base64 mixes the three classes in any long stretch: a path's id part that has
    # no lower case ("/messages/0G8231CNPV57BM2KHQ7HQNKAH1", a ULID) is an id.
    longest = max(segments, key=len, default="")
    if len(longest) >= 16 and (longest.upper() == longest or longest.lower() == longest):
        return False
    kinds = [("d" if ch.isdigit() else "u" if ch.isupper() else "l") for ch in run if ch.isalnum()]
    if not ("d" in kinds and "u" in kinds and "l" in kinds) or len(kinds) < 2:
        return False
    switches = sum(1 for a, b in itertools.pairwise(kinds) if a != b)
    return switches / (len(kinds) - 1) >= _MIN_SWITCH_RATE


# Files: PNG, GIF, JPEG, PDF, gzip, zip, RIFF, SVG, ICO.
_FILE_MAGIC = (b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"%PDF", b"\x1f\x8b", b"PK\x03\x04", b"RIFF", b"<svg",
               b"\x00\x00\x01\x00")  # fmt: skip
_SSH_KEY_KINDS = (b"ssh-", b"ecds", b"sk-s", b"sk-e")


def _decodes_to_text(run: str) -> bool:
    """Whether ``run`` is base64 (or base64url) of readable text: data, not a key."""
    body = run.rstrip("=")
    alphabet = "-_" if ("-" in body or "_" in body) else "+/"
    padded = body + "=" * (-len(body) % 4)
    try:
        raw = base64.b64decode(padded, altchars=alphabet.encode(), validate=True)
    except (binascii.Error, ValueError):
        return False
    if raw.startswith(_FILE_MAGIC) or raw[4:8] in _SSH_KEY_KINDS:
        return True  # a file (an image, an archive) or an SSH public key, which names its kind
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if "PRIVATE KEY" in decoded:
        return False  # base64 of a private key block (a kubeconfig's client-key-data) is the key
    readable = sum(1 for ch in decoded if ch.isprintable() or ch in "\n\r\t")
    return readable >= 0.95 * len(decoded)


# The lines of a MIME part's base64 body, up to the line a run starts.
_MIME_BODY = re.compile(
    r"content-transfer-encoding:[ \t]{0,4}+base64[ \t]{0,4}+\r?\n(?:[!-~ \t]{0,200}\r?\n){0,8}?\r?\n"
    r"(?:[A-Za-z0-9+/=]{1,100}+\r?\n){0,400}+$",
    re.IGNORECASE,
)
_MIME_HEADER = ("Content-Transfer-Encoding", "content-transfer-encoding", "Content-transfer-encoding")


def _in_mime_part(text: str, start: int) -> bool:
    """Whether the run at ``start`` is a line of a MIME part's base64 body (an attachment's bytes)."""
    if start == 0 or text[start - 1] != "\n":
        return False
    low_bound = max(0, start - 40960)
    at = max(text.rfind(name, low_bound, start) for name in _MIME_HEADER)
    return at != -1 and _MIME_BODY.match(text[at:start]) is not None
