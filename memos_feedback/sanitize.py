"""``sanitize_line``: make untrusted text safe to write as one line of guidance.

Everything a repair writes comes from places we do not control: the LLM's
reply, the agent's own output, the user's message. Those lines end up inside
policy boundaries that a later prompt reads, so a line must not be able to
start a new block, pose as another role, carry a fake ``@repair`` marker or
leak a credential that happened to be printed in a trace.

Steps, in order (each one is a single linear pass; no pattern has nested
quantifiers, and the input is cut to ``SCAN_LIMIT`` characters first):

1. cut to ``SCAN_LIMIT``;
2. fold look-alikes of ASCII letters, digits and markup characters
   (full-width ``＠ｒｅｐａｉｒ``, mathematical bold letters) to ASCII, so
   they are caught like the plain form — other characters, such as Chinese
   full-width punctuation or ``…``, are kept as written; drop format
   characters (zero-width spaces, bidi overrides) so they cannot split a
   marker; turn other control characters and line separators into spaces;
3. drop HTML/XML tags and special-token look-alikes (``<|im_start|>``),
   back-ticks (code fences), JSON-ish objects that look like a repair
   block, and every ``@repair``;
4. redact obvious secrets to ``[redacted]``;
5. collapse whitespace, drop role prefixes (``system:``) at the start;
6. repeat 3–5 until nothing changes (a removed marker can expose a role
   prefix: ``@repair system: …``), at most ``_ROUNDS`` times;
7. cap the length, ending with ``…`` when cut — never inside a
   ``[redacted]``.

The result is a fixed point: ``sanitize_line(sanitize_line(x)) ==
sanitize_line(x)``, so text that was sanitised once (a stored repair read
back into a new block) is not changed again.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from .errors import InvalidInputError

__all__ = ["DEFAULT_CAP", "ELLIPSIS", "REDACTED", "SCAN_LIMIT", "check_text", "sanitize_line"]

DEFAULT_CAP = 240
SCAN_LIMIT = 8192
REDACTED = "[redacted]"
ELLIPSIS = "…"

# Line breaks, tabs and other controls become a space (words on either side
# stay apart). Invisible format characters are removed outright: replacing them with a
# space would still let "@re<ZWSP>pair" read as a marker to a tolerant model,
# and removing them lets step 3 see the real word.
_DROP_CATEGORIES = frozenset({"Cf", "Cs", "Co", "Cn"})
# Markup characters whose look-alikes are folded to ASCII (letters and digits are too).
_FOLDED = frozenset("@<>`{}|")

# A tag is "<" + a name-ish start + anything but angle brackets, bounded.
# The character class excludes "<" and ">", so each scan stops at the next
# bracket and the whole substitution stays linear.
_TAG = re.compile(r"<\s*[/!?|a-zA-Z][^<>]{0,256}>")
# Chat-template tokens sometimes arrive without brackets after a sloppy cut.
_SPECIAL_TOKEN = re.compile(r"\|\s*(?:im_start|im_end|endoftext|eot_id|start_header_id|end_header_id)\s*\|")
# A flat JSON object (no nested braces) – inspected by a callback that keeps
# ordinary braces such as "{x}" and removes anything that names repair fields.
_FLAT_OBJECT = re.compile(r"\{[^{}]{0,2000}\}")
_REPAIR_KEYS = re.compile(r"preference|anti_pattern|anti-pattern|@repair", re.IGNORECASE)
_REPAIR_MARKER = re.compile(r"@repair", re.IGNORECASE)
_ROLE_PREFIX = re.compile(
    r"^[\s#>*\-\[(]{0,8}(?:system|assistant|user|developer|tool|human|ai|inst|/inst)[\])]?\s*[:：]\s*",
    re.IGNORECASE,
)
_WHITESPACE = re.compile(r"\s+")
# Each round after the first only removes text (a redaction is stable), so
# a few rounds reach the fixed point; the bound keeps the work linear.
_ROUNDS = 6
_LAST_RESORT = re.compile(r"[@<>`{}|:：]")

_SECRET_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Provider API keys (OpenAI "sk-", "sk-proj-", Anthropic "sk-ant-").
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"), REDACTED),
    # AWS access key ids.
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),
    # GitHub and Slack tokens.
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"), REDACTED),
    # Authorization headers.
    (re.compile(r"\b(Bearer)\s+[A-Za-z0-9._~+/=\-]{8,}", re.IGNORECASE), r"\1 " + REDACTED),
    # key=value / key: value for the usual secret names; the key stays so the
    # line still says what was there.
    (
        re.compile(
            r"\b(password|passwd|pwd|passphrase|secret|client_secret|token|access_token|refresh_token"
            r"|auth_token|api[_\-]?key|access[_\-]?key|secret[_\-]?key|private[_\-]?key)"
            r"(\s*[:=]\s*)[\"']?[^\s\"',;&…]{1,512}[\"']?",
            re.IGNORECASE,
        ),
        r"\1\2" + REDACTED,
    ),
)
# Runs of base64/hex alphabet; a callback decides whether the run is a blob.
_BLOB = re.compile(r"[A-Za-z0-9+/_\-]{32,}={0,2}")
_HEX = re.compile(r"[0-9a-fA-F]{32,}")


# A lone surrogate (half of a UTF-16 pair) is a valid Python str character
# but cannot be encoded as UTF-8: the database driver, an HTTP body or a log
# file would fail on it far from the call that let it in.
_SURROGATE = re.compile("[\ud800-\udfff]")


def check_text(name: str, value: object) -> str:
    """``value`` if it is a str that encodes as UTF-8, else ``InvalidInputError``.

    Used by the public calls that store or send text as given (boundaries,
    repair lines, prompt fields), where silently dropping characters would
    change the caller's data. ``sanitize_line`` instead drops lone
    surrogates, since its output is a cleaned copy anyway.
    """
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str, got {type(value).__name__}")
    match = _SURROGATE.search(value)
    if match is not None:
        raise InvalidInputError(
            f"{name} has a lone surrogate at index {match.start()} (not encodable as UTF-8)"
        )
    return value


def sanitize_line(text: str, cap: int = DEFAULT_CAP) -> str:
    """Return ``text`` as one safe line of at most ``cap`` characters.

    Raises ``InvalidInputError`` when ``text`` is not a str or ``cap`` is not
    a positive int. The result may be empty (all input was markup).
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"text must be a str, got {type(text).__name__}")
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise InvalidInputError(f"cap must be a positive int, got {cap!r}")
    cut = len(text) > SCAN_LIMIT
    line = _fold_and_strip_controls(text[:SCAN_LIMIT])
    for _ in range(_ROUNDS):
        cleaned = _clean(line)
        if cleaned == line:
            break
        line = cleaned
    else:
        # Still changing after every round: only contrived input gets here.
        # Drop every character a marker, tag or role prefix is built from.
        line = _WHITESPACE.sub(" ", _LAST_RESORT.sub(" ", line)).strip()
    return _cap(line, cap, cut)


