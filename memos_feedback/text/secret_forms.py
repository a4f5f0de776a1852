"""The shapes a credential takes by its context: placeholders, name/value entries, tools' flags.

``text.secrets.redact_secrets`` recognises a secret either by its own
format (a documented prefix, a private key block, a random blob) or by what
the text around it says. This module holds the second kind that needs more
than "a secret-named key before ``=`` or ``:``":

* what is *not* a value even where a secret is named: references
  (``$VAR``, ``${VAR}``, ``{{ .Values.x }}``, ``os.environ[…]``), masks
  (``********``), elided or template examples (``sk-...your-key...``,
  ``<token>``, ``YOUR_API_KEY``, ``REPLACE_ME``) and type annotations;
* entries whose *name* is given apart from the value: ``name:
  AWS_SECRET_ACCESS_KEY`` then ``value: …`` (Kubernetes, ECS),
  ``<add key="SmtpPassword" value="…"/>``, ``<password>…</password>``,
  ``<property name="….password">…</property>``;
* command lines whose tool takes a password by a short flag or position
  (``sshpass -p``, ``docker login -p``, ``redis-cli -a``, ``sqlcmd -P``,
  ``ldapsearch -w``, ``rabbitmqctl add_user NAME PASS``, …);
* the partner of a recognised key id (``Client("AC…", "<auth token>")``,
  ``AKIA…:<secret>``): a pair's second half is its secret.

Every pattern is linear and bounded, and each rule leaves ``[redacted]``
alone, so redaction stays idempotent.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "is_placeholder", "is_secret_name", "redact_forms"]

REDACTED = "[redacted]"

# A YAML tag ("!Ref DbPassword", "!vault |") and a path ("/run/secrets/db",
# "~/.ssh/id_rsa") say where a secret is, not what it is.
_REFERENCE_START = ("$", "{{", "{%", "<", "/", "~/", "./", "../", REDACTED, "env:", "file:",
                    "vault:", "secret:", "ref+", "arn:")  # fmt: skip
_KEY_FILE = re.compile(r"[A-Za-z0-9_.\-]{1,128}\.(?:pem|key|p12|pfx|jks|keystore|crt|der|json|env|kdbx|gpg)")
_PLACEHOLDER_WORDS = frozenset(
    {"none", "null", "nil", "true", "false", "str", "bytes", "int", "string", "optional", "undefined",
     "''", '""', "~", "secretstr", "any", "required", "redacted", "hidden", "masked", "changeme", "change_me"}
)  # fmt: skip
# Words that mark an example to be replaced, wherever they are in the value.
_EXAMPLE = re.compile(r"your|replace|placeholder|example|changeme|insert|dummy|redacted|xxxx|\.\.\.|…", re.I)
_MASK = re.compile(r"[*xX•#.\-_ ]{3,}")
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
# A value that is only a secret's own word ("postgres://user:password@…") names the slot.
_NAME_AS_VALUE = frozenset({"password", "passwd", "pass", "pwd", "secret", "token", "apikey", "api_key"})
# A path of lower-case words ("secret/data/app:password"): where a secret is kept.
_WORD_PATH = re.compile(r"[a-z0-9_\-]{1,64}(?:/[a-z0-9_\-.:#]{1,64}){2,8}")
_ATTRIBUTE = re.compile(r"[A-Za-z_]{1,64}(?:\.[A-Za-z_]{1,64}){1,8}")


def is_placeholder(value: str) -> bool:
    """Whether ``value`` stands for a secret rather than being one."""
    value = value.strip("\"'`")
    if not value or value.startswith(_REFERENCE_START):
        return True
    return (
        value.casefold() in _PLACEHOLDER_WORDS
        or value.casefold() in _NAME_AS_VALUE
        or _TEMPLATE.fullmatch(value) is not None
        or _WORD_PATH.fullmatch(value) is not None
        or not value[0].isascii()  # "你的AccessKeySecret", "<在控制台获取>": a description
        or _MASK.fullmatch(value) is not None
        or _MASKED_TAIL.fullmatch(value) is not None
        or _CAPS_NAME.fullmatch(value) is not None
        or _CALL.match(value) is not None
        or _ATTRIBUTE.fullmatch(value) is not None
        or _KEY_FILE.fullmatch(value) is not None
        or _EXAMPLE.search(value) is not None
    )


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


# name: X … value: Y within an entry (YAML list items, JSON objects, XML attributes).
_NAME_VALUE = re.compile(
    r"\b(?:name|key|Name|Key)[\"']?[ \t]{0,4}+[:=][ \t]{0,4}+[\"']?([A-Za-z0-9_.\-]{1,128}+)[\"']?"
    r"[ \t,]{0,8}+(?:\r?\n[ \t\-]{0,40}+)?[\"']?(?:value|Value)[\"']?[ \t]{0,4}+[:=][ \t]{0,4}+([\"']?)"
    r"([^\s\"'<>,}]{1,512}+)"
)
# Code that hands a literal to a secret's name: "setPassword(\"…\")",
# "define('DB_PASSWORD', '…')", "os.environ[\"API_KEY\"] = \"…\"".
_CALL_VALUE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]{0,63}+)\([ \t]{0,4}+()([\"'])([^\"'\s]{4,512}+)\3")
_KEYED_VALUE = re.compile(
    r"()[\"']([A-Za-z0-9_.\-]{1,64}+)[\"'][ \t]{0,4}+(?:,|\][ \t]{0,4}+=)[ \t]{0,24}+"
    r"([\"'])([^\"'\s]{4,512}+)\3(?![ \t]{0,4}+:)"
)
_KEYED_PAIRS = ("',", '",', "']", '"]')
_XML_TAG = re.compile(r"<([A-Za-z][A-Za-z0-9_.:\-]{0,63}+)>([^<\s]{1,512}+)</\1>")
_XML_NAMED = re.compile(r"\bname=[\"']([A-Za-z0-9_.:\-]{1,128}+)[\"'][^<>\n]{0,200}?>([^<\s]{1,512}+)<")
# Tools that take a password by a short flag; the flag, and a word the line must hold.
_TOOL_FLAG = re.compile(
    r"(?<![\w\-])(?:(?:sshpass|mongo(?:sh|dump|restore|export|import)?|(?:un)?zip|7za?)\b[^\n|;&]{0,200}?"
    r"[ \t]-[pP]|(?<![\w\-])login\b[^\n|;&]{0,200}?"
    r"[ \t]-p|(?:redis-cli|keydb-cli|valkey-cli)\b[^\n|;&]{0,200}?[ \t]-a|(?:sqlcmd|bcp|osql|isql)\b"
    r"[^\n|;&]{0,200}?[ \t]-P|ldap[a-z]{0,12}\b[^\n|;&]{0,200}?[ \t]-w"
    r"|openssl\b[^\n|;&]{0,200}?[ \t]-k)[ \t]{1,4}+([\"']?)([^\s\"']{1,256}+)"
)
_TOOLS = ("sshpass", "mongo", "zip", "7z", "login", "redis-cli", "keydb-cli", "valkey-cli", "sqlcmd", "bcp",
          "osql", "isql", "ldap", "openssl")  # fmt: skip
# Tools that take a password as a positional argument: the words before it.
_TOOL_POSITION = re.compile(
    r"(?<![\w\-])(?:rabbitmqctl[ \t]{1,4}+(?:add_user|change_password)"
    r"|htpasswd[ \t]{1,4}+-[a-zA-Z]{0,4}b[a-zA-Z]{0,4}[ \t]{1,4}+\S{1,256}+|net[ \t]{1,4}+user"
    r"|poetry[ \t]{1,4}+config[ \t]{1,4}+http-basic\.\S{1,128}+)"
    r"[ \t]{1,4}+\S{1,128}+[ \t]{1,4}+([\"']?)([^\s\"']{1,256}+)"
)
# A config line "NAME VALUE" with no "=" (redis.conf, .netrc: "login ann password …").
_SPACED = re.compile(
    r"(?:^[ \t]{0,16}+|\blogin[ \t]{1,4}+\S{1,128}+[ \t]{1,4}+)"
    r"(?:requirepass|masterauth|password|passwd|secret)"
    r"[ \t]{1,4}+([\"']?)([^\s\"']{4,256}+)[\"']?[ \t]{0,4}+(?:$|\n|#)",
    re.MULTILINE,
)
# What is echoed into a tool's --password-stdin is the password.
_STDIN = re.compile(
    r"\b(?:echo|printf)[ \t]{1,4}+([\"']?)([^\s\"'|]{1,256}+)[\"']?[ \t]{0,4}+\|[^\n]{0,200}?--password-stdin"
)
# A user and a password side by side after a word for account: "admin / S3cret!", "账号 root 密码 …".
_ACCOUNT_PAIR = re.compile(
    r"(?:账户|账号|帐号|用户名|用户|(?<![A-Za-z])(?:login|account|user(?:name)?))"
    r"[ \t:：]{1,4}+[A-Za-z0-9_.@\-]{1,64}+[ \t]{0,4}+(?:/|:|：)[ \t]{0,4}+([!-~]{6,256}+)",
    re.IGNORECASE,
)
_ACCOUNT_WORDS = ("账户", "账号", "帐号", "用户", "login", "account", "user")
# A session cookie is a login: the values of cookies named for one, on a Cookie line.
_COOKIE = re.compile(
    r"((?:^|[\s\"'])(?:set-)?cookie[\"']?[ \t]{0,4}+:[^\n]{0,2048}?(?<=[:;\s])"
    r"[A-Za-z0-9_.\-]{0,64}(?:sess|sid|auth|token|jwt|remember|csrf|xsrf|login)[A-Za-z0-9_.\-]{0,64}=)"
    r"([^;\s\"']{6,4096}+)",
    re.IGNORECASE,
)
_KEBAB = re.compile(r"[a-z]{1,32}(?:-[a-z0-9]{1,32}){1,8}")
# The second half of a pair whose first half was a recognised key id.
_PARTNER = re.compile(
    re.escape(REDACTED)
    + r"([\"']?[ \t]{0,2}+[,:][ \t]{0,2}+[\"']?)([A-Za-z0-9+/=_\-]{16,128}+)(?![A-Za-z0-9+/=_\-])"
)


# ~/.pgpass lines: host:port:database:user:password.
_PGPASS = re.compile(
    r"^([^\s:#]{1,255}+:(?:[0-9]{1,5}|\*):[^\s:]{1,128}+:[^\s:]{1,128}+:)(\S{1,256}+)$", re.MULTILINE
)
# A command that prints a secret's value: the next line is that value
# ("kubectl get secret … | base64 -d", "vault kv get -field=password", "cat master.key").
_PRINTS_SECRET = re.compile(
    r"^((?:\$|%|>)[ \t][^\n]{0,300}?(?:get[ \t]{1,4}+secret[^\n]{0,300}?(?:base64[ \t]{1,4}+(?:-d|--decode)"
    r"|base64decode|@base64d)|vault[ \t]{1,4}+(?:kv[ \t]{1,4}+get|read)[^\n]{0,200}?-field="
    r"|secrets[ \t]{1,4}+versions[ \t]{1,4}+access|get-secret-value[^\n]{0,200}?--output[ \t]{1,4}+text"
    r"|keyvault[ \t]{1,4}+secret[ \t]{1,4}+show[^\n]{0,200}?tsv|\bop[ \t]{1,4}+read|config:get"
    r"|(?:cat|echo)[ \t]{1,4}+\S{0,200}?(?:\.key|\.pgpass|_key|secret|token|password|passwd|pwd)\b)"
    r"[^\n]{0,300}\n)([^\s$#][^\s]{3,512}+)$",
    re.MULTILINE | re.IGNORECASE,
)
_PRINTS_WORDS = ("secret", "vault", "cat ", "echo ", " op ", "config:get")
# Oracle tools take "user/password@db" as their first argument.
_SLASH_LOGIN = re.compile(
    r"(?<![\w\-])(?:sqlplus|sqlldr|rman|expdp|impdp)[ \t]{1,4}+(?:-[A-Za-z]{1,8}[ \t]{1,4}+){0,2}"
    r"[A-Za-z0-9_$#]{1,64}+/()([^\s@/\"']{1,256}+)"
)
# Cloud AK/SK labels (Huawei, Aliyun, Tencent chats): "AK：…", "SK: …".
_AK_SK = re.compile(
    r"(?<![A-Za-z0-9_])((?:AK|SK)[ \t]{0,4}+[:=：][ \t]{0,4}+)([A-Za-z0-9/+]{16,64}+)(?![A-Za-z0-9/+])"
)


def redact_forms(text: str, low: str) -> str:
    """``text`` with the values of the forms above redacted.

    ``low`` is the lower-cased text, or that of the text before other rules
    replaced parts of it by ``[redacted]``: it only guards the patterns.
    """
    if "value" in low and ("name" in low or "key" in low):
        text = _NAME_VALUE.sub(_name_value, text)
    if '("' in text or "('" in text:
        text = _CALL_VALUE.sub(_code_value, text)
    if any(pair in text for pair in _KEYED_PAIRS):
        text = _KEYED_VALUE.sub(_code_value, text)
    if "</" in text:
        text = _XML_TAG.sub(_xml_tag, text)
    if "name=" in text:
        text = _XML_NAMED.sub(_xml_tag, text)
    if " -" in text and any(tool in low for tool in _TOOLS):
        text = _TOOL_FLAG.sub(_value_group, text)
    if "rabbitmqctl" in text or "htpasswd" in text or "net user" in low or "http-basic." in text:
        text = _TOOL_POSITION.sub(_value_group, text)
    if "pass" in low or "secret" in low or "masterauth" in low:
        text = _SPACED.sub(_value_group, text)
    if "--password-stdin" in text:
        text = _STDIN.sub(_value_group, text)
    if any(word in low for word in _ACCOUNT_WORDS):
        text = _ACCOUNT_PAIR.sub(_account_pair, text)
    if "cookie" in low:
        text = _COOKIE.sub(_cookie, text)
    if REDACTED in text:
        text = _PARTNER.sub(_partner, text)
    if ".pgpass" in low or "pgpass" in low:
        text = _PGPASS.sub(_value_group, text)
    if ("$ " in text or "% " in text or "> " in text) and any(w in low for w in _PRINTS_WORDS):
        text = _PRINTS_SECRET.sub(_value_group, text)
    if "sqlplus" in low or "sqlldr" in low or "rman" in low or "expdp" in low or "impdp" in low:
        text = _SLASH_LOGIN.sub(_value_group, text)
    if "K" in text and ("AK" in text or "SK" in text):
        text = _AK_SK.sub(_value_group, text)
    return text


def _replace(match: re.Match[str], group: int) -> str:
    value = match.group(group)
    if is_placeholder(value):
        return match.group(0)
    start, end = match.start(group) - match.start(), match.end(group) - match.start()
    whole = match.group(0)
    return whole[:start] + REDACTED + whole[end:]


def _name_value(match: re.Match[str]) -> str:
    return _replace(match, 3) if is_secret_name(match.group(1)) else match.group(0)


def _code_value(match: re.Match[str]) -> str:
    name = match.group(1) or match.group(2) or ""
    if not is_secret_name(name) or match.group(4).casefold() == name.casefold():
        return match.group(0)
    return _replace(match, 4)


def _xml_tag(match: re.Match[str]) -> str:
    return _replace(match, 2) if is_secret_name(match.group(1)) else match.group(0)


def _value_group(match: re.Match[str]) -> str:
    return _replace(match, 2)


def _account_pair(match: re.Match[str]) -> str:
    value = match.group(1)
    # A path ("user/repo"), a port, a word or a region ("us-east-1") is no
    # password: it needs a digit and a letter, and more than kebab-case.
    if (
        not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value))
        or "/" in value
        or _KEBAB.fullmatch(value)
    ):
        return match.group(0)
    return _replace(match, 1)


def _cookie(match: re.Match[str]) -> str:
    return _replace(match, 2)


def _partner(match: re.Match[str]) -> str:
    value = match.group(2)
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return match.group(0)
    return _replace(match, 2)
