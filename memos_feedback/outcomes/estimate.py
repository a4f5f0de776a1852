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

The prior and the half-life are an ``OutcomePrior``, a value owned here:
recall, which configures them (``RecallConfig.outcome_prior``), passes it
down. The functions also take anything that has an ``outcome_prior``
(a ``RecallConfig``), so their callers' code keeps working.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from ..errors import InvalidInputError
from ..store.handles import Executor
from ..store.outcomes import outcome_tallies, served_tallies
from .states import CONTRADICTED, HELD, RECURRED

__all__ = [
    "HasOutcomePrior",
    "OutcomeCounts",
    "OutcomePrior",
    "counts_for",
    "decay",
    "effectiveness",
    "rank_factor",
]

_DAY_MS = 24 * 3_600 * 1_000


@dataclass(frozen=True, slots=True)
class OutcomePrior:
    """The ``Beta(held, failed)`` prior and the unvalidated half-life (module docstring)."""

    held: float = 1.0
    failed: float = 1.0
    half_life_ms: int = 3 * _DAY_MS

    def __post_init__(self) -> None:
        for name in ("held", "failed"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value <= 0
            ):
                raise InvalidInputError(f"OutcomePrior.{name} must be a finite number > 0, got {value!r}")
        ms = self.half_life_ms
        if isinstance(ms, bool) or not isinstance(ms, int) or ms <= 0:
            raise InvalidInputError(f"OutcomePrior.half_life_ms must be an int > 0, got {ms!r}")

    @property
    def mean(self) -> float:
        """The prior mean, ``held / (held + failed)``."""
        return self.held / (self.held + self.failed)


class HasOutcomePrior(Protocol):
    """What configures an ``OutcomePrior`` (``RecallConfig`` does)."""

    @property
    def outcome_prior(self) -> OutcomePrior: ...


def _prior(prior: OutcomePrior | HasOutcomePrior) -> OutcomePrior:
    return prior if isinstance(prior, OutcomePrior) else prior.outcome_prior


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


def effectiveness(counts: OutcomeCounts, prior: OutcomePrior | HasOutcomePrior) -> float:
    """Posterior mean of "following this repair holds" (module docstring)."""
    p = _prior(prior)
    a, b = p.held, p.failed
    return (a + counts.held) / (a + b + counts.held + counts.failed)


def decay(
    created_at: int, counts: OutcomeCounts, validated: bool, now: int, prior: OutcomePrior | HasOutcomePrior
) -> float:
    """``0.5 ** (age / half-life)`` for unvalidated repairs; age since written or last held."""
    if validated:
        return 1.0
    since = max(created_at, counts.last_held or 0)
    age = max(0, now - since)
    return float(0.5 ** (age / _prior(prior).half_life_ms))


def rank_factor(
    created_at: int, counts: OutcomeCounts, validated: bool, now: int, prior: OutcomePrior | HasOutcomePrior
) -> float:
    """What recall multiplies a repair's score by (1 = no evidence either way, fresh)."""
    p = _prior(prior)
    return effectiveness(counts, p) * decay(created_at, counts, validated, now, p) / p.mean


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
