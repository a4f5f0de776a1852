"""The clauses of a user's message that prescribe or forbid, kept whole.

A user's correction often says more than one thing: some context ("web/
has an .nvmrc pinned to 20.11"), what to do ("run nvm use in there
first"), what not to do ("don't touch the engines field"). A lesson takes
the clause that carries the instruction, with its object, in the user's
words. ``instruction_lines(text)`` finds them:

* the message is split into sentences, each sentence into comma clauses;
* a clause that opens with a prohibition ("don't", "never", "stop",
  "别", "不要", "禁止" …) forbids; one that opens with an imperative verb
  or carries a modal ("use", "run", "should", "always", "用", "改用",
  "必须" …) prescribes; a clause with neither continues the instruction
  before it (a list of objects, "and then install");
* of each side's clauses, the one the learned score ranks first
  (``clause_scorer``: the rules propose, the score picks) becomes the line:
  a forbidding one ``Never: …`` (English "don't"), else ``Avoid: …``; a
  prescribing one ``Prefer: …`` (``Always: …`` when it says "always"). The
  cue words themselves are dropped, so a prohibition never reads
  "Always: don't …";
* a line whose object is a demonstrative or one or two characters is not a
  lesson (``meaningless_object``); the next candidate is tried.

The classifier's extracted span, when it has one, is one of the score's
features: the clause it comes from is likelier the lesson's object.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text.lessons import LESSON_CAP, has_cjk, lesson_problems
from .clause_scorer import Candidate, pick

__all__ = [
    "Instruction",
    "fit_line",
    "instruction_lines",
    "is_concrete",
    "side_candidates",
    "split_sentences",
]

# A full stop ends a sentence before a space, except in "e.g." / "i.e." / "etc." / "vs.".
_SENTENCE = re.compile(r"(?<=[。！？!?；;\n])|(?<!e\.g\.)(?<!i\.e\.)(?<!etc\.)(?<!vs\.)(?<=[.])\s+(?=\S)")
# Clauses end at a comma or a colon; an ASCII one only before a space, so
# "CUDA_VISIBLE_DEVICES=4,5,6,7" and "localhost:29500" stay whole. An ASCII
# colon ends a clause only after a few plain words ("…has no business
# running inside the job: run …"), never after a key ("push_to_hub: false").
_CLAUSE = re.compile(r"(?<=[，：])\s*|(?<=,)\s+|(?<=[A-Za-z]:)\s+")
_COLON_CLAUSE_WORDS = 4
_DISCOURSE = re.compile(
    r"^(?:\s*(?:(?:no|nope|nah|wait|wrong|not quite|that'?s wrong|that is wrong|ok(?:ay)?|well|sorry"
    r"|oh|ah|hey|look|hmm+)\s*[,，!！.。:：~～-]+|(?:actually|also|and|but|then|again|please|pls|plz|fyi|btw)\b[,，]?"
    r"|不对|不是这样|错了|不行|嗯+|哦+|啊|呃|好吧|另外|还有|然后|而且|但是|不过|记住|注意|以后|下次|今后)"
    r"\s*[,，!！。:：~～]*\s*)+",
    re.IGNORECASE,
)
_SUBJECT = re.compile(
    r"^(?:(?:you|we|u|i'd like you to|i want you to|i need you to|can you|could you|please|pls|just"
    r"|kindly)\s+)+"
    r"|^(?:你们|你|我们|咱们|请你|请|麻烦|以后|下次|今后|一定要?|务必|都|但是?|而且|并且)+\s*",
    re.IGNORECASE,
)
_NEVER_EN = re.compile(
    r"^(?:please\s+|just\s+|and\s+)?(?:(?:you|we)\s+)?(?:don'?t|do\s+not|never|shouldn'?t|should\s+not"
    r"|must\s+not|mustn'?t|won'?t|will\s+not|can'?t|cannot)(?:\s+ever)?\s+(?:ever\s+)?",
    re.IGNORECASE,
)
_AVOID_EN = re.compile(
    r"^(?:please\s+|just\s+|and\s+)?(?:stop|avoid|quit|no\s+more|no|drop\s+the|get\s+rid\s+of)\s+",
    re.IGNORECASE,
)
_NOT_ALLOWED = re.compile(
    r"^(?P<obj>.+?)\s+(?:is|are)\s+(?:not\s+allowed|forbidden|banned|not\s+permitted|off[- ]limits"
    r"|a\s+no-go)\b",
    re.IGNORECASE,
)
_AVOID_ZH = re.compile(
    r"(?:千万别|千万不要|绝对不要|绝对不能|绝对不可以|绝不|决不|一定不要|不要再|别再|不许|不准|禁止|严禁|不得|不可以|不能再?"
    r"|不要|不应该?|不用|避免|勿|别)"
)
_ALWAYS = re.compile(r"^(?:always|每次都|始终|一律|永远)\s*", re.IGNORECASE)
_PRESCRIBE_EN = re.compile(
    r"^(?:(?:first|then|instead|only|always|just|also|now)\s*,?\s+)*(?:use|run|call|set|pin|add|keep|put|pass|install"
    r"|upgrade|downgrade|switch|move|rename|write|import|point|go|stick|make|wrap|read|check|build|restart"
    r"|create|remove|delete|enable|disable|export|source|activate|load|bump|rebase|commit|push|pull|apply"
    r"|change|replace|prefer|start|specify|mount|cd|prefix|append|update|regenerate|rerun|re-run|retry|wait"
    r"|ask|follow|leave|send|open|edit|fix|lock|reset|target|select|choose|register|configure|define"
    r"|declare|mark|tag|route|limit|raise|lower|increase|decrease|reduce|split|merge|squash|sign|verify"
    r"|validate|test|format|quote|escape|convert|return|log|handle|skip|ignore|exclude|include|stay|try|let"
    r"|deploy|drain|cordon|scale|roll|revert|backport|cherry-pick|regenerate|clean|clear|flush|copy|link"
    r"|bind|attach|detach|assign|grant|rotate|renew|request|fetch|download|upload|store|save|put|mock"
    r"|patch|bake|compile|cook|package|ship|release|tag|stage|submit|shelve|sync|checkout|branch)\b",
    re.IGNORECASE,
)
_MODAL_EN = re.compile(
    r"\b(?:should|must|need(?:s)?\s+to|ha(?:s|ve)\s+to|always|instead|prefer(?:red)?|make\s+sure|only\s+use"
    r"|is\s+the\s+(?:right|correct)|goes?\s+through|belongs?\s+in|lives?\s+in)\b"
    # "it's `git push --force-with-lease`": a correction naming the right thing
    r"|\b(?:it'?s|it\s+is)\s+(?=`|\S*[./_=-]\S)"
    # "vitest only": a restriction to one thing
    r"|^[\w.@/-]+\s+only\b",
    re.IGNORECASE,
)
# Strong cues prescribe wherever they stand; weak ones ("用", "要", "先")
# only near the start of a clause. "不需要", "没用" are not cues at all.
_PRESCRIBE_ZH_STRONG = re.compile(
    r"(?<![不别没])(?:改用|换成|换用|改成|改为|设成|设为|统一用?|一律|必须|应该|应当|务必|记得|只用|只能|都用|请用|要用)"
)
_PRESCRIBE_ZH = re.compile(
    r"(?<![不别没])(?:需要|先|用|使用|调用|执行|运行|跑|加上|加|设置|指定|固定|锁定|保持|保留|升级|降级|回退|放到|放在|"
    r"写到|写成|装|切到|切换到|开启|打开|关闭|配置|检查|确认|等|传|带上?|要)(?!了)"
)
# A clause that explains ("那个 loading script 会…", "because …") is not part of the instruction.
_EXPLAINS = re.compile(
    r"^(?:那个|这个|那样|这样|因为|因此|所以|否则|不然|那等于|這|那|because|since|so\s|otherwise|that'?s|this\s+is|which"
    r"|hence|thus|therefore|or\s+else|(?:it|they)\s|之后|之後|以免|免得)",
    re.IGNORECASE,
)
_INSTEAD_TAIL = re.compile(
    r"(?:\s+(?:instead\s+of|rather\s+than|not)\s+|\s*(?:而不是|而非|不要用|别用)\s*)(?P<obj>.+)$"
)
_CONCRETE = re.compile(
    r"`[^`]+`|[A-Za-z0-9][\w-]*[./_=:@#][\w./=:@#*<>|%-]*\w|--?[a-z][\w-]+|\b[A-Z]{2,}\w*\b|\b[a-z]+[A-Z]\w*"
    r"|(?<=[\u4e00-\u9fff])\s*[A-Za-z][\w-]+|[A-Za-z][\w-]+\s*(?=[\u4e00-\u9fff])"
)
_CONDITION = re.compile(r"^(?:when|whenever|if|once|before|after|while)\b[^,，]*[,，]\s*$", re.IGNORECASE)
# "用 GradScaler 的时候，": a condition, whatever verb it holds.
_CONDITION_ZH = re.compile(r"(?:的时候|的時候|时|時|的话|的話|之前|之后|之後)[,，]\s*$")
_TRAILING = re.compile(
    r"(?:[\s,，;；:：、。.!！?？~～\-–—]|\s(?:please|pls|plz|thanks|thx|ok|okay)\b|(?<=[\u4e00-\u9fff])[吧哦啊呀哈])+$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Instruction:
    """A lesson line and the clause it was read from."""

    line: str
    clause: str


def is_concrete(text: str) -> bool:
    """Whether ``text`` names a command, flag, file, identifier or value."""
    return _CONCRETE.search(text) is not None


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def side_candidates(text: str) -> dict[str, list[Candidate]]:
    """Every clause of ``text`` that prescribes (``prefer``) or forbids (``avoid``), in the user's order."""
    sentences = split_sentences(text)
    out: dict[str, list[Candidate]] = {"prefer": [], "avoid": []}
    for at, sentence in enumerate(sentences):
        for polarity, clause in _instructions(sentence):
            if polarity not in out:
                continue
            firm = polarity == "avoid" or bool(
                _MODAL_EN.search(clause) or _PRESCRIBE_ZH_STRONG.search(clause)
            )
            concrete = _CONCRETE.search(clause) is not None
            out[polarity].append(Candidate(clause, at, len(sentences), concrete, firm))
    return out


