"""``redact_secrets``: the one secret redaction every writer and the sanitiser use.

Agents paste credentials into commands and contexts (``git push
https://x:TOKEN@…``, ``export AWS_ACCESS_KEY_ID=…``, a DSN with a password).
Whatever this library stores or shows — a repair's context, a job's payload,
an event-log row, a served context, an audit or log line, a prompt line —
passes through this function first, so a secret is replaced by
``[redacted]`` before it reaches a table, a page or a log.

What is recognised, in order (docs/SECURITY.md has the corpus and figures):

1. private key blocks: the whole body between ``-----BEGIN … PRIVATE
   KEY-----`` and its END line (the markers stay), with real or escaped
   line breaks (a service-account JSON's ``"private_key": "…\\n…"``); a
   certificate's or a public key's block is public and stays whole;
2. JSON web tokens (three base64url parts, the first two starting ``eyJ``);
3. tokens with a documented prefix: cloud (AWS key ids, Google API and
   OAuth keys), VCS (GitHub, GitLab), chat (Slack, Discord webhooks,
   Telegram bots), package registries (npm, PyPI, Docker Hub, Hugging Face),
   payment and mail providers (Stripe, SendGrid, Mailgun), LLM providers
   (``sk-…``);
4. the password of a URL (``scheme://user:PASSWORD@host``; the user stays);
5. ``Authorization:`` headers and ``Bearer …`` (the scheme word stays);
6. assignments, flags and query parameters whose name says secret
   (``DB_PASSWORD=…``, ``"api_key": "…"``, ``--db-password …``,
   ``-storepass …``: ``text.secret_names``; ``?sig=…``, ``密码：…``, "the
   token is …"; the name stays, so the text still says what was there), and
   the context forms in ``text.secret_forms`` (name/value entries, XML,
   tools' short password flags, the partner of a key id) — unless the
   value is a reference
   (``$VAR``, ``${VAR}``, ``{{ … }}``, a path), a mask or example
   (``********``, ``<token>``, ``YOUR_API_KEY``) or code;
7. free-standing blobs of random bytes: a run of 32+ base64 characters
   with digits, upper- and lower-case letters that switch class like random
   text does, and that does not decode to readable text. A commit hash, a
   UUID, a hex checksum, a CamelCase path, base64 of ordinary text, of a
   file (PNG, gzip, …) or of an SSH public key stays; so does a run the text
   itself names a digest or an id (``sha256``, ``integrity``, ``h1:``,
   ``request-id:``, ``;base64,``).

Every pattern is linear (bounded repetitions, possessive runs, no nested
quantifiers) and the function is idempotent: ``redact_secrets`` of its own
output changes nothing, so rows rewritten by ``memos-feedback db redact``
stay put on a second run. It keeps line breaks (stored contexts stay
readable); ``sanitize_line`` joins lines itself.
"""

from __future__ import annotations

import base64
import binascii
import re

from ..limits import clean_text
from .secret_forms import REDACTED, is_placeholder, redact_forms
from .secret_names import NAME_WORDS, redact_named

__all__ = ["REDACTED", "redact_optional", "redact_secrets", "redact_value", "stored_optional", "stored_text"]

# Characters a token may not be glued to on its left: "xghp_…" is a word.
_LEFT = r"(?<![A-Za-z0-9_\-])"

