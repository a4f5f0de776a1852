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

import bisect
import dataclasses
import enum
import itertools
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import regex

from . import _classifier_rules as rules
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
_FENCE = "```"
# How far back from an anchor extraction looks for the start of a phrase;
# keeps every extraction step bounded even inside one very long clause.
_LOOKBACK = 160


@dataclass(frozen=True, slots=True)
class _View:
    """Aligned copies of the message (same length, same offsets)."""

    prose: str  # original characters, code blanked: extraction slices this
    norm: str  # prose folded (traditional -> simplified, quotes), inline code hidden
    masked: str  # norm with mask spans blanked: cues and frames run on this
    code_trouble: bool  # a blanked code block or log line reports an error
    break_starts: tuple[int, ...] = ()  # clause breaks, sorted
    break_ends: tuple[int, ...] = ()

    def clause(self, pos: int) -> tuple[int, int]:
        """Start and end of the clause that contains ``pos`` (binary search)."""
        i = bisect.bisect_right(self.break_ends, pos)
        start = self.break_ends[i - 1] if i > 0 else 0
        j = bisect.bisect_left(self.break_starts, pos)
        end = self.break_starts[j] if j < len(self.break_starts) else len(self.prose)
        return start, max(start, end)

    def clauses(self) -> list[tuple[int, int]]:
        """Every non-blank clause, in order."""
        bounds = zip((0, *self.break_ends), (*self.break_starts, len(self.prose)), strict=True)
        return [(a, b) for a, b in bounds if self.prose[a:b].strip()]


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
    # When a cut falls inside a fenced block, close / reopen it so the rest
    # of the block is still read as code.
    if text.count(_FENCE, 0, tail_start) % 2 == 1:
        tail = _FENCE + tail[len(_FENCE) :]
    head_open = head.count(_FENCE) % 2 == 1
    return head + ("\n" + _FENCE if head_open else "") + "\n" + tail


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each (sorted, disjoint) span replaced by as many spaces."""
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


def _fenced_spans(text: str) -> list[tuple[int, int]]:
    """Fenced blocks; an unclosed fence runs to the end."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while (start := text.find(_FENCE, pos)) >= 0:
        end = text.find(_FENCE, start + len(_FENCE))
        end = len(text) if end < 0 else end + len(_FENCE)
        spans.append((start, end))
        pos = end
    return spans


def _log_line_spans(text: str) -> list[tuple[int, int]]:
    """Lines of a pasted log or traceback that were not fenced."""
    out: list[tuple[int, int]] = []
    pos = 0
    for line in text.split("\n"):
        if line.strip() and rules.LOG_LINE.match(line):
            out.append((pos, pos + len(line)))
        pos += len(line) + 1
    return out


def _prepare(text: str) -> _View:
    work = rules.CONTROL.sub(" ", _window(text))
    fenced = _fenced_spans(work)
    without_fences = _blank(work, fenced)
    spans = sorted(fenced + (_log_line_spans(without_fences) if "\n" in work else []))
    code_trouble = any(rules.CODE_TROUBLE.search(work, a, b) for a, b in spans)
    prose = _blank(without_fences, [s for s in spans if s not in fenced]) if spans else work
    folded = prose.translate(rules.TRAD_TO_SIMP)
    # Inline code keeps its back-ticks but not its words: `no_errors` must
    # not read as "no errors".
    norm = rules.INLINE_CODE.sub(lambda m: "`" + "_" * (len(m.group()) - 2) + "`", folded)
    breaks = [m.span() for m in rules.CLAUSE_BREAK.finditer(prose)]
    return _View(
        prose=prose,
        norm=norm,
        masked=norm,
        code_trouble=code_trouble,
        break_starts=tuple(a for a, _ in breaks),
        break_ends=tuple(b for _, b in breaks),
    )


