"""The lesson check: rules a line of guidance must keep to be worth a prompt.

A repair's two lines are read by the next agent as advice. A careful
colleague's advice names what to do or not to do; it does not say "the
approach that worked before", does not paste a stack frame, does not point
at "this", is not cut off mid-phrase, fits on a line and is written in the
language the user spoke. ``lesson_problems(line, source)`` returns the
rules a line breaks, by name:

* ``placeholder`` — the line's object is made only of generic words
  ("an approach that succeeded before", "repeating what failed");
* ``stack-or-diff`` — a stack frame, a file:line location, a diff hunk, a
  code gutter, a caret marker or a dump of paths;
* ``tiny-object`` — an object of one or two characters (a two-letter ASCII
  name such as ``uv`` excepted) or only a demonstrative or pronoun;
* ``cut`` — an ellipsis at either end, a dangling connector or colon at the
  end, or an unbalanced bracket or quote;
* ``over-cap`` — longer than ``LESSON_CAP``;
* ``language`` — the user (or the context) wrote Chinese and the line's own
  words are English prose, or the reverse.

The rules look at the shape of a line, never at particular sentences; an
empty line breaks none (saying nothing is allowed, inventing is not).
"""

from __future__ import annotations

import functools
import re

from .._checks import check_int
from ..errors import InvalidInputError

__all__ = [
    "INSTANCE_OPEN",
    "LESSON_CAP",
    "RULES",
    "has_cjk",
    "lesson_body",
    "lesson_objects",
    "lesson_problems",
    "meaningless_object",
    "without_instance",
]

# A lesson fits a rendered guidance line (``RecallConfig.render_line_cap``,
# 200) behind its longest head, "10. [tool-quirk, warn] " (23 characters).
LESSON_CAP = 176
RULES = ("placeholder", "stack-or-diff", "tiny-object", "cut", "over-cap", "language")

_LABEL = re.compile(
    r"^\s*(?:prefer|avoid|never|always|use|do|don't|do not|instead|note|use the corrected value)\s*[:：]\s*",
    re.IGNORECASE,
)
# "X instead of Y", "X rather than Y", "X 而不是 Y": two objects.
_INSTEAD = re.compile(
    r"\s+(?:instead\s+of|rather\s+than)\s+|\s*(?:而不是|而非|而不要|不要用)\s*", re.IGNORECASE
)
# A trailing note in brackets or after a dash is a qualifier, not the object.
_QUALIFIER = re.compile(r"\s*(?:[(（].*|\s[—–-]\s.*)$", re.DOTALL)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORDS = re.compile(r"[A-Za-z][A-Za-z'-]*|[\u3400-\u4dbf\u4e00-\u9fff]+|\S")

# Words that refer to no particular thing: what a placeholder is made of.
_GENERIC_EN_WORDS = """
    a an the for of to with in on at by from that which what this these those it its is was are were be
    been being and or not no same previous previously before earlier last again once prior old
    approach approaches method methods way ways solution solutions thing things something anything
    fix fixes option options step steps action actions attempt attempts pattern patterns one ones other
    alternative alternatives different better correct right proper wrong bad good usual usual normal
    worked works work working succeeded success successful successfully failed fails fail failing failure
    repeat repeating repeated do doing done did try trying tried use using used again task tool here there
    time times whatever whichever instead"""
_GENERIC_EN = frozenset(_GENERIC_EN_WORDS.split())
_GENERIC_ZH = (
    "之前|以前|上次|原来|原先|成功|失败|的|了|过|方法|方式|做法|办法|同样|一样|重复|这个|那个|这样|那样"
    "|这种|那种|别的|其他|其它|正确|错误|操作|步骤|尝试|再|又|方案|东西|用|做|它|此"
)
_GENERIC_ZH_RE = re.compile(f"(?:{_GENERIC_ZH})+")
_DEMONSTRATIVE = re.compile(
    r"^(?:[a-z][\w'-]*\s+)?(?:(?:do(?:ing)?|use|using|try(?:ing)?|run(?:ning)?|write|writing|the|a|an)\s+)*"
    r"(?:this|that|these|those|it|them|one|here|there|so|such|something|stuff)$"
    r"|^(?:用|做|写|搞|改|跑|执行|使用)?(?:这|那|此|它|这样|那样|这个|那个|这种|那种|这些|那些|这么做|那么做|这么写|那么写|这么干)$",
    re.IGNORECASE,
)
_LIGHT_VERB = re.compile(
    r"^(?:(?:do(?:ing)?|use|using|try(?:ing)?|the|a|an)\s+)+|^(?:用|做|使用|写)(?=\S)", re.IGNORECASE
)

