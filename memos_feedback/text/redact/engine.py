"""The engine: every detector's spans, filtered, merged and replaced once.

A detector (``Detector``) reads a ``Scan`` of the text and yields the
spans ``(start, end)`` of secret values it recognises; a detector may also
yield *public* spans (``Detector.public``: a certificate's body, a key
block's markers) that no other detector's span may cover: spans are cut
around them. Pair detectors (``PairDetector``) run
after the others and read their spans (the secret beside a key id).

The engine sorts the spans, cuts them around public material, merges
overlapping and adjacent ones, and writes ``[redacted]`` once per merged
span. There is no second pass: a value that is already ``[redacted]`` is a
reference to every filter, so redacting the output finds nothing new.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from .filters import REDACTED

__all__ = ["Detector", "PairDetector", "Scan", "Span", "find_spans", "redact_with"]

# Up to this length a word is searched for again rather than remembered (Scan.has_any).
_SEARCH_AGAIN = 512

Span = tuple[int, int]


class Scan:
    """A text and what several detectors read of it, computed once."""

    __slots__ = ("cache", "low", "public", "seen", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.low = _lower_same_length(text)
        # Detectors that share a costly reading (the token runs) keep it here.
        self.cache: dict[str, object] = {}
        self.seen: dict[str, bool] = {}
        # Public spans, sorted, known before any detector looks for secrets.
        self.public: list[Span] = []

    def has(self, word: str) -> bool:
        """Whether the lower-cased text holds ``word`` (each word searched once per text)."""
        found = self.seen.get(word)
        if found is None:
            found = self.seen[word] = word in self.low
        return found

    def has_any(self, words: Iterable[str]) -> bool:
        """Whether the lower-cased text holds any of ``words``.

        A short text is searched again for each word: that costs less than
        the memo of ``has``, which keeps a long text to one search a word.
        """
        if len(self.low) <= _SEARCH_AGAIN:
            return any(map(self.low.__contains__, words))
        return any(map(self.has, words))


class Detector:
    """One family of secrets: where their values are in a text.

    ``examples`` are texts with the secret that must go; ``lookalikes`` are
    texts that must come back unchanged. Both are data the tests run.
    """

    name = "detector"
    examples: tuple[tuple[str, str], ...] = ()
    lookalikes: tuple[str, ...] = ()

    def spans(self, scan: Scan) -> Iterable[Span]:
        """The spans of secret values in ``scan``."""
        raise NotImplementedError

    def public(self, scan: Scan) -> Iterable[Span]:
        """Spans of public material no secret span may touch (none by default)."""
        return ()


class PairDetector(Detector):
    """A detector that reads the other detectors' spans: the second half of a pair."""

    def pairs(self, scan: Scan, found: Sequence[Span]) -> Iterable[Span]:
        """Spans found beside the merged spans ``found``."""
        raise NotImplementedError

    def spans(self, scan: Scan) -> Iterable[Span]:
        return ()


def redact_with(text: str, detectors: Sequence[Detector]) -> str:
    """``text`` with the spans of every detector replaced by ``[redacted]``."""
    return _replace(text, find_spans(text, detectors)) if text else text


def find_spans(text: str, detectors: Sequence[Detector]) -> list[Span]:
    """The sorted, disjoint spans of secrets ``detectors`` find in ``text``, cut around public material."""
    scan = Scan(text)
    scan.public = shielded = sorted(span for detector in detectors for span in detector.public(scan))
    found = [span for detector in detectors for span in detector.spans(scan)]
    merged = _merge(_outside(found, shielded))
    extra = [span for d in detectors if isinstance(d, PairDetector) for span in d.pairs(scan, merged)]
    if extra:
        merged = _merge(_outside(merged + extra, shielded))
    return merged


def _outside(spans: list[Span], shielded: list[Span]) -> list[Span]:
    """``spans`` less what they share with ``shielded``: a secret's span never eats public text."""
    spans = [(s, e) for s, e in spans if e > s]
    if not shielded:
        return spans
    # Both sorted: one sweep, whatever their number.
    kept, i = [], 0
    for start, end in sorted(spans):
        while i < len(shielded) and shielded[i][1] <= start:
            i += 1
        j = i
        while j < len(shielded) and shielded[j][0] < end:
            if shielded[j][0] > start:
                kept.append((start, shielded[j][0]))
            start = max(start, shielded[j][1])
            j += 1
        if start < end:
            kept.append((start, end))
    return kept


def _merge(spans: Iterable[Span]) -> list[Span]:
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _replace(text: str, spans: list[Span]) -> str:
    if not spans:
        return text
    return "".join(_pieces(text, spans))


def _pieces(text: str, spans: list[Span]) -> Iterator[str]:
    last = 0
    for start, end in spans:
        yield text[last:start]
        # A span over a marker already there ("[redacted]x") keeps one marker.
        yield REDACTED
        last = end
    yield text[last:]


def _lower_same_length(text: str) -> str:
    # Positions found in the lower-cased text must index the original.
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(lc if len(lc := ch.lower()) == 1 else ch for ch in text)
