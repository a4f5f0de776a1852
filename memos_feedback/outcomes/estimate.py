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
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import ColumnElement, Connection, Select, func, select
from sqlalchemy.orm import Session

from ..store.engine import Prepared
from ..store.models import RepairOutcomeModel, RepairServedModel
from ..store.reads import in_list, list_param
from .states import CONTRADICTED, HELD, RECURRED

if TYPE_CHECKING:  # recall imports this module; a runtime import would be circular
    from ..recall.config import RecallConfig

__all__ = ["OutcomeCounts", "counts_for", "decay", "effectiveness", "rank_factor"]

OM = RepairOutcomeModel


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


def _outcomes_statement(postgresql_dialect: bool) -> Select[Any]:
    ids = in_list(cast(ColumnElement[Any], OM.repair_id), "ids", postgresql_dialect)
    stmt = select(OM.repair_id, OM.kind, func.count(), func.max(OM.ts)).where(ids)
    return cast(Select[Any], stmt.group_by(OM.repair_id, OM.kind))


def _served_statement(postgresql_dialect: bool) -> Select[Any]:
    S = RepairServedModel
    ids = in_list(cast(ColumnElement[Any], S.repair_id), "ids", postgresql_dialect)
    return cast(Select[Any], select(S.repair_id, func.count()).where(ids).group_by(S.repair_id))


# Built once per dialect (index: is it PostgreSQL?) with the id list as one
# parameter: an expanding IN is a new statement (and, on PostgreSQL, a new
# prepared statement) for every list length, and recall runs this per call.
_OUTCOMES = (_outcomes_statement(False), _outcomes_statement(True))
_SERVED = (_served_statement(False), _served_statement(True))
# Recall's per-call read: on SQLite's driver cursor (``Prepared``).
_OUTCOMES_PREPARED = (Prepared(_OUTCOMES[False]), Prepared(_OUTCOMES[True]))


def _is_postgresql(session: Session | Connection) -> bool:
    bind = session.get_bind() if isinstance(session, Session) else session
    return bind.dialect.name == "postgresql"


def counts_for(
    session: Session | Connection, repair_ids: Iterable[str], *, served: bool = False
) -> dict[str, OutcomeCounts]:
    """Outcome counts per repair (one grouped, indexed query; ``served`` adds a second)."""
    ids = sorted(set(repair_ids))
    if not ids:
        return {}
    pg = _is_postgresql(session)
    params = {"ids": list_param(ids, pg)}
    raw: dict[str, dict[str, int]] = {}
    last: dict[str, int] = {}
    for repair_id, kind, n, newest in _OUTCOMES_PREPARED[pg].all(session, params):
        raw.setdefault(repair_id, {})[kind] = int(n)
        if kind == HELD:
            last[repair_id] = int(newest)
    served_n: dict[str, int] = {}
    if served:
        served_n = {r: int(n) for r, n in session.execute(_SERVED[pg], params)}
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
