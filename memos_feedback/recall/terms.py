"""Query terms for the database's text search.

A query (an error message, a command, a request; English, Chinese or both)
becomes a small set of search terms:

* ASCII words and identifiers of 3+ characters, case-folded, split at
  anything but letters, digits, ``_`` and ``-`` (``--break-system-packages``
  → ``break-system-packages``; ``engines.node`` → ``engines``, ``node``),
  minus a short list of English function words;
* for runs of Chinese/Japanese/Korean characters, every 3-character window
  (what a trigram index can find) for the search, and every 2-character
  window (a *pair*) for scoring candidates: most Chinese words are two
  characters, so a paraphrase shares pairs with the text it paraphrases
  far more often than it shares windows that straddle two words.

Identifiers, commands and error codes are written the same way in both
languages, so they are what lets a Chinese query find an English repair.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from .glossary import gloss

__all__ = [
    "MAX_TERMS",
    "QueryTerms",
    "comparable",
    "contains_term",
    "error_identifiers",
    "glossed",
    "is_tool_report",
    "query_terms",
    "stem",
]

MAX_TERMS = 48

_WORD = re.compile(r"[a-z0-9][a-z0-9_\-]*[a-z0-9]")
# A token of identifier characters; classified in Python, so matching stays linear.
_IDENT_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_CODE_WITH_NUMBER = re.compile(r"[A-Z]{1,4}[0-9]{3,5}")
_MAX_IDENTIFIERS = 8
# Words that tool output uses to say what happened. A literal alternation
# between word boundaries: matching stays linear. What counts is a tool's
# *report* ("Error:", "FAILED", "Permission denied", a log line's level),
# not a person describing a symptom in their own words.
_REPORT_WORD = re.compile(
    r"\b(?:error|errors|exception|traceback|failed|fails|failing|fatal|panic|warning|denied|refused"
    r"|rejected|forbidden|unauthorized|declined|invalid|unsupported|undefined|aborted|killed"
    r"|segmentation fault|not found|no such|cannot|can't|exit code|exit status"
    r"|oomkilled|crashloopbackoff|deprecated|mismatch)\b"
    # The same in Chinese (no word boundaries there): "reported an error", error, exception.
    r"|报错|錯誤|错误|异常|異常",
    re.IGNORECASE,
)
# A log line's level, as loggers print it: upper case, then spaces or a bracket.
_LOG_LEVEL = re.compile(r"(?:^|\n)[ \t]*\[?(?:DEBUG|INFO|WARN|WARNING|ERROR|FATAL|CRITICAL)\]?[ \t:\[]")
# An HTTP status: after "HTTP" (HTTP 429, HTTP/1.1 401), or opening the text
# ("403 {...}"), or followed by its reason phrase ("404 Not Found").
_HTTP_STATUS = re.compile(
    r"\bHTTP(?:/[0-9.]{1,3})? ?[1-5][0-9]{2}\b|^\s*[45][0-9]{2}\b|\b[45][0-9]{2} [A-Z][a-z]+"
)
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
    """The terms of one text.

    ``indexed``: what the text search looks up (words and CJK 3-character
    windows, 3+ characters each); ``words``: the non-CJK ones among them;
    ``short``: CJK 2-character windows. Scoring weighs ``words`` and
    ``short`` (module docstring).
    """

    indexed: tuple[str, ...]
    short: tuple[str, ...]
    words: tuple[str, ...] = ()

    def all(self) -> tuple[str, ...]:
        return self.indexed + self.short


def normalise(text: str) -> str:
    """NFKC and case-folded: how both queries and documents are compared."""
    return unicodedata.normalize("NFKC", text).casefold()


def comparable(text: str) -> str:
    """``normalise(text)`` followed by the English glosses of its Chinese words.

    What a query's terms are looked for in: an English term then finds a
    Chinese text that says the same (``glossary``), and the text's own
    words still match as written. (``guidance`` caches it per candidate text.)
    """
    return glossed(normalise(text))


def glossed(text: str) -> str:
    """``text`` followed by the English glosses of its Chinese words: what is embedded.

    The packaged embedding model reads English; the glosses give it the
    meaning of a Chinese text's everyday technical words.
    """
    english = gloss(normalise(text))
    return f"{text}\n{' '.join(english)}" if english else text


def query_terms(text: str | None, limit: int = MAX_TERMS) -> QueryTerms:
    """The distinct search terms of ``text``, in order of appearance, at most ``limit``.

    The English glosses of its Chinese words (``glossary``) come after its
    own words, so a Chinese query also searches and scores in English.
    """
    if not text:
        return QueryTerms((), ())
    norm = normalise(text)
    indexed: dict[str, None] = {}
    words: list[str] = []
    short: dict[str, None] = {}
    english = gloss(norm)
    ascii_text = f"{norm} {' '.join(english)}" if english else norm
    # Only the first ``limit`` distinct terms of each kind are kept, so the
    # collection stops there: a 3M-character query must not build millions
    # of windows to keep 48 of them.
    for match in _WORD.finditer(ascii_text):
        if len(indexed) >= limit:
            break
        word = match.group(0).strip("-_")
        keep = len(word) >= 3 and word not in _STOP and not (word.isdigit() and len(word) > 6)
        word = stem(word) if keep else word
        if keep and word not in indexed:
            indexed[word] = None
            words.append(word)
    for match in _CJK.finditer(norm):
        if len(indexed) >= limit and len(short) >= limit:
            break
        run = match.group(0)
        _windows(run, 2, short, limit)
        _windows(run, 3, indexed, limit)
    kept = list(indexed)[:limit]
    return QueryTerms(tuple(kept), tuple(list(short)[:limit]), tuple(words[:limit]))


def _windows(run: str, size: int, into: dict[str, None], limit: int) -> None:
    """Add the distinct ``size``-character windows of ``run`` to ``into`` until it holds ``limit``."""
    for i in range(len(run) - size + 1):
        if len(into) >= limit:
            return
        into.setdefault(run[i : i + size], None)


# Suffixes of English inflection and derivation, longest first. Dropping one
# leaves a stem that is still a prefix of the word's other forms, and terms
# are matched at the start of words: "cancel" finds canceling, cancelled,
# cancels. A final "e" is kept (stripe is not strip).
_SUFFIXES = ("ations", "ation", "ings", "ing", "ions", "ion", "ies", "ed", "es", "s")
_MIN_STEM = 4
# Endings that look like a plural but are not one (status, access, redis).
_NOT_PLURAL = ("ss", "us", "is")


def stem(word: str) -> str:
    """A light stem of a lower-case English word: a prefix shared by its forms.

    Only plain words of letters are cut (identifiers, flags and codes must
    match as written), and never below four letters; a doubled final
    consonant is undoubled (cancell -> cancel). Deterministic, no lookups:
    a cheap, predictable approximation of a stemmer, enough for matching
    word prefixes (``contains_term``).
    """
    if not word.isalpha() or not word.isascii() or len(word) <= _MIN_STEM:
        return word
    for suffix in _SUFFIXES:
        if not word.endswith(suffix):
            continue
        if suffix in ("s", "es") and word.endswith(_NOT_PLURAL):
            return word
        base = word[: -len(suffix)]
        if len(base) > _MIN_STEM and base[-1] == base[-2] and base[-1] not in "aeiou":
            base = base[:-1]
        if len(base) >= _MIN_STEM:
            return base
    return word


def contains_term(text: str, term: str) -> bool:
    """Whether ``term`` occurs in ``text`` (both normalised) at the start of a word.

    A word term is a prefix of a word of the text ("refund" in "refunded",
    never "fund" in "refunded"); a Chinese term anywhere (no spaces there).
    Linear: ``str.find`` from one hit to the next.
    """
    start = text.find(term)
    if start < 0 or not term[0].isascii() or not term[0].isalnum():
        return start >= 0
    while start >= 0:
        if start == 0 or not text[start - 1].isalnum():
            return True
        start = text.find(term, start + 1)
    return False


def _is_error_identifier(token: str) -> bool:
    if len(token) < 5:
        return False
    if token.endswith(("Error", "Exception")) and token[0].isupper() and token not in ("Error", "Exception"):
        return True  # an exception class: AuthenticationError, UnpicklingError
    if "_" in token.strip("_") and token.isupper() and any(c.isalpha() for c in token):
        return True  # an error code: ERR_PNPM_UNSUPPORTED_ENGINE, NODE_MODULE_VERSION
    return _CODE_WITH_NUMBER.fullmatch(token) is not None  # GH013, TS2307, E0382


def error_identifiers(text: str | None) -> tuple[str, ...]:
    """Error codes and exception class names in ``text``, as written, at most eight.

    Two texts that name the same one are about the same problem, whatever
    else they share or do not share (ALGORITHMS.md, "Recall").
    """
    if not text:
        return ()
    found: dict[str, None] = {}
    for match in _IDENT_TOKEN.finditer(text):
        token = match.group(0)
        if _is_error_identifier(token):
            found.setdefault(token, None)
            if len(found) >= _MAX_IDENTIFIERS:
                break
    return tuple(found)


def is_tool_report(text: str | None) -> bool:
    """Whether ``text`` carries a tool's report: an error word, code or class, a log level, an HTTP status.

    A query that does is *about what the tool reported*: a repair that never
    saw that report is a different problem, however alike the situations
    are (ALGORITHMS.md, "Recall"). A query in the caller's own words carries none.
    """
    if not text:
        return False
    return (
        _REPORT_WORD.search(text) is not None
        or _LOG_LEVEL.search(text) is not None
        or _HTTP_STATUS.search(text) is not None
        or bool(error_identifiers(text))
    )
