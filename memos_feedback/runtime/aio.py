"""``in_worker_thread``: the awaitable form of a blocking method, for asyncio hosts.

The subscriber has one class for both kinds of host: its awaitable forms
(``asubmit_user_feedback``, ``aguidance_for``) are its sync methods run by
``asyncio.to_thread``, typed with the sync method's own parameters, so the
two can never drift apart.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

__all__ = ["in_worker_thread"]

_P = ParamSpec("_P")
_R = TypeVar("_R")
_S = TypeVar("_S")


def in_worker_thread(
    method: Callable[Concatenate[_S, _P], _R], name: str, owner: str
) -> Callable[Concatenate[_S, _P], Coroutine[Any, Any, _R]]:
    """The awaitable form of ``method``, named ``owner.name``: the same call in a worker thread.

    Cancelling the awaiting task does not stop the call (a thread cannot be
    interrupted): a correction already being committed is still committed.
    """

    @functools.wraps(method)
    async def in_thread(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return await asyncio.to_thread(method, self, *args, **kwargs)

    in_thread.__name__ = name
    in_thread.__qualname__ = f"{owner}.{name}"
    in_thread.__doc__ = f"The ``await`` form of ``{method.__name__}``, in a worker thread."
    return in_thread