# A PEM block: its label, then a body of base64, header lines ("Proc-Type:
# 4,ENCRYPTED") and line breaks, real or escaped ("\\n" in a JSON string).
# The markers stay; the whole body goes, up to the END marker or to the
# first character no body holds (a cut block loses what it has).
_PEM = re.compile(
    r"(-----BEGIN (?:[A-Z0-9]{1,16} ){0,4}[A-Z0-9]{1,16}-----)"
    r"((?:(?!-----)(?:[A-Za-z0-9+/=\s:,.()\-]|\\[nr]|\[redacted\])){0,16384}+)"
    r"(-----END (?:[A-Z0-9]{1,16} ){0,4}[A-Z0-9]{1,16}-----)?"
)
_PEM_EDGE = re.compile(r"(?:\s|\\[nr])*")
_JWT = re.compile(_LEFT + r"eyJ[A-Za-z0-9_\-]{8,2048}+\.eyJ[A-Za-z0-9_\-]{8,8192}+\.[A-Za-z0-9_\-]{0,2048}+")
_PREFIXED = re.compile(
    _LEFT + r"(?:"
    r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}(?![A-Za-z0-9])"
    r"|gh[pousr]_[A-Za-z0-9]{30,255}+|github_pat_[A-Za-z0-9_]{40,255}+"
    r"|gl(?:pat|dt|ptt|rt|cbt|oas|ft|imt|soat)-[A-Za-z0-9_\-]{20,255}+"
    r"|xox[abposre]-[A-Za-z0-9\-]{10,255}+|xapp-[0-9]-[A-Za-z0-9\-]{10,255}+"
    r"|sk-(?:proj-|ant-|svcacct-|admin-)[A-Za-z0-9_\-]{16,255}+|sk-(?=[A-Za-z_\-]{0,255}+[0-9])[A-Za-z0-9_\-]{16,255}+"
    r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,255}+|whsec_[A-Za-z0-9]{20,255}+"
    r"|AGE-SECRET-KEY-1[0-9A-Z]{50,70}+|lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{8,12}|pul-[a-f0-9]{40}"
    r"|AIza[0-9A-Za-z_\-]{35}|ya29\.[0-9A-Za-z_\-]{20,2048}+|GOCSPX-[A-Za-z0-9_\-]{20,64}+"
    r"|npm_[A-Za-z0-9]{36}|pypi-[A-Za-z0-9_\-]{50,512}+|dckr_pat_[A-Za-z0-9_\-]{20,64}+"
    r"|hf_[A-Za-z0-9]{30,64}+|SG\.[A-Za-z0-9_\-]{16,32}+\.[A-Za-z0-9_\-]{16,64}+"
    r"|key-[0-9a-f]{32}|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}|do[opr]_v1_[a-f0-9]{64}"
    r"|hv[sbr]\.[A-Za-z0-9_\-]{20,512}+|dapi[0-9a-f]{32}(?:-[0-9]{1,2})?|[0-9a-f]{32}-us[0-9]{1,2}(?![0-9])"
    r"|(?:gsk|xai|pplx|nvapi|r8|glsa|glc|lin_api|figd|ntn|sntrys|PMAK|ATATT3|squ|sqp|bkua|CCIPAT|rubygems|NRAK)"
    r"[_\-][A-Za-z0-9_\-]{20,512}+|oy2[a-z0-9]{43}|[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-]{40,256}+"
    r"|LTAI[A-Za-z0-9]{12,28}|AKID[A-Za-z0-9]{13,40}|AccountKey=[A-Za-z0-9+/]{40,128}={0,2}"
    r")"
)
_TELEGRAM = re.compile(r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}")
# Every token above, and every blob, lies in a run of these characters; one
# scan finds the runs and the (rare) long ones are looked at closely.
_RUN = re.compile(r"(?<![A-Za-z0-9+/_\-.])[A-Za-z0-9+/_\-.]{14,16384}+={0,2}")
# A URL whose user is a long random token and has no password (a Sentry
# DSN, "https://<token>@github.com"): the user is the credential.
_URL_TOKEN_USER = re.compile(r"(://)([A-Za-z0-9_\-]{20,256}+)@")
# Query parameters that carry a credential (a SAS "sig=", a presigned URL's signature).
_QUERY = re.compile(
    r"([?&;](?:sig|signature|x-amz-signature|x-amz-security-token|x-goog-signature|access_token"
    r"|refresh_token|id_token|token|api_key|apikey|api-key|client_secret|password|passwd|secret|auth)=)"
    r"([^&#\s\"'<>]{1,2048}+)",
    re.IGNORECASE,
)
# Webhook URLs are credentials by themselves: the path after the host is the secret.
_WEBHOOK = re.compile(
    r"(https://(?:hooks\.slack\.com/(?:services|workflows)/|(?:discord|discordapp)\.com/api/webhooks/"
    r"|qyapi\.weixin\.qq\.com/cgi-bin/webhook/send\?key=))"
    r"[A-Za-z0-9/_\-]{10,512}+"
)
# scheme://user:password@ — the password never holds "/", "@" or a space
# (they would be percent-encoded), which keeps "http://host:8080/a@b" out.
_URL_PASSWORD = re.compile(r"(://[^\s:/@?#\[\]]{0,128}+:)[^\s@/?#]{1,256}+@")
_AUTH_HEADER = re.compile(
    r"\b((?:proxy-)?authorization[\"']?[ \t]{0,4}+[:=][ \t]{0,4}+[\"']?"
    r"(?:[a-z][a-z\-]{1,15}+[ \t]{1,4}+)?)[^\s\"',;]{1,4096}+",
    re.IGNORECASE,
)
_BEARER = re.compile(r"\b(Bearer)[ \t]{1,4}+[A-Za-z0-9._~+/=\-]{8,4096}+", re.IGNORECASE)
_USER_FLAG = re.compile(
    r"(?<![A-Za-z0-9_\-])((?:-u|--user|-a|--auth)[ \t]{1,4}+[\"']?[^\s:\"']{1,128}+:)[^\s\"']{1,256}+"
)
# "mysql -uroot -pS3cret": the password glued to -p.
_MYSQL_P = re.compile(r"(\bmysql(?:dump|admin|sh)?\b[^\n]{0,200}?\s-p)(?![\s\[])\S{1,256}+")
# Chinese names of secrets; the value is what follows in ASCII.
_ZH_SECRET = re.compile(
    r"((?:密码|密碼|口令|密钥|密鑰|秘钥|秘鑰|金鑰|令牌|凭证|凭据|憑證|憑據|私钥|私鑰)[ \t]{0,4}+"
    r"(?:是|为|為|改成|改为|改為|设为|設為|设成|設成|设置为|設置為|换成|換成)?[ \t]{0,4}+[:=：]?[ \t]{0,4}+)"
    r"([\"'“]?)([!-~]{4,512}+)"
)
# English prose: "the password is hunter2!" — only a value with a digit or symbol.
_PROSE = re.compile(
    r"\b((?:password|passphrase|passcode|token|secret|api key|access key|secret key)"
    r"(?:[ \t]{1,4}+(?:for|of)[ \t]{1,4}+[^\s]{1,64}+)?[ \t]{1,4}+"
    r"(?:is|was|是|为|改成|改为|改為)[ \t]{1,4}+)([!-~]{6,256}+)",
    re.IGNORECASE,
)

