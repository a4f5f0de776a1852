"""The agent's previous turn as optional context for the classifier (private).

``classify_feedback(text, agent_text=...)`` calls ``resolve`` after both tiers
have answered. The context only completes or sharpens a *bare* message — one
that names something without saying what it replaces — and never overrides a
message that already says it all:

1. **Bare value** ("8080", "v2.4.1", "周三"): a short message that is just a
   value, while the agent's turn holds a value of the same kind (a number, a
   version, a weekday) that differs → ``correction``, the value as written.
2. **Bare replacement** ("用快速排序", "use pnpm", or just "React"): a
   ``preference`` without an ``avoid`` (or a message that is only a name),
   whose ``prefer`` belongs to a family of alternatives (``ALTERNATIVES``:
   sorting algorithms, package managers, HTTP clients …) of which the agent's
   turn names another member → ``preference``, that member is ``avoid``.
3. **The other one** ("the other one", "另一个", "换另一种"): the agent offered
   two options ("X or Y", "X 还是 Y"); the one it went on to use (named again
   later, else the first) is ``avoid``, the other ``prefer``.

Everything is bounded: only the last ``AGENT_WINDOW`` characters of the agent's
turn are read, and every pattern is linear.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ..types import ClassifiedFeedback

AGENT_WINDOW: Final = 4000
_BARE_MAX: Final = 24

# Families of interchangeable tools and methods: a bare "use X" replaces the
# member of X's family the agent used. Lower-case; Chinese names as written.
ALTERNATIVES: Final[tuple[frozenset[str], ...]] = tuple(
    frozenset(group)
    for group in (
        {"bubble sort", "quicksort", "quick sort", "merge sort", "mergesort", "heapsort", "heap sort",
         "insertion sort", "selection sort", "timsort", "冒泡排序", "快速排序", "快排",
         "归并排序", "歸併排序", "堆排序", "插入排序", "选择排序", "冒泡", "歸併", "归并"},
        {"npm", "pnpm", "yarn", "bun"},
        {"pip", "uv", "poetry", "pipenv", "conda"},
        {"requests", "httpx", "aiohttp", "urllib", "urllib3"},
        {"pandas", "polars", "dask"},
        {"mysql", "postgres", "postgresql", "sqlite", "mariadb", "mongodb", "oracle"},
        {"redis", "memcached"},
        {"jest", "vitest", "mocha"},
        {"pytest", "unittest", "nose"},
        {"flake8", "ruff", "pylint"},
        {"black", "yapf", "autopep8"},
        {"react", "vue", "svelte", "angular"},
        {"flask", "fastapi", "django"},
        {"docker", "podman"},
        {"nginx", "caddy", "apache"},
        {"matplotlib", "plotly", "seaborn"},
        {"moment.js", "moment", "date-fns", "dayjs", "luxon"},
        {"python", "go", "rust", "java", "typescript", "javascript", "c++", "ruby"},
        {"json", "yaml", "toml", "csv", "xml"},
        {"tabs", "spaces"},
        {"threads", "threading", "asyncio", "multiprocessing"},
        {"grep", "ripgrep", "rg"},
        {"bash", "zsh", "fish"},
        {"bfs", "dfs", "广度优先", "深度优先"},
        {"递归", "遞迴", "循环", "迭代", "recursion", "iteration", "a loop"},
    )
)  # fmt: skip

_TOKEN_OF: Final = {name: group for group in ALTERNATIVES for name in group}
_NAMES: Final = sorted(_TOKEN_OF, key=len, reverse=True)
_NAME_RE: Final = re.compile(
    "|".join(
        (r"(?<![\w.+-])" + re.escape(n) + r"(?![\w+])") if n.isascii() else re.escape(n) for n in _NAMES
    ),
    re.IGNORECASE,
)

_WEEKDAYS: Final = (
    "monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    "周一|周二|周三|周四|周五|周六|周日|週一|週二|週三|週四|週五|週六|週日|星期[一二三四五六日天]"
)
_VALUE_KINDS: Final = (
    ("version", re.compile(r"v?\d+\.\d+(?:\.\d+){0,2}", re.IGNORECASE)),
    ("weekday", re.compile(_WEEKDAYS, re.IGNORECASE)),
    (
        "number",
        re.compile(r"[$¥€£]?\d[\d,]{0,12}(?:\.\d{1,6})?\s?(?:%|ms|s|mb|gb|kb|元|号|點|点)?", re.I),
    ),
)
_OTHER_ONE: Final = re.compile(
    r"^(?:no[,.]?\s{1,3}|nah[,.]?\s{1,3}|不[,，]?\s{0,2})?"
    r"(?:use\s{1,3}|try\s{1,3}|go with\s{1,3}|用|换|換|改用|要)?"
    r"(?:the\s{1,3})?(?:other|另一|另外一|另外那)\s{0,2}(?:one|option|approach|way|个|個|种|種|款|套)?"
    r"(?:\s{0,3}(?:please|instead|then|吧|啦|呢))?[\s.!。！]*$",
    re.IGNORECASE,
)
_OPTIONS: Final = re.compile(
    r"([\w.+#-]{1,30}|[\u4e00-\u9fff]{1,8})\s{0,3}(?:\bor\b|还是|還是|或者|或)\s{0,3}([\w.+#-]{1,30}|[\u4e00-\u9fff]{1,8})",
    re.IGNORECASE,
)


def _bare_value(text: str) -> str | None:
    stripped = text.strip().strip("。.!！?？")
    if not stripped or len(stripped) > _BARE_MAX:
        return None
    for kind, pattern in _VALUE_KINDS:
        if pattern.fullmatch(stripped):
            return kind
    return None


def _value_in(agent: str, kind: str, value: str) -> bool:
    pattern = dict(_VALUE_KINDS)[kind]
    return any(m.group().strip().casefold() != value.casefold() for m in pattern.finditer(agent))


def resolve(result: ClassifiedFeedback, agent_text: str) -> ClassifiedFeedback:
    """``result`` completed with what the agent's previous turn tells (see the module docstring)."""
    from ..types import Shape

    agent = agent_text[-AGENT_WINDOW:]
    text = result.text
    if not agent.strip() or not text:
        return result
    # 1. A bare value against a different value of the same kind.
    kind = _bare_value(text) if len(text) <= _BARE_MAX + 4 else None
    loose = (Shape.UNKNOWN, Shape.INSTRUCTION, Shape.POSITIVE, Shape.CORRECTION)
    if kind is not None and result.shape in loose:
        value = text.strip().strip("。.!！?？")
        if _value_in(agent, kind, value):
            return replace(result, shape=Shape.CORRECTION, correction=value, prefer=None, avoid=None)
    # 3. "the other one" after "X or Y".
    if len(text) <= 40 and _OTHER_ONE.match(text.strip()):
        options = list(_OPTIONS.finditer(agent))
        if options:
            m = options[-1]
            first, second = m.group(1), m.group(2)
            later = agent[m.end() :].casefold()
            used, other = first, second
            if second.casefold() in later and first.casefold() not in later:
                used, other = second, first
            return replace(
                result, shape=Shape.PREFERENCE, prefer=other, avoid=used, correction=None, constraint=None
            )
    # 2. A bare name ("React") of a family the agent used another member of.
    bare = text.strip().strip("。.!！?？")
    if result.shape is not Shape.PREFERENCE and bare.casefold() in _TOKEN_OF and _other_member(bare, agent):
        result = replace(result, shape=Shape.PREFERENCE, prefer=bare, correction=None, constraint=None)
        named = _other_member(result.prefer or "", agent)
        return replace(result, avoid=named) if named else result
    # 2. A bare replacement: the agent used another member of the family.
    if result.shape is Shape.PREFERENCE and result.prefer and not result.avoid:
        named = _other_member(result.prefer, agent)
        if named is not None:
            return replace(result, avoid=named)
    return result


