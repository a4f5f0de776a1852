"""``gather_repair_evidence``: read a session's recent traces and split them.

The repair engine owns the read; synthesis (``synthesis.evidence``) gets
the traces as plain values and never reads the store itself. So it gets
the user's words too: ``user_remarks`` picks, from the traces read, what
the user said in a session whose trigger carried no message (a failure
burst), for the lesson to follow.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..classify.classifier import classify_feedback
from ..config import FeedbackConfig
from ..errors import InvalidInputError
from ..store import Store
from ..synthesis.clauses import instruction_lines
from ..synthesis.evidence import evidence_window, split_evidence
from ..types import Embedder, RepairEvidence, TraceRow

__all__ = ["RepairEvidence", "gather_repair_evidence", "user_remarks"]

# What the user said in the last few turns is what a lesson can follow.
_MAX_REMARKS = 2
# Distinct messages read at most (newest first): each is a classifier call
# (~10 ms with the semantic tier) inside the repair's transaction.
_MAX_READ = 6
_REMARK_CHARS = 2_000


def user_remarks(traces: Sequence[TraceRow], episode_id: str | None = None) -> tuple[str, ...]:
    """The user's messages among ``traces`` (newest first) that correct or forbid, newest first.

    A message beside a failure burst is evidence even when the classifier
    did not send it to repair (it abstained, or read no repair in it): it
    is kept when the classifier, made to answer, reads a repair shape in
    it, or when a clause of it forbids something. A task request ("set up
    the web app") is neither. With ``episode_id``, that episode's traces
    are read first.
    """
    ordered = sorted(traces, key=lambda t: episode_id is None or t.episode_id != episode_id)
    seen: set[str] = set()
    out: list[str] = []
    for trace in ordered:
        text = trace.user_text.strip()[:_REMARK_CHARS]
        if not text or text in seen:
            continue
        if len(seen) >= _MAX_READ:
            break
        seen.add(text)
        if classify_feedback(text, abstain=False).shape.triggers_repair or instruction_lines(text)[1]:
            out.append(text)
            if len(out) >= _MAX_REMARKS:
                break
    return tuple(out)


def gather_repair_evidence(
    session_id: str,
    keyword: str | None = None,
    limit: int | None = None,
    store: Store | None = None,
    config: FeedbackConfig | None = None,
    *,
    embedder: Embedder | None = None,
    about: str | None = None,
    similarity: float = 0.5,
) -> RepairEvidence:
    """Split the session's recent traces into high- and low-value evidence.

    ``limit`` (default ``config.evidence_limit``) bounds each side. The
    window read from the store is ``max(6 * limit, 24)`` traces, never less
    than the spec's ``max(6 * evidence_limit, 24)``. A blank keyword means no
    filter. ``embedder``/``about``/``similarity``: see the module docstring;
    the embedder is called once, only when the keyword left a side short.
    """
    cfg = config if config is not None else FeedbackConfig()
    if not isinstance(cfg, FeedbackConfig):
        raise InvalidInputError(f"config must be a FeedbackConfig, got {type(cfg).__name__}")
    if store is None:
        raise InvalidInputError("store is required")
    if not isinstance(session_id, str) or not session_id.strip():
        raise InvalidInputError(f"session_id must be a non-empty str, got {session_id!r}")
    if keyword is not None and not isinstance(keyword, str):
        raise InvalidInputError(f"keyword must be a str or None, got {type(keyword).__name__}")
    traces = store.traces.list(session_id, limit=evidence_window(limit, cfg))
    return split_evidence(
        traces,
        keyword,
        limit,
        cfg,
        session_id=session_id,
        embedder=embedder,
        about=about,
        similarity=similarity,
    )
