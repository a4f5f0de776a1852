"""Values given right after a secret's name: assignments and flags by name.

``DB_PASSWORD=…``, ``"api_key": "…"``, ``secret: …``, ``Password=…;`` in a
connection string, ``--db-password …``, ``-storepass …``: the name stays
(the text still says what was there) and the value goes, unless a filter
calls it a placeholder.

Linear: the names are found with ``str.find`` on the lower-cased text, each
pattern is tried once at a name's word and reads a bounded stretch after
it, and where a hit's line and word start is found by searching forward
from the previous hit, never back to the start (``_Starts``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .engine import Detector, Scan, Span
from .filters import is_placeholder, is_prose_word

__all__ = ["NamedValues"]

# A name that ends in a secret's word, right before ":" or "=".
NAME_WORDS = ("pass", "pwd", "secret", "token", "key", "credential", "dsn", "connection", "auth", "psk")
_ASSIGNMENT = re.compile(
    r"(?:password|passwd|passphrase|pass|pwd|secret|token|key|credentials|credential|dsn"
    r"|connection_string|connectionstring|connection-string|authtok|auth|psk)"
    # "s" and "[0]": "clientPasswords[0]=…"; "secret_key_base" (Rails); PHP's "=>", a full-width colon
    r"((?:s|_base)?(?:\[[0-9]{1,3}\])?\\?[\"']?[ \t]{0,24}+(?:=>|[:=：])[ \t]{0,4}+)"
    # a quote may be escaped: JSON inside a JSON string ("SecretString": "{\"password\":\"…\"}")
    r"(\\?[\"']|)([^\s\"'`,;&<>…，。；！？、（）「」]{1,512}+)"
)
# What must come before "key" for it to name a secret ("api_key", not "sort_key").
_SETTING_WORD = re.compile(r"[a-z]{2,12}")
_SECRET_REF = re.compile(r"(?:existing|kube|k8s|use|from|ref)[_\-.]?$")
_PAGE_TOKEN = re.compile(r"(?:page|cursor|continuation|pagination|sync|resume|idempotency|next|etag)[_\-.]?$")
_KEY_KIND = re.compile(
    r"(?:api|access|private|auth|account|signing|encryption|master|session|secret|storage|license|app|client"
    r"|consumer|jwt|hmac|cookie|webhook|service|subscription|admin|write|read|deploy|sas|shared|integration"
    r"|routing)[_\-. ]?$"
)
# Command-line flags followed by a blank: "--password hunter2", "--db-password", "-storepass".
_FLAG = re.compile(
    r"-(-?(?:[a-z0-9]{1,24}[\-_]?){0,3}?(?:password|passwd|pass|passin|passout|token|secret|api-key|apikey"
    r"|private-key|passphrase|pwd)[ \t]{1,4}+)([\"']?)(?!-)([^\s\"']{1,512}+)"
)
_NAME_CAP = 128


class NamedValues(Detector):
    """The value after a secret-named key, setting, variable or flag."""

    name = "named_values"
    examples = (
        ("DB_PASSWORD=hunter2!x\nnext line", "hunter2!x"),
        ('{"api_key": "Zq7LmR2xWv9K"}', "Zq7LmR2xWv9K"),
        ("Server=db;Database=app;User Id=sa;Password=Tr0ub4dor&3;", "Tr0ub4dor&3"),
        ("helm install x --set a.passwords[0]=Zq7LmR2x", "Zq7LmR2x"),
        ("keytool -list -storepass Zq7LmR2x", "Zq7LmR2x"),
        ("mysqldump --password Zq7LmR2x app", "Zq7LmR2x"),
        ('[client]\npassword = "Xy7#kq2Lm9"', "Xy7#kq2Lm9"),
        ("Algolia Admin API Key：2cd8050243a35193456ef3960ceb32a8", "2cd8050243a35193456ef3960ceb32a8"),
        ("'auth.adminpassword' => 'eU4j8eT6=u@h0uTie4',", "eU4j8eT6=u@h0uTie4"),
        ("ldap_default_authtok = 5D!RH+WGUTzDw-k=1", "5D!RH+WGUTzDw-k=1"),
        ('network={\n    psk="WsleNjx@53bx^yf4"\n}', "WsleNjx@53bx^yf4"),
    )
    lookalikes = (
        "password: ********",
        "API_KEY=YOUR_API_KEY",
        "api_key: Optional[str] = None",
        "password = os.environ['DB_PASSWORD']",
        "max_tokens: 4096",
        "sort_key=created_at",
        "Run docker login -u bot -p ***\nWARNING! Using --password via the CLI is insecure.",
        "next_page_token=CiAKGjBpNDd2Nmp2Zml2cXRtcGVuOHI",
        "passwd: files",
        "key_mgmt=WPA-PSK",
        "the primary key: id",
        "password: ${DB_PASSWORD:?must be set}",
        "ARN：arn:aws:secretsmanager:ap-northeast-1:308195021705:secret:prod/db-AbC123",
        "private key: (hidden)",
        "password = op://Production/Postgres/password",
        '{"id"=>"472d93f9", "authenticity_token"=>"[FILTERED]"}',
    )

    def spans(self, scan: Scan) -> Iterable[Span]:
        low, text = scan.low, scan.text
        hits: list[int] = []
        for word in NAME_WORDS:
            at = low.find(word)
            while at != -1:
                hits.append(at)
                at = low.find(word, at + 1)
        if not hits:
            return
        covered = 0
        starts = _Starts(low)
        for at in sorted(set(hits)):
            if at < covered:
                continue
            span = _assignment_value(low, text, at, starts) or _flag_value(low, text, at)
            if span is not None:
                yield span
                covered = span[1]


class _Last:
    """The last position of ``char`` before a growing index: each part of the text is searched once."""

    __slots__ = ("char", "seen", "text", "upto")

    def __init__(self, text: str, char: str) -> None:
        self.text, self.char, self.seen, self.upto = text, char, -1, 0

    def before(self, at: int) -> int:
        if at < self.upto:  # not the ascending order hits come in: search afresh
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


def _not_a_secret_name(low: str, at: int, match: re.Match[str], starts: _Starts) -> bool:
    word = low[at : match.start(1)]
    before = low[max(0, at - 16) : at]
    return (
        (word == "key" and not _KEY_KIND.search(before))
        or (word in ("pass", "auth") and before[-1:].isalpha())  # "bypass", "compass", "oauth"
        or (match.group(1).startswith("s") and word in ("key", "token", "pass"))  # "max_tokens: 4096"
        or (word == "secret" and _SECRET_REF.search(before) is not None)  # "existingSecret=db-creds"
        or (word == "token" and _PAGE_TOKEN.search(before) is not None)  # a position, not a credential
        or (word == "auth" and match.end(3) - match.start(3) < 12)  # "auth: jwt": a setting
        or _in_arn(low, at)  # "arn:…:secret:prod/db": a resource's name
        or low.startswith("${", starts.word(at))  # "${DB_PASSWORD:?must be set}": a shell expansion
    )


def _in_arn(low: str, at: int) -> bool:
    # The ARN's start within its own stretch of non-blank text (bounded: an ARN is short).
    start = low.rfind("arn:", max(0, at - 160), at)
    return start != -1 and not any(ch.isspace() for ch in low[start:at])


def _assignment_value(low: str, text: str, at: int, starts: _Starts) -> Span | None:
    match = _ASSIGNMENT.match(low, at)
    if match is None or _not_a_secret_name(low, at, match, starts):
        return None
    value = text[match.start(3) : match.end(3)]
    # The value may run into the brackets around it ("get(token)]"), or be one ("[FILTERED]").
    if is_placeholder(value.rstrip(")]}:")) or is_placeholder(value) or value.startswith("-----"):
        return None
    if not value.strip("={["):
        return None
    if (":" in match.group(1) or "：" in match.group(1)) and _SETTING_WORD.fullmatch(value):
        return None  # "passwd: files", "credentials: include": a setting's word
    if _line_assignment(low, at, starts.line(at)):
        # NAME=value on a line of its own (.env, shell): the value runs to the first blank.
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

    Read backwards over the name (at most ``_NAME_CAP`` characters) and the
    blanks before it, never over the whole line.
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


def _blanks_before(low: str, i: int, start: int) -> int:
    while i > start and low[i - 1].isspace():
        i -= 1
    return i


def _flag_value(low: str, text: str, at: int) -> Span | None:
    start = at
    while start > 0 and (low[start - 1].isalnum() or low[start - 1] in "_-") and at - start < 40:
        start -= 1
    while start < at and low[start] != "-":
        start += 1
    if (start >= at and low[start : start + 1] != "-") or (start > 0 and not low[start - 1].isspace()):
        return None
    match = _FLAG.match(low, start)
    if match is None:
        return None
    value = text[match.start(3) : match.end(3)]
    if is_placeholder(value) or is_prose_word(value):
        return None  # "--password via the CLI is insecure": prose about the flag
    return match.start(3), match.end(3)
