"""URLs that carry a credential: a password, a token as the user, a webhook's path, a signed query.

``scheme://user:PASSWORD@host`` (the user stays; the password never holds
"/", "@" or a blank, which keeps ``http://host:8080/a@b`` out),
``https://<token>@github.com`` (a long random user is the credential),
webhook URLs whose path or key is the secret (Slack, Discord, WeCom,
Feishu/Lark, DingTalk), and query parameters named for
a credential (``?sig=``, ``&access_token=``, ``X-Amz-Signature=``).
"""

from __future__ import annotations

import re

from .rules import Rule, RuleDetector

__all__ = ["UrlCredentials"]

_URL_PASSWORD = re.compile(r"://[^\s:/@?#\[\]]{0,128}+:([^\s@/?#]{1,256}+)@")
_URL_TOKEN_USER = re.compile(r"://([A-Za-z0-9_\-]{20,256}+)@")
# Webhook URLs are credentials by themselves: what follows the fixed part is the secret.
_WEBHOOK = re.compile(
    r"https://(?:hooks\.slack\.com/(?:services|workflows)/|(?:discord|discordapp)\.com/api/webhooks/"
    r"|qyapi\.weixin\.qq\.com/cgi-bin/webhook/send\?key=|open\.(?:feishu\.cn|larksuite\.com)/open-apis/bot/v2/hook/"
    r"|oapi\.dingtalk\.com/robot/send\?access_token=)"
    r"([A-Za-z0-9/_\-]{10,512}+)"
)
_QUERY = re.compile(
    r"[?&;](?:sig|signature|x-amz-signature|x-amz-security-token|x-goog-signature|access_token"
    r"|refresh_token|id_token|token|api_key|apikey|api-key|client_secret|password|passwd|secret|auth)="
    r"([^&#\s\"'<>]{1,2048}+)",
    re.IGNORECASE,
)


def _random_user(match: re.Match[str], group: int) -> bool:
    user = match.group(group)
    return any(c.isdigit() for c in user) and any(c.isalpha() for c in user)


class UrlCredentials(RuleDetector):
    """Passwords and tokens inside URLs."""

    name = "url_credentials"
    rules = (
        Rule(_URL_PASSWORD, guard=("://",), pre="@"),
        Rule(_URL_TOKEN_USER, guard=("://",), pre="@", accept=_random_user),
        Rule(_WEBHOOK, guard=("https://",), pre="/"),
        Rule(_QUERY, pre="?&", guard=("=",)),
    )
    examples = (
        ("git push https://x:Zq7LmR2xWv9K@github.com/acme/app.git", "Zq7LmR2xWv9K"),
        ("postgres://app:Tr0ub4dor&3@db:5432/app", "Tr0ub4dor&3"),
        ("https://hooks.slack.com/services/T0AAA/B0BBB/Zq7LmR2xWv9KpT4sNb8Y", "Zq7LmR2xWv9KpT4sNb8Y"),
        ("curl 'https://acct.blob.core.windows.net/c/f?sv=2022&sig=Zq7LmR2x%2BWv9K'", "Zq7LmR2x%2BWv9K"),
        (
            "https://open.feishu.cn/open-apis/bot/v2/hook/0b7e2c1a-1f9d-4d2b-9c1e-7a6b5c4d3e2f",
            "0b7e2c1a-1f9d",
        ),
    )
    lookalikes = (
        "postgres://USER:PASSWORD@HOST/db",
        'url = f"postgresql://{user}:{password}@{host}/app"',
        "http://localhost:8080/a@b",
        "see https://example.com/search?q=token&page=2",
    )
