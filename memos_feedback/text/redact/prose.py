"""Secrets told in sentences: "the password is …", "user admin / S3cret!".

Only a value that looks like a credential goes (a digit, or both cases and
a symbol): "the token is expired." is prose.
"""

from __future__ import annotations

import re

from .engine import Span
from .filters import is_placeholder
from .rules import Rule, RuleDetector

__all__ = ["ProseSecrets"]

_PROSE = re.compile(
    r"\b(?:password|passphrase|passcode|token|secret|api key|access key|secret key)"
    r"(?:[ \t]{1,4}+(?:for|of)[ \t]{1,4}+[^\s]{1,64}+)?[ \t]{1,4}+"
    r"(?:is|was|是|为|改成|改为|改為)[ \t]{1,4}+([!-~]{6,256}+)",
    re.IGNORECASE,
)
# A user and a password side by side after a word for account: "admin / S3cret!", "账号 root 密码 …".
_ACCOUNT_PAIR = re.compile(
    r"(?:账户|账号|帐号|用户名|用户|(?<![A-Za-z])(?:login|account|user(?:name)?))"
    r"[ \t:：]{1,4}+([A-Za-z0-9_.@\-]{1,64}+)[ \t]{0,4}+(?:/|:|：)[ \t]{0,4}+([!-~]{6,256}+)",
    re.IGNORECASE,
)
_ACCOUNT_WORDS = ("账户", "账号", "帐号", "用户", "login", "account", "user")
# "root / %T-EP*58eh", "ops@acme.io / zQ_s=M+?N": a name, a spaced slash, and a value with a
# letter, a digit and a symbol no word or path holds.
_SLASHED_PAIR = re.compile(r"(?<![\w@.\-\]])[\w.@\-]{2,64}+[ \t]{1,4}+/[ \t]{1,4}+([!-~]{8,128}+)")
_SYMBOLS = frozenset("!@#$%^&*+=?~")
_KEBAB = re.compile(r"[a-z]{1,32}(?:-[a-z0-9]{1,32}){1,8}")
_TRAILING = ".,;:!?)"


def _told(match: re.Match[str], group: int) -> bool:
    value = match.group(group).rstrip(_TRAILING)
    has_digit = any(ch.isdigit() for ch in value)
    mixed = value != value.lower() and value != value.upper() and not value.isalnum()
    return not (is_placeholder(value) or len(value) < 6 or not (has_digit or mixed) or value.isdigit())


def _without_trailing(match: re.Match[str], group: int) -> Span:
    start = match.start(group)
    return start, start + len(match.group(group).rstrip(_TRAILING))


# "account id: …", "user name: …": a field's name, not a user.
_FIELD_WORDS = frozenset({"id", "name", "no", "number", "type", "email", "key", "uid", "group", "role"})


def _paired(match: re.Match[str], group: int) -> bool:
    if match.group(1).casefold() in _FIELD_WORDS:
        return False
    value = match.group(group)
    # A path ("user/repo"), a port, a word or a region ("us-east-1") is no
    # password: it needs a digit and a letter, and more than kebab-case.
    return (
        any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
        and "/" not in value
        and _KEBAB.fullmatch(value) is None
        and not is_placeholder(value)
    )


def _slashed(match: re.Match[str], group: int) -> bool:
    value = match.group(group).rstrip(".,;:)")
    return (
        any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
        and any(c in _SYMBOLS for c in value)
        and "/" not in value
        and not value.startswith("-")  # "--author=ann / --since=2.weeks": the next option
        and not is_placeholder(value)
    )


def _slashed_span(match: re.Match[str], group: int) -> Span:
    start = match.start(group)
    return start, start + len(match.group(group).rstrip(".,;:)"))


class ProseSecrets(RuleDetector):
    """Passwords and tokens given in a sentence, or beside a user's name."""

    name = "prose"
    rules = (
        Rule(_PROSE, guard=("pass", "token", "secret", " key"), accept=_told, span=_without_trailing),
        Rule(_ACCOUNT_PAIR, group=2, guard=_ACCOUNT_WORDS, pre="/:：", accept=_paired),
        Rule(_SLASHED_PAIR, guard=(" / ",), accept=_slashed, span=_slashed_span),
    )
    examples = (
        ("the password for root is Tg4#mWq92", "Tg4#mWq92"),
        ("FYI the token is Zq7LmR2xWv9K.", "Zq7LmR2xWv9K"),
        ("login: admin / S3cret!2024", "S3cret!2024"),
        ("root / %T-EP*58ehN+2L^p   这是跳板机的", "%T-EP*58ehN+2L^p"),
        ("the staging admin is ops@acme.io / zQ_s=M+?N?6nj — keep it", "zQ_s=M+?N?6nj"),
    )
    lookalikes = (
        "the token is expired.",
        "the password is stored in the vault",
        "user: ann/dotfiles",
        "account: prod / us-east-1",
        "account id: 0d0219b2161e59b87332ba060fa70f8a",
        "read / write access for 2 users",
        "throughput 120 / 3.5 = 34 req/s",
        "git log --author=ann / --since=2.weeks",
    )
