"""Recall's principle rules: what no score, weight or learned gate may override.

Scores say how related a repair is; these say whose word a lesson is and
what a person decided about it, and they hold whatever the scores are:

* **Rejected, never.** A rejected repair is not eligible (``eligibility``).
* **Validated, always a candidate.** A validated repair of the caller's
  exact (tool, context) is read whatever its age and however many newer
  repairs that situation has (``candidates.VALIDATED_CONTEXT``); it still
  has to pass the gate like any other.
* **The user's word first.** Within one situation (the same tool and
  context), a lesson the user stated (a ``user.*`` trigger) ranks above a
  lesson inferred from failures (a burst); validated repairs still come
  first. Between situations the ranking is the scores' (``user_word_first``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from ..store.search import Candidate

__all__ = ["stated_by_user", "user_word_first"]

_T = TypeVar("_T")


def stated_by_user(candidate: Candidate) -> bool:
    """Whether the repair is the user's own word (a correction, constraint, preference or objection)."""
    return candidate.trigger.startswith("user.")


def user_word_first(ranked: Sequence[_T], candidate_of: Callable[[_T], Candidate]) -> list[_T]:
    """``ranked`` with each situation's items reordered: validated, then the user's word, then the rest.

    A situation keeps the places its items had in ``ranked`` (other
    situations do not move), and items alike keep their order among
    themselves.
    """
    places: dict[str, list[int]] = {}
    for i, item in enumerate(ranked):
        places.setdefault(candidate_of(item).context_hash, []).append(i)
    out = list(ranked)
    for slots in places.values():
        if len(slots) < 2:
            continue
        group = sorted(
            (ranked[i] for i in slots),
            key=lambda item: (not candidate_of(item).validated, not stated_by_user(candidate_of(item))),
        )
        for i, item in zip(slots, group, strict=True):
            out[i] = item
    return out