_STACK = re.compile(
    r"\bat\s+[\w$.<>\[\]]+\s*\(\S*:\d+(?::\d+)?\)"  # JS / Java frame
    r"|\bFile\s+\"[^\"]+\",\s+line\s+\d+"  # Python frame
    r"|\b[\w./-]+\.(?:py|js|jsx|mjs|ts|tsx|go|java|kt|c|cc|cpp|h|hpp|rs|swift|m|cs|rb|php|scala|dart)"
    r":\d+"  # file:line
    r"|\+0x[0-9a-f]+|\b0x[0-9a-f]{6,}\b"  # offsets, addresses
    r"|\bgoroutine\s+\d+|\(\*\w+\)\.\w+\("  # Go
    r"|@@\s*-\d+(?:,\d+)?\s+\+\d+(?:,\d+)?\s*@@|\bdiff\s+--git\b|(?:^|\s)(?:\+\+\+|---)\s+[ab]/"  # diffs
    r"|(?:^|\s)\d+\s*\|\s|\^{3,}|~{3,}"  # code gutter, caret / tilde markers
    r"|\bTraceback\s+\(most\s+recent",
    re.IGNORECASE,
)
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:/[\w.@+-]+){3,}")
_CUT_END = re.compile(
    r"(?:\.\.\.|…|[,，:：;；(（\[{<\-–—=&|、])\s*$"
    r"|(?:^|(?<=\s))(?:and|or|to|the|a|an|of|with|for|then|but|because|if|when|than|into|from|by|in|on|at|is|are"
    r"|be|not|so|as|that|which|while|via|its|their|your|our|my)\s*$"
    r"|(?:和|或|或者|把|在|跟|从|对|与|及|并|而|但|因为|如果|就|先|再|要|用|让|给|被|将)\s*$",
    re.IGNORECASE,
)
_CUT_TAIL = 12
# A colon, late in the line, followed by a scrap: "…都要带 timeout：req".
_COLON_SCRAP = re.compile(r"[:：]\s*[^\s:：]{1,3}\s*$")
_CUT_START = re.compile(r"^\s*(?:\.\.\.|…)")
_PAIRS = (("(", ")"), ("（", "）"), ("[", "]"), ("{", "}"), ("「", "」"), ("『", "』"), ("【", "】"))
_TWO_LETTER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9+#]")
_CODEISH = re.compile(r"[./_=@$<>{}\[\]#0-9\\]|--|::")


# How a prohibition quotes the failed call it was said about, after it (synthesis.template):
# "Never: run black over the tree (as in black --line-length 120 .)" / "…（例如 black .）".
INSTANCE_OPEN = {"en": (" (as in ", ")"), "zh": ("（例如 ", "）")}


def without_instance(line: str) -> str:
    """``line`` without the failed call quoted at its end (the rule alone).

    Recall matches a repair's situation apart from its lesson, so its search
    text keeps the rule, not the call (which is the situation again).
    """
    for opening, closing in INSTANCE_OPEN.values():
        at = line.rfind(opening)
        if at > 0 and line.endswith(closing):
            return line[:at]
    return line


def lesson_body(line: str) -> str:
    """The line without its label (``Prefer:``, ``Avoid:``, ``Never:`` …)."""
    return _LABEL.sub("", line, count=1).strip()


def lesson_objects(line: str) -> list[str]:
    """What the line tells the reader to use or to avoid: one or two phrases."""
    body = lesson_body(line)
    if not body:
        return []
    parts = _INSTEAD.split(body, maxsplit=1)
    return [_QUALIFIER.sub("", part).strip(" \t\"'`“”‘’.。,，;；!！") for part in parts]


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


