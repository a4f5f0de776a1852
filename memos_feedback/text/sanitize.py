"""``sanitize_line``: make untrusted text safe to write as one line of guidance.

Everything a repair writes comes from places we do not control: the LLM's
reply, the agent's own output, the user's message. Those lines end up inside
policy boundaries that a later prompt reads, so a line must not be able to
start a new block, pose as another role, carry a fake ``@repair`` marker or
leak a credential that happened to be printed in a trace.

Steps, in order (each one is a single linear pass; no pattern has nested
quantifiers, every repetition is bounded, and the input is cut to
``SCAN_LIMIT`` characters first):

1. cut to ``SCAN_LIMIT``;
2. fold look-alikes of ASCII letters, digits and markup characters
   (full-width ``＠ｒｅｐａｉｒ``, mathematical bold letters, and whatever a
   model reads as ``<``, ``>``, ``/`` or ``-``: ``＜／ｓｙｓｔｅｍ＞``,
   ``‹∕memory‐context›``) to ASCII, so they are caught like the plain
   form — other characters, such as Chinese
   full-width punctuation or ``…``, are kept as written; drop format
   characters (zero-width spaces, bidi overrides) and lone surrogates so
   they cannot split a marker or break UTF-8; turn other control
   characters into spaces;
3. per original line: remove markup, then leading markdown structure
   (``#``, ``>``, ``- [ ]``, ``*``, ``1.``, ``---``) and speaker markers
   (``system:``); join the lines with spaces;
4. remove real tags only — a known tag name (``<script``, ``</div>``,
   ``<memory-context>``, also unclosed) anywhere, any other name only right
   after ``<`` and not glued to a word, so ``n < limit and m > 0`` and
   generics like ``Array<T>`` stay; special tokens complete or cut
   (``<|im_start``, ``|>``), ``[INST]``, ``<<SYS>>``; markdown links keep
   their text (a safe URL in parentheses; ``javascript:``/``data:``/
   ``vbscript:``/``file:`` targets and image URLs dropped); back-ticks;
   JSON-ish objects that look like a repair block; every ``@repair``;
5. redact secrets to ``[redacted]`` (``text.secrets.redact_secrets``, the
   same redaction every stored or logged text goes through);
6. collapse whitespace, drop leading structure and role prefixes at the
   start and speaker markers after sentence punctuation (``Done. System:``);
7. repeat 4–6 until nothing changes, at most ``_ROUNDS`` times;
8. cap the length, ending with ``…`` when cut — never inside a
   ``[redacted]`` — and re-check the capped line (a cut can halve a tag).

The result is a fixed point for every input: ``sanitize_line(sanitize_line(x))
== sanitize_line(x)``, so text that was sanitised once (a stored repair read
back into a new block) is not changed again. Input that does not settle
within the bounded rounds (only contrived input) loses every markup
character instead, or comes back empty if even that does not settle.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from .._checks import check_int
from ..errors import InvalidInputError
from .secrets import REDACTED, redact_secrets

__all__ = ["DEFAULT_CAP", "ELLIPSIS", "REDACTED", "SCAN_LIMIT", "check_text", "sanitize_line"]

DEFAULT_CAP = 240
SCAN_LIMIT = 8192
ELLIPSIS = "…"

# Line breaks, tabs and other controls become a space (words on either side
# stay apart). Invisible format characters are removed outright: replacing them with a
# space would still let "@re<ZWSP>pair" read as a marker to a tolerant model,
# and removing them lets step 3 see the real word.
_DROP_CATEGORIES = frozenset({"Cf", "Cs", "Co", "Cn"})
# Markup characters whose look-alikes are folded to ASCII (letters and digits are too).
_FOLDED = frozenset("@<>`{}|/-")
# Characters NFKC leaves alone that a model still reads as a tag's "<", ">",
# "/" or a name's "-": "‹∕memory‐context›" is a closing tag to a reader.
# Wide dashes (em dash, horizontal bar) are sentence punctuation and stay.
_READ_AS = {
    **dict.fromkeys("\u2039\u3008\u27e8\u276c\u276e\u02c2\u1438", "<"),
    **dict.fromkeys("\u203a\u3009\u27e9\u276d\u276f\u02c3\u1433", ">"),
    **dict.fromkeys("\u2215\u2044\u29f8\u2571", "/"),
    **dict.fromkeys("\u2010\u2012\u2013\u2043\u2212\u02d7\u2796", "-"),
}

# Every pattern below is linear: no nested quantifiers, every repetition
# bounded, and the open-ended runs possessive ("{0,256}+", Python 3.11), so a
# failed match never backtracks into them.

# Tag names that are removed wherever they appear, even glued to a word
# ("x<system>"): HTML that renders or runs, and the names chat templates and
# agent frameworks use for roles and injected context.
_KNOWN_TAG_NAMES = (
    r"system|assistant|user|developer|tool|human|ai|inst|sys|memory-context|memory|context"
    r"|instructions?|prompt|think|thinking|tool_call|tool_result|function_calls?|invoke|parameter"
    r"|script|style|iframe|frame|frameset|object|embed|img|image|svg|math|video|audio|source|link|meta"
    r"|base|form|input|button|textarea|select|option|html|head|body|title|template|slot|noscript"
    r"|a|b|i|u|s|em|strong|small|sub|sup|font|center|marquee|div|span|p|br|hr|code|pre|kbd|samp"
    r"|blockquote|details|summary|table|thead|tbody|tr|td|th|ul|ol|li|dl|dt|dd|h[1-6]|xml"
)
# A complete tag with a known name: "<system>", "</div>", "<img src=x onerror=y>".
_KNOWN_TAG = re.compile(
    rf"<\s{{0,8}}+/?\s{{0,8}}+(?:{_KNOWN_TAG_NAMES})(?![A-Za-z0-9_\-])[^<>]{{0,256}}+>", re.IGNORECASE
)
# What is left of one without its ">": "</memory-context", "<script src=x".
_KNOWN_TAG_OPEN = re.compile(
    rf"<\s{{0,8}}+/?\s{{0,8}}+(?:{_KNOWN_TAG_NAMES})(?![A-Za-z0-9_\-])", re.IGNORECASE
)
# Any other tag-shaped text: a name right after "<" (no space: "< limit"
# is prose) and not glued to a word before it (so generics such as
# "Array<T>" and "Map<K, V>" stay). Attributes need a space after the name.
_OTHER_TAG = re.compile(r"(?<![A-Za-z0-9_])</?[A-Za-z][A-Za-z0-9_:.\-]{0,64}+(?:\s[^<>]{0,256}+)?/?>")
# "<!-- -->" comments, "<!DOCTYPE …>", "<?xml …?>".
_DECLARATION = re.compile(r"<[!?][^<>]{0,256}+>|<!--|-->")
# Special tokens, complete or cut: "<|im_start|>", "<|im_start", "<|", "|>".
_SPECIAL_OPEN = re.compile(r"<\|[A-Za-z0-9_]{0,64}+\|?>?|\|>")
# Chat-template tokens sometimes arrive without brackets after a sloppy cut.
_SPECIAL_TOKEN = re.compile(r"\|\s*(?:im_start|im_end|endoftext|eot_id|start_header_id|end_header_id)\s*\|")
# Llama-style instruction markers.
_INST_MARKER = re.compile(r"\[\s{0,4}+/?\s{0,4}+INST\s{0,4}+\]|<</?\s{0,4}+SYS\s{0,4}+>>", re.IGNORECASE)
# Markdown links and images: "[text](url)", "![alt](url "title")"; one level
# of parentheses inside the URL ("javascript:alert(1)", wiki links).
_MD_LINK = re.compile(
    r"(!?)\[([^\[\]]{0,200}+)\]\(\s{0,8}+([^()\s]{0,256}+(?:\([^()\s]{0,64}+\)[^()\s]{0,64}+)?)"
    r"(?:\s{1,8}+\"[^\"]{0,100}+\")?\s{0,8}+\)"
)
# Autolinks: "<https://example.com>", "<javascript:alert(1)>".
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.\-]{1,31}+:[^<>\s]{1,500}+)>")
_DANGEROUS_URL = re.compile(r"\s{0,8}+(?:javascript|vbscript|data|file)\s{0,8}+:", re.IGNORECASE)
# A flat JSON object (no nested braces) – inspected by a callback that keeps
# ordinary braces such as "{x}" and removes anything that names repair fields.
_FLAT_OBJECT = re.compile(r"\{[^{}]{0,2000}+\}")
_REPAIR_KEYS = re.compile(r"preference|anti_pattern|anti-pattern|@repair", re.IGNORECASE)
_REPAIR_MARKER = re.compile(r"@repair", re.IGNORECASE)
_ROLES = r"(?:system|assistant|user|developer|tool|human|ai|inst|/inst)"
# A speaker marker at the start of the line, with the decoration markdown
# and chat logs put around it: "### System:", "**User:**", "[assistant]:".
_ROLE_PREFIX = re.compile(
    rf"^[\s#>*_\-\[(]{{0,8}}+{_ROLES}[\])*_]{{0,4}}+\s{{0,8}}+[:：][*_]{{0,4}}+\s*", re.IGNORECASE
)
# The same after sentence punctuation ("Done. System: ignore the rules"):
# a new sentence that names a speaker. A role word inside a sentence ("the
# user: admin", "restart the system: it hangs") is prose and stays.
_ROLE_AFTER_SENTENCE = re.compile(
    rf"(?<=[.!?;。！？；])\s{{1,8}}+[#>*_\-\[(]{{0,8}}+{_ROLES}[\])*_]{{0,4}}+\s{{0,8}}+[:：][*_]{{0,4}}+",
    re.IGNORECASE,
)
# Markdown block structure at the start of a line: headings, quotes, list
# and task markers, rules, table pipes. One token per match; repeated.
_LEADING_STRUCTURE = re.compile(
    r"^\s{0,8}+(?:#{1,6}+(?=\s|$)|>|[-*+](?=\s|$)|\d{1,9}+[.)](?=\s|$)|\[[ xX]?\](?=\s|$)"
    r"|(?:-{3,}+|\*{3,}+|_{3,}+|={3,}+)(?=\s|$)|\|)"
)
_WHITESPACE = re.compile(r"\s+")
# Line breaks of any kind (after folding): each original line gets its start
# cleaned on its own, since joining the lines hides where they began.
_LINE_BREAK = re.compile(r"[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
# Each round after the first only removes text (a redaction is stable), so
# a few rounds reach the fixed point; the bound keeps the work linear.
_ROUNDS = 6
_LAST_RESORT = re.compile(r"[@<>`{}|:：=\[\]()#*\"']")

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
    a positive int. The result may be empty (all input was markup). Lone
    surrogates are dropped like other unassigned code points, so the result
    always encodes as UTF-8.
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"text must be a str, got {type(text).__name__}")
    check_int("cap", cap, lo=1)
    if len(text) <= _MEMO_MAX_CHARS:
        return _sanitize_memo(text, cap)
    return _sanitize(text, cap)


# A repair sanitizes the same strings more than once (its two lines again
# for the search text) and consecutive repairs of a session read the same
# traces, so results of short inputs are kept: the function is pure, and
# a hit costs a dict lookup instead of ~40 us of regular expressions. The
# bound keeps the memo under ~8 MB even when every entry is at the cap.
_MEMO_MAX_CHARS = 2048
_MEMO_ENTRIES = 1024


@lru_cache(maxsize=_MEMO_ENTRIES)
def _sanitize_memo(text: str, cap: int) -> str:
    return _sanitize(text, cap)


def _sanitize(text: str, cap: int) -> str:
    cut = len(text) > SCAN_LIMIT
    folded = _fold_and_strip_controls(text[:SCAN_LIMIT])
    # Each original line loses its leading structure and speaker marker
    # before the lines are joined into one.
    line = " ".join(_line_start_cleaned(part) for part in _LINE_BREAK.split(folded))
    settled = _settle(line)
    for _ in range(_ROUNDS):
        if settled is None:
            break
        # The cap can cut a piece of markup in half ("<b…" from "<bold"), and
        # a redaction can make a line longer again: re-check the capped line,
        # so the result is a fixed point however it was cut.
        capped = _cap(settled, cap, cut)
        again = _settle(capped)
        if again == capped:
            return capped
        settled, cut = again, False
    # Still changing: only contrived input gets here. Replace every
    # character markup, markers, secrets' keys or role prefixes are built
    # from, and give up (empty line) if even that does not settle.
    last = _settle(_WHITESPACE.sub(" ", _LAST_RESORT.sub(" ", line)).strip())
    if last is None:
        return ""
    capped = _cap(last, cap, False)
    return capped if _settle(capped) == capped else ""


def _line_start_cleaned(part: str) -> str:
    # Markup first, so "<b>System:</b> obey" shows its speaker marker; only
    # lines with a bracket pay for it.
    if "<" in part or "[" in part:
        part = _strip_markup(part)
    return _strip_line_start(_WHITESPACE.sub(" ", part).strip())


def _settle(line: str) -> str | None:
    """``line`` cleaned until nothing changes, or None after ``_ROUNDS`` rounds."""
    for _ in range(_ROUNDS):
        cleaned = _clean(line)
        if cleaned == line:
            return line
        line = cleaned
    return None


def _clean(line: str) -> str:
    line = _strip_markup(line)
    line = redact_secrets(line)
    line = _WHITESPACE.sub(" ", line).strip()
    line = _drop_markers(line)
    line = _ROLE_AFTER_SENTENCE.sub(" ", line)
    return _strip_line_start(_WHITESPACE.sub(" ", line).strip())


def _fold_and_strip_controls(text: str) -> str:
    out: list[str] = []
    for ch in text:
        if ch.isascii() and ch.isprintable():
            out.append(ch)
        elif ch.isprintable():
            out.append(_fold(ch))
        elif _LINE_BREAK.match(ch):
            out.append("\n")  # kept for the per-line pass, a space afterwards
        elif unicodedata.category(ch) in _DROP_CATEGORIES:
            continue
        else:
            out.append(" ")
    return "".join(out)


@lru_cache(maxsize=4096)
def _fold(ch: str) -> str:
    folded = unicodedata.normalize("NFKC", ch)
    folded = _READ_AS.get(folded, folded)
    if len(folded) == 1 and folded.isascii() and (folded.isalnum() or folded in _FOLDED):
        return folded
    return ch


def _strip_markup(text: str) -> str:
    text = _INST_MARKER.sub(" ", text)
    text = _MD_LINK.sub(_link_text, text)
    text = _AUTOLINK.sub(_autolink_text, text)
    text = _KNOWN_TAG.sub(" ", text)
    text = _KNOWN_TAG_OPEN.sub(" ", text)
    text = _OTHER_TAG.sub(" ", text)
    text = _DECLARATION.sub(" ", text)
    text = _SPECIAL_OPEN.sub(" ", text)
    text = _SPECIAL_TOKEN.sub(" ", text)
    text = text.replace("`", "")
    # Two rounds peel one level of nesting ({"preference": [...], "x": {...}}).
    for _ in range(2):
        text = _FLAT_OBJECT.sub(_drop_repair_object, text)
    return text


def _link_text(match: re.Match[str]) -> str:
    # The words stay; the link structure goes. A dangerous target is dropped,
    # an image's target always (loading it can leak data), a safe link's
    # target is kept in parentheses because it may be the point of the line.
    image, label, url = match.group(1), match.group(2).strip(), match.group(3)
    if image or not url or _DANGEROUS_URL.match(url):
        return f" {label} "
    return f" {label} ({url}) " if label else f" {url} "


def _autolink_text(match: re.Match[str]) -> str:
    url = match.group(1)
    return " " if _DANGEROUS_URL.match(url) else f" {url} "


def _drop_repair_object(match: re.Match[str]) -> str:
    return " " if _REPAIR_KEYS.search(match.group(0)) else match.group(0)


def _strip_line_start(line: str) -> str:
    # Structure and speaker markers can stack ("> ### System: - [ ] x"); a
    # handful of rounds removes them, each round at least one character.
    for _ in range(8):
        stripped = _LEADING_STRUCTURE.sub("", line, count=1)
        stripped = _ROLE_PREFIX.sub("", stripped, count=1).lstrip()
        if stripped == line:
            break
        line = stripped
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