_DIGEST_PREFIX = re.compile(r"(?:sha(?:1|224|256|384|512)|md5)[\-:]", re.IGNORECASE)
# A run the text names a digest or checksum is one, not a key.
# So is one the text names an id ("x-amz-id-2:", "request_id="), data
# ("base64,", a data: URI); an SSH public key names its kind inside itself.
_DIGEST_NAME = re.compile(
    r"(?:sha[0-9]{0,3}|md5|checksum|digest|integrity|hash|etag|\bh1|(?:\b|[_\-])s?id(?:-[0-9])?|;base64"
    # public material by name: a public key, a certificate, a fingerprint, a JWK's modulus
    r"|public[_\- ]?key|pubkey|公钥|公鑰|certificate(?:-authority)?-data|fingerprint|\"n\"|recipient)"
    r"(?:[ \t]{1,2}(?:is|are|是|为))?[\s:=,\"'\-：]{0,4}$",
    re.IGNORECASE,
)
_SEPARATORS = re.compile(r"[/_\-+=]")
_HEX_ONLY = re.compile(r"[0-9a-fA-F]{2,4096}+")
# Random base64 switches between digit, upper and lower about 62% of the
# time; identifiers and paths switch at word boundaries only (10-25%).
_MIN_SWITCH_RATE = 0.35