def meaningless_object(obj: str) -> str | None:
    """``"placeholder"`` or ``"tiny-object"`` when ``obj`` names nothing, else None."""
    core = obj.strip(" \t\"'`“”‘’.。,，;；:：!！?？")
    if _DEMONSTRATIVE.match(core):
        return "tiny-object"
    bare = _LIGHT_VERB.sub("", core).strip() or core
    if len(bare) <= 2 and not _TWO_LETTER_NAME.fullmatch(bare):
        return "tiny-object"
    if _generic_only(core):
        return "placeholder"
    return None


def _generic_only(text: str) -> bool:
    # The head before a trailing "for <subject>" is what the line is about:
    # "an approach that succeeded before for bash" is about no approach at all.
    head = re.split(r"\s+(?:for|with|when|in|on)\s+", text, maxsplit=1, flags=re.IGNORECASE)[0]
    tokens = _WORDS.findall(head)
    if not tokens:
        return False
    for token in tokens:
        if has_cjk(token):
            if _GENERIC_ZH_RE.fullmatch(token) is None:
                return False
        elif token.isalpha() or "'" in token or "-" in token:
            if token.lower() not in _GENERIC_EN:
                return False
        elif token.isalnum():
            return False
    return True


def lesson_problems(line: str, source: str | None = None, cap: int = LESSON_CAP) -> tuple[str, ...]:
    """The rules (``RULES``) ``line`` breaks, in ``RULES`` order; ``()`` for a good or empty line.

    ``source`` is the text the lesson was written from (the user's message,
    else the tool context); without it the language rule is not applied.
    """
    if not isinstance(line, str):
        raise InvalidInputError(f"line must be a str, got {type(line).__name__}")
    if source is not None and not isinstance(source, str):
        raise InvalidInputError(f"source must be a str or None, got {type(source).__name__}")
    check_int("cap", cap, lo=1)
    return _problems(line, source, cap)


# A repair checks each candidate line, then the chosen ones again as written
# (and the LLM path the reply's): the verdict is computed once per text.
@functools.lru_cache(maxsize=4096)
def _problems(line: str, source: str | None, cap: int) -> tuple[str, ...]:
    body = lesson_body(line)
    if not body:
        return ()
    found: set[str] = set()
    for obj in lesson_objects(line):
        verdict = meaningless_object(obj)
        if verdict is not None:
            found.add(verdict)
    if _STACK.search(body) or len(_PATH.findall(body)) >= 2:
        found.add("stack-or-diff")
    if _is_cut(body):
        found.add("cut")
    if len(line) > cap:
        found.add("over-cap")
    if source is not None and _other_language(body, source):
        found.add("language")
    return tuple(rule for rule in RULES if rule in found)


def _is_cut(body: str) -> bool:
    # Every ending _CUT_END knows is at most 7 characters long ("because"):
    # searching the tail alone is enough, and a long line costs no more than
    # a short one (the lookbehind still sees the space before the tail).
    tail = max(0, len(body.rstrip()) - _CUT_TAIL)
    if _CUT_START.match(body) or _CUT_END.search(body, tail):
        return True
    if _COLON_SCRAP.search(body) and len(body) > 12:
        return True
    for left, right in _PAIRS:
        if body.count(left) != body.count(right):
            return True
    return any(body.count(q) % 2 for q in ('"', "`"))


def _other_language(body: str, source: str) -> bool:
    """Chinese source, English prose line (or the reverse); copied words do not count."""
    source_cf = source.casefold()
    if not has_cjk(source):
        return has_cjk(body) and not all(seg in source for seg in _CJK_RUNS.findall(body))
    if has_cjk(body):
        return False
    own = [
        w
        for w in re.findall(r"\S+", body)
        if w.isascii() and re.fullmatch(r"[A-Za-z][a-z'-]+[,.;:!?]?", w) and not _CODEISH.search(w)
        if w.strip(",.;:!?").casefold() not in source_cf
    ]
    return len(own) >= 2


_CJK_RUNS = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
