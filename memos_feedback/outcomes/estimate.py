"""Effectiveness of a repair from its outcomes (ALGORITHMS.md, "Outcomes").

Each settled serving is a Bernoulli trial: ``held`` is a success,
``recurred`` and ``contradicted`` are failures. With a ``Beta(a, b)`` prior
(``effectiveness_prior_held``/``_failed``, default the uniform ``Beta(1,
1)``) the posterior after ``h`` successes and ``f`` failures is ``Beta(a +
h, b + f)``, and its mean

    p = (a + h) / (a + b + h + f)

is the estimate: with no outcomes it is the prior mean, and each outcome
moves it by less the more outcomes there already are.

Unvalidated repairs also decay: their weight halves every
``unvalidated_half_life_ms`` since they were written or last held, so an
unconfirmed lesson fades while one that keeps holding stays fresh.
Validated repairs do not decay (a person vouched for them).

Ranking multiplies the recall score by ``p · decay / prior mean``: 1 for a
fresh repair with no outcomes (recall's own order is unchanged), below 1
for one that keeps failing, above 1 for one that keeps holding.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..store.handles import Executor
from ..store.outcomes import outcome_tallies, served_tallies
from .states import CONTRADICTED, HELD, RECURRED

if TYPE_CHECKING:  # recall imports this module; a runtime import would be circular
    from ..recall.config import RecallConfig

__all__ = ["OutcomeCounts", "counts_for", "decay", "effectiveness", "rank_factor"]


@dataclass(frozen=True, slots=True)
class OutcomeCounts:
    held: int = 0
    recurred: int = 0
    contradicted: int = 0
    last_held: int | None = None
    served: int = 0

    @property
    def failed(self) -> int:
        return self.recurred + self.contradicted


def effectiveness(counts: OutcomeCounts, cfg: RecallConfig) -> float:
    """Posterior mean of "following this repair holds" (module docstring)."""
    a, b = cfg.effectiveness_prior_held, cfg.effectiveness_prior_failed
    return (a + counts.held) / (a + b + counts.held + counts.failed)


def decay(created_at: int, counts: OutcomeCounts, validated: bool, now: int, cfg: RecallConfig) -> float:
    """``0.5 ** (age / half-life)`` for unvalidated repairs; age since written or last held."""
    if validated:
        return 1.0
    since = max(created_at, counts.last_held or 0)
    age = max(0, now - since)
    return float(0.5 ** (age / cfg.unvalidated_half_life_ms))


def rank_factor(
    created_at: int, counts: OutcomeCounts, validated: bool, now: int, cfg: RecallConfig
) -> float:
    """What recall multiplies a repair's score by (1 = no evidence either way, fresh)."""
    prior = cfg.effectiveness_prior_held / (cfg.effectiveness_prior_held + cfg.effectiveness_prior_failed)
    return effectiveness(counts, cfg) * decay(created_at, counts, validated, now, cfg) / prior


def counts_for(
    session: Executor, repair_ids: Iterable[str], *, served: bool = False
) -> dict[str, OutcomeCounts]:
    """Outcome counts per repair (one grouped, indexed query; ``served`` adds a second)."""
    ids = sorted(set(repair_ids))
    if not ids:
        return {}
    raw: dict[str, dict[str, int]] = {}
    last: dict[str, int] = {}
    for repair_id, kind, n, newest in outcome_tallies(session, ids):
        raw.setdefault(repair_id, {})[kind] = n
        if kind == HELD:
            last[repair_id] = newest
    served_n = served_tallies(session, ids) if served else {}
    return {
        i: OutcomeCounts(
            held=raw.get(i, {}).get(HELD, 0),
            recurred=raw.get(i, {}).get(RECURRED, 0),
            contradicted=raw.get(i, {}).get(CONTRADICTED, 0),
            last_held=last.get(i),
            served=served_n.get(i, 0),
        )
        for i in ids
    }
