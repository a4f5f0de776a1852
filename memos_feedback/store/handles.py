"""The transaction handles the store hands out (``Store.session``, ``connection``, ``reading``).

Named here so the layers above can annotate what they hold and pass back
to the store's functions without importing SQLAlchemy themselves: they
carry a handle from one store call to the next, and never build a
statement on it (the import contract in ``pyproject.toml``).
"""

from __future__ import annotations

from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

__all__ = ["Connection", "Executor", "Session"]

# Where a statement can run: an ORM session's transaction or a Core
# connection's (the worker's hot path uses the latter).
Executor = Session | Connection
