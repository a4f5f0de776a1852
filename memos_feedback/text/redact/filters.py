"""Filters: named predicates that say a candidate value is *not* a secret.

A detector finds where a secret would be (after ``password=``, in a URL's
password, after ``-p``); a filter looks at the value found there and says
whether it only stands for a secret: a reference (``$VAR``, ``{{ x }}``, a
path), a mask (``********``, ``****7QXA``), a template or documentation
example (``<token>``, ``YOUR_API_KEY``, ``sk-...``), code (``get_token()``,
``os.environ[…]``), a type annotation or a setting's word. Public material
(public keys, certificates, digests, ids) is filtered by the detectors that
could mistake it for a key (``tokens``, ``keys``), where its context is.

Every predicate is a bounded, linear match on the value alone.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

__all__ = [
    "PLACEHOLDER",
    "REDACTED",
    "Filter",
    "is_code",
    "is_example",
    "is_mask",
    "is_placeholder",
    "is_prose_word",
    "is_reference",
    "is_secret_name",
    "is_template",
    "looks_like_password",
]

REDACTED = "[redacted]"

Filter = Callable[[str], bool]

# A YAML tag ("!Ref DbPassword", "!vault |") and a path ("/run/secrets/db",
# "~/.ssh/id_rsa") say where a secret is, not what it is.
# A parenthesis opens a description ("(hidden)", "(see vault)"); "op://" is a 1Password reference.
_REFERENCE_START = ("$", "{{", "{%", "<", "/", "~/", "./", "../", REDACTED, "env:", "file:",
                    "vault:", "secret:", "ref+", "arn:", "(", "op://")  # fmt: skip
_KEY_FILE = re.compile(r"[A-Za-z0-9_.\-]{1,128}\.(?:pem|key|p12|pfx|jks|keystore|crt|der|json|env|kdbx|gpg)")
# A path of lower-case words ("secret/data/app:password"): where a secret is kept.
_WORD_PATH = re.compile(r"[a-z0-9_\-]{1,64}(?:/[a-z0-9_\-.:#]{1,64}){2,8}")
_ATTRIBUTE = re.compile(r"[A-Za-z_]{1,64}(?:\.[A-Za-z_]{1,64}){1,8}")
_SETTING_WORDS = frozenset(
    {"none", "null", "nil", "true", "false", "str", "bytes", "int", "string", "optional", "undefined",
     "''", '""', "~", "secretstr", "any", "required", "redacted", "hidden", "masked", "changeme", "change_me"}
)  # fmt: skip
# A value that is only a secret's own word ("postgres://user:password@…") names the slot.
_NAME_AS_VALUE = frozenset({"password", "passwd", "pass", "pwd", "secret", "token", "apikey", "api_key"})
# Words that mark an example to be replaced, wherever they are in the value.
_EXAMPLE = re.compile(r"your|replace|placeholder|example|changeme|insert|dummy|redacted|xxxx|\.\.\.|…", re.I)
_MASK = re.compile(r"[*xX•#.\-_ ]{3,}")
# A log's or a framework's stand-in: "[FILTERED]", "[REDACTED]", "[hidden]", "<hidden>".
_BRACKETED = re.compile(r"\[[A-Za-z _\-]{1,24}\]|<[A-Za-z _\-]{1,24}>")
# A mask that shows a token's prefix or last characters ("****7QXA", "ghp_****abcd").
_MASKED_TAIL = re.compile(r"[A-Za-z0-9_\-]{0,12}?[*•]{4,}[A-Za-z0-9]{0,8}")
# An all-capitals name with no digit ("PASSWORD", "YOUR_API_KEY", "HOST"): a variable or a slot.
_CAPS_NAME = re.compile(r"[A-Z][A-Z_\-]{1,63}")
# Code: a call, a subscript or an attribute read ("get_token()", "os.environ[", "cfg.db.password").
# A random value may hold "(" too: a call ends at its bracket or closes it.
_CALL = re.compile(
    r"[A-Za-z_][A-Za-z0-9_.]{0,127}(?:[(\[][A-Za-z0-9_.,\[]{0,64}$|\(.{0,256}\)$|\[.{0,256}\]$|\(.{0,256}\)[.\[])"
)
# "%DB_PASS%", "%(password)s", "!Ref DbPassword", "{password}" (an f-string's field): references.
_TEMPLATE = re.compile(
    r"%[A-Za-z_]{1,64}%|%\([A-Za-z_]{1,64}\)s|![A-Za-z]{2,16}|\{[A-Za-z_][A-Za-z0-9_.]{0,63}\}"
    # "@Microsoft.KeyVault(…)", "@db_password": a reference (a password may start with "@" too)
    r"|@[A-Za-z_][A-Za-z0-9_.:\-]{0,127}(?:\(.{0,512})?"
)


def is_reference(value: str) -> bool:
    """``$VAR``, ``{{ x }}``, a path, a key file's name, ``vault:…``: where a secret is."""
    return (
        not value
        or value.startswith(_REFERENCE_START)
        or _is_word_path(value)
        or _ATTRIBUTE.fullmatch(value) is not None
        or _KEY_FILE.fullmatch(value) is not None
        or not value[0].isascii()  # "你的AccessKeySecret", "<在控制台获取>": a description
    )