def _other_member(prefer: str, agent: str) -> str | None:
    """The first name in ``agent`` of ``prefer``'s family other than ``prefer`` itself."""
    group = _TOKEN_OF.get(prefer.casefold())
    if group is None:
        return None
    for m in _NAME_RE.finditer(agent):
        name = m.group()
        if name.casefold() in group and name.casefold() != prefer.casefold():
            return name
    return None


# ---------------------------------------------------------------------------
# Features of the pair, for the learned tier
# ---------------------------------------------------------------------------
# Whether a message triggers a repair depends on whether it speaks of what the
# agent just did: a complaint that names nothing of the agent's turn is more
# often chatter ("the coffee machine is broken again"), a short reply to a
# question the agent asked is an answer, a reply to a failure report is more
# often about the failure. Each feature is a token no character n-gram can be
# (longer than four characters, angle brackets), so it has its own weight.
_WORD: Final = re.compile(r"[a-z0-9_][a-z0-9_.+#/:-]{2,40}")
_CJK_RUN: Final = re.compile(r"[\u3400-\u9fff]{2,40}")
_STOP: Final = frozenset(
    "the and you for that this with not but are was can use it's don't please just what why how now all "  # noqa: SIM905
    "too have has one our your its from into out then there here they them will would should could "
    "did does done been being also again still only more some any like want need let make sure okay".split()
)
# Characters that make a Chinese bigram a function word ("这个", "一下", "我们").
_CJK_FUNCTION: Final = frozenset("的了是我你他她它这那這個个一不在有吗嗎吧呢啊也就都还還要把给給被们們")
_AGENT_FAILED: Final = re.compile(
    r"error|fail|exception|traceback|denied|timed? ?out|refused|失败|失敗|错误|錯誤|报错|報錯|异常|異常",
    re.IGNORECASE,
)
_AGENT_ASKS: Final = re.compile(
    r"[?？]\s*$|\b(?:should i|shall i|do you want|would you like|want me to)\b|要不要|是否|需要我",
    re.IGNORECASE,
)
_AGENT_OPTIONS: Final = re.compile(r"\bor\b|还是|還是|或者", re.IGNORECASE)
_PAIR_WINDOW: Final = 1000


