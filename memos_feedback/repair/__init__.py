"""The repair pipeline: guards, evidence, synthesis, persistence and the
``@repair`` blocks attached to policies, one transaction per repair."""

from __future__ import annotations

from ..types import RepairInput, RepairResult
from .deps import RepairDeps
from .run import run_repair

__all__ = ["RepairDeps", "RepairInput", "RepairResult", "run_repair"]
