"""Key material: a private key block's body is a secret; certificates and public keys are public.

The markers stay. A private key's body goes whole, with real or escaped
line breaks (a service-account JSON's ``"private_key": "…\\n…"``) and
indentation (a YAML block); a cut block loses what it has. A complete
certificate or public key block is public material: no detector may take
its lines for a key, and no detector's span may eat a marker. Nor an SSH
public key (``ssh-ed25519 AAAA…``), whole with its kind.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from .engine import Detector, Scan, Span

__all__ = ["PemBlocks"]

# The label, then a body of base64, header lines ("Proc-Type: 4,ENCRYPTED")
# and line breaks, real or escaped. A body ends at "[redacted]" ("[" is no
# base64): once redacted, a block has nothing left to find.
_PEM = re.compile(
    r"(-----BEGIN (?:[A-Z0-9]{1,16} ){0,4}[A-Z0-9]{1,16}-----)"
    # A body may hold our own marker: a block whose lines were redacted is still a block
    # (its END marker stays public), so a second pass reads what the first did.
    r"((?:(?!-----)(?:[A-Za-z0-9+/=\s:,.()\-]|\\[nr]|\[redacted\])){0,16384}+)"
    r"(-----END (?:[A-Z0-9]{1,16} ){0,4}[A-Z0-9]{1,16}-----)?"
)
# What any key body holds: a stretch of base64 with no blank.
_KEY_TEXT = re.compile(r"[A-Za-z0-9+/=]{8}")
# An SSH public key, its kind and its body: public material, shielded whole (a span of
# another detector, "password=ssh-rsa", is cut around it, so a second pass sees the same).
_SSH_PUBLIC = re.compile(
    r"(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp[0-9]{3}|sk-ssh-ed25519@openssh\.com)[ \t]{1,4}+"
    r"AAAA[A-Za-z0-9+/]{16,16384}+={0,3}"
)
_HEAD = re.compile(r"(?:\s|\\[nr])*")


class PemBlocks(Detector):
    """The body of a private key block; a complete public block is shielded."""

    name = "pem"
    examples = (
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEF\n-----END RSA PRIVATE KEY-----",
         "MIIEvQIBADANBgkqhkiG9w0BAQEF"),
        ('"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkq\\n-----END PRIVATE KEY-----"',
         "MIIEvQIBADANBgkq"),
        ("key: |\n  -----BEGIN EC PRIVATE KEY-----\n  MHcCAQEEIBxZq7LmR2x\n  -----END EC PRIVATE KEY-----",
         "MHcCAQEEIBxZq7LmR2x"),
    )  # fmt: skip
    lookalikes = (
        "-----BEGIN CERTIFICATE-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSj\n-----END CERTIFICATE-----",
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEZq7LmR\n-----END PUBLIC KEY-----",
        "paste the key between -----BEGIN PRIVATE KEY----- and -----END PRIVATE KEY-----",
        "- ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQps5k8OGWYYQT4VGhwNmz6wP2g/PEmDUre0D3x86aA1/JyJ ops@bastion",
    )

    def spans(self, scan: Scan) -> Iterable[Span]:
        for match in _blocks(scan):
            if "PRIVATE" in match.group(1):
                yield from _body(match)

    def public(self, scan: Scan) -> Iterable[Span]:
        if "aaaa" in scan.low and ("ssh-" in scan.low or "ecdsa-" in scan.low):
            yield from (m.span() for m in _SSH_PUBLIC.finditer(scan.text))
        for match in _blocks(scan):
            if "PRIVATE" not in match.group(1) and match.group(3):
                yield match.span()  # a whole certificate or public key
            else:
                # The markers stay whatever another detector reads across them, and
                # the body's end is an edge: what follows a cut block is read on its own.
                yield match.span(1)
                yield match.end(2), match.end(2)
                if match.group(3):
                    yield match.span(3)


def _blocks(scan: Scan) -> list[re.Match[str]]:
    """The blocks of the text, found once for both ``spans`` and ``public``."""
    if "-----begin" not in scan.low:
        return []
    found = scan.cache.get("pem")
    if found is None:
        found = scan.cache["pem"] = list(_PEM.finditer(scan.text))
    return found  # type: ignore[return-value]


def _body(match: re.Match[str]) -> Iterator[Span]:
    start, end = match.span(2)
    body = match.group(2)
    # Our own marker is no key's text ("redacted" is eight letters of base64).
    if _KEY_TEXT.search(body.replace("[redacted]", " ")) is None:
        return  # an empty body, or words ("between BEGIN and END"): no key's text
    head = _HEAD.match(body)
    start += len(head.group(0)) if head else 0
    # The line breaks (real or escaped) and blanks before the END marker stay.
    text = match.string
    while end > start:
        if text[end - 1].isspace():
            end -= 1
        elif end - start >= 2 and text[end - 2 : end] in ("\\n", "\\r"):
            end -= 2
        else:
            break
    yield start, end
