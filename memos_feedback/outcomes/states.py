"""The outcome state machine (ALGORITHMS.md, "Outcomes").

A *serving* is one repair shown to one session for one (tool, context). It
is open until the first of these signals in that session settles it:

======================================  ==============
signal after the serving                outcome
======================================  ==============
success of the same tool and context    ``held``
failure burst of the same tool/context  ``recurred``
user message classified positive        ``held``
user message negative / correction      ``contradicted``
======================================  ==============

Anything else (other tools, a single failure below the burst threshold,
neutral messages) leaves it open. A serving settles at most once.

A repair's status moves ``active -> stale`` (recurred
``stale_after_recurrences`` times, never held, not validated) or ``active
-> superseded`` (a newer repair of its scope prefers what it avoids). Both
are final; a validated repair is never retired automatically, it is flagged
for review instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ..limits import CONTEXT_CHAR_CAP, clean_text
from ..store.outcomes import CONTRADICTED, HELD, RECURRED, Served
from ..types import Shape

__all__ = [
    "ACTIVE",
    "CONTRADICTED",
    "HELD",
    "OUTCOME_KINDS",
    "RECURRED",
    "STALE",
    "STATUSES",
    "SUPERSEDED",
    "Served",
    "Settlement",
    "outcome_of_feedback",
    "served_context",
]

OUTCOME_KINDS: Final = (HELD, RECURRED, CONTRADICTED)

ACTIVE: Final = "active"
STALE: Final = "stale"
SUPERSEDED: Final = "superseded"
STATUSES: Final = (ACTIVE, STALE, SUPERSEDED)


def served_context(context: str | None) -> str | None:
    """The context a serving keeps and is matched by: at most ``CONTEXT_CHAR_CAP`` characters.

    A caller's context can be megabytes (a whole tool output), and a
    serving is stored once per item served. Cut as a job's context is
    (``limits.clean_text``: head and tail), in memory as in the table, and
    a tool step's context is cut the same way before it is matched, so a
    serving reloaded after a restart still settles. Two contexts alike in
    their first ~3,000 and last ~1,000 characters settle each other's servings.
    """
    if context is None or len(context) <= CONTEXT_CHAR_CAP:
        return context
    return clean_text(context, CONTEXT_CHAR_CAP)


@dataclass(frozen=True, slots=True)
class Settlement:
    """The outcome of one serving, as written to ``repair_outcomes``."""

    served_id: str
    repair_id: str
    session_id: str
    kind: str
    ts: int


def outcome_of_feedback(shape: Shape) -> str | None:
    """What a user's message says about the guidance just served (None: nothing)."""
    if shape is Shape.POSITIVE:
        return HELD
    if shape in (Shape.NEGATIVE, Shape.CORRECTION):
        return CONTRADICTED
    return None