def _content(text: str) -> set[str]:
    """Content words (ASCII, 3+ characters) and Chinese bigrams of a bounded text."""
    low = text.casefold()
    out = {w.strip(".-/:") for w in _WORD.findall(low)} - _STOP
    for run in _CJK_RUN.findall(low):
        out.update(
            run[i : i + 2]
            for i in range(len(run) - 1)
            if run[i] not in _CJK_FUNCTION and run[i + 1] not in _CJK_FUNCTION
        )
    out.discard("")
    return out


def pair_features(text: str, agent_text: str) -> tuple[str, ...]:
    """Tokens the learned tier reads beside the message's n-grams when the agent's turn is known."""
    agent = agent_text[-AGENT_WINDOW:]
    if not agent.strip():
        return ()
    mine = _content(
        text[:_PAIR_WINDOW] + " " + text[-_PAIR_WINDOW:] if len(text) > 2 * _PAIR_WINDOW else text
    )
    shared = len(mine & _content(agent))
    feats = ["<ctx>", f"<shared:{min(shared, 3)}>"]
    if not mine:
        feats.append("<bare>")
    elif shared * 2 >= len(mine):
        feats.append("<mostly-shared>")
    tail = agent[-_PAIR_WINDOW:]
    if _AGENT_FAILED.search(tail):
        feats.append("<agent-failed>")
    if _AGENT_ASKS.search(tail):
        feats.append("<agent-asks>")
    if _AGENT_OPTIONS.search(tail):
        feats.append("<agent-options>")
    return tuple(feats)
