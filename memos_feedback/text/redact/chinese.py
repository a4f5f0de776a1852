"""Secrets under a Chinese label: 密码/口令/密钥/令牌/凭证/私钥 (simplified and traditional).

The label may be followed by a verb ("是", "改成", "设为"), a colon (ASCII or
full-width) and a quote; the value is the ASCII that follows.
"""

from __future__ import annotations

import re

from .filters import is_placeholder, looks_like_password
from .rules import Rule, RuleDetector

__all__ = ["ChineseLabels"]

_LABEL = r"(?:密码|密碼|口令|密钥|密鑰|秘钥|秘鑰|金鑰|令牌|凭证|凭据|憑證|憑據|私钥|私鑰|授权码|授權碼)"
_VERB = r"(?:是|为|為|改成|改为|改為|设为|設為|设成|設成|设置为|設置為|换成|換成)"
_QUOTE = r"[\"'“「『]?"
_ZH_SECRET = re.compile(
    _LABEL + r"[ \t]{0,4}+" + _VERB + r"?[ \t]{0,4}+[:=：]?[ \t]{0,4}+" + _QUOTE + r"([!-~]{4,512}+)"
)
# A few words between the label and the value ("密码我改成了 …", "密码重置好了：…"): only a value
# that looks like a password, since "密码错误：Permission denied" has words there too.
_ZH_LOOSE = re.compile(
    _LABEL + r"[\u4e00-\u9fff]{1,6}?(?:" + _VERB + r"了?|：|:)[ \t]{0,4}+[:：]?[ \t]{0,4}+" + _QUOTE
    + r"([!-~]{6,256}+)"
)  # fmt: skip
_LABELS = ("密", "口令", "钥", "鑰", "令牌", "凭", "憑", "授权码", "授權碼")


def _labelled(match: re.Match[str], group: int) -> bool:
    value = match.group(group)
    # A card payment's 授权码 is a number ("授權碼 511236"); a mail service's is a password.
    if value.isdigit() and "授" in match.group(0)[:2]:
        return False
    return not (is_placeholder(value) or value[0] in ">)]}@")


def _told(match: re.Match[str], group: int) -> bool:
    value = match.group(group).rstrip(".,;:!?)")
    return looks_like_password(value) and _labelled(match, group)


class ChineseLabels(RuleDetector):
    """The ASCII value after a Chinese word for a password, key or token."""

    name = "chinese_labels"
    rules = (
        Rule(_ZH_SECRET, guard=_LABELS, non_ascii=True, accept=_labelled),
        Rule(_ZH_LOOSE, guard=_LABELS, non_ascii=True, accept=_told),
    )
    examples = (
        ("数据库密码：Tiger2024#，记得改", "Tiger2024#"),
        ("密碼：Xy7#kq2Lm9，用完刪掉", "Xy7#kq2Lm9"),
        ("令牌是 Zq7LmR2xWv9K", "Zq7LmR2xWv9K"),
        ("服务器密码我改成了 Q7@xLm29Kd，重新登录试试", "Q7@xLm29Kd"),
        ("管理員密碼是「?Lq7tm#O!Sw2」", "?Lq7tm#O!Sw2"),
        ("SMTP 授权码：5IC5ZQOUH5V37SYT", "5IC5ZQOUH5V37SYT"),
    )
    lookalikes = (
        "DB_PASSWORD=<数据库密码>",
        "密码：${DB_PASSWORD}",
        "请输入密码",
        "密码错误：Permission denied",
        "交易序號 54904938166340865974，授權碼 511236（刷卡授權碼，非密碼）",
    )
