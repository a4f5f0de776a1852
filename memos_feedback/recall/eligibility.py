"""Which repairs ``guidance_for`` may serve: one call's eligibility.

Eligible: never rejected, still active (no outcome status set), global or
of the caller's project, of every user or of the caller's user, and
validated or written since ``fresh_after``. ``eligible`` computes those
values for one call; the store turns them into the clause every candidate
read carries (``store.search.eligibility``).
"""

from __future__ import annotations

from ..store.search import Eligibility

__all__ = ["Eligibility", "eligible"]


def eligible(
    project: str | None, now_ms: int, unvalidated_max_age_ms: int, user: str | None = None
) -> Eligibility:
    """Never rejected, still active; global or of ``project`` (and of every user or ``user``); fresh."""
    return Eligibility(project, now_ms - unvalidated_max_age_ms, user)
