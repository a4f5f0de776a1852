"""Recall: bring the right decision repairs back into the agent's next turn.

``guidance_for(store, tool_id=…, context=…, query=…, project=…)`` returns a
ranked ``Guidance``; ``Guidance.render()`` is the ``<memory-context>`` block
a runtime puts into its prompt. ``SentenceTransformerEmbedder`` (extra
``[embeddings]``) adds semantic similarity; without it, the database's own
text search does the matching. Nothing here imports numpy or torch at
import time.
"""

from __future__ import annotations

from ..embeddings import Embedder, SentenceTransformerEmbedder
from .categories import CATEGORIES, category_for
from .config import RecallConfig
from .guidance import Guidance, GuidanceItem, guidance_for
from .indexing import BackfillReport, backfill
from .judge import RelevanceJudge
from .situation import Situation

__all__ = [
    "CATEGORIES",
    "BackfillReport",
    "Embedder",
    "Guidance",
    "GuidanceItem",
    "RecallConfig",
    "RelevanceJudge",
    "SentenceTransformerEmbedder",
    "Situation",
    "backfill",
    "category_for",
    "guidance_for",
]
