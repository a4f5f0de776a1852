"""Secrets named right before their value: assignments and command-line flags.

``DB_PASSWORD=…``, ``"api_key": "…"``, ``secret: …``, ``--db-password …``,
``-storepass …``: the name stays (the text still says what was there) and
the value becomes ``[redacted]``, unless it is a reference, a mask, an
example or code (``text.secret_forms.is_placeholder``). Part of
``text.secrets.redact_secrets``, which calls ``redact_named`` when the text
holds one of ``NAME_WORDS``.

Linear: the names are found with ``str.find``, each pattern is tried once
at a name's word and reads a bounded stretch after it, and what a rule
needs before a hit (where its line and its word start) is found by
searching forward from the previous hit, never back to the start.
"""

from __future__ import annotations

import re

from .secret_forms import REDACTED, is_placeholder

__all__ = ["NAME_WORDS", "redact_named"]

# A name that ends in a secret's word, right before ":" or "=", matched
# on the lower-cased text at a hit of one of ``NAME_WORDS``; the start of
# the name is whatever precedes the word ("DB_PASSWORD", "webhookSecret").
NAME_WORDS = ("pass", "pwd", "secret", "token", "key", "credential", "dsn", "connection", "auth")
_ASSIGNMENT = re.compile(
    r"(?:password|passwd|passphrase|pass|pwd|secret|token|key|credentials|credential|dsn"
    r"|connection_string|connectionstring|connection-string|auth)"
    # "s" and "[0]": "clientPasswords[0]=…"; "secret_key_base" (Rails)
    r"((?:s|_base)?(?:\[[0-9]{1,3}\])?\\?[\"']?[ \t]{0,24}+[:=][ \t]{0,4}+)"
    # a quote may be escaped: JSON inside a JSON string ("SecretString": "{\"password\":\"…\"}")
    r"(\\?[\"']|)([^\s\"'`,;&<>…，。；！？、（）「」]{1,512}+)"
)
# What must come before "key" for it to name a secret ("api_key", not "sort_key").
_SETTING_WORD = re.compile(r"[a-z]{2,12}")
_SECRET_REF = re.compile(r"(?:existing|kube|k8s|use|from|ref)[_\-.]?$")
_PAGE_TOKEN = re.compile(r"(?:page|cursor|continuation|pagination|sync|resume|idempotency|next|etag)[_\-.]?$")
_KEY_KIND = re.compile(
    r"(?:api|access|private|auth|account|signing|encryption|master|session|secret|storage|license|app|client"
    r"|consumer|jwt|hmac|cookie|webhook|service|subscription|admin|write|read|deploy|sas|shared)[_\-.]?$"
)
# Command-line flags followed by a space: "--password hunter2" (on the lower-cased text).
# The flag's name ends in a secret's word ("--db-password", "-storepass", "--api-key").
_FLAG = re.compile(
    r"-(-?(?:[a-z0-9]{1,24}[\-_]?){0,3}?(?:password|passwd|pass|passin|passout|token|secret|api-key|apikey"
    r"|private-key|passphrase|pwd)[ \t]{1,4}+)([\"']?)(?!-)([^\s\"']{1,512}+)"
)
# Words a flag is followed by in prose about it ("Using --password via the CLI is insecure").
_PROSE_WORDS = frozenset(
    {"via", "on", "in", "is", "the", "with", "from", "for", "or", "and", "flag", "option"}
)


def redact_named(text: str, low: str) -> str:
    """``text`` with the values of secret-named assignments and flags redacted.

    The names are found with ``str.find`` (C speed), and the patterns are
    only tried where a name's word is: a 10 kB log with no secret-looking
    name costs a few microseconds.
    """
    hits: set[int] = set()
    for word in NAME_WORDS:
        at = low.find(word)
        while at != -1:
            hits.add(at)
            at = low.find(word, at + 1)
    spans: list[tuple[int, int]] = []
    covered = 0
    # Where a hit's line and word start: found by searching forward from
    # the last hit, never back to the text's start from every hit (that
    # was quadratic on a long line of "password=x password=x …").
    starts = _Starts(low)
    for at in sorted(hits):
        if at < covered:
            continue
        span = _assignment_value(low, text, at, starts) or _flag_value(low, text, at)
        if span is not None:
            spans.append(span)
            covered = span[1]
    if not spans:
        return text
    out, last = [], 0
    for start, end in spans:
        out.append(text[last:start])
        out.append(REDACTED)
        last = end
    out.append(text[last:])
    return "".join(out)