# ---------------------------------------------------------------------------
# Steps 2-4: mask, score, resolve
# ---------------------------------------------------------------------------
@dataclass(slots=True)
class _Evidence:
    scores: dict[Shape, float]
    # Offsets inside each shape's matched cues (the last matched character),
    # so extraction can find the clause that carries the evidence.
    anchors: dict[Shape, list[int]]
    fired: list[str]


def _score(view: _View) -> tuple[_View, _Evidence]:
    ev = _Evidence(scores=dict.fromkeys(Shape, 0.0), anchors={s: [] for s in Shape}, fired=[])
    masked = view.norm
    for mask in rules.MASKS:
        spans = [m.span() for m in mask.pattern.finditer(masked)]
        if not spans:
            continue
        masked = _blank(masked, spans)
        if mask.shape is not None:
            shape = Shape(mask.shape)
            ev.scores[shape] += mask.weight
            ev.anchors[shape].append(spans[0][1] - 1)
        ev.fired.append(mask.name)
    # Anchored cues (^ ... $) must see the message without surrounding blanks.
    lead = len(masked) - len(masked.lstrip())
    stripped = masked.strip()
    for cue in rules.CUES:
        m = cue.pattern.search(stripped)
        if m is None:
            continue
        shape = Shape(cue.shape)
        ev.scores[shape] += cue.weight
        if cue.weight > 0:
            ev.anchors[shape].append(lead + m.end() - 1)
        ev.fired.append(cue.name)
    if view.code_trouble and not stripped:
        # Only a pasted error, no words around it: the last step failed.
        ev.scores[Shape.NEGATIVE] += _THRESHOLD
        ev.fired.append("pasted-error-only")
    return dataclasses.replace(view, masked=masked), ev


def _resolve(scores: dict[Shape, float]) -> Shape:
    """The first shape, in the spec's tie-break order, with enough evidence."""
    for shape in _ORDER:
        if scores[shape] >= _THRESHOLD:
            return shape
    return Shape.UNKNOWN


def _confidence(shape: Shape, scores: dict[Shape, float]) -> float:
    if shape is Shape.UNKNOWN:
        # No evidence at all reads as small talk; weak evidence, less sure.
        strongest = max(scores.values())
        return round(max(0.2, 0.6 - 0.3 * max(strongest, 0.0)), 2)
    own = scores[shape]
    rivals = sum(1 for s, v in scores.items() if s is not shape and v >= _THRESHOLD)
    value = 0.55 + 0.2 * min(own - _THRESHOLD, 1.5) - 0.1 * rivals
    return round(min(0.95, max(0.3, value)), 2)


# ---------------------------------------------------------------------------
# Step 5: extraction (only for the chosen shape)
# ---------------------------------------------------------------------------
def _clean(phrase: str) -> str | None:
    phrase = phrase.strip(rules.EDGE_PUNCT)
    return phrase or None


def _tokens(text: str, start: int, end: int) -> Iterator[regex.Match[str]]:
    return rules.TOKEN.finditer(text, start, end)


def _is_cjk(tok: str) -> bool:
    return bool(rules.CJK.match(tok))


def _is_cn_modifier(tok: str) -> bool:
    return tok.translate(rules.TRAD_TO_SIMP) in rules.CN_MODIFIERS


def _cut_cjk(run: str) -> str:
    """A Chinese noun phrase ends before a particle or verb ("手写循环", not "手写循环吧")."""
    m = rules.CN_CUT.search(run, 2)
    return run[: m.start()] if m else run[:8]


