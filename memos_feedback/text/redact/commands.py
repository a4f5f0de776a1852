"""Passwords on command lines: by each tool's own flag or position, and what a command prints.

``TOOL_FLAGS`` and ``TOOL_POSITIONS`` are tables, not code: a tool's name
(a regular expression) and the flag whose value, or the words after which
the argument, is its password. Flags named for a secret whatever the tool
(``--password``, ``-storepass``) are ``assignments.NamedValues``'. Also
here: ``-u user:password`` (curl), ``mysql -pSECRET``, Oracle's
``user/password@db``, a secure string made from plain text (PowerShell),
what is echoed into ``--password-stdin``, and the line a secret-printing
command prints (``kubectl get secret … | base64 -d``, ``vault kv get
-field=…``, ``cat ~/.pgpass``).

A flag with no value, or followed by a word of the sentence ("instead of
-p on the command line"), is prose about the flag: ``filters.is_prose_word``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from .engine import Scan, Span
from .filters import is_placeholder, is_prose_word, looks_like_password
from .rules import Rule, RuleDetector

__all__ = ["TOOL_FLAGS", "TOOL_POSITIONS", "CommandLines"]

_BLANK = "[ \\t]{1,4}+"
# (tool, flag, what lies between the flag and the value): the value is the password.
TOOL_FLAGS: tuple[tuple[str, str, str], ...] = (
    ("sshpass", "-[pP]", _BLANK),
    ("mongo(?:sh|dump|restore|export|import)?", "-[pP]", _BLANK),
    ("(?:un)?zip", "-[pP]", _BLANK),
    ("7za?", "-p", "[ \\t]{0,4}+"),  # "7z a -pS3cret x.7z": glued or not
    ("(?:un)?rar", "-p", "[ \\t]{0,4}+"),
    ("login", "-p", _BLANK),
    ("(?:redis|keydb|valkey)-cli", "-a", _BLANK),
    ("(?:sqlcmd|bcp|osql|isql)", "-P", _BLANK),
    ("ldap[a-z]{0,12}", "-w", _BLANK),
    ("openssl", "-k", _BLANK),
    ("ssh-keygen", "-[NP]", _BLANK),
    ("(?:psexec|paexec)(?:\\.exe)?", "-p", _BLANK),
    ("rdesktop", "-p", _BLANK),
    ("snmp[a-z]{0,12}", "-[AX]", _BLANK),  # SNMPv3 auth and privacy passphrases
    ("xfreerdp", "/p:", ""),
    ("altool", "-p", _BLANK),
    ("smbclient", "-U", _BLANK + "[^\\s%]{1,64}+%"),
)
# A tool and the words before its password: the next argument is the password.
_B = _BLANK
TOOL_POSITIONS: tuple[str, ...] = (
    rf"rabbitmqctl{_B}(?:add_user|change_password){_B}\S{{1,128}}+",
    # "htpasswd -b -c FILE USER PASS": the flags, apart or together, then the file and the user.
    rf"htpasswd(?=[^\n]{{0,40}}?[ \t]-[a-zA-Z]{{0,4}}b)(?:{_B}-[a-zA-Z]{{1,6}}+){{1,4}}+"
    rf"{_B}\S{{1,256}}+{_B}\S{{1,128}}+",
    rf"user-secrets{_B}set{_B}\S{{1,128}}+",
    rf"net{_B}user{_B}\S{{1,128}}+",
    rf"net{_B}use{_B}(?:[A-Za-z]:{_B})?\\\\\S{{1,256}}+(?:{_B}/user:\S{{1,128}}+)?",
    rf"poetry{_B}config{_B}http-basic\.\S{{1,128}}+{_B}\S{{1,128}}+",
    rf"wpa_passphrase{_B}\S{{1,128}}+",
    r"nmcli\b[^\n|;&]{0,200}?[ \t](?:password|wifi-sec\.psk)",
    rf"ConvertTo-SecureString(?:{_B}-String)?",
)
_VALUE = "([\"']?)([^\\s\"']{1,256}+)"
# Each tool's name; the group that matched says which row of ``TOOL_FLAGS`` it is.
_TOOL_NAME = re.compile(
    r"(?<![\w\-\]])(?:" + "|".join(f"({tool})" for tool, _flag, _between in TOOL_FLAGS) + r")\b"
)
_TOOL_FLAG_OF = tuple(re.compile(f"[ \\t]{flag}{between}" + _VALUE) for _tool, flag, between in TOOL_FLAGS)
# Where a command ends: its flags are read up to there, however far (a window of so many
# characters would reach farther once a secret before it is redacted: no fixed point).
_COMMAND_END = re.compile(r"[\n|;&]")
# A positional argument that is a word after "-" ("-AsPlainText") is the tool's next flag.
_NOT_A_FLAG = "(?![\"']?--?[A-Za-z][A-Za-z\\-]{0,40}+(?:[\\s\"'`=:]|$))"
_TOOL_POSITION = re.compile(
    "(?<![\\w\\-\\]])(?:" + "|".join(TOOL_POSITIONS) + ")[ \\t]{1,4}+" + _NOT_A_FLAG + _VALUE
)
_TOOLS = ("sshpass", "mongo", "zip", "7z", "rar", "login", "-cli", "sqlcmd", "bcp", "osql", "isql",
          "ldap", "openssl", "ssh-keygen", "psexec", "paexec", "rdesktop", "xfreerdp", "snmp", "altool",
          "smbclient")  # fmt: skip
_POSITION_TOOLS = ("rabbitmqctl", "htpasswd", "net use", "http-basic.", "wpa_passphrase", "nmcli",
                   "user-secrets",
                   "convertto-securestring")  # fmt: skip
_USER_FLAG = re.compile(
    r"(?<![A-Za-z0-9_\-\]])(?:-u|--user|-a|--auth|-auth)[ \t]{1,4}+[\"']?[^\s:\"']{1,128}+:([^\s\"']{1,256}+)"
)
# "mysql -uroot -pS3cret": the password glued to -p.
# The first glued -p is the one read, redacted or not: a second pass reads the same one.
# "mysql -uroot -pS3cret": the password glued to -p (``_glued``).
_MYSQL = re.compile(r"\bmysql(?:dump|admin|sh)?\b")
_GLUED_P = re.compile(r"\s-p(\S{1,256}+)")
# What is echoed into a tool's --password-stdin is the password.
_STDIN = re.compile(
    r"\b(?:echo|printf)[ \t]{1,4}+[\"']?([^\s\"'|]{1,256}+)[\"']?[ \t]{0,4}+\|[^\n]{0,200}?"
    r"(?:--password-stdin|--passphrase-fd[ =]0|-passin[ \t]stdin|--password-from-stdin)"
)
# What is echoed into a file named for a secret ("echo 'S3cr3t' > ~/.vault_pass") is that secret.
_INTO_FILE = re.compile(
    r"\b(?:echo|printf)[ \t]{1,4}+[\"']?([^\s\"'|>]{4,256}+)[\"']?[ \t]{0,4}+>{1,2}+[ \t]{0,4}+"
    r"[^\s;|&]{0,200}?(?:pass|secret|token|_key|\.key)"
)
# "-u USER -p PASS", whatever the tool: a password after a user (a port is a number).
_USER_THEN_P = re.compile(r"(?<![\w\-\]])-u[ \t]{1,4}+[^\s\-][^\s]{0,127}+[ \t]{1,4}+-p[ \t]{1,4}+" + _VALUE)
# Oracle tools take "user/password@db" as their first argument.
_SLASH_LOGIN = re.compile(
    r"(?<![\w\-\]])(?:sqlplus|sqlldr|rman|expdp|impdp)[ \t]{1,4}+(?:-[A-Za-z]{1,8}[ \t]{1,4}+){0,2}"
    r"[A-Za-z0-9_$#]{1,64}+/([^\s@/\"']{1,256}+)"
)
# A command that prints a secret's value: the next line is that value.
_PRINTS_SECRET = re.compile(
    r"^(?:\$|%|>)[ \t][^\n]{0,300}?(?:get[ \t]{1,4}+secret[^\n]{0,300}?(?:base64[ \t]{1,4}+(?:-d|--decode)"
    r"|base64decode|@base64d)|vault[ \t]{1,4}+(?:kv[ \t]{1,4}+get|read)[^\n]{0,200}?-field="
    r"|secrets[ \t]{1,4}+versions[ \t]{1,4}+access|get-secret-value[^\n]{0,200}?--output[ \t]{1,4}+text"
    r"|keyvault[ \t]{1,4}+secret[ \t]{1,4}+show[^\n]{0,200}?tsv|\bop[ \t]{1,4}+read|config:get"
    r"|(?:cat|echo)[ \t]{1,4}+\S{0,200}?(?:\.key|\.pgpass|_key|secret|token|password|passwd|pwd)\b)"
    r"[^\n]{0,300}\n([^\s$#][^\s]{3,512}+)$",
    re.MULTILINE | re.IGNORECASE,
)
_PRINTS_WORDS = ("secret", "vault", "cat ", "echo ", " op ", "config:get")


def _argument(match: re.Match[str], group: int) -> bool:
    value = match.group(group)
    return not (is_placeholder(value) or is_prose_word(value))


# A printed ~/.pgpass line: only its last field is the password (``entries.NamedEntries``).
_PGPASS_LINE = re.compile(r"[^\s:#]{1,255}+:(?:[0-9]{1,5}|\*):[^\s:]{1,128}+:[^\s:]{1,128}+:")


def _flag_values(
    text: str, tools: re.Pattern[str], flag_of: Callable[[re.Match[str]], re.Pattern[str]], group: int
) -> Iterator[Span]:
    """The value of every password flag of every tool named in a command.

    Every flag is read, and every tool of the command ("PASSWORD=login 7z
    -pS3cret": ``login`` and ``7z``), so what one pass redacts never changes
    what the next reads — a first pass that stopped at the first flag, or
    at the first tool's command, left a value a second pass then found.
    Linear: a command's stretch is scanned once per distinct flag pattern
    (a handful), from the first tool that uses it.
    """
    at = 0
    while (tool := tools.search(text, at)) is not None:
        end_of_command = _COMMAND_END.search(text, tool.end())
        stop = end_of_command.start() if end_of_command else len(text)
        first: dict[re.Pattern[str], int] = {}
        named: re.Match[str] | None = tool
        while named is not None:
            first.setdefault(flag_of(named), named.end())
            named = tools.search(text, max(named.end(), named.start() + 1), stop)
        for pattern, pos in first.items():
            while (flag := pattern.search(text, pos, stop)) is not None:
                if _argument(flag, group):
                    yield flag.span(group)
                pos = max(flag.end(), pos + 1)
        at = max(stop, tool.end())


# Tools whose -p after -u is no password: mysql prompts for it, docker's is a port, sudo's a prompt.
_P_IS_NOT_A_PASSWORD = ("mysql", "mariadb", "docker", "podman", "nerdctl", "sudo", "kubectl", "ssh")
_PORT = re.compile(r"[0-9.:]{1,64}(?:/(?:tcp|udp))?")


def _password_after_user(match: re.Match[str], group: int) -> bool:
    value = match.group(group)
    if _PORT.fullmatch(value) or not looks_like_password(value):
        return False
    # The command's start on its line, read within a bounded stretch before the flag.
    text, start = match.string, match.start()
    line = text[max(text.rfind("\n", max(0, start - 200), start), start - 200, 0) : start].lower()
    return not any(tool in line for tool in _P_IS_NOT_A_PASSWORD) and _argument(match, group)


def _echoed(match: re.Match[str], group: int) -> bool:
    # "printf done >> secrets.log" writes a word; a password has a digit or mixed case and a symbol.
    return looks_like_password(match.group(group)) and _argument(match, group)


def _printed(match: re.Match[str], group: int) -> bool:
    value = match.group(group)
    return not (is_placeholder(value) or _PGPASS_LINE.match(value))


class CommandLines(RuleDetector):
    """Passwords given to tools on a command line, and what secret-printing commands print."""

    name = "command_lines"
    rules = (
        Rule(_TOOL_POSITION, group=2, guard=_POSITION_TOOLS, accept=_argument),
        Rule(_USER_FLAG, guard=("-u ", "--user ", "-a ", "--auth ", "-auth "), pre=(" -", "\t-")),
        Rule(
            _STDIN, guard=("--password-stdin", "--passphrase-fd", "-passin", "--password-from-stdin"), pre="|"
        ),
        Rule(_INTO_FILE, guard=("echo", "printf"), pre=">", accept=_echoed),
        Rule(_USER_THEN_P, group=2, guard=("-u ",), pre=(" -p",), accept=_password_after_user),
        Rule(_SLASH_LOGIN, guard=("sqlplus", "sqlldr", "rman", "expdp", "impdp"), pre="/"),
        Rule(_PRINTS_SECRET, guard=_PRINTS_WORDS, pre="$%>", accept=_printed),
    )
    examples = (
        ("sshpass -p 'Zq7LmR2x' ssh ann@h", "Zq7LmR2x"),
        ("redis-cli -h h -p 6379 -a Zq7LmR2x ping", "Zq7LmR2x"),
        ("7z a -pS3cr3tZip backup.7z data/", "S3cr3tZip"),
        ("ssh-keygen -t ed25519 -N Tg4mWq92x -f id", "Tg4mWq92x"),
        ("rabbitmqctl add_user app Zq7LmR2x", "Zq7LmR2x"),
        ('$pw = ConvertTo-SecureString "Tg4#mWq92" -AsPlainText -Force', "Tg4#mWq92"),
        ("curl -u ann:Tg4mWq92x https://api", "Tg4mWq92x"),
        ("mysql -uroot -pS3cretPw db", "S3cretPw"),
        ("sqlplus scott/Tg4#mWq92@orcl", "Tg4#mWq92"),
        ("echo Tg4mWq92x | docker login -u ann --password-stdin", "Tg4mWq92x"),
        (
            "$ kubectl get secret api -o jsonpath='{.data.token}' | base64 -d\nQw3rty-Zx9!vb\n$ ",
            "Qw3rty-Zx9!vb",
        ),
        ("smbclient //srv/share -U ann%Tg4mWq92x", "Tg4mWq92x"),
        ("htpasswd -b -c /etc/nginx/.htpasswd prom PXNQn&Ep67Es", "PXNQn&Ep67Es"),
        ("xcrun altool --upload-app -f App.ipa -u ios@acme.io -p oazg-bhfo-gogk", "oazg-bhfo-gogk"),
        ("echo 'QdK^7RTxJtuMJ' | gpg --batch --passphrase-fd 0 -d s.gpg", "QdK^7RTxJtuMJ"),
        ("$ echo 'uIuey8k1&Rrr' > ~/.vault_pass", "uIuey8k1&Rrr"),
        ('dotnet user-secrets set "Smtp:Password" "=QHC^qI6D8aGTlF"', "=QHC^qI6D8aGTlF"),
        ("ftp-upload -u ann -p Tg4mWq92x site/", "Tg4mWq92x"),
        ("java -jar jenkins-cli.jar -s https://ci -auth admin:11333bd7a3597fefa6", "11333bd7a3597fefa6"),
    )

    def spans(self, scan: Scan) -> Iterable[Span]:
        yield from super().spans(scan)
        text = scan.text
        if any(map(text.__contains__, (" -", "\t-", "/p:"))) and scan.has_any(_TOOLS):
            yield from _flag_values(text, _TOOL_NAME, lambda m: _TOOL_FLAG_OF[(m.lastindex or 1) - 1], 2)
        if scan.has("mysql"):
            yield from _flag_values(text, _MYSQL, lambda m: _GLUED_P, 1)

    lookalikes = (
        "Prefer: docker login --password-stdin instead of -p on the command line",
        "docker login -u bot -p ***",
        'mysql -u root -p"${MYSQL_PWD}" -h db',
        "redis-cli -h h -p 6379 ping",
        "sqlplus / as sysdba",
        "$ echo $HOME\n/home/ann",
        "ssh-keygen -t ed25519 -N '' -f id",
        "htpasswd -b -c /etc/nginx/.htpasswd prom $PROM_PASSWORD",
        "tool -u ann -p 8080",
        "mysql -u root -p mydb2",
        "docker run -u 1000 -p 8080:80 nginx",
        "sudo -u postgres -p 'Pass:' psql",
        "echo $TOKEN > ~/.token",
        "printf done >> secrets.log",
    )
