"""Step 5 of the classifier: the phrases a repair needs, for the chosen shape only.

What to prefer and what to avoid (``_extract_preference``), the corrected
value (``_extract_correction``) and the added requirement
(``_extract_constraint``), each cut from the user's own text (``_View``).
Every step is bounded: frames run only where the gate lets them, and a
phrase is looked for within a few tokens of its frame.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Iterator
from typing import Final

import regex

from . import rules
from .prepare import _blank, _View

# How far back from an anchor extraction looks for the start of a phrase;
# keeps every extraction step bounded even inside one very long clause.
_LOOKBACK = 160


def _clean(phrase: str) -> str | None:
    phrase = phrase.strip(rules.EDGE_PUNCT)
    return phrase or None


def _tokens(text: str, start: int, end: int) -> Iterator[regex.Match[str]]:
    return rules.TOKEN.finditer(text, start, end)


def _is_cjk(tok: str) -> bool:
    # ``rules.CJK.match(tok)`` without a regex call: its two ranges, read from
    # the first character (CJK characters have no case to fold).
    if not tok:
        return False
    first = tok[0]
    return "\u3400" <= first <= "\u9fff" or "\uf900" <= first <= "\ufaff"


def _is_cn_modifier(tok: str) -> bool:
    return tok.translate(rules.TRAD_TO_SIMP) in rules.CN_MODIFIERS


def _cut_cjk(run: str) -> str:
    """A Chinese noun phrase ends before a particle or verb ("手写循环", not "手写循环吧")."""
    m = rules.CN_CUT.search(run, 2)
    return run[: m.start()] if m else run[:8]


def _grab_forward(view: _View, start: int) -> tuple[str, int] | None:
    """The tool/approach phrase that starts at ``start``, and where it ends.

    Determiners and modifiers ("the", "just", "原生") are skipped, but not a modifier
    that names an approach ("plain SQL", "bare metal"); a pronoun
    ("it", "这个") means the frame did not name a tool.
    """
    prose = view.prose
    end = view.clause(start)[1]
    # "that chain of str.replace calls": the quantity is not the tool.
    article = False  # "the" / "teh" (or a quantity) skipped before the phrase
    if "of" in view.masked[start : start + 40] and (
        quantity := rules.QUANTITY_HEAD.match(view.masked, start + _leading_space(prose, start), end)
    ):
        start = quantity.end()
        article = True
    words: list[str] = []
    ends: list[int] = []
    first = start
    # A tool name sits within the first few tokens after its frame.
    for tok in itertools.islice(_tokens(prose, start, end), 12):
        t = tok.group()
        if t[0] in rules.QUOTES and len(t) > 2 and t[-1] in rules.QUOTES:
            if words:
                break
            return t[1:-1].strip(), tok.end()
        if _is_cjk(t):
            if words:
                # "shell 脚本", "for 迴圈": the noun makes a kind of the word before it.
                kind = rules.CN_KIND_NOUN.match(t.translate(rules.TRAD_TO_SIMP))
                if kind is not None and len(words) == 1:
                    words.append(t)
                    ends.append(tok.start() + kind.end())
                break
            # Modifiers, and the verb of "prefer 用 Obsidian": the tool comes next; so does
            # a one-character verb or preposition ("别再发 Excel 了", "别往 MySQL 里塞").
            if _is_cn_modifier(t) or t in rules.CN_USE_VERBS:
                continue
            if len(t) == 1 and _ascii_next(prose, tok.end(), end):
                continue
            cut = _cut_cjk(t)
            return cut, tok.start() + len(cut)
        if not (t[0].isalnum() or t[0] in "$¥€£~./_"):
            break
        low = t.lower().rstrip(".:'")
        if not words and low in rules.DETERMINERS:
            article = article or low in ("the", "teh")
            continue
        if not words and (low in rules.DEMONSTRATIVES or low in rules.SOFTENERS):
            return None
        if words and low in rules.TOOL_STOP:
            break
        if not words:
            first = tok.start()
        words.append(t)
        ends.append(tok.end())
        if len(words) == 3:
            break
    while words and words[-1].lower() in ("one", "ones", "thing", "stuff"):
        words.pop()
        ends.pop()
    if article and len(words) > 1 and words[-1].lower() in rules.KIND_NOUNS:
        words.pop()
        ends.pop()
    if not words:
        return None
    # Cut from the text, not joined: the phrase is what the user wrote ("ＵＶ", not "Ｕ Ｖ").
    last_end = ends[-1]
    phrase = _clean(prose[first:last_end])
    return (phrase, last_end) if phrase else None


def _ascii_next(text: str, pos: int, end: int) -> bool:
    """True when an ASCII word starts at ``pos``, after at most a space, before ``end``."""
    pos += text.startswith(" ", pos)
    return pos < end and text[pos].isascii() and text[pos].isalpha()


def _leading_space(text: str, start: int) -> int:
    """How many spaces follow ``start`` (at most a few)."""
    n = 0
    while n < 3 and start + n < len(text) and text[start + n] == " ":
        n += 1
    return n


def _grab_backward(view: _View, pos: int) -> str | None:
    """The tool phrase that ends right before ``pos`` in the same clause."""
    start = max(view.clause(max(pos - 1, 0))[0], pos - _LOOKBACK)
    words: list[str] = []
    first = last = pos
    toks = list(_tokens(view.prose, start, pos))
    for i in range(len(toks) - 1, -1, -1):
        tok = toks[i]
        t = tok.group()
        low = t.lower()
        if not words and (low in rules.SOFTENERS or low in ("one", "ones")):
            continue
        if _is_cjk(t):
            if not words and not _is_cn_modifier(t):
                # "pip 装依赖太慢": a tool named in ASCII right before the Chinese verb phrase.
                if (ascii_tool := _ascii_before(view, start, tok.start())) is not None:
                    return ascii_tool
                # "shell 脚本就够了": the noun makes a kind of the ASCII word before it.
                if i > 0 and rules.CN_KIND_NOUN.fullmatch(t.translate(rules.TRAD_TO_SIMP)):
                    before = toks[i - 1]
                    word = before.group()
                    if word[0].isalpha() and word.isascii():
                        return _clean(view.prose[before.start() : tok.end()])
                return _clean(t[-8:])
            break
        if words and low in rules.APPROACH_MODIFIERS:
            # "… than raw dicts": the modifier is part of the approach, and starts it.
            words.insert(0, t)
            first = tok.start()
            break
        stop = low in rules.DETERMINERS or low in rules.TOOL_STOP or low in rules.DEMONSTRATIVES
        if stop or not t[0].isalnum():
            break
        if not words:
            last = tok.end()
        words.insert(0, t)
        first = tok.start()
        if len(words) == 3:
            break
    return _clean(view.prose[first:last]) if words else None


def _ascii_before(view: _View, start: int, pos: int) -> str | None:
    """The ASCII word that ends, after at most a space, right before ``pos`` at the start of its clause."""
    prose = view.prose
    end = pos
    while end > start and prose[end - 1] == " ":
        end -= 1
    if end == pos:
        return None
    toks = list(_tokens(prose, start, end))
    if len(toks) != 1:
        return None
    t = toks[0].group()
    low = t.lower()
    if not t[0].isalpha() or not t.isascii() or low in rules.TOOL_STOP or low in rules.DEMONSTRATIVES:
        return None
    return _clean(t)


def _first_forward(
    view: _View, frames: Iterable[regex.Pattern[str]], skip: str | None
) -> tuple[str, int] | None:
    """The first phrase a frame introduces (frames tried in priority order)."""
    for frame in frames:
        if not view.may_match(frame):
            continue
        for m in frame.finditer(view.masked):
            got = _grab_forward(view, m.end())
            if got and got[0] != skip:
                return got
    return None


def _extract_preference(view: _View) -> tuple[str | None, str | None]:
    # "why are you using moment.js? date-fns is what we standardised on": the question names
    # the tool to avoid, the rest the one to prefer.
    if "?" in view.masked and "why" in view.keys.lower and (q := rules.WHY_QUESTION.search(view.masked)):
        outside = dataclasses.replace(view, masked=_blank(view.masked, [q.span()]))
        prefer, avoid = _extract_preference_in(outside)
        if prefer is not None:
            if avoid is None:
                around = [(0, q.start()), (q.end(), len(view.masked))]
                inside = dataclasses.replace(view, masked=_blank(view.masked, around))
                got = _first_forward(inside, rules.PREFER_FORWARD, prefer)
                avoid = got[0] if got else None
            return prefer, avoid
    # "为啥要用 Redux，context 不就够了": the same, in Chinese.
    if "不就" in view.masked and (cn := rules.CN_WHY_THEN_ENOUGH.search(view.masked)):
        prefer = _grab_backward(view, cn.start("enough"))
        if prefer is not None:
            got = _grab_forward(view, cn.start("tool"))
            return prefer, got[0] if got and got[0] != prefer else None
    return _extract_preference_in(view)


def _extract_preference_in(view: _View) -> tuple[str | None, str | None]:
    prefer: str | None = None
    prefer_end = -1
    if got := _first_forward(view, rules.PREFER_FORWARD, None):
        prefer, prefer_end = got
    else:
        # "plotly works better", "poetry please, not pip": the tool comes first. The
        # earliest frame in the text speaks of it ("composition over inheritance here please").
        found = [
            m for frame in rules.PREFER_BACKWARD if view.may_match(frame) and (m := frame.search(view.masked))
        ]
        for m in sorted(found, key=lambda m: m.start()):  # stable: frame order on a tie
            if back := _grab_backward(view, m.start()):
                prefer, prefer_end = back, m.start()
                break
    # Right after the preferred tool: "X instead of Y", "X, not Y", "X 而不是 Y".
    if (
        prefer_end >= 0
        and view.may_match(rules.CONTRAST_AFTER)
        and (c := rules.CONTRAST_AFTER.match(view.masked, prefer_end))
        and c.end() > prefer_end
    ):
        got = _grab_forward(view, c.end())
        if got and got[0] != prefer:
            return prefer, got[0]
    if got := _first_forward(view, (rules.AVOID_FORWARD,), prefer):
        return prefer, got[0]
    # "Y is overkill", "Y 太丑": the complaint names the tool before it; else "Y 换成 X".
    for frame in (rules.AVOID_BACKWARD, rules.AVOID_REPLACED):
        if not view.may_match(frame):
            continue
        for m in frame.finditer(view.masked):
            cand = _grab_backward(view, m.start())
            if cand and cand != prefer:
                return prefer, cand
    return prefer, None


def _grab_value(view: _View, start: int, end: int) -> str | None:
    """The corrected value starting at ``start``: a few tokens, up to a stop word.

    A Chinese unit after a figure stays with it ("3,450 元", "2024 年 5 月 1 日"); the
    value is cut from the original text, spacing included.
    """
    words: list[str] = []
    first = last = start
    article = call = False
    for tok in itertools.islice(_tokens(view.prose, start, end), 12):
        t = tok.group()
        if tok.start() < last:  # inside the call read below
            continue
        if t[0] == "(" and words and tok.start() == last:
            # "len(items) - 1": a call is part of the value, up to its closing parenthesis.
            close = view.prose.find(")", tok.start(), min(end, tok.start() + 60))
            if close < 0:
                break
            words[-1] += view.prose[tok.start() : close + 1]
            last = close + 1
            call = True
            continue
        if _is_cjk(t):
            if words and any(ch.isdigit() for ch in words[-1]) and rules.CN_UNIT.fullmatch(t):
                words.append(t)
                last = tok.end()
                continue
            # "8 点开会": the unit stays with the figure, the event after it does not.
            if (
                words
                and any(ch.isdigit() for ch in words[-1])
                and (unit := rules.CN_UNIT.match(t))
                and (rules.CN_EVENT_VERB.fullmatch(t[unit.end() :]) or t[unit.end() :] in rules.CN_PARTICLES)
            ):
                last = tok.start() + unit.end()
                break
            if words:
                break
            # "七点四十落地", "下午兩點半開始": the time, not the event (matched on the folded text).
            event = rules.CN_EVENT_VERB.search(t.translate(rules.TRAD_TO_SIMP))
            return _clean(t[: event.start()] if event and event.start() > 0 else t)
        if t[0] in rules.QUOTES and len(t) > 2:
            return _clean(t) if not words else _clean(" ".join(words))
        low = t.lower()
        if not words and low in ("the", "a", "an"):
            article = article or low == "the"
            continue
        if low in rules.VALUE_STOP or t in "—–-" or not (t[0].isalnum() or t[0] in "$¥€£~./+"):
            break
        if not words:
            first = tok.start()
        words.append(t)
        last = tok.end()
        if len(words) == 4:
            break
    if not words:
        return None
    # "len(items) - 1" (a spaced minus also ends a clause, so the offset may lie past ``end``).
    if call and (tail := rules.EXPRESSION_TAIL.match(view.prose, last)):
        last = tail.end()
    # "I meant the orders table": the name, not the kind of thing it names.
    if article and len(words) > 1 and words[-1].lower() in rules.KIND_NOUNS:
        last = view.prose.rfind(words[-2], first, last) + len(words[-2])
    return _clean(view.prose[first:last])


def _parallel_number(view: _View, start: int, end: int, old_start: int) -> str | None:
    """For "17 rows, not 16" / "15 号，不是 16 号": the new number, shaped like the old one."""
    old_end = min(view.clause(old_start)[1], old_start + _LOOKBACK)
    old = [t for _, t in zip(range(2), _tokens(view.prose, old_start, old_end), strict=False)]
    if not old or not old[0].group()[0].isdigit():
        return None
    new = list(_tokens(view.prose, start, end))
    for i, tok in enumerate(new):
        if tok.group()[0].isdigit():
            # "Node 20, not 18": a figure that follows the name it belongs to at the clause start.
            name = new[0].group()
            if i == 1 and len(old) == 1 and name.isalpha() and name[:1].isupper() and name.isascii():
                return _clean(view.prose[new[0].start() : tok.end()])
            # Keep a unit only when the old value carries one too.
            if len(old) > 1 and i + 1 < len(new):
                return _clean(view.prose[tok.start() : new[i + 1].end()])
            return _clean(tok.group())
    return None


_VALUE_PREPOSITIONS: Final = frozenset({"from", "by", "in", "at", "on", "under"})


def _value_before(view: _View, neg_start: int, old_start: int) -> str | None:
    """The new value in "<new>, not <old>": after the clause's copula, else its last token."""
    c_start = max(view.clause(neg_start - 1)[0], neg_start - _LOOKBACK)
    value = _parallel_number(view, c_start, neg_start, old_start)
    if value is None:
        copulas = _copulas(view, c_start, neg_start)
        after = copulas[-1].end() if copulas else -1
        if copulas and view.prose[after : after + 1] in rules.QUOTES:
            # "it's 'affect' in that sentence, not 'effect'": the quoted word is the value.
            value = _grab_value(view, after, neg_start)
        elif copulas:
            value = _clean(_trim_cn_tail(view.prose[copulas[-1].end() : neg_start]))
            # "the quote's from Knuth, not Dijkstra": the value, not its preposition.
            if value and (head := value.split(" ", 1))[0].lower() in _VALUE_PREPOSITIONS and len(head) == 2:
                value = _clean(head[1])
        else:
            toks = list(_tokens(view.prose, c_start, neg_start))
            value = _clean(toks[-1].group()) if toks else None
    return value if value and len(value) <= 60 else None