def _grab_forward(view: _View, start: int) -> tuple[str, int] | None:
    """The tool/approach phrase that starts at ``start``, and where it ends.

    Determiners and modifiers ("the", "plain", "原生") are skipped; a pronoun
    ("it", "这个") means the frame did not name a tool.
    """
    prose = view.prose
    end = view.clause(start)[1]
    words: list[str] = []
    last_end = start
    # A tool name sits within the first few tokens after its frame.
    for tok in itertools.islice(_tokens(prose, start, end), 12):
        t = tok.group()
        if t[0] in rules.QUOTES and len(t) > 2 and t[-1] in rules.QUOTES:
            return (t[1:-1].strip(), tok.end()) if not words else (" ".join(words), last_end)
        if _is_cjk(t):
            if words:
                break
            if _is_cn_modifier(t):
                continue
            cut = _cut_cjk(t)
            return cut, tok.start() + len(cut)
        if not (t[0].isalnum() or t[0] in "$¥€£~./_"):
            break
        low = t.lower().rstrip(".:'")
        if not words and low in rules.DETERMINERS:
            continue
        if not words and (low in rules.DEMONSTRATIVES or low in rules.SOFTENERS):
            return None
        if words and low in rules.TOOL_STOP:
            break
        words.append(t)
        last_end = tok.end()
        if len(words) == 3:
            break
    while words and words[-1].lower() in ("one", "ones", "thing", "stuff"):
        words.pop()
    phrase = _clean(" ".join(words))
    return (phrase, last_end) if phrase else None


def _grab_backward(view: _View, pos: int) -> str | None:
    """The tool phrase that ends right before ``pos`` in the same clause."""
    start = max(view.clause(max(pos - 1, 0))[0], pos - _LOOKBACK)
    words: list[str] = []
    for tok in reversed(list(_tokens(view.prose, start, pos))):
        t = tok.group()
        low = t.lower()
        if not words and (low in rules.SOFTENERS or low in ("one", "ones")):
            continue
        if _is_cjk(t):
            if not words and not _is_cn_modifier(t):
                return _clean(t[-8:])
            break
        stop = low in rules.DETERMINERS or low in rules.TOOL_STOP or low in rules.DEMONSTRATIVES
        if stop or not t[0].isalnum():
            break
        words.insert(0, t)
        if len(words) == 3:
            break
    return _clean(" ".join(words))


def _first_forward(
    view: _View, frames: Iterable[regex.Pattern[str]], skip: str | None
) -> tuple[str, int] | None:
    """The first phrase a frame introduces (frames tried in priority order)."""
    for frame in frames:
        for m in frame.finditer(view.masked):
            got = _grab_forward(view, m.end())
            if got and got[0] != skip:
                return got
    return None


def _extract_preference(view: _View) -> tuple[str | None, str | None]:
    prefer: str | None = None
    prefer_end = -1
    if got := _first_forward(view, rules.PREFER_FORWARD, None):
        prefer, prefer_end = got
    else:
        # "plotly works better", "poetry please, not pip": the tool comes first.
        for frame in rules.PREFER_BACKWARD:
            m = frame.search(view.masked)
            if m and (back := _grab_backward(view, m.start())):
                prefer, prefer_end = back, m.start()
                break
    # Right after the preferred tool: "X instead of Y", "X, not Y", "X 而不是 Y".
    if (
        prefer_end >= 0
        and (c := rules.CONTRAST_AFTER.match(view.masked, prefer_end))
        and c.end() > prefer_end
    ):
        got = _grab_forward(view, c.end())
        if got and got[0] != prefer:
            return prefer, got[0]
    if got := _first_forward(view, (rules.AVOID_FORWARD,), prefer):
        return prefer, got[0]
    # "Y is overkill", "Y 太丑": the complaint names the tool before it.
    for m in rules.AVOID_BACKWARD.finditer(view.masked):
        cand = _grab_backward(view, m.start())
        if cand and cand != prefer:
            return prefer, cand
    return prefer, None


def _grab_value(view: _View, start: int, end: int) -> str | None:
    """The corrected value starting at ``start``: a few tokens, up to a stop word."""
    words: list[str] = []
    for tok in itertools.islice(_tokens(view.prose, start, end), 12):
        t = tok.group()
        if _is_cjk(t):
            if words:
                break
            # "七点四十落地": the time, not the event.
            return _clean(rules.CN_EVENT_VERB.sub("", t) or t)
        if t[0] in rules.QUOTES and len(t) > 2:
            return _clean(t) if not words else _clean(" ".join(words))
        low = t.lower()
        if not words and low in ("the", "a", "an"):
            continue
        if low in rules.VALUE_STOP or t in "—–-" or not (t[0].isalnum() or t[0] in "$¥€£~./+"):
            break
        words.append(t)
        if len(words) == 4:
            break
    return _clean(" ".join(words))


