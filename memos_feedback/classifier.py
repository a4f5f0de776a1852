"""Rule-based classifier for one user feedback message (English and Chinese).

``classify_feedback(text)`` reads the message a user sent right after the
agent's answer and returns one of eight shapes (see
``shared/spec/feedback-shapes.md``) plus the phrases a repair needs: what to
prefer, what to avoid, the corrected value, the added requirement.

How it decides, in four steps:

1. *Prepare*: trim, keep a bounded head and tail window of long inputs,
   blank pasted code blocks and log lines (the user's own prose decides),
   fold traditional Chinese and typographic quotes onto one spelling.
2. *Mask*: phrases whose words must not be read one by one ("no problem",
   "not bad", "what went wrong", "错误日志") are blanked; some of them count
   as evidence for their real meaning.
3. *Score*: every cue that matches adds its weight to its shape.
4. *Resolve*: among shapes with enough evidence, the spec's tie-break order
   decides (preference > correction > constraint > negative > positive >
   confusion > instruction); with none, ``unknown``.

Extraction then runs only for the chosen shape. Everything is deterministic
and takes time linear in the input (bounded windows, bounded patterns).
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass

import regex

from ._classifier_rules import (
    CLAUSE_BREAK,
    CONTRAST_AFTER,
    CORRECTION_FRAMES,
    CUES,
    MASKS,
    TRAD_TO_SIMP,
    compile_pattern,
)
from .errors import InvalidInputError

__all__ = ["ClassifiedFeedback", "Shape", "classify_feedback"]

_log = logging.getLogger("memos_feedback.classifier")

# Long inputs are mostly pasted logs; the user's words sit at the start or
# the end. Classifying these two windows bounds the cost whatever the size.
HEAD_WINDOW = 2000
TAIL_WINDOW = 2000

# Evidence a shape needs before it can win.
_THRESHOLD = 1.0


class Shape(enum.Enum):
    """What a feedback message means about the agent's previous step."""

    POSITIVE = "positive"
    NEGATIVE = "negative"
    CORRECTION = "correction"
    CONSTRAINT = "constraint"
    PREFERENCE = "preference"
    CONFUSION = "confusion"
    INSTRUCTION = "instruction"
    UNKNOWN = "unknown"

    @property
    def triggers_repair(self) -> bool:
        """True when the message asks the agent to change what it did."""
        return self in _REPAIR_SHAPES


_REPAIR_SHAPES = frozenset({Shape.NEGATIVE, Shape.CORRECTION, Shape.CONSTRAINT, Shape.PREFERENCE})

# The spec's tie-break order: the first shape with enough evidence wins.
_ORDER = (
    Shape.PREFERENCE,
    Shape.CORRECTION,
    Shape.CONSTRAINT,
    Shape.NEGATIVE,
    Shape.POSITIVE,
    Shape.CONFUSION,
    Shape.INSTRUCTION,
)


@dataclass(frozen=True, slots=True)
class ClassifiedFeedback:
    """The classifier's answer for one message."""

    shape: Shape
    confidence: float
    prefer: str | None = None
    avoid: str | None = None
    correction: str | None = None
    constraint: str | None = None
    text: str = ""


# ---------------------------------------------------------------------------
# Step 1: prepare the text
# ---------------------------------------------------------------------------
_CONTROL = compile_pattern(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200f\u2028\u2029\ufeff]")
_INLINE_CODE = compile_pattern(r"`[^`\n]{1,200}`")
# Lines of a pasted log or traceback that were not fenced.
_LOG_LINE = compile_pattern(
    r"[ ]{4}|\t|\$ |>>> |Traceback \(most recent|File \"|\s{0,8}at \S{1,200}\(|"
    r"\d{4}-\d\d-\d\d[ T]\d|\[?(?:INFO|DEBUG|WARN|WARNING|ERROR|FATAL|TRACE)\]?[: ]|"
    r"[A-Za-z_.]{1,60}(?:Error|Exception|Warning)\b:",
)
_FENCE = "```"
_CODE_TROUBLE = compile_pattern(r"\b(?:traceback|error|exception|failed|failure|fatal|panic)\b|报错|失败|异常")