def _trim_cn_tail(value: str) -> str:
    """ "下週一要" -> "下週一", ".env.local 里" -> ".env.local": the event or place word after a value."""
    value = value.rstrip()
    if value[-1:] in ("里", "裡", "中", "内", "內") and value[-2:-1] == " ":
        return value[:-1]
    if value and _is_cjk(value[-1]):
        event = rules.CN_EVENT_VERB.search(value.translate(rules.TRAD_TO_SIMP))
        if event and event.start() > 0 and _is_cjk(value[event.start() - 1]):
            return value[: event.start()]
    return value


def _copulas(view: _View, start: int, end: int) -> list[regex.Match[str]]:
    if not view.may_match(rules.COPULA):
        return []
    return list(rules.COPULA.finditer(view.masked, start, end))


def _extract_correction(view: _View) -> str | None:
    text = view.masked
    # "should be X", "应该是 X".
    for frame in rules.CORRECTION_FRAMES:
        m = frame.search(text) if view.may_match(frame) else None
        if m and (value := _grab_value(view, m.end(), view.clause(m.end())[1])):
            return value
    # "你把李总写成王总了": the value the agent overwrote is the right one.
    if "成" in text and (wrote := rules.WROTE_AS.search(text)):
        return _clean(view.prose[wrote.start(1) : wrote.end(1)])
    # "<new>, not <old>": the value sits right before the negation.
    for m in rules.VALUE_BEFORE_NOT.finditer(text) if view.may_match(rules.VALUE_BEFORE_NOT) else ():
        if m.start() > 0 and (value := _value_before(view, m.start(), m.end())):
            return value
    # "<thing> is <value>" in a clause that is not the "you did X" one.
    you = view.may_match(rules.YOU_CLAUSE)
    stated = [(a, b) for a, b in view.clauses() if not (you and rules.YOU_CLAUSE.match(text, a))]
    for c_start, c_end in stated:
        copulas = _copulas(view, c_start, c_end)
        if copulas and (value := _grab_value(view, copulas[-1].end(), c_end)):
            return value
    # "you wrote Monday but it's Tuesday": the value after "but" in the "you did X" clause.
    for c_start, c_end in view.clauses():
        in_you_clause = you and rules.YOU_CLAUSE.match(text, c_start) is not None
        but = rules.BUT_STATED.search(text, c_start, c_end) if in_you_clause else None
        if but is not None:
            copulas = _copulas(view, but.end(), c_end)
            if copulas and (value := _grab_value(view, copulas[-1].end(), c_end)):
                return value
    # Last resort: the first figure stated outside a "you did X" clause, with its unit.
    for c_start, c_end in stated:
        toks = _tokens(view.prose, c_start, c_end)
        for tok in toks:
            if any(ch.isdigit() for ch in tok.group()):
                unit = next(toks, None)
                if unit is not None and _is_unit(unit.group()):
                    return _clean(view.prose[tok.start() : unit.end()])
                return _clean(tok.group())
    return None


