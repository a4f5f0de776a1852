"""Entries whose secret's name is given apart from the value, in config files and code.

``- name: DB_PASSWORD`` then ``value: …`` (Kubernetes, ECS),
``<add key="SmtpPassword" value="…"/>``, ``<password>…</password>``,
``<property name="….password">…</property>``, ``setPassword("…")``,
``define('DB_PASSWORD', '…')``, ``requirepass …`` (redis.conf), ``.netrc``'s
``login ann password …``, ``~/.pgpass`` lines, cloud ``AK：…``/``SK：…``.
"""

from __future__ import annotations

import re

from .filters import is_example, is_mask, is_placeholder, is_reference, is_secret_name
from .rules import Rule, RuleDetector

__all__ = ["NamedEntries"]

_NAME_VALUE = re.compile(
    r"\b(?:name|key|Name|Key)[\"']?[ \t]{0,4}+[:=][ \t]{0,4}+[\"']?([A-Za-z0-9_.\-]{1,128}+)[\"']?"
    r"[ \t,]{0,8}+(?:\r?\n[ \t\-]{0,40}+)?[\"']?(?:value|Value)[\"']?[ \t]{0,4}+[:=][ \t]{0,4}+[\"']?"
    r"([^\s\"'<>,}]{1,512}+)"
)
# Code that hands a literal to a secret's name.
_CALL_VALUE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]{0,63}+)\([ \t]{0,4}+([\"'])([^\"'\s]{4,512}+)\2")
_KEYED_VALUE = re.compile(
    r"[\"']([A-Za-z0-9_.\-]{1,64}+)[\"'][ \t]{0,4}+(?:,|\][ \t]{0,4}+=)[ \t]{0,24}+"
    r"([\"'])([^\"'\s]{4,512}+)\2(?![ \t]{0,4}+:)"
)
_XML_TAG = re.compile(r"<([A-Za-z][A-Za-z0-9_.:\-]{0,63}+)>([^<\s]{1,512}+)</\1>")
_XML_NAMED = re.compile(r"\bname=[\"']([A-Za-z0-9_.:\-]{1,128}+)[\"'][^<>\n]{0,200}?>([^<\s]{1,512}+)<")
# A config line "NAME VALUE" with no "=" (redis.conf, .netrc: "login ann password …").
_SPACED = re.compile(
    r"(?:^[ \t]{0,16}+|\blogin[ \t]{1,4}+\S{1,128}+[ \t]{1,4}+)"
    r"(?:requirepass|masterauth|password|passwd|secret)"
    r"[ \t]{1,4}+[\"']?([^\s\"']{4,256}+)[\"']?[ \t]{0,4}+(?:$|\n|#)",
    re.MULTILINE,
)
# ~/.pgpass lines: host:port:database:user:password.
_PGPASS = re.compile(
    r"^[^\s:#]{1,255}+:(?:[0-9]{1,5}|\*):[^\s:]{1,128}+:[^\s:]{1,128}+:(\S{1,256}+)$", re.MULTILINE
)
# Cloud AK/SK labels (Huawei, Aliyun, Tencent chats): "AK：…", "SK: …".
# The label first, what may not precede it after: a pattern that starts with a
# literal is searched for that literal (3 times faster than a lookbehind first).
_AK_SK = re.compile(
    r"(?:AK|SK)(?<![A-Za-z0-9_].K)[ \t]{0,4}+[:=：][ \t]{0,4}+([A-Za-z0-9/+]{16,64}+)(?![A-Za-z0-9/+])"
)


# SQL that sets a password ("CREATE USER x WITH PASSWORD '…'", "IDENTIFIED BY '…'").
_SQL_PASSWORD = re.compile(
    r"\b(?:password|identified[ \t]{1,4}+by(?:[ \t]{1,4}+password)?)[ \t]{1,4}+'([^'\s]{1,256}+)'",
    re.IGNORECASE,
)
# Network gear's config lines (Cisco IOS): a pre-shared key, a user's password, an SNMP community.
_DEVICE = re.compile(
    r"^[ \t]{0,8}+(?:crypto[ \t]{1,4}+isakmp[ \t]{1,4}+key|snmp-server[ \t]{1,4}+community"
    r"|username[ \t]{1,4}+\S{1,64}+(?:[ \t]{1,4}+privilege[ \t]{1,4}+[0-9]{1,2})?"
    r"[ \t]{1,4}+(?:password|secret)"
    r"(?:[ \t]{1,4}+[0-9])?)[ \t]{1,4}+(\S{1,256}+)",
    re.MULTILINE,
)
# "public" and "private" are the communities every device ships with: defaults, not secrets.
_DEFAULT_COMMUNITIES = frozenset({"public", "private"})


def _device(match: re.Match[str], group: int) -> bool:
    value = match.group(group)
    # Not the template filter: "@YZpGcj…" is a community here, no "@reference".
    return value.casefold() not in _DEFAULT_COMMUNITIES and not (
        is_reference(value) or is_mask(value) or is_example(value)
    )


def _named(match: re.Match[str], group: int) -> bool:
    # Group 1 is the name; ``group`` the value.
    return is_secret_name(match.group(1)) and not is_placeholder(match.group(group))


def _coded(match: re.Match[str], group: int) -> bool:
    name, value = match.group(1), match.group(group)
    return is_secret_name(name) and value.casefold() != name.casefold() and not is_placeholder(value)


class NamedEntries(RuleDetector):
    """Values of entries, tags and config lines named for a secret."""

    name = "named_entries"
    rules = (
        Rule(_NAME_VALUE, group=2, guard=("value",), pre=":=", accept=_named),
        Rule(_CALL_VALUE, group=3, guard=('("', "('"), pre="(", accept=_coded),
        Rule(_KEYED_VALUE, group=3, guard=("',", '",', "']", '"]'), pre="'\"", accept=_coded),
        Rule(_XML_TAG, group=2, guard=("</",), pre="<", accept=_named),
        Rule(_XML_NAMED, group=2, guard=("name=",), pre="=", accept=_named),
        Rule(_SPACED, guard=("pass", "secret", "masterauth")),
        Rule(_PGPASS, guard=("pgpass",), pre=":"),
        Rule(_AK_SK, guard=("AK", "SK"), pre=":=：", cased=True),
        Rule(_SQL_PASSWORD, guard=("password", "identified"), pre="'"),
        Rule(_DEVICE, guard=("isakmp", "snmp-server", "username"), accept=_device),
    )
    examples = (
        ("- name: DB_PASSWORD\n  value: Zq7LmR2x", "Zq7LmR2x"),
        ('<add key="SmtpPassword" value="Zq7LmR2x9"/>', "Zq7LmR2x9"),
        ("<password>Zq7LmR2x</password>", "Zq7LmR2x"),
        ('define("DB_PASSWORD", "Tr0ub4dor3");', "Tr0ub4dor3"),
        ("requirepass Zq7LmR2x9\n", "Zq7LmR2x9"),
        ("$ cat ~/.pgpass\ndb.local:5432:app:ann:Tr0ub4dor&3", "Tr0ub4dor&3"),
        ("SK：Q2xK9mZ8rT4wY7pL3nB6cF1dH5jS0aE", "Q2xK9mZ8rT4wY7pL3nB6cF1dH5jS0aE"),
        ("psql -c \"CREATE USER report WITH PASSWORD 'oGe6EG1p1tltv*';\"", "oGe6EG1p1tltv*"),
        ("interface Tunnel0\n crypto isakmp key !tn9hkmct0#ReY address 203.0.113.7", "!tn9hkmct0#ReY"),
        ("snmp-server community @YZpGcjWX5nm RO 10", "@YZpGcjWX5nm"),
    )
    lookalikes = (
        "- name: DB_HOST\n  value: db.internal",
        "<username>ann</username>",
        'define("DB_PASSWORD", getenv("DB_PASSWORD"));',
        "passwd: files",
        "snmp-server community public RO",
        "ALTER USER app WITH PASSWORD '$APP_PASSWORD';",
    )
