"""The agent runtimes the adapter tests need: skip on a developer machine, fail under CI.

``make test`` installs the three extras (``[langchain]``, ``[openai-agents]``,
``[claude-agent]``); a missing package there is a broken pipeline, not an
optional feature, exactly like a missing PostgreSQL server (tests/support/pg.py).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

__all__ = ["require_runtime"]


def require_runtime(module: str, extra: str) -> ModuleType:
    """Import ``module``; without it, skip with a hint (fail when ``CI`` is set)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        message = f"{module} is not installed ({exc}); pip install 'memos-feedback[{extra}]'"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message, allow_module_level=True)