def redact_secrets(text: str) -> str:
    """``text`` with every recognised secret replaced by ``[redacted]``.

    Pure, linear in ``len(text)`` and idempotent. Line breaks are kept.
    Callers cap their text first (every writer does): a pattern's runs are
    bounded, so a huge input costs time in proportion, never more.
    """
    if not text:
        return text
    # Each rule but the run scan runs only when a literal it needs is in the
    # text (a C-speed substring test): a 10 kB log pays for two scans.
    if "-----BEGIN" not in text:
        return _redact_plain(text)
    # Where a cut block's body ends depends on what follows it, which the
    # first pass may rewrite: repeat to the fixed point (rare, and short).
    for _ in range(4):
        once = _around_pem_blocks(text)
        if once == text:
            break
        text = once
    return text


def _around_pem_blocks(text: str) -> str:
    # A private key's body goes; a certificate's or public key's body is
    # public and stays whole (the blob rule would take its lines for keys).
    out, last = [], 0
    for match in _PEM.finditer(text):
        out.append(_redact_plain(text[last : match.start()]))
        begin, body, end = match.group(1), match.group(2), match.group(3) or ""
        if "PRIVATE" not in begin and end:
            pass  # a certificate or a public key, whole: public
        elif "PRIVATE" not in begin:
            body = _redact_plain(body)
        elif body.strip() and body.replace(REDACTED, "").replace("\\n", "").replace("\\r", "").strip():
            lead = _PEM_EDGE.match(body)
            head = lead.group(0) if lead else ""
            rest = body[len(head) :]
            tail_len = len(rest) - len(rest.rstrip())
            while rest[: len(rest) - tail_len].endswith(("\\n", "\\r")):
                tail_len += 2
            body = head + REDACTED + rest[len(rest) - tail_len :] if tail_len else head + REDACTED
        out.append(begin + body + end)
        last = match.end()
    out.append(_redact_plain(text[last:]))
    return "".join(out)


def _redact_plain(text: str) -> str:
    if not text:
        return text
    text = _RUN.sub(_run, text)
    if ":AA" in text:
        text = _TELEGRAM.sub(REDACTED, text)
    if "://" in text:
        if "https://" in text:
            text = _WEBHOOK.sub(r"\1" + REDACTED, text)
        text = _URL_PASSWORD.sub(_url_password, text)
        text = _URL_TOKEN_USER.sub(_url_token_user, text)
    if "=" in text and ("?" in text or "&" in text):
        text = _QUERY.sub(_query, text)
    low = text.lower()
    if "authorization" in low:
        text = _AUTH_HEADER.sub(_auth_header, text)
    if "bearer" in low:
        text = _BEARER.sub(_bearer, text)
    if any(word in low for word in NAME_WORDS):
        text = redact_named(text, _lower_same_length(text))
        if " is " in low or " was " in low or "是" in text or "为" in text or "改" in text:
            text = _PROSE.sub(_prose, text)
    if "-u " in text or "--user " in text or "-a " in text or "--auth " in text:
        text = _USER_FLAG.sub(r"\1" + REDACTED, text)
    if "mysql" in low:
        text = _MYSQL_P.sub(_url_password_like, text)
    if not text.isascii():
        text = _ZH_SECRET.sub(_zh_secret, text)
    # ``low`` only guards the forms' patterns: "[redacted]" adds none of their words.
    return redact_forms(text, low)


# What is read around the part of a text that a cap keeps: enough to see
# a whole token that straddles the cut.
_MARGIN = 1024


def stored_text(text: str, cap: int) -> str:
    """``text`` as a table keeps it: secrets redacted, then ``limits.clean_text(…, cap)``.

    Redaction comes first, so a cut never halves a token into pieces no
    pattern knows; only the parts the cap keeps (plus a margin) are read.
    """
    if len(text) > cap + 2 * _MARGIN:
        text = text[: cap + _MARGIN] + "\n" + text[len(text) - cap // 4 - _MARGIN :]
    return clean_text(redact_secrets(text), cap)


def stored_optional(text: str | None, cap: int) -> str | None:
    """``stored_text`` for an optional string."""
    return None if text is None else stored_text(text, cap)


def redact_optional(text: str | None) -> str | None:
    """``redact_secrets`` for an optional string."""
    return None if text is None else redact_secrets(text)


def redact_value(value: object) -> object:
    """A JSON-like ``value`` with every string in it redacted (dict keys stay)."""
    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v) for v in value]
    return value


