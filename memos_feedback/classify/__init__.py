"""Which shape a user's message has, and what it names.

``classify_feedback`` is the entry point: rules (``rules``, the gate in
``gate_table``), the learned tier (``learned``), the agent's turn as context
(``context``) and, when a host configures one, an LLM tier (``llm``).
Pure logic: no database, no network unless the LLM tier is used.
"""

from __future__ import annotations

from ..types import ClassifiedFeedback, Shape
from .classifier import classify_feedback

__all__ = ["ClassifiedFeedback", "Shape", "classify_feedback"]
