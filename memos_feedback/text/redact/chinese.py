"""Secrets under a Chinese label: 密码/口令/密钥/令牌/凭证/私钥 (simplified and traditional).

The label may be followed by a verb ("是", "改成", "设为"), a colon (ASCII or
full-width) and a quote; the value is the ASCII that follows.
"""

from __future__ import annotations

import re

from .filters import is_placeholder
from .rules import Rule, RuleDetector

__all__ = ["ChineseLabels"]

_ZH_SECRET = re.compile(
    r"(?:密码|密碼|口令|密钥|密鑰|秘钥|秘鑰|金鑰|令牌|凭证|凭据|憑證|憑據|私钥|私鑰)[ \t]{0,4}+"
    r"(?:是|为|為|改成|改为|改為|设为|設為|设成|設成|设置为|設置為|换成|換成)?[ \t]{0,4}+[:=：]?[ \t]{0,4}+"
    r"[\"'“]?([!-~]{4,512}+)"
)
_LABELS = ("密", "口令", "钥", "鑰", "令牌", "凭", "憑")


def _labelled(match: re.Match[str], group: int) -> bool:
    value = match.group(group)
    return not (is_placeholder(value) or value[0] in ">)]}@")


class ChineseLabels(RuleDetector):
    """The ASCII value after a Chinese word for a password, key or token."""

    name = "chinese_labels"
    rules = (Rule(_ZH_SECRET, guard=_LABELS, non_ascii=True, accept=_labelled),)
    examples = (
        ("数据库密码：Tiger2024#，记得改", "Tiger2024#"),
        ("密碼：Xy7#kq2Lm9，用完刪掉", "Xy7#kq2Lm9"),
        ("令牌是 Zq7LmR2xWv9K", "Zq7LmR2xWv9K"),
    )
    lookalikes = (
        "DB_PASSWORD=<数据库密码>",
        "密码：${DB_PASSWORD}",
        "请输入密码",
    )