def instruction_lines(
    text: str, hint: str | None = None, avoid_hint: str | None = None
) -> tuple[Instruction | None, Instruction | None]:
    """``(prefer, avoid)``: the lines the message's instructions make, either may be None.

    The rules find each side's candidates (``side_candidates``); the learned
    score (``clause_scorer``) orders them, and the best one that makes a
    lesson line is taken. ``hint`` / ``avoid_hint``: the classifier's spans
    for each side, one of the score's features.
    """
    found = side_candidates(text)
    avoid: Instruction | None = None
    for k in pick("avoid", found["avoid"], avoid_hint):
        avoid = _avoid_line(found["avoid"][k].clause, text)
        if avoid is not None:
            break
    prefer: Instruction | None = None
    for k in pick("prefer", found["prefer"], hint):
        clause = found["prefer"][k].clause
        prefer = _prefer_line(clause, text)
        if prefer is not None:
            if avoid is None:
                avoid = _instead_line(clause, text)
            break
    return prefer, avoid


def _open_brackets(piece: str) -> bool:
    return any(piece.count(left) > piece.count(right) for left, right in ("()", "[]", "{}", "（）"))


def _keeps_colon(piece: str) -> bool:
    words = piece.split()
    return len(words) < _COLON_CLAUSE_WORDS or not words[-1][:-1].isalpha()


