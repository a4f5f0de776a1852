"""Which repairs recall may serve, as the clause every candidate read carries.

Eligible: never rejected, still active (no outcome status set), global or
of the caller's project, of every user or of the caller's user, and
validated or written since ``fresh_after``. ``Eligibility`` holds one
call's values (recall computes them: ``recall.eligibility.eligible``);
``clause`` is the same test as SQL, one per dialect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, String, and_, bindparam, func, or_

from ..models import DecisionRepairModel

__all__ = ["Eligibility", "clause"]

M = DecisionRepairModel


@dataclass(frozen=True, slots=True)
class Eligibility:
    """Which repairs may be offered: global or of ``project``; validated, or written since ``fresh_after``."""

    project: str | None
    fresh_after: int
    # The user (tenant) beside the project: repairs of every user, or of this one.
    user: str | None = None

    def params(self) -> dict[str, Any]:
        # Projects and users are never "" (callers' values are stripped, ""
        # means none), so "" stands for "none": only unscoped repairs match twice.
        return {"e_project": self.project or "", "e_user": self.user or "", "e_fresh_after": self.fresh_after}


# Built once per dialect with bound parameters: every statement that carries
# it is then one compiled-cache hit instead of an expression tree rebuilt per
# call.
#
# The project test differs by dialect, on purpose. SQLite: through coalesce,
# because an indexable project test tempts its planner into scanning every
# row of the project (half the table) instead of a few primary keys.
# PostgreSQL: on the column itself, because it has statistics for the
# column but not for coalesce(...): an expression's guessed selectivity
# (0.5 %) made it read and sort every repair of a tool instead of walking
# the (tool_id, ts) index newest first until it had enough.
def _eligible(postgresql_dialect: bool) -> ColumnElement[bool]:
    project = bindparam("e_project", type_=String)
    user = bindparam("e_user", type_=String)
    if postgresql_dialect:
        scoped = or_(M.project.is_(None), M.project == project)
        of_user = or_(M.user_id.is_(None), M.user_id == user)
    else:
        coalesced = func.coalesce(M.project, "")
        scoped = or_(coalesced == "", project == coalesced)
        users = func.coalesce(M.user_id, "")
        of_user = or_(users == "", user == users)
    return and_(
        M.rejected.is_(False),
        M.status.is_(None),  # outcomes: a stale or superseded repair (status set) is never offered
        scoped,
        of_user,
        or_(M.validated.is_(True), M.ts >= bindparam("e_fresh_after", type_=BigInteger)),
    )


_CLAUSES = {True: _eligible(True), False: _eligible(False)}


def clause(postgresql_dialect: bool) -> ColumnElement[bool]:
    """The eligibility test of ``postgresql_dialect`` (the same object every time), bound by ``params``."""
    return _CLAUSES[postgresql_dialect]