class _Last:
    """The last position of ``char`` before a growing index: each part of the text is searched once."""

    __slots__ = ("char", "seen", "text", "upto")

    def __init__(self, text: str, char: str) -> None:
        self.text, self.char, self.seen, self.upto = text, char, -1, 0

    def before(self, at: int) -> int:
        if at < self.upto:  # not the ascending order ``redact_named`` asks in: search afresh
            return self.text.rfind(self.char, 0, at)
        found = self.text.rfind(self.char, self.upto, at)
        if found != -1:
            self.seen = found
        self.upto = at
        return self.seen


class _Starts:
    """Where the line, and the word (after a blank or a quote), of ascending positions start."""

    __slots__ = ("newline", "quote", "space")

    def __init__(self, low: str) -> None:
        self.newline, self.space, self.quote = _Last(low, "\n"), _Last(low, " "), _Last(low, '"')

    def line(self, at: int) -> int:
        return self.newline.before(at) + 1

    def word(self, at: int) -> int:
        return max(self.space.before(at), self.newline.before(at), self.quote.before(at)) + 1


def _assignment_value(low: str, text: str, at: int, starts: _Starts) -> tuple[int, int] | None:
    match = _ASSIGNMENT.match(low, at)
    if match is None:
        return None
    word = low[at : match.start(1)]
    before = low[max(0, at - 16) : at]
    if word == "key" and not _KEY_KIND.search(before):
        return None
    if word in ("pass", "auth") and before[-1:].isalpha():
        return None  # "bypass", "compass", "oauth"
    if match.group(1).startswith("s") and word in ("key", "token", "pass"):
        return None  # "max_tokens: 4096", "keys: [...]"
    if word == "secret" and _SECRET_REF.search(before):
        return None  # "existingSecret=db-creds", "secretRef": the name of where a secret is
    if word == "token" and _PAGE_TOKEN.search(before):
        return None  # a pagination or idempotency token is a position, not a credential
    if word == "auth" and match.end(3) - match.start(3) < 12:
        return None  # "auth: jwt", "auth: basic": a setting; a credential is longer
    if low.startswith("arn:", starts.word(at)):
        return None  # "arn:aws:secretsmanager:…:secret:prod/db": a resource's name, not its value
    value = text[match.start(3) : match.end(3)]
    if is_placeholder(value.rstrip(")]}:")) or value.startswith("-----") or not value.strip("={["):
        return None
    if ":" in match.group(1) and _SETTING_WORD.fullmatch(value):
        return None  # "passwd: files", "credentials: include": a setting's word
    if _line_assignment(low, at, starts.line(at)):
        # NAME=value on a line of its own (.env, shell): the value runs to the
        # first blank, whatever characters it holds.
        end = match.start(3)
        while end < len(text) and not text[end].isspace():
            end += 1
        return match.start(2), end
    # A quoted value loses its quotes with it ('token="x"' -> 'token=[redacted]').
    quote, end = match.group(2), match.end(3)
    if quote.startswith("\\") and low[end - 1 : end + 1] == quote:
        end -= 1  # the value ran into its escaped closing quote
    if quote and low[end : end + len(quote)] == quote:
        end += len(quote)
    return match.start(2), end


def _line_assignment(low: str, at: int, start: int) -> bool:
    """Whether the name at ``at`` opens its line (``start``), after blanks and an ``export``.

    Read backwards from ``at`` over the name (at most ``_NAME_CAP``
    characters) and the blanks before it, never over the whole line: a long
    line of assignments costs each of them its own characters only.
    """
    if low.find("=", at, at + 40) == -1:
        return False
    i = at
    while i > start and (low[i - 1].isalnum() or low[i - 1] == "_"):
        i -= 1
        if at - i > _NAME_CAP:
            return False
    j = _blanks_before(low, i, start)
    if j == start:
        return True
    if j < i and low[j] == " " and low.endswith("export", start, j):
        return _blanks_before(low, j - 6, start) == start
    return False


_NAME_CAP = 128


def _blanks_before(low: str, i: int, start: int) -> int:
    while i > start and low[i - 1].isspace():
        i -= 1
    return i


def _flag_value(low: str, text: str, at: int) -> tuple[int, int] | None:
    start = at
    while start > 0 and (low[start - 1].isalnum() or low[start - 1] in "_-") and at - start < 40:
        start -= 1
    while start < at and low[start] != "-":
        start += 1
    if start >= at and low[start : start + 1] != "-":
        return None
    if start > 0 and not low[start - 1].isspace():
        return None
    match = _FLAG.match(low, start)
    if match is None:
        return None
    value = text[match.start(3) : match.end(3)]
    if is_placeholder(value) or value in _PROSE_WORDS:
        return None  # "--password via the CLI is insecure": prose about the flag
    return match.start(3), match.end(3)