def _clauses(sentence: str) -> list[str]:
    out: list[str] = []
    for piece in _CLAUSE.split(sentence):
        if out and _open_brackets(out[-1]):
            out[-1] = f"{out[-1]} {piece}"  # "errors.Is(err, ctx)": no clause ends inside brackets
        elif out and out[-1].endswith(":") and _keeps_colon(out[-1]):
            out[-1] = f"{out[-1]} {piece}"  # "vitest only: vi.fn …" is one clause
        else:
            out.append(piece)
    return out


def _instructions(sentence: str) -> list[tuple[str, str]]:
    """(polarity, clause) for each instruction of the sentence, continuations joined on."""
    out: list[tuple[str, str]] = []
    pending = ""
    for clause in _clauses(sentence):
        clause = _DISCOURSE.sub("", clause.strip()).strip()
        if not clause:
            continue
        polarity = None if _CONDITION_ZH.search(clause) else _polarity(clause)
        if polarity is None and (_CONDITION.search(clause) or _CONDITION_ZH.search(clause)):
            # "when using GradScaler," / "用 GradScaler 的时候，" belongs to what follows.
            pending = f"{pending}{clause}"
            continue
        if pending and polarity is not None:
            clause, pending = f"{pending}{'' if has_cjk(pending) else ' '}{clause}", ""
        if polarity is None:
            if _EXPLAINS.match(clause) or _PARTICLE_AFTER.match(clause):
                if out:
                    kind, prev = out[-1]
                    out[-1] = (kind, prev.rstrip("，,： "))
                out.append(("explains", clause))  # ends what came before; never a lesson
                continue
            if out and out[-1][0] != "explains":
                kind, prev = out[-1]
                out[-1] = (kind, f"{prev}{'' if prev.endswith(('，', '：')) else ' '}{clause}")
            continue
        out.append((polarity, clause))
    return out