def _auth_header(match: re.Match[str]) -> str:
    value = match.group(0)[len(match.group(1)) :]
    return match.group(0) if _is_reference(value) else match.group(1) + REDACTED


def _bearer(match: re.Match[str]) -> str:
    value = match.group(0)[len(match.group(1)) :].strip()
    return match.group(0) if _is_reference(value) else match.group(1) + " " + REDACTED


def _url_password(match: re.Match[str]) -> str:
    value = match.group(0)[len(match.group(1)) : -1]
    return match.group(0) if _is_reference(value) else match.group(1) + REDACTED + "@"


def _url_password_like(match: re.Match[str]) -> str:
    value = match.group(0)[len(match.group(1)) :]
    return match.group(0) if _is_reference(value) else match.group(1) + REDACTED


def _url_token_user(match: re.Match[str]) -> str:
    user = match.group(2)
    if not (any(c.isdigit() for c in user) and any(c.isalpha() for c in user)):
        return match.group(0)
    return match.group(1) + REDACTED + "@"


def _query(match: re.Match[str]) -> str:
    return match.group(0) if _is_reference(match.group(2)) else match.group(1) + REDACTED


def _is_reference(value: str) -> bool:
    # "$TOKEN", "${TOKEN}", "<token>", "********", "YOUR_KEY", "[redacted]": not a secret (yet).
    return is_placeholder(value)


def _lower_same_length(text: str) -> str:
    # Positions found in the lower-cased text must index the original.
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(lc if len(lc := ch.lower()) == 1 else ch for ch in text)


def _zh_secret(match: re.Match[str]) -> str:
    value = match.group(3)
    if _is_reference(value) or value[0] in ">)]}@":
        return match.group(0)
    return match.group(1) + match.group(2) + REDACTED


def _prose(match: re.Match[str]) -> str:
    value = match.group(2).rstrip(".,;:!?)")
    # "the token is expired." is prose; a credential has a digit, or both
    # cases and a symbol.
    has_digit = any(ch.isdigit() for ch in value)
    mixed = value != value.lower() and value != value.upper() and not value.isalnum()
    if _is_reference(value) or len(value) < 6 or not (has_digit or mixed) or value.isdigit():
        return match.group(0)
    return match.group(1) + REDACTED + match.group(2)[len(value) :]


def _prefixed(match: re.Match[str]) -> str:
    # "AKIAXXXXXXXXXXXXXXXX", "ghp_000…": a mask in a token's shape, not a token.
    token = match.group(0)
    return token if len(set(token[4:])) <= 2 or _MASKED_TOKEN.search(token) else REDACTED


_MASKED_TOKEN = re.compile(r"xxxx|XXXX|\.\.\.|your|YOUR")
# Public by design: a publishable key, an IPFS content id (base58 "Qm…").
_PUBLIC_RUN = re.compile(r"pk_(?:live|test)_[A-Za-z0-9]{10,255}|Qm[1-9A-HJ-NP-Za-km-z]{44}")


def _run(match: re.Match[str]) -> str:
    run = match.group(0)
    if _PUBLIC_RUN.fullmatch(run):
        return run
    start = match.start()
    if "binaryData:" in match.string[max(0, start - 512) : start]:
        return run  # a ConfigMap's binary data is a file, not a secret (a Secret's is "data:")
    out = _redact_run(run, match.string[max(0, start - 32) : start])
    if out != run and _in_mime_part(match.string, start):
        return run  # a line of a MIME part's base64 body is an attachment's bytes
    return out


# The lines of a MIME part's base64 body, up to the line a run starts.
_MIME_BODY = re.compile(
    r"content-transfer-encoding:[ \t]{0,4}+base64[ \t]{0,4}+\r?\n(?:[!-~ \t]{0,200}\r?\n){0,8}?\r?\n"
    r"(?:[A-Za-z0-9+/=]{1,100}+\r?\n){0,400}+$",
    re.IGNORECASE,
)