@dataclass(frozen=True, slots=True)
class _View:
    """Aligned copies of the message (same length, same offsets)."""

    prose: str  # original characters, code blanked: extraction slices this
    norm: str  # prose folded (traditional -> simplified, quotes), inline code hidden
    masked: str  # norm with mask spans blanked: cues run on this
    code_trouble: bool  # a blanked code block or log line reports an error


def _coerce(text: object) -> str:
    if text is None:
        return ""
    if isinstance(text, str):
        return text
    if isinstance(text, bytes | bytearray):
        return bytes(text).decode("utf-8", errors="replace")
    raise InvalidInputError(f"classify_feedback expects str, bytes or None, got {type(text).__name__}")


def _window(text: str) -> str:
    """Head and tail of a long text, with fences re-balanced across the cut."""
    if len(text) <= HEAD_WINDOW + TAIL_WINDOW:
        return text
    head = text[:HEAD_WINDOW]
    tail_start = len(text) - TAIL_WINDOW
    tail = text[tail_start:]
    # When the cut falls inside a fenced block, open it again so the rest of
    # the block is still read as code.
    if text.count(_FENCE, 0, tail_start) % 2 == 1:
        tail = _FENCE + tail[len(_FENCE) :]
    head_open = head.count(_FENCE) % 2 == 1
    return head + ("\n" + _FENCE if head_open else "") + "\n" + tail


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    parts: list[str] = []
    last = 0
    for start, end in spans:
        parts.append(text[last:start])
        parts.append(" " * (end - start))
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _code_spans(text: str) -> list[tuple[int, int]]:
    """Fenced blocks (an unclosed fence runs to the end) and unfenced log lines."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while True:
        start = text.find(_FENCE, pos)
        if start < 0:
            break
        end = text.find(_FENCE, start + len(_FENCE))
        end = len(text) if end < 0 else end + len(_FENCE)
        spans.append((start, end))
        pos = end
    if "\n" in text:
        spans.extend(_log_line_spans(text, spans))
        spans.sort()
    return spans


def _log_line_spans(text: str, fenced: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    pos = 0
    for line in text.split("\n"):
        end = pos + len(line)
        inside = any(a <= pos < b for a, b in fenced)
        if not inside and line.strip() and _LOG_LINE.match(line):
            out.append((pos, end))
        pos = end + 1
    return out


def _prepare(text: str) -> _View:
    work = _CONTROL.sub(" ", _window(text))
    spans = _code_spans(work)
    code_trouble = any(_CODE_TROUBLE.search(work, a, b) for a, b in spans)
    prose = _blank(work, spans)
    norm = _INLINE_CODE.sub(lambda m: "`" + "_" * (len(m.group()) - 2) + "`", prose.translate(TRAD_TO_SIMP))
    return _View(prose=prose, norm=norm, masked=norm, code_trouble=code_trouble)


# ---------------------------------------------------------------------------
# Steps 2-3: mask and score
# ---------------------------------------------------------------------------
@dataclass(slots=True)
class _Evidence:
    scores: dict[Shape, float]
    # Where each shape's cues matched (start offsets), for extraction.
    anchors: dict[Shape, list[int]]
    fired: list[str]


def _score(view: _View) -> tuple[_View, _Evidence]:
    ev = _Evidence(scores=dict.fromkeys(Shape, 0.0), anchors={s: [] for s in Shape}, fired=[])
    masked = view.norm
    for mask in MASKS:
        spans = [m.span() for m in mask.pattern.finditer(masked)]
        if not spans:
            continue
        masked = _blank(masked, spans)
        if mask.shape is not None:
            shape = Shape(mask.shape)
            ev.scores[shape] += mask.weight
            ev.anchors[shape].append(spans[0][1] - 1)
        ev.fired.append(mask.name)
    stripped = masked.strip()
    for cue in CUES:
        # Anchored cues (^ ... $) must see the message without the blanks.
        m = cue.pattern.search(stripped)
        if m is None:
            continue
        shape = Shape(cue.shape)
        ev.scores[shape] += cue.weight
        if cue.weight > 0:
            ev.anchors[shape].append(m.end() - 1 + (len(masked) - len(masked.lstrip())))
        ev.fired.append(cue.name)
    if view.code_trouble and not stripped:
        # Only a pasted error, no words: the last step failed.
        ev.scores[Shape.NEGATIVE] += _THRESHOLD
        ev.fired.append("pasted-error-only")
    return _View(view.prose, view.norm, masked, view.code_trouble), ev


def _resolve(scores: dict[Shape, float]) -> Shape:
    for shape in _ORDER:
        if scores[shape] >= _THRESHOLD:
            return shape
    return Shape.UNKNOWN


def _confidence(shape: Shape, scores: dict[Shape, float]) -> float:
    if shape is Shape.UNKNOWN:
        strongest = max(scores.values())
        # No evidence at all reads as small talk; some weak evidence, less sure.
        return round(max(0.2, 0.6 - 0.3 * max(strongest, 0.0)), 2)
    own = scores[shape]
    rivals = [v for s, v in scores.items() if s is not shape and v >= _THRESHOLD]
    value = 0.55 + 0.2 * min(own - _THRESHOLD, 1.5)
    if rivals:
        value -= 0.1 * len(rivals)
    return round(min(0.95, max(0.3, value)), 2)


# ---------------------------------------------------------------------------
# Step 5: extraction
# ---------------------------------------------------------------------------
_TOKEN = compile_pattern(
    r"`[^`\n]{1,80}`|\"[^\"\n]{1,80}\"|“[^”\n]{1,80}”|「[^」\n]{1,80}」"
    r"|[$¥€£]?\d{1,3}(?:,\d{3}){1,6}(?:\.\d{1,6})?[A-Za-z%]{0,6}"
    r"|[A-Za-z0-9_$¥€£~@#+./:'%\-]{1,80}"
    r"|[\u3400-\u9fff\uf900-\ufaff]{1,40}"
    r"|\S"
)
_CJK = compile_pattern(r"[\u3400-\u9fff\uf900-\ufaff]")
_QUOTES = "`\"'“”‘’「」『』"
_EDGE_PUNCT = " \t\n.,;:!?。，；：！？、()[]{}（）" + _QUOTES

_DETERMINERS = frozenset(
    ["a", "an", "the", "some", "any", "plain", "just", "only", "whole", "native", "vanilla", "regular", "normal", "simple", "raw", "bare", "pure", "good", "old", "our", "my", "your", "their", "its"]
)
_DEMONSTRATIVES = frozenset(["it", "this", "that", "these", "those", "them", "one", "same", "existing", "current"])
_TOOL_STOP = frozenset(
    ["instead", "rather", "over", "not", "for", "to", "in", "on", "at", "with", "from", "and", "or", "but", "because", "since", "so", "as", "is", "are", "was", "were", "be", "works", "work", "worked", "takes", "took", "here", "there", "this", "that", "it", "them", "please", "pls", "plz", "thanks", "thank", "next", "now", "always", "anymore", "again", "though", "then", "when", "if", "which", "where", "than", "by", "of", "like", "too", "also", "way", "whenever", "already", "lol", "tbh", "though", "instead"]
)
_CN_MODIFIERS = frozenset(
    {"原生", "手动", "默认", "自带", "纯", "普通", "直接", "原来的", "现在的", "那个", "这个", "我的", "你的", "我们的", "他的"}
)
_CN_CUT = compile_pattern(r"吧|了|呢|啊|吗|嘛|太|的|来|去|做|处理|实现|写|算|画|跑|替代|代替|而|启动|运行")
_VALUE_STOP = frozenset(
    ["not", "you", "on", "in", "at", "for", "but", "and", "so", "because", "since", "instead", "rather", "than", "which", "with", "from", "by", "when", "if", "this", "that", "here", "there", "your", "i", "we", "so"]
)
_CN_EVENT_VERB = compile_pattern(r"(?:落地|起飞|出发|到达|到|开始|结束|截止|见面|开会|举行|上线|发布)$")


def _clean(phrase: str) -> str | None:
    phrase = phrase.strip(_EDGE_PUNCT)
    return phrase or None


def _tokens(text: str, start: int, end: int) -> list[regex.Match[str]]:
    return list(_TOKEN.finditer(text, start, end))


def _clause_bounds(text: str, pos: int) -> tuple[int, int]:
    """Start and end of the clause that contains ``pos``."""
    start, end = 0, len(text)
    for m in CLAUSE_BREAK.finditer(text):
        if m.end() <= pos:
            start = m.end()
        elif m.start() >= pos:
            end = m.start()
            break
    return start, end


def _is_cjk(tok: str) -> bool:
    return bool(_CJK.match(tok))


def _cut_cjk(run: str) -> str:
    m = _CN_CUT.search(run, 2)
    return run[: m.start()] if m else run[:8]


def _grab_forward(prose: str, start: int, *, stop: frozenset[str] = _TOOL_STOP) -> tuple[str, int] | None:
    """The tool/approach phrase that starts at ``start`` (determiners skipped)."""
    _, end = _clause_bounds(prose, start)
    words: list[str] = []
    last_end = start
    for tok in _tokens(prose, start, end):
        t = tok.group()
        if t[0] in _QUOTES and len(t) > 2 and t[-1] in _QUOTES:
            return (t[1:-1].strip(), tok.end()) if not words else (" ".join(words), last_end)
        if _is_cjk(t):
            if words:
                break
            if t.translate(TRAD_TO_SIMP) in _CN_MODIFIERS:
                continue
            cut = _cut_cjk(t)
            return (cut, tok.start() + len(cut))
        if not (t[0].isalnum() or t[0] in "$¥€£~./_"):
            break
        low = t.lower().rstrip(".:'")
        if not words and low in _DETERMINERS:
            continue
        if not words and low in _DEMONSTRATIVES:
            return None
        if words and low in stop:
            break
        words.append(t)
        last_end = tok.end()
        if len(words) == 3:
            break
    while words and words[-1].lower() in ("one", "ones", "thing", "stuff"):
        words.pop()
    phrase = _clean(" ".join(words))
    return (phrase, last_end) if phrase else None


def _grab_backward(prose: str, pos: int) -> str | None:
    """The tool phrase that ends right before ``pos`` in the same clause."""
    start, _ = _clause_bounds(prose, max(pos - 1, 0))
    toks = _tokens(prose, start, pos)
    words: list[str] = []
    for tok in reversed(toks):
        t = tok.group()
        if _is_cjk(t):
            if not words and t.translate(TRAD_TO_SIMP) not in _CN_MODIFIERS:
                return _clean(t[-8:])
            break
        low = t.lower()
        if low in ("one", "ones") and not words:
            continue
        if low in _DETERMINERS or low in _TOOL_STOP or low in _DEMONSTRATIVES or not t[0].isalnum():
            break
        words.insert(0, t)
        if len(words) == 3:
            break
    return _clean(" ".join(words))


_PREFER_FORWARD = (
    compile_pattern(
        r"(?:改用|换成|换用|统一用|一律用|都用|还是用|就用|改成用|最好用|建议用|推荐用|请用|请使用|应该用|要用|得用|"
        r"以后用|以后都用|直接用|换|直接)\s{0,2}"
    ),
    compile_pattern(
        r"\b(?:switch|switching|migrate|migrating|move|moving|port|porting)\s{1,3}(?:it\s{1,3}|this\s{1,3}|"
        r"that\s{1,3}|everything\s{1,3}|back\s{1,3}|over\s{1,3})?to\s{1,3}|\bstick\s{1,3}(?:with|to)\s{1,3}"
        r"|\bgo\s{1,3}(?:with|for)\s{1,3}|\bprefer(?:s|red)?\s{1,3}|\bopt\s{1,3}for\s{1,3}"
        r"|\brather\s{1,3}(?:you\s{1,3})?(?:use|used|go\s{1,3}with|went\s{1,3}with)\s{1,3}"
        r"|\bwhy\s{1,3}not\s{1,3}(?:use\s{1,3}|just\s{1,3})?"
    ),
    compile_pattern(r"(?<!\b(?:stop|quit|avoid|avoiding|don't|dont|not|never)\s{1,3})\b(?:use|using|used)\s{1,3}"),
    compile_pattern(
        r"\b(?:do|write|rewrite|implement|redo|build|vectori[sz]e|parse|handle|manage|format|lint|test|plot|"
        r"script|run)\b.{0,30}?\b(?:with|using|in|via)\s{1,3}"
    ),
    compile_pattern(r"\bjust\s{1,3}(?=[a-z][\w.-]{1,20}\s{1,3}(?:it|this|that|them)\b)"),
    compile_pattern(r"(?<![没有不可能费作应调引备通专常信使试采享所我他她们在还再就好别])用\s{0,2}"),
    compile_pattern(r"\bmore\s{1,3}|走(?!了|吧|啦|过|开)\s{0,2}"),
)
_PREFER_BACKWARD = (
    compile_pattern(
        r"\s(?:works?|is|are)\s{1,3}(?:way\s{1,3}|much\s{1,3}|far\s{1,3}|a\s{1,3}lot\s{1,3})?"
        r"(?:better|faster|simpler|enough|plenty)\b"
    ),
    compile_pattern(r"[,，]\s{0,3}not\s{1,3}\w|\s{0,2}>{1,2}\s{0,2}[A-Za-z`]|\s(?:is|are)\s{1,3}what\s{1,3}(?:we|i)\b"),
)
_AVOID_FORWARD = compile_pattern(
    r"\b(?:stop|quit)\s{1,3}using\s{1,3}|\b(?:don't|do\s{1,3}not|dont|never)\s{1,3}use\s{1,3}"
    r"|\bavoid(?:ing)?\s{1,3}(?:using\s{1,3})?|\bno\s{1,3}more\s{1,3}|\bditch(?:ing)?\s{1,3}|\bdrop\s{1,3}"
    r"|\bskip\s{1,3}|\bget\s{1,3}rid\s{1,3}of\s{1,3}|\bno\s{1,3}need\s{1,3}for\s{1,3}"
    r"|\binstead\s{1,3}of\s{1,3}(?:using\s{1,3})?|\brather\s{1,3}than\s{1,3}(?:using\s{1,3})?"
    r"|\b(?:picked|chose|went\s{1,3}with)\s{1,3}|\b(?:switch(?:ing)?|mov(?:e|ing)\s{1,3}away)\s{1,3}from\s{1,3}"
    r"|[,，]\s{0,3}not\s{1,3}(?:plain\s{1,3}|using\s{1,3}|with\s{1,3})?"
    r"|(?:别再?|不要再?|停止|不再|勿)\s{0,2}(?:用|使用)?\s{0,2}|而不是\s{0,2}(?:用)?|而非|不用\s{0,2}(?=[A-Za-z`])"
    r"|\b(?:don't|do\s{1,3}not|dont)\b.{0,40}?\b(?:with|using|via)\s{1,3}|\bless\s{1,3}|不用(?:写|搞|弄|手写)\s{0,2}"
)
_AVOID_BACKWARD = compile_pattern(
    r"\s{0,3}(?:is|are)\s{1,3}(?:way\s{1,3}|too\s{1,3}|so\s{1,3}|really\s{1,3}|just\s{1,3}|kinda\s{1,3}){0,2}"
    r"(?:overkill|flaky|slow|clunky|bloated|deprecated|unreliable|outdated|ugly|a\s{1,3}pain)\b"
    r"|\s{0,3}takes\s{1,3}forever|\s{0,3}太(?:丑|慢|重|麻烦|难用|老|复杂|啰嗦|笨|卡)|\s{0,3}(?:不支持|不兼容|不稳定|有\s{0,2}bug)"
)


def _extract_preference(view: _View) -> tuple[str | None, str | None]:
    prefer: str | None = None
    prefer_end = -1
    for frame in _PREFER_FORWARD:
        for m in frame.finditer(view.masked):
            got = _grab_forward(view.prose, m.end())
            if got:
                prefer, prefer_end = got
                break
        if prefer:
            break
    if prefer is None:
        for frame in _PREFER_BACKWARD:
            m = frame.search(view.masked)
            if m and (got_back := _grab_backward(view.prose, m.start())):
                prefer, prefer_end = got_back, m.start()
                break
    avoid: str | None = None
    if prefer_end >= 0 and (c := CONTRAST_AFTER.match(view.masked, prefer_end)) and c.end() > prefer_end:
        got = _grab_forward(view.prose, c.end())
        avoid = got[0] if got else None
    if avoid is None:
        for m in _AVOID_FORWARD.finditer(view.masked):
            got = _grab_forward(view.prose, m.end())
            if got and got[0] != prefer:
                avoid = got[0]
                break
    if avoid is None:
        for m in _AVOID_BACKWARD.finditer(view.masked):
            cand = _grab_backward(view.prose, m.start())
            if cand and cand != prefer:
                avoid = cand
                break
    return prefer, avoid


_VALUE_BEFORE_NOT = compile_pattern(r"\s{0,3}[,，]?\s{0,3}(?:\bnot\b|而不是|不是)")
_COPULA = compile_pattern(
    r"\b(?:lives|located|stored|sits|is)\s{1,3}(?:in|at|under)\s{1,3}"
    r"|(?:\b(?:is|are|was|were)|'s)\s{1,3}(?:(?:actually\s{1,3})?(?:spelled|spelt|called|named)\s{1,3}|on\s{1,3}|at\s{1,3})?"
    r"|(?<![这那还就但不总可要于若倒凡算像也都])(?:是|叫|在|为)\s{0,2}"
)
_YOU_CLAUSE = compile_pattern(r"\W{0,3}(?:you\b|你)")


def _grab_value(prose: str, start: int, end: int) -> str | None:
    """The corrected value starting at ``start``: a few tokens, up to a stop word."""
    words: list[str] = []
    for tok in _tokens(prose, start, end):
        t = tok.group()
        if _is_cjk(t):
            if words:
                break
            return _clean(_CN_EVENT_VERB.sub("", t) or t)
        if t[0] in _QUOTES and len(t) > 2:
            return _clean(t) if not words else _clean(" ".join(words))
        low = t.lower()
        if not words and low in ("the", "a", "an"):
            continue
        if low in _VALUE_STOP or t in "—–-" or not (t[0].isalnum() or t[0] in "$¥€£~./+"):
            break
        words.append(t)
        if len(words) == 4:
            break
    return _clean(" ".join(words))


def _extract_correction(view: _View) -> str | None:
    text, prose = view.masked, view.prose
    for frame in CORRECTION_FRAMES:
        m = frame.search(text)
        if m and (value := _grab_value(prose, m.end(), _clause_bounds(prose, m.end())[1])):
            return value
    # "<statement>, not <old>": the value sits right before the negation.
    for m in _VALUE_BEFORE_NOT.finditer(text):
        if m.start() == 0:
            continue
        c_start, _ = _clause_bounds(prose, m.start() - 1)
        copulas = list(_COPULA.finditer(text, c_start, m.start()))
        if copulas:
            value = _clean(prose[copulas[-1].end() : m.start()])
        else:
            toks = _tokens(prose, c_start, m.start())
            value = _clean(toks[-1].group()) if toks else None
        if value and len(value) <= 60:
            return value
    # "<thing> is <value>" in a clause that is not the "you did X" one.
    for c_start, c_end in _clauses(prose):
        if _YOU_CLAUSE.match(text, c_start):
            continue
        copulas = list(_COPULA.finditer(text, c_start, c_end))
        if copulas and (value := _grab_value(prose, copulas[-1].end(), c_end)):
            return value
    return None


def _clauses(text: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    start = 0
    for m in CLAUSE_BREAK.finditer(text):
        if text[start : m.start()].strip():
            out.append((start, m.start()))
        start = m.end()
    if text[start:].strip():
        out.append((start, len(text)))
    return out


_CONNECTIVE = compile_pattern(
    r"\bbut\s{1,3}|\G\W{0,3}(?:(?:ok(?:ay)?|fine|good|great|sure|yes|yep|nice|cool|now)\W{1,3})?(?:and|also|plus)\s{1,3}"
    r"|(?:但是|不过|可是|但|只是)\s{0,2}|\G\W{0,3}(?:另外|此外|同时|而且|并且|还有|顺便)\s{0,2}"
)
_EN_MODAL = compile_pattern(
    r"\b(?:must|needs?\s{1,3}to|has\s{1,3}to|have\s{1,3}to|got\s{1,3}to|should(?:\s{1,3}also)?|"
    r"make\s{1,3}sure(?:\s{1,3}(?:that|to))?|ensure(?:\s{1,3}that)?|remember\s{1,3}to|"
    r"don't\s{1,3}forget\s{1,3}to|be\s{1,3}sure\s{1,3}to)\s{1,3}"
)
_CN_MODAL = compile_pattern(
    r"\s{0,2}(?:也|还|都)?\s{0,2}(?:要|得|需要|必须|务必|记得|一定要|确保|make\s{1,3}sure(?:\s{1,3}that)?)\s{0,2}"
)
_TRAILING_SOFTENER = compile_pattern(
    r"(?:\s{1,3}(?:though|please|pls|thanks|thx)|\s{0,2}(?:就行|就好|就可以|即可)?\s{0,2}(?:吧|哦|啊|呀|哈)|\s{0,2}(?:就行|就好|就可以|即可))\W{0,3}$"
)


def _extract_constraint(view: _View, anchors: list[int]) -> str | None:
    text, prose = view.masked, view.prose
    if not anchors:
        return None
    c_start, c_end = _clause_bounds(prose, min(anchors))
    start = c_start
    conn = _CONNECTIVE.search(text, c_start, c_end)
    if conn:
        start = conn.end()
    cn_modal = _CN_MODAL.match(text, start, c_end)
    if cn_modal and cn_modal.end() > start:
        start = cn_modal.end()
    else:
        en_modal = _EN_MODAL.search(text, start, c_end)
        if en_modal:
            start = en_modal.end()
    phrase = prose[start:c_end]
    softener = _TRAILING_SOFTENER.search(text, start, c_end)
    if softener:
        phrase = prose[start : softener.start()]
    return _clean(phrase)


# ---------------------------------------------------------------------------
# Public entry point
# ---------------------------------------------------------------------------
def classify_feedback(text: object) -> ClassifiedFeedback:
    """Classify one user message; see the module docstring and the shapes spec.

    ``text`` may be ``str``, ``bytes`` (decoded as UTF-8, bad bytes replaced)
    or ``None``; anything else raises ``InvalidInputError``.
    """
    trimmed = _coerce(text).strip()
    if not trimmed:
        return ClassifiedFeedback(Shape.UNKNOWN, 0.0, text=trimmed)
    view, ev = _score(_prepare(trimmed))
    shape = _resolve(ev.scores)
    prefer = avoid = correction = constraint = None
    if shape is Shape.PREFERENCE:
        prefer, avoid = _extract_preference(view)
    elif shape is Shape.CORRECTION:
        correction = _extract_correction(view)
    elif shape is Shape.CONSTRAINT:
        constraint = _extract_constraint(view, ev.anchors[Shape.CONSTRAINT])
    confidence = _confidence(shape, ev.scores)
    if _log.isEnabledFor(logging.DEBUG):
        _log.debug(
            "classified %s (%.2f) scores=%s cues=%s",
            shape.value,
            confidence,
            {s.value: round(v, 2) for s, v in ev.scores.items() if v},
            ev.fired,
        )
    return ClassifiedFeedback(
        shape=shape,
        confidence=confidence,
        prefer=prefer,
        avoid=avoid,
        correction=correction,
        constraint=constraint,
        text=trimmed,
    )
