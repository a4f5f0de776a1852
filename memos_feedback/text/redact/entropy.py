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

__all__ = ["ContextualRuns", "HighEntropyRuns"]

_DIGEST_PREFIX = re.compile(r"(?:sha(?:1|224|256|384|512)|md5)[\-:]", re.IGNORECASE)
# Words before a run that name it a digest, an id, data or public material.
_DIGEST_NAME = re.compile(
    r"(?:sha[0-9]{0,3}|md5|checksum|digest|integrity|hash|etag|\bh1|(?:\b|[_\-])s?id(?:-[0-9])?|;base64"
    r"|public[_\- ]?key|pubkey|公钥|公鑰|certificate(?:-authority)?-data|fingerprint|\"n\"|recipient"
    # a WireGuard peer (its public key); SSH public keys are shielded whole by ``keys``
    r"|\bpeer)"
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


# A word for a secret shortly before a run, on its line ("Admin API Key 2cd8…", "令牌 9d80…").
# "key" alone is weak ("RSA key", "cache key", "idempotency_key"): the kind must say secret.
_CONTEXT_WORD = re.compile(
    r"(?:api|access|secret|private|integration|license|app|admin|service|auth|signing|master|routing)"
    r"[ _\-]?key"
    r"|token|secret|passw|credential|密钥|密鑰|令牌|密码|密碼|授权码|授權碼|凭证|憑證"
)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# Words that make the run an id, a digest or public material whatever else the line says.
_ID_WORD = re.compile(
    r"\b(?:ids?|sid|uuid|guid|hash|sha[0-9]{0,3}|md5|commit|checksum|digest|fingerprint|thumbprint|etag|trace"
    r"|span|request|build|version|revision|rev|public|publishable|address|tx|txid|block|nonce|salt|iv|kid"
    r"|client_id|app_?id|account|tenant|project|object|file|image|layer|slug)\b|公钥|公鑰|地址|编号|編號",
    re.IGNORECASE,
)
_HEXISH = re.compile(r"[0-9a-fA-F\-]{24,128}")
_CONTEXT_REACH = 40


class ContextualRuns(Detector):
    """A run of 24+ hex or mixed characters right after a word for a secret, on its line.

    The free-standing rule needs a run to look random in every class; a
    lowercase hex API key does not, but "API Key" before it says what it is.
    """

    name = "contextual_runs"
    examples = (
        (
            "PagerDuty Integration Key 9764c2eac4d1cb3d6979e3586ccba335 for Alertmanager",
            "9764c2eac4d1cb3d6979e3586ccba335",
        ),
        ("智谱的令牌 9d80db0248a3c705aa01db7fb0aa708f 已经过期了", "9d80db0248a3c705aa01db7fb0aa708f"),
    )
    lookalikes = (
        "the key id 867bd4222415c7046434525052f05c3d was rotated",
        "token bucket commit 07defb06252f3a6a32a5dd872b3463a5947baf3c",
        "Sentry event a4a70422f6efdce7661a4e0d1dd560ff (issue WEB-SMC)",
        "gpg: using RSA key 1DF6F6FDDA073708953624879E96CAB4F12ADF54",
        "remote cache hit: action key 1b640cc51b14908bc9f23ce6bb2273fa4b8ae4d0b000555965aee832de4b51bd",
        "evt_Ca9VNKSwq17 idempotency_key=1367e828-c9a9-441b-a605-a0a2f5d0c48f",
        "auth token in the vault; account SID AC602a8f6b7d35afca9caff2d55b70787c",
        "the API key's sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    )

    def spans(self, scan: Scan) -> Iterable[Span]:
        text, low = scan.text, scan.low
        previous = 0
        for start, end, tokens in token_runs(scan):
            edge, previous = previous, end
            if tokens or not 24 <= end - start <= 128 or not _HEXISH.fullmatch(text, start, end):
                continue
            if _UUID.fullmatch(text, start, end) or "idempotency" in low[max(0, start - 40) : start]:
                continue  # an id in a UUID's shape; a request's idempotency key
            # The words since the line's start, the previous run or a marker, whichever is last:
            # what a redaction shortens never brings a farther word into reach.
            reach = max(start - _CONTEXT_REACH, edge, 0)
            line = max(low.rfind("\n", reach, start), low.rfind("]", reach, start)) + 1
            before = low[max(line, reach) : start]
            if _CONTEXT_WORD.search(before) and not _ID_WORD.search(before) and _mixed(text, start, end):
                yield start, end


def _mixed(text: str, start: int, end: int) -> bool:
    # Digits and letters both: no word ("deadbeef-cafe") and no number.
    run = text[start:end]
    return any(ch.isdigit() for ch in run) and sum(ch.isalpha() for ch in run) >= 4
