"""The second half of a credential pair whose first half was found: ``AKIA…:<secret>``.

``Client("AC…", "<auth token>")``, ``AKIA…, <secret key>``: a key id is
found by another detector; the random string right after it, past a comma
or a colon, is its secret.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from .engine import PairDetector, Scan, Span
from .filters import is_placeholder

__all__ = ["PairedSecrets"]

_PARTNER = re.compile(
    r"[\"']?[ \t]{0,2}+[,:][ \t]{0,2}+[\"']?([A-Za-z0-9+/=_\-]{16,128}+)(?![A-Za-z0-9+/=_\-])"
)


class PairedSecrets(PairDetector):
    """The value paired with a redacted key id."""

    name = "pairs"
    examples = (
        ("AKIAQX7NR2KWZ4T6LBMV:Zq7LmR2xWv9KpT4sNb8YcHd3FgJ6uE1oAi5BxQ0c", "Zq7LmR2xWv9KpT4sNb8YcHd3"),
    )
    lookalikes = ("region: us-east-1, bucket: build-artifacts-2024",)

    def pairs(self, scan: Scan, found: Sequence[Span]) -> Iterable[Span]:
        for _start, end in found:
            match = _PARTNER.match(scan.text, end)
            if match is None:
                continue
            value = match.group(1)
            if (
                any(c.isdigit() for c in value)
                and any(c.isalpha() for c in value)
                and not is_placeholder(value)
            ):
                yield match.span(1)
