"""What recall stores per repair, written by the worker, never on the hot path.

``source_text`` is the capped text a repair is searched by, one sanitised
line per part, lesson first::

    user: <the user's words>          (user feedback repairs)
    do: <preference>
    avoid: <anti-pattern>
    error: <failure reasons of the burst, up to three>
    trace: <tail of the worst failing trace>
    tool: <tool id>
    context: <tool context>

``embedding_text`` is the part an embedding is computed from: every line
but ``tool:``/``context:`` (the situation is matched separately; see
ALGORITHMS.md, "Recall"), with the English glosses of its Chinese words
appended (``terms.glossed``). The worker writes these columns with the
repair's own row (``RecallFields``, in the repair's transaction);
``backfill`` fills rows written before an embedder was configured
(``memos-feedback repairs embed``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .._checks import check_int
from ..embeddings import Embedder, pack
from ..store import Store
from ..store.search.embeddings import store_embedding, to_embed
from ..text.lessons import without_instance
from ..text.logs import library_logger
from ..text.sanitize import sanitize_line
from .terms import glossed
from .vectors import reset_cache

__all__ = [
    "SOURCE_TEXT_CAP",
    "BackfillReport",
    "RecallFields",
    "backfill",
    "build_source_text",
    "embed_fields",
    "embedding_text",
]

logger = library_logger("memos_feedback.recall.indexing")

SOURCE_TEXT_CAP = 2_000
_LINE_CAP = 400
_TRACE_TAIL = 600
_SITUATION = ("tool:", "context:")


@dataclass(frozen=True, slots=True)
class RecallFields:
    """The recall columns of one repair, ready to write."""

    category: str | None
    project: str | None
    source_text: str
    embedding: bytes | None = None
    embedding_model: str | None = None


def build_source_text(
    *,
    preference: str,
    anti_pattern: str,
    tool_id: str | None = None,
    context: str | None = None,
    user_text: str | None = None,
    reasons: Iterable[str] = (),
    trace_text: str | None = None,
) -> str:
    """The search text of a repair (format in the module docstring), capped."""
    parts: list[tuple[str, str | None, int]] = [("user", user_text, _LINE_CAP), ("do", preference, _LINE_CAP)]
    # The failed call a prohibition quotes is the situation again (matched apart): the rule alone.
    parts.append(("avoid", without_instance(anti_pattern), _LINE_CAP))
    seen: set[str] = set()
    for reason in reasons:
        if reason and reason not in seen and len(seen) < 3:
            seen.add(reason)
            parts.append(("error", reason, 200))
    if trace_text:
        parts.append(("trace", trace_text[-_TRACE_TAIL:], _TRACE_TAIL))
    parts += [("tool", tool_id, 120), ("context", context, 300)]
    lines: list[str] = []
    for label, text, cap in parts:
        line = sanitize_line(text, cap) if text else ""
        if line:
            lines.append(f"{label}: {line}")
    return "\n".join(lines)[:SOURCE_TEXT_CAP]


def embedding_text(source_text: str) -> str:
    """The lines of ``source_text`` an embedding is made of (all but tool/context)."""
    lines = [ln for ln in source_text.splitlines() if not ln.startswith(_SITUATION)]
    return "\n".join(lines) or source_text


def embed_fields(fields: RecallFields, embedder: Embedder | None) -> RecallFields:
    """``fields`` with an embedding when an embedder is given; a failing embedder is logged."""
    if embedder is None:
        return fields
    try:
        vec = embedder.embed([glossed(embedding_text(fields.source_text))])[0]
    except Exception:  # the repair is written anyway; `repairs embed` can fill it later
        logger.warning("embedding a repair failed; it stays without one", exc_info=True)
        return fields
    return RecallFields(fields.category, fields.project, fields.source_text, pack(vec), embedder.model_name)


@dataclass(frozen=True, slots=True)
class BackfillReport:
    scanned: int
    embedded: int
    text_filled: int


def backfill(store: Store, embedder: Embedder, *, batch_size: int = 64, redo: bool = False) -> BackfillReport:
    """Embed every repair without an embedding of ``embedder``'s model (all of them with ``redo``).

    Rows from before migration 0005 get a ``source_text`` built from their
    two lines, tool and context first. Each batch commits on its own, so an
    interrupted run resumes where it stopped.
    """
    check_int("batch_size", batch_size, lo=1)
    model = embedder.model_name
    scanned = embedded = filled = 0
    after = ""
    while True:
        with store.session(action="reading repairs to embed") as s:
            rows = to_embed(s, model, after, batch_size, redo=redo)
        if not rows:
            break
        after = rows[-1].id
        scanned += len(rows)
        texts: list[str] = []
        new_text: dict[str, str] = {}
        for r in rows:
            text = r.source_text
            if not text:
                text = build_source_text(
                    preference=r.preference, anti_pattern=r.anti_pattern, tool_id=r.tool_id, context=r.context
                )
                new_text[r.id] = text
            texts.append(glossed(embedding_text(text)))
        vectors = embedder.embed(texts)
        with store.session(write=True, action="storing repair embeddings") as s:
            for r, vec in zip(rows, vectors, strict=True):
                values: dict[str, object] = {"embedding": pack(vec), "embedding_model": model}
                if r.id in new_text:
                    values["source_text"] = new_text[r.id]
                store_embedding(s, r.id, values)
        embedded += len(rows)
        filled += len(new_text)
    if embedded:
        # Older rows gained embeddings: this process's matrix re-reads them
        # (another process's does at its next full reload, ``vectors``).
        reset_cache(store.url)
    return BackfillReport(scanned=scanned, embedded=embedded, text_filled=filled)
