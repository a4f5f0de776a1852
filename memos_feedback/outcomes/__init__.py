"""Outcomes of served guidance: did a repair hold, recur or get contradicted?

* ``states`` — the state machine (servings, outcomes, repair statuses);
* ``estimate`` — effectiveness (Beta posterior) and age decay, used by recall;
* ``ledger`` — the tables (``repair_served``, ``repair_outcomes``) and retirement;
* ``supersede`` — a newer repair that contradicts an older one retires it;
* ``tracker``/``recorder``/``wiring`` — the subscriber's in-memory open
  servings and its background writer.

See ALGORITHMS.md, "Outcomes".
"""

from __future__ import annotations

from .estimate import (
    HasOutcomePrior,
    OutcomeCounts,
    OutcomePrior,
    counts_for,
    decay,
    effectiveness,
    rank_factor,
)
from .states import (
    ACTIVE,
    CONTRADICTED,
    HELD,
    OUTCOME_KINDS,
    RECURRED,
    STALE,
    STATUSES,
    SUPERSEDED,
    Served,
    Settlement,
)

__all__ = [
    "ACTIVE",
    "CONTRADICTED",
    "HELD",
    "OUTCOME_KINDS",
    "RECURRED",
    "STALE",
    "STATUSES",
    "SUPERSEDED",
    "HasOutcomePrior",
    "OutcomeCounts",
    "OutcomePrior",
    "Served",
    "Settlement",
    "counts_for",
    "decay",
    "effectiveness",
    "rank_factor",
]