def _parallel_number(view: _View, start: int, end: int, old_start: int) -> str | None:
    """For "17 rows, not 16" / "15 号，不是 16 号": the new number, shaped like the old one."""
    old_end = min(view.clause(old_start)[1], old_start + _LOOKBACK)
    old = [t for _, t in zip(range(2), _tokens(view.prose, old_start, old_end), strict=False)]
    if not old or not old[0].group()[0].isdigit():
        return None
    new = list(_tokens(view.prose, start, end))
    for i, tok in enumerate(new):
        if tok.group()[0].isdigit():
            # Keep a unit only when the old value carries one too.
            if len(old) > 1 and i + 1 < len(new):
                return _clean(view.prose[tok.start() : new[i + 1].end()])
            return _clean(tok.group())
    return None


def _value_before(view: _View, neg_start: int, old_start: int) -> str | None:
    """The new value in "<new>, not <old>": after the clause's copula, else its last token."""
    c_start = max(view.clause(neg_start - 1)[0], neg_start - _LOOKBACK)
    value = _parallel_number(view, c_start, neg_start, old_start)
    if value is None:
        copulas = list(rules.COPULA.finditer(view.masked, c_start, neg_start))
        if copulas:
            value = _clean(view.prose[copulas[-1].end() : neg_start])
        else:
            toks = list(_tokens(view.prose, c_start, neg_start))
            value = _clean(toks[-1].group()) if toks else None
    return value if value and len(value) <= 60 else None


def _extract_correction(view: _View) -> str | None:
    text = view.masked
    # "should be X", "应该是 X".
    for frame in rules.CORRECTION_FRAMES:
        m = frame.search(text)
        if m and (value := _grab_value(view, m.end(), view.clause(m.end())[1])):
            return value
    # "<new>, not <old>": the value sits right before the negation.
    for m in rules.VALUE_BEFORE_NOT.finditer(text):
        if m.start() > 0 and (value := _value_before(view, m.start(), m.end())):
            return value
    # "<thing> is <value>" in a clause that is not the "you did X" one.
    stated = [(a, b) for a, b in view.clauses() if not rules.YOU_CLAUSE.match(text, a)]
    for c_start, c_end in stated:
        copulas = list(rules.COPULA.finditer(text, c_start, c_end))
        if copulas and (value := _grab_value(view, copulas[-1].end(), c_end)):
            return value
    # Last resort: the first figure stated outside a "you did X" clause.
    for c_start, c_end in stated:
        for tok in _tokens(view.prose, c_start, c_end):
            if any(ch.isdigit() for ch in tok.group()):
                return _clean(tok.group())
    return None


def _extract_constraint(view: _View, anchors: list[int]) -> str | None:
    """The requirement in the clause of the first constraint cue.

    It starts after a connective ("but", "also", "另外", "不过") and after a
    modal that only frames it ("needs to", "make sure", "但是要"), and ends at
    the clause end without trailing softeners ("though", "吧", "就行").
    """
    if not anchors:
        return None
    text = view.masked
    c_start, c_end = view.clause(min(anchors))
    start = c_start
    if conn := rules.CONNECTIVE.search(text, c_start, c_end):
        start = conn.end()
    cn_modal = rules.CN_MODAL.match(text, start, c_end)
    if cn_modal and cn_modal.end() > start:
        start = cn_modal.end()
    elif en_modal := rules.EN_MODAL.search(text, start, c_end):
        start = en_modal.end()
    end = c_end
    if softener := rules.TRAILING_SOFTENER.search(text, start, c_end):
        end = softener.start()
    return _clean(view.prose[start:end])


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