def _clean(line: str) -> str:
    line = _strip_markup(line)
    line = _redact(line)
    line = _WHITESPACE.sub(" ", line).strip()
    line = _drop_markers(line)
    return _strip_role_prefixes(line)


def _fold_and_strip_controls(text: str) -> str:
    out: list[str] = []
    for ch in text:
        if ch.isascii() and ch.isprintable():
            out.append(ch)
        elif ch.isprintable():
            out.append(_fold(ch))
        elif unicodedata.category(ch) in _DROP_CATEGORIES:
            continue
        else:
            out.append(" ")
    return "".join(out)


@lru_cache(maxsize=4096)
def _fold(ch: str) -> str:
    folded = unicodedata.normalize("NFKC", ch)
    if len(folded) == 1 and folded.isascii() and (folded.isalnum() or folded in _FOLDED):
        return folded
    return ch


def _strip_markup(text: str) -> str:
    text = _TAG.sub(" ", text)
    text = _SPECIAL_TOKEN.sub(" ", text)
    text = text.replace("`", "")
    # Two rounds peel one level of nesting ({"preference": [...], "x": {...}}).
    for _ in range(2):
        text = _FLAT_OBJECT.sub(_drop_repair_object, text)
    return text


def _drop_repair_object(match: re.Match[str]) -> str:
    return " " if _REPAIR_KEYS.search(match.group(0)) else match.group(0)


def _redact(text: str) -> str:
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    text = _BLOB.sub(_redact_blob, text)
    return _HEX.sub(REDACTED, text)


def _redact_blob(match: re.Match[str]) -> str:
    run = match.group(0)
    # A blob has the mixed alphabet of random bytes; a long identifier or a
    # path written in words (site-packages/memos_feedback) does not.
    has_digit = any(c.isdigit() for c in run)
    has_upper = any(c.isupper() for c in run)
    has_lower = any(c.islower() for c in run)
    return REDACTED if has_digit and has_upper and has_lower else run


def _strip_role_prefixes(line: str) -> str:
    # A handful of rounds is enough for "system: assistant: ..."; each round
    # removes at least one character, so this always ends.
    for _ in range(8):
        stripped = _ROLE_PREFIX.sub("", line, count=1)
        if stripped == line:
            break
        line = stripped.lstrip()
    return line


def _drop_markers(line: str) -> str:
    # Removing a marker can join its neighbours into a new one
    # ("@rep@repairair"); instead of looping, drop every "@" in that case.
    line = _REPAIR_MARKER.sub("", line)
    if _REPAIR_MARKER.search(line):
        line = line.replace("@", "")
    return _WHITESPACE.sub(" ", line).strip()


def _cap(line: str, cap: int, cut: bool) -> str:
    if not line or (len(line) <= cap and not cut):
        return line
    if len(line) < cap:
        return line + ELLIPSIS
    end = cap - 1
    # A cut inside "[redacted]" would leave "[re…", which reads as a new
    # secret value on a second pass; cut before the whole marker instead.
    start = line.rfind(REDACTED[0], max(0, end - len(REDACTED) + 1), end)
    if start != -1 and line.startswith(REDACTED, start) and start + len(REDACTED) > end:
        end = start
    return line[:end].rstrip() + ELLIPSIS
