"""Evidence for a repair: the session's recent traces split into high and low value.

Synthesis never reads the store: the repair engine reads a generous window
of the session's newest traces (``evidence_window``; ``repair.evidence``'s
``gather_repair_evidence``) and hands them here as plain values.
``split_evidence`` sorts each one into at most one side:

* **low value** – the trace's value is below ``-min_low_value_threshold``,
  or its agent text / reflection reads like a failure (see
  ``looks_like_failure``), or one of its tool calls carries an error code;
* **high value** – otherwise, when its value is above zero.

Low wins: a trace with a positive value whose tool call failed is a failure
the agent did not notice, which is exactly what a repair is about.

A keyword (the tool id, or what the user prefers/avoids) narrows the scan.
When it leaves the high side empty, the successes of the failures' episode
that came after the first of them are taken whatever their words: what
worked instead seldom names the tool that failed.
With an embedder, a trace that says the same thing in other words counts
too: its text is compared with ``about`` (the keyword, the tool's context
and the user's words) and kept at cosine ``>= similarity``. Normalised tool
ids such as ``pip.install`` seldom appear verbatim in the text, so when the
keyword (and the embedder) leave both sides empty the scan runs again
without it and the result says ``relaxed=True``.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any

from .._checks import check_int
from ..config import FeedbackConfig
from ..errors import InvalidInputError
from ..text.logs import library_logger
from ..types import Embedder, RepairEvidence, TraceRow

__all__ = [
    "RepairEvidence",
    "cap_trace",
    "evidence_window",
    "looks_like_failure",
    "split_evidence",
]

logger = library_logger("memos_feedback.evidence")

# The store refuses larger limits; the window never needs more.
_MAX_WINDOW = 10_000
# Failure words are looked for in the tail of long texts (where errors land).
_SCAN_TAIL = 16_384
_LEAD = "..."

# English markers. "error"/"exception" may end an identifier (TypeError,
# IOException), so they have no leading word boundary; the rest do.
_EN_MARKERS = (
    r"error(?:s|ed)?|exceptions?"
    r"|\b(?:failed|fails|failures?|traceback|timeouts?|timed[ \t]+out|denied|refused|not[ \t]+found"
    r"|crash(?:ed|es)?|fatal|panic(?:ked)?|segfault|aborted|could[ \t]+not|couldn't|unable[ \t]+to"
    r"|no[ \t]+such[ \t]+file|non-zero[ \t]+exit|exit[ \t]+(?:code|status)[ \t]+[1-9])"
)
# Chinese markers, simplified and traditional. Bare 错 is not one: 不错 means "good".
_ZH_MARKERS = (
    r"报错|報錯|错误|錯誤|出错|出錯|失败|失敗|异常|異常|超时|超時|拒绝|拒絕|崩溃|崩潰"
    r"|找不到|未找到|没有找到|沒有找到|不存在|无法|無法|权限不足|權限不足"
)
_MARKER = re.compile(f"(?:{_EN_MARKERS})|(?:{_ZH_MARKERS})", re.IGNORECASE)

# A marker is discounted when the few characters before it negate it
# ("no errors", "0 failed", "没有错误", "fixed the error"). The window is a
# few dozen characters, so the small bounded repetitions here stay cheap ...
_NEGATED_BEFORE = re.compile(
    r"(?:\b(?:no|zero|without|never|none|0)\b[ \t]*(?:[\w-]+[ \t]+){0,2}"
    r"|\b(?:fixed|resolved|solved|handled|cleared)[ \t]+(?:[\w-]+[ \t]+){0,2}"
    r"|(?:没有|沒有|没|沒|无|無|不|未|零|(?<![\d.])0[ \t]*[个個]?)[ \t]*"
    r"|(?:修复|修復|解决|解決|处理|處理)了?.{0,4})$",
    re.IGNORECASE,
)
# ... or the few characters after it say it went away or is not a failure
# at all ("error was fixed", "错误已修复", "error handling", "timeout=30").
_NEGATED_AFTER = re.compile(
    r"^(?:[ \t]*(?:[\w-]+[ \t]+){0,2}(?:fixed|resolved|solved|gone)\b"
    r"|[ \t]*-?[ \t]*(?:free|handling|handler|handlers)\b"
    r"|[ \t]*=[ \t]*\d"
    r"|[ \t]*(?:已经|已經|已|都|均)?[ \t]*(?:被)?[ \t]*(?:修复|修復|解决|解決|处理|處理|排除|消失))",
    re.IGNORECASE,
)
# Characters of a trace (its tail) compared by meaning when an embedder is given.
_EMBED_CHARS = 1_000
_WINDOW_BEFORE = 24
_WINDOW_AFTER = 24


def looks_like_failure(text: str | None) -> bool:
    """True when ``text`` contains a failure marker that is not negated.

    Deliberately small: a handful of English and Chinese markers, discounted
    by a negation just before ("no errors", "0 failed", "没有错误") or a
    resolution just after ("error fixed", "错误已修复"). It is a hint for
    picking evidence, not a classifier.
    """
    if not text:
        return False
    if len(text) <= _CACHED_TEXT:
        return _short_looks_like_failure(text)
    return _scan_for_failure(text[-_SCAN_TAIL:])


# Texts up to this long have their answer cached: every repair of a session
# scans the same traces again, and a short text costs little to keep.
_CACHED_TEXT = 2_048


@functools.lru_cache(maxsize=2_048)
def _short_looks_like_failure(text: str) -> bool:
    return _scan_for_failure(text)


def _scan_for_failure(scan: str) -> bool:
    for match in _MARKER.finditer(scan):
        before = scan[max(0, match.start() - _WINDOW_BEFORE) : match.start()]
        after = scan[match.end() : match.end() + _WINDOW_AFTER]
        if _NEGATED_BEFORE.search(before) or _NEGATED_AFTER.search(after):
            continue
        return True
    return False


def is_low_value(trace: TraceRow, config: FeedbackConfig) -> bool:
    """Low value by score, by failure wording, or by a tool call error code."""
    if trace.value < -config.min_low_value_threshold:
        return True
    if any(call.error_code for call in trace.tool_calls):
        return True
    return looks_like_failure(trace.agent_text) or looks_like_failure(trace.reflection)


def cap_trace(trace: TraceRow, n: int) -> TraceRow:
    """Keep the last ``n`` characters of user text, agent text and reflection.

    A cut field starts with ``...``; the tail is kept because that is where
    tracebacks and error messages end up. Short fields are left as they are.
    """
    if not isinstance(trace, TraceRow):
        raise InvalidInputError(f"trace must be a TraceRow, got {type(trace).__name__}")
    check_int("n", n, lo=1)
    user, agent = _tail(trace.user_text, n), _tail(trace.agent_text, n)
    reflection = None if trace.reflection is None else _tail(trace.reflection, n)
    if user is trace.user_text and agent is trace.agent_text and reflection is trace.reflection:
        return trace
    return dataclasses.replace(trace, user_text=user, agent_text=agent, reflection=reflection)


def _tail(text: str, n: int) -> str:
    return text if len(text) <= n else _LEAD + text[-n:]


def evidence_window(limit: int | None, config: FeedbackConfig) -> int:
    """How many of the session's newest traces evidence is chosen from.

    ``max(6 * limit, 24)``, never less than the spec's ``max(6 * evidence_limit, 24)``.
    """
    per_side = _per_side_limit(limit, config)
    return min(max(6 * max(per_side, config.evidence_limit), 24), _MAX_WINDOW)


def split_evidence(
    traces: Sequence[TraceRow],
    keyword: str | None,
    limit: int | None,
    config: FeedbackConfig,
    *,
    session_id: str = "",
    embedder: Embedder | None = None,
    about: str | None = None,
    similarity: float = 0.5,
) -> RepairEvidence:
    """The evidence in ``traces`` (a session's traces, newest first), already read.

    The caller reads them (``repair.evidence.gather_repair_evidence``, or
    the worker inside its own grouped read transaction) and calls this.
    """
    per_side = _per_side_limit(limit, config)
    needle = keyword.strip() if keyword is not None and keyword.strip() else None
    if needle is not None and embedder is not None and about and about.strip():
        similar = _said_otherwise(traces, needle, per_side, config, embedder, about, similarity)
        evidence = _evidence(traces, needle, per_side, config, similar)
    else:
        evidence = _split_memo(traces, needle, per_side, config)
    logger.debug(
        "evidence for session %s: %d traces read, %d high, %d low, keyword=%r relaxed=%s",
        session_id,
        len(traces),
        len(evidence.high),
        len(evidence.low),
        needle,
        evidence.relaxed,
    )
    return evidence


def _evidence(
    traces: Sequence[TraceRow],
    needle: str | None,
    per_side: int,
    config: FeedbackConfig,
    similar: frozenset[str] = frozenset(),
) -> RepairEvidence:
    high, low = _split(traces, needle, per_side, config, similar)
    relaxed = False
    if needle is not None and not high and not low:
        relaxed = True
        high, low = _split(traces, None, per_side, config)
    elif needle is not None and not high:
        high = _successes_after(traces, low, per_side, config)
    kept = tuple(t.id for t in (*high, *low) if t.id in similar and not relaxed)
    return RepairEvidence(high=high, low=low, keyword=needle, relaxed=relaxed, similar=kept)


# Evidence by the identity of the traces it was chosen from. The store
# hands out one TraceRow object per distinct row (repositories'
# ``_trace_of_sqlite_row``), so consecutive repairs of a session pass the
# very same objects, and the split (a case-fold and a failure scan of
# every trace) is a pure function of them and of the arguments below. An
# entry holds the traces it was made from: while it exists, no other
# object can have their ids, so a key that matches names these objects.
_MEMO: dict[tuple[Any, ...], tuple[tuple[TraceRow, ...], RepairEvidence]] = {}
_MEMO_MAX = 256


def _split_memo(
    traces: Sequence[TraceRow], needle: str | None, per_side: int, config: FeedbackConfig
) -> RepairEvidence:
    key = (needle, per_side, config.min_low_value_threshold, *map(id, traces))
    hit = _MEMO.get(key)
    if hit is not None:
        return hit[1]
    evidence = _evidence(traces, needle, per_side, config)
    if len(_MEMO) >= _MEMO_MAX:
        _MEMO.clear()  # sessions come and go; a full memo starts over
    _MEMO[key] = (tuple(traces), evidence)
    return evidence


def _said_otherwise(
    traces: Sequence[TraceRow],
    needle: str,
    per_side: int,
    cfg: FeedbackConfig,
    embedder: Embedder,
    about: str,
    similarity: float,
) -> frozenset[str]:
    """Ids of traces without the keyword whose text is close to ``about`` in meaning."""
    high, low = _split(traces, needle, per_side, cfg)
    if len(high) >= per_side and len(low) >= per_side:
        return frozenset()  # the literal keyword filled both sides: nothing to add
    needle_cf = needle.casefold()
    others = [t for t in traces if not _mentions(t, needle_cf)][: 4 * per_side]
    if not others:
        return frozenset()
    texts = [_trace_text(t) for t in others]
    vectors = embedder.embed([about[-_EMBED_CHARS:], *texts])
    scores = vectors[1:] @ vectors[0]
    return frozenset(t.id for t, score in zip(others, scores, strict=True) if float(score) >= similarity)


def _trace_text(trace: TraceRow) -> str:
    # The tail, where errors land; an embedding model reads a few hundred tokens.
    text = " ".join(part for part in (trace.agent_text, trace.reflection or "") if part)
    return text[-_EMBED_CHARS:] or trace.user_text[-_EMBED_CHARS:] or " "


def _per_side_limit(limit: int | None, cfg: FeedbackConfig) -> int:
    if limit is None:
        return cfg.evidence_limit
    return check_int("limit", limit, lo=1)


def _split(
    traces: Iterable[TraceRow],
    keyword: str | None,
    per_side: int,
    cfg: FeedbackConfig,
    similar: frozenset[str] = frozenset(),
) -> tuple[tuple[TraceRow, ...], tuple[TraceRow, ...]]:
    # ``traces`` is newest first, so the first ``per_side`` hits on each side
    # are the most recent ones.
    needle = keyword.casefold() if keyword is not None else None
    high: list[TraceRow] = []
    low: list[TraceRow] = []
    for trace in traces:
        if len(high) >= per_side and len(low) >= per_side:
            break
        if needle is not None and trace.id not in similar and not _mentions(trace, needle):
            continue
        if is_low_value(trace, cfg):
            if len(low) < per_side:
                low.append(trace)
        elif trace.value > 0 and len(high) < per_side:
            high.append(trace)
    return tuple(high), tuple(low)


def _successes_after(
    traces: Sequence[TraceRow], low: tuple[TraceRow, ...], per_side: int, cfg: FeedbackConfig
) -> tuple[TraceRow, ...]:
    """Successes of the failures' episode that came after them, whatever words they use.

    The keyword names the tool that failed; what worked instead is often
    another tool ("pip install" failed, "apt-get install" did it), so it
    never mentions it. A success in the same episode after the first
    failure is that episode's way out (without episodes: after the last
    failure of the session).
    """
    episodes = {t.episode_id for t in low if t.episode_id}
    after = min(t.ts for t in low) if episodes else max(t.ts for t in low)
    out: list[TraceRow] = []
    for trace in traces:
        if len(out) >= per_side:
            break
        if trace.ts < after or (episodes and trace.episode_id not in episodes):
            continue
        if trace.value > 0 and not is_low_value(trace, cfg):
            out.append(trace)
    return tuple(out)


def _mentions(trace: TraceRow, needle: str) -> bool:
    # Field by field, no list built: this runs for every trace of every repair.
    if needle in trace.user_text.casefold() or needle in trace.agent_text.casefold():
        return True
    if trace.reflection and needle in trace.reflection.casefold():
        return True
    return any(needle in call.name.casefold() for call in trace.tool_calls)