def _is_word_path(value: str) -> bool:
    # A path names its parts ("secret/data/app"); a token in slashes has numbers for parts.
    return _WORD_PATH.fullmatch(value) is not None and not any(part.isdigit() for part in value.split("/"))


def looks_like_password(value: str) -> bool:
    """A value a sentence gives as a credential: a digit, or both cases and a symbol; not a number."""
    has_digit = any(ch.isdigit() for ch in value)
    mixed = value != value.lower() and value != value.upper() and not value.isalnum()
    return len(value) >= 6 and (has_digit or mixed) and not value.isdigit()


def is_mask(value: str) -> bool:
    """``********``, ``xxxx``, ``****7QXA``: a secret shown masked."""
    return (
        _MASK.fullmatch(value) is not None
        or _MASKED_TAIL.fullmatch(value) is not None
        or _BRACKETED.fullmatch(value) is not None
    )


def is_template(value: str) -> bool:
    """``%DB_PASS%``, ``%(password)s``, ``!Ref X``, ``{password}``, ``@Microsoft.KeyVault(…)``, ``HOST``."""
    return _TEMPLATE.fullmatch(value) is not None or _CAPS_NAME.fullmatch(value) is not None


def is_example(value: str) -> bool:
    """Documentation's stand-ins: ``YOUR_KEY``, ``sk-...``, ``changeme``, the slot's own name."""
    folded = value.casefold()
    return folded in _NAME_AS_VALUE or folded in _SETTING_WORDS or _EXAMPLE.search(value) is not None


def is_code(value: str) -> bool:
    """A call, a subscript or an attribute read: ``get_token()``, ``os.environ["X"]``."""
    return _CALL.match(value) is not None


# The filters every value named a secret goes through, in the order of their cost.
PLACEHOLDER: tuple[Filter, ...] = (is_reference, is_example, is_mask, is_template, is_code)


@functools.lru_cache(maxsize=4096)
def is_placeholder(value: str) -> bool:
    """Whether ``value`` stands for a secret rather than being one (any filter says so).

    Cached: a text that repeats one value (a log line a thousand times) is judged once.
    """
    value = value.strip("\"'`")
    return not value or any(check(value) for check in PLACEHOLDER)


# Words a flag is followed by in prose about it ("Using --password via the CLI is insecure",
# "docker login --password-stdin instead of -p on the command line").
_PROSE_WORDS = frozenset(
    {"via", "on", "in", "is", "the", "with", "from", "for", "or", "and", "flag", "option", "instead", "of",
     "to", "a", "an", "at", "as", "by", "if", "when", "not", "only", "than", "rather", "which", "that", "it",
     "are", "was", "be", "can", "will", "should", "must", "never", "option.", "flag.", "instead.", "here"}
)  # fmt: skip


def is_prose_word(value: str) -> bool:
    """A word of the sentence around a flag's name, not the flag's value."""
    return value.casefold() in _PROSE_WORDS


_SECRET_NAME = re.compile(
    r"pass(?:word|wd|phrase|code)?s?$|pwd|secret|token|api[_\-.]?key|private[_\-.]?key|access[_\-.]?key"
    r"|account[_\-.]?key|credential|auth$"
    r"|(?:auth|secure_auth|logged_in|signing|master|encryption|session|hmac|jwt|app)[_\-.]?(?:key|salt)$",
    re.IGNORECASE,
)
_NOT_A_VALUE_NAME = re.compile(
    r"(?:url|uri|file|path|id|name|user|username|length|len|ttl|expiry|expires|type|count|min|max|policy)$",
    re.IGNORECASE,
)


def is_secret_name(name: str) -> bool:
    """Whether a key, setting or variable called ``name`` holds a secret."""
    return _SECRET_NAME.search(name) is not None and _NOT_A_VALUE_NAME.search(name) is None
