"""``gather_repair_evidence``: read a session's recent traces and split them.

The repair engine owns the read; synthesis (``synthesis.evidence``) gets
the traces as plain values and never reads the store itself.
"""

from __future__ import annotations

from ..config import FeedbackConfig
from ..errors import InvalidInputError
from ..store import Store
from ..synthesis.evidence import evidence_window, split_evidence
from ..types import Embedder, RepairEvidence

__all__ = ["RepairEvidence", "gather_repair_evidence"]


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