_MIME_HEADER = ("Content-Transfer-Encoding", "content-transfer-encoding", "Content-transfer-encoding")


def _in_mime_part(text: str, start: int) -> bool:
    if start == 0 or text[start - 1] != "\n":
        return False
    # Two C-speed searches, no copy of the text: this runs for every redacted line-start run.
    low_bound = max(0, start - 40960)
    at = max(text.rfind(name, low_bound, start) for name in _MIME_HEADER)
    return at != -1 and _MIME_BODY.match(text[at:start]) is not None


def _redact_run(run: str, before: str, depth: int = 0) -> str:
    if "eyJ" in run:
        run = _JWT.sub(REDACTED, run)
    run = _PREFIXED.sub(_prefixed, run)
    if REDACTED in run:
        # What is left beside a token is a run of its own on the next pass
        # (the marker's brackets end runs): treat it as one now, so a second
        # pass finds nothing more.
        if depth >= 4:
            return run
        return REDACTED.join(
            _redact_run(part, "", depth + 1) if part else part for part in run.split(REDACTED)
        )
    if len(run) < 32:
        return run
    if _DIGEST_NAME.search(before):
        return run
    if "." in run:
        return ".".join(_blob(part) for part in run.split("."))
    return _blob(run)


def _blob(run: str) -> str:
    if len(run) < 32 or REDACTED in run or _DIGEST_PREFIX.match(run) or not _looks_random(run):
        return run
    return run if _decodes_to_text(run) else REDACTED


def _looks_random(run: str) -> bool:
    segments = [seg for seg in _SEPARATORS.split(run) if seg]
    # A path or identifier is mostly words and hex ids ("Users/Ann/9a/Py3");
    # random base64 seldom has a separator, let alone a word between two.
    words = sum(1 for seg in segments if (len(seg) >= 3 and seg.isalpha()) or _HEX_ONLY.fullmatch(seg))
    if words >= 2 and 2 * words > len(segments):
        return False
    has_digit = has_upper = has_lower = False
    switches = pairs = 0
    last = ""
    for ch in run:
        kind = "d" if ch.isdigit() else "u" if ch.isupper() else "l" if ch.islower() else ""
        if not kind:
            continue  # separators ("/", "_", "-", "+", "=") do not count
        has_digit |= kind == "d"
        has_upper |= kind == "u"
        has_lower |= kind == "l"
        if last:
            pairs += 1
            switches += kind != last
        last = kind
    return has_digit and has_upper and has_lower and pairs > 0 and switches / pairs >= _MIN_SWITCH_RATE


# Files: PNG, GIF, JPEG, PDF, gzip, zip, RIFF, SVG, ICO.
_FILE_MAGIC = (b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"%PDF", b"\x1f\x8b", b"PK\x03\x04", b"RIFF", b"<svg",
               b"\x00\x00\x01\x00")  # fmt: skip
_SSH_KEY_KINDS = (b"ssh-", b"ecds", b"sk-s", b"sk-e")


def _decodes_to_text(run: str) -> bool:
    """Whether ``run`` is base64 (or base64url) of readable text: data, not a key."""
    body = run.rstrip("=")
    alphabet = "-_" if ("-" in body or "_" in body) else "+/"
    padded = body + "=" * (-len(body) % 4)
    try:
        raw = base64.b64decode(padded, altchars=alphabet.encode(), validate=True)
    except (binascii.Error, ValueError):
        return False
    if raw.startswith(_FILE_MAGIC) or raw[4:8] in _SSH_KEY_KINDS:
        return True  # a file (an image, an archive) or an SSH public key, which names its kind
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if "PRIVATE KEY" in decoded:
        return False  # base64 of a private key block (a kubeconfig's client-key-data) is the key
    readable = sum(1 for ch in decoded if ch.isprintable() or ch in "\n\r\t")
    return readable >= 0.95 * len(decoded)