def _is_unit(token: str) -> bool:
    """A unit of measure that belongs to the figure before it ("200 g", "100 度")."""
    if _is_cjk(token):
        return rules.CN_UNIT.fullmatch(token.translate(rules.TRAD_TO_SIMP)) is not None
    return token.lower() in rules.MEASURE_UNIT


_PROHIBIT_THEN_FIRST: Final = regex.compile(
    r"(?:不要|别|不能|不可以|不许|不准|禁止)[^。！？!?\n]{1,80}?[。；;！!]\s{0,2}(?:你\s{0,2}|请\s{0,2})?(?P<first>先)"
)


def _extract_constraint(view: _View, anchor: int) -> str | None:
    """The requirement in the clause of the first constraint cue.

    It starts after a connective ("but", "also", "另外", "不过") and after a
    modal that only frames it ("needs to", "make sure", "但是要"), and ends at
    the clause end without trailing softeners ("though", "吧", "就行").
    """
    if anchor < 0:
        return None
    text = view.masked
    # "不要直接 X。先 Y，再 Z": a prohibition, then the right way in the next sentence;
    # the requirement is the first step prescribed, not the prohibition.
    if "先" in text and (then := _PROHIBIT_THEN_FIRST.search(text)):
        start = then.start("first")
        first = _clean(view.prose[start : view.clause(start)[1]])
        if first and len(first) > 2:
            return first
    c_start, c_end = view.clause(anchor)
    # "also, log every retry": a lead-in alone in its clause; the requirement follows.
    if view.prose[c_start:c_end].strip(rules.EDGE_PUNCT).lower() in rules.LEAD_INS and c_end < len(text):
        c_start, c_end = view.clause(c_end + 1)
    start = c_start
    if conn := rules.CONNECTIVE.search(text, c_start, c_end):
        start = conn.end()
    cn_modal = rules.CN_MODAL.match(text, start, c_end) if view.may_match(rules.CN_MODAL) else None
    if cn_modal and cn_modal.end() > start:
        start = cn_modal.end()
    elif view.may_match(rules.EN_MODAL) and (en_modal := rules.EN_MODAL.search(text, start, c_end)):
        start = en_modal.end()
    end = c_end
    # "preserve the timestamps when you copy them": the requirement, not its occasion.
    occasion = view.may_match(rules.TRAILING_OCCASION) and rules.TRAILING_OCCASION.search(text, start, c_end)
    if occasion and occasion.start() > start:
        end = c_end = occasion.start()
    softener = view.may_match(rules.TRAILING_SOFTENER) and rules.TRAILING_SOFTENER.search(text, start, c_end)
    if softener:
        end = softener.start()
    return _clean(view.prose[start:end])


# A demonstrative or bare pronoun points at something; it never names the thing
# to prefer, avoid or correct ("别这样，用 yarn" avoids what the agent did, not
# "这样"). Compared after folding case, traditional characters and edge punctuation.
_REFERENTS: Final = frozenset(
    {
        "it", "this", "that", "these", "those", "them", "they", "one", "this one", "that one",
        "the same", "same", "so", "such", "like this", "like that", "this way", "that way",
        "it this way", "it that way", "the other", "this thing", "that thing", "here", "there",
        "这", "那", "这个", "那个", "这些", "那些", "这样", "那样", "这种", "那种", "这么", "那么",
        "这么做", "那么做", "这样做", "那样做", "这样子", "那样子", "这种做法", "那种做法", "这个方法",
        "它", "它们", "此", "如此", "这边", "那边", "这里", "那里", "咁", "噉", "呢个", "嗰个", "咁样",
    }
)  # fmt: skip


def is_referent(value: str | None) -> bool:
    """True when ``value`` is only a demonstrative or a pronoun (see ``_REFERENTS``)."""
    if value is None:
        return False
    folded = " ".join(value.strip(rules.EDGE_PUNCT).translate(rules.TRAD_TO_SIMP).casefold().split())
    return folded in _REFERENTS