_UNIT = re.compile(r"[A-Za-z0-9_.\-/$~=]+|[\u3400-\u9fff]")
_NEAR = 6


def _near_start(prefix: str) -> bool:
    """A cue is near the start when a few words or characters precede it (an identifier counts once)."""
    return len(_UNIT.findall(prefix)) <= _NEAR


_PARTICLE_AFTER = re.compile(r"^[A-Za-z\u4e00-\u9fff][\w-]*?\s*(?:的时候|的時候|了|时候|時候)")
_PLEASE = re.compile(r"^(?:(?:please|pls|just|kindly)\s+)+", re.IGNORECASE)
_OMITTED = re.compile(
    r"^(?:you|u)\s+(?:never|didn'?t|did\s+not|forgot\s+to|forget\s+to|keep\s+forgetting\s+to|missed|skipped)\s+",
    re.IGNORECASE,
)
# Words that open a clause without being an imperative verb.
_NOT_VERB_WORDS = (
    "i you he she it we they this that these those there here the a an my your our their its his her some any"
    " all every each no none nothing anything everything something who what which when where why how if"
    " because since so but and or also then now just only even still yet not is are was were be been has have"
    " had do does did will would can could should must may might shall hence thus therefore otherwise"
)
_NOT_VERB = frozenset(_NOT_VERB_WORDS.split())
_SUBJECT_VERB_WORDS = (
    "is are was were has have had does did will would can could should must may might needs goes seems looks"
    " runs breaks fails works means belongs lives wants 's and or nor & / vs"
)
_SUBJECT_VERB = frozenset(_SUBJECT_VERB_WORDS.split())
_NOUNISH = re.compile(r"(?:s|ed|ing|tion|sion|ness|ment|ity|ly|er|or)$")


def _bare_verb(bare: str) -> bool:
    """A clause that opens with a bare verb and names something concrete ("restore it with uv pip sync …")."""
    words = bare.split(None, 2)
    if len(words) < 2 or has_cjk(bare) or not words[0].isascii() or not words[0].isalpha():
        return False
    first, second = words[0].lower(), words[1].lower().strip(",.")
    if first in _NOT_VERB or _NOUNISH.search(first) or second in _SUBJECT_VERB or second.endswith("'s"):
        return False
    return _CONCRETE.search(bare) is not None


_DESCRIBES = re.compile(r"^(?:that|this|it|which|these|those|there)\b(?!\s+(?:should|must)\b)", re.IGNORECASE)


def _polarity(clause: str) -> str | None:
    if _OMITTED.match(clause):
        return "prefer"  # "you never call X" / "you forgot to X": do X
    bare = _SUBJECT.sub("", clause)
    if _DESCRIBES.match(bare):
        return None  # "that only hides it": a remark about the last attempt, not an instruction
    if _NEVER_EN.match(bare) or _AVOID_EN.match(bare) or _NOT_ALLOWED.match(bare):
        return "avoid"
    zh = _AVOID_ZH.search(clause)
    if zh is not None and _near_start(clause[: zh.start()]):
        return "avoid"
    plain = _PLEASE.sub("", clause)  # "you broke it" is a statement, "please restore it" is not
    if _PARTICLE_AFTER.match(bare):
        return None  # "merge 的时候…", "加了…": a condition or a past action, not an order
    if _PRESCRIBE_EN.match(bare) or _MODAL_EN.search(clause) or _ALWAYS.match(bare) or _bare_verb(plain):
        return "prefer"
    if _PRESCRIBE_ZH_STRONG.search(clause):
        return "prefer"
    zh_pos = _PRESCRIBE_ZH.search(clause)
    if zh_pos is not None and _near_start(clause[: zh_pos.start()]):
        return "prefer"
    return None


