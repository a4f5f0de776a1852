"""Query terms for the database's text search.

A query (an error message, a command, a request; English, Chinese or both)
becomes a small set of search terms:

* ASCII words and identifiers of 3+ characters, case-folded, split at
  anything but letters, digits, ``_`` and ``-`` (``--break-system-packages``
  → ``break-system-packages``; ``engines.node`` → ``engines``, ``node``),
  minus a short list of English function words;
* for runs of Chinese/Japanese/Korean characters, every 3-character window
  (what a trigram index can find); a run of exactly two characters is kept
  as a *short* term, matched only when scoring candidates.

Identifiers, commands and error codes are written the same way in both
languages, so they are what lets a Chinese query find an English repair.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = ["MAX_TERMS", "QueryTerms", "query_terms"]

MAX_TERMS = 48

_WORD = re.compile(r"[a-z0-9][a-z0-9_\-]*[a-z0-9]")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "this",
        "that",
        "from",
        "into",
        "onto",
        "when",
        "then",
        "than",
        "what",
        "which",
        "while",
        "where",
        "there",
        "here",
        "have",
        "has",
        "had",
        "was",
        "were",
        "are",
        "been",
        "being",
        "not",
        "but",
        "all",
        "any",
        "can",
        "could",
        "should",
        "would",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "just",
        "also",
        "only",
        "very",
        "its",
        "it's",
        "our",
        "your",
        "you",
        "they",
        "them",
        "their",
        "his",
        "her",
        "she",
        "him",
        "who",
        "whom",
        "how",
        "why",
        "does",
        "did",
        "doing",
        "done",
        "don't",
        "dont",
        "isn't",
        "aren't",
        "won't",
        "use",
        "using",
        "used",
        "get",
        "got",
        "let",
        "yes",
        "out",
        "off",
        "too",
        "now",
        "again",
        "still",
        "some",
        "such",
        "each",
        "other",
        "more",
        "most",
        "much",
        "many",
        "one",
        "two",
        "via",
        "per",
        "like",
        "want",
        "need",
        "make",
        "made",
    ]
)


@dataclass(frozen=True, slots=True)
class QueryTerms:
    """``indexed``: terms a trigram index can look up (3+ characters); ``short``: 2-char CJK runs."""

    indexed: tuple[str, ...]
    short: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.indexed and not self.short

    def all(self) -> tuple[str, ...]:
        return self.indexed + self.short


def normalise(text: str) -> str:
    """NFKC and case-folded: how both queries and documents are compared."""
    return unicodedata.normalize("NFKC", text).casefold()


def query_terms(text: str | None, limit: int = MAX_TERMS) -> QueryTerms:
    """The distinct search terms of ``text``, in order of appearance, at most ``limit``."""
    if not text:
        return QueryTerms((), ())
    norm = normalise(text)
    indexed: dict[str, None] = {}
    short: dict[str, None] = {}
    for match in _WORD.finditer(norm):
        word = match.group(0).strip("-_")
        if len(word) >= 3 and word not in _STOP and not (word.isdigit() and len(word) > 6):
            indexed.setdefault(word, None)
    for match in _CJK.finditer(norm):
        run = match.group(0)
        if len(run) == 2:
            short.setdefault(run, None)
        for i in range(len(run) - 2):
            indexed.setdefault(run[i : i + 3], None)
    kept = list(indexed)[:limit]
    return QueryTerms(tuple(kept), tuple(list(short)[: max(0, limit - len(kept))]))
