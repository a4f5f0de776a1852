"""Secret redaction made of detectors, filters and one engine.

Each detector (one module, one family of secrets) yields the spans of the
secret values it recognises and carries its own ``examples`` and
``lookalikes``; ``filters`` says which values only stand for a secret;
``engine`` collects every detector's spans, drops those on public
material, merges overlaps and writes ``[redacted]`` once per span.
``text.secrets`` is the public face (``redact_secrets``, ``stored_text``…).
"""

from __future__ import annotations

from .assignments import NamedValues
from .chinese import ChineseLabels
from .commands import CommandLines
from .engine import Detector, redact_with
from .entries import NamedEntries
from .entropy import ContextualRuns, HighEntropyRuns
from .filters import REDACTED
from .headers import AuthHeaders
from .keys import PemBlocks
from .pairs import PairedSecrets
from .prose import ProseSecrets
from .tokens import KnownTokens
from .urls import UrlCredentials

__all__ = ["DETECTORS", "REDACTED", "Detector", "redact"]

DETECTORS: tuple[Detector, ...] = (
    PemBlocks(),
    KnownTokens(),
    HighEntropyRuns(),
    ContextualRuns(),
    UrlCredentials(),
    AuthHeaders(),
    NamedValues(),
    NamedEntries(),
    CommandLines(),
    ProseSecrets(),
    ChineseLabels(),
    PairedSecrets(),
)


def redact(text: str) -> str:
    """``text`` with every secret any detector recognises replaced by ``[redacted]``."""
    return redact_with(text, DETECTORS)