def _avoid_line(clause: str, source: str) -> Instruction | None:
    clause = clause.rstrip("，, ")
    bare = _SUBJECT.sub("", clause)
    m = _NOT_ALLOWED.match(bare)
    if m is not None:
        return _checked("Avoid: ", m.group("obj"), clause, source)
    m = _NEVER_EN.match(bare)
    if m is not None:
        return _checked("Never: ", bare[m.end() :], clause, source)
    m = _AVOID_EN.match(bare)
    if m is not None:
        return _checked("Avoid: ", bare[m.end() :], clause, source)
    zh = _AVOID_ZH.search(clause)
    if zh is None:
        return None
    before = _SUBJECT.sub("", clause[: zh.start()]).strip()
    rest = clause[zh.end() :].lstrip()
    glue = " " if before[-1:].isascii() or rest[:1].isascii() else ""
    body = f"{before}{glue}{rest}" if len(before) > 2 else rest
    return _checked("Avoid: ", body, clause, source)


def _prefer_line(clause: str, source: str) -> Instruction | None:
    omitted = _OMITTED.match(clause)
    if omitted is not None:
        rest = clause[omitted.end() :]
        return _checked("Prefer: ", rest, clause, source)
    bare = _SUBJECT.sub("", clause.rstrip("，, "))
    m = _ALWAYS.match(bare)
    if m is not None and bare[m.end() :].strip():
        return _checked("Always: ", bare[m.end() :], clause, source)
    return _checked("Prefer: ", bare, clause, source)


def _instead_line(clause: str, source: str) -> Instruction | None:
    m = _INSTEAD_TAIL.search(clause)
    if m is None:
        return None
    return _checked("Avoid: ", m.group("obj"), clause, source)


def _checked(label: str, body: str, clause: str, source: str) -> Instruction | None:
    line = fit_line(label, body)
    if line is None or lesson_problems(line, source):
        return None
    return Instruction(line, clause)


def fit_line(label: str, body: str, cap: int = LESSON_CAP) -> str | None:
    """``label + body`` within ``cap``: cut at a clause, else a word, boundary; never mid-bracket."""
    body = _TRAILING.sub("", " ".join(body.split()))
    budget = cap - len(label)
    if len(body) > budget:
        body = _cut(body, budget)
    body = _tidy_end(body)
    return label + body if body else None


def _cut(body: str, budget: int) -> str:
    head = body[: budget + 1]
    for marks in ("。；;！？!?", "，,、"):
        at = max(head.rfind(m) for m in marks)
        if at >= budget // 2:
            return head[:at]
    at = head.rfind(" ")
    if at >= budget // 2:
        return head[:at]
    return head[:budget]


_DANGLING = re.compile(
    r"(?:\s+(?:and|or|to|the|a|an|of|with|for|then|but|because|if|when|than|into|from|by|in|on|at|is|are"
    r"|be|not|so|as|that|which|while|via|its|their|your|our|my)|和|或|或者|把|在|跟|从|对|与|及|并|而|但|因为|如果|就|先|再|让|给|被|将)$",
    re.IGNORECASE,
)
_OPENERS = "(（[{「『【"


def _tidy_end(body: str) -> str:
    for _ in range(8):
        before = body
        body = _TRAILING.sub("", body)
        body = _DANGLING.sub("", body)
        for left, right in ("()", "（）", "[]", "{}", "「」", "『』", "【】"):
            if body.count(left) > body.count(right):
                body = body[: body.rfind(left)]
        for quote in ('"', "`"):
            if body.count(quote) % 2:
                body = body[: body.rfind(quote)]
        if body == before:
            break
    return body.strip()
