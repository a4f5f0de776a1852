"""What every runtime adapter shares (docs/ADAPTERS.md).

``AdapterCore`` wraps one ``FeedbackSubscriber`` and turns runtime events
into the library's calls:

* **step counter** — one monotonically increasing step per session (the
  runtimes have none that survives a turn);
* **context** — ``context_of(tool_name, args)`` names the situation a tool
  call is in. Three failures of one (tool, context) make a burst, so the
  context must stay the same when the agent retries with slightly
  different arguments. The default, ``default_context_of``, keeps the tool
  name and, for each string argument, its name and first two words that
  are not flags: ``bash(command="npm install --force")`` and
  ``bash(command="npm install --legacy-peer-deps", timeout=60)`` share the
  context ``bash command=npm install``. Numbers, booleans, lists, objects
  and arguments holding only flags are left out (retries add and change
  them). Pass your own ``context_of`` to change that;
* **trace rows** — each failure (and, unless ``trace_successes=False``, each
  success) is written to ``store.traces`` so a repair has evidence to stand
  on; the failure's trace id goes with ``record_tool_failure_now`` (the
  burst is needed at once: the next model call waits for its repair);
* **guidance** — ``guidance(session)`` returns the ``<memory-context>``
  block for the next model call, computed once per turn and cached until
  something that can change it happens (a new user message, a new failing
  context, a burst, a repair written for one of the session's contexts).
  After a burst or a correction of the session's own it waits up to
  ``repair_wait`` seconds for the repair to land, so the very next model
  call can carry it;
* **never raise into the runtime** — every entry point is wrapped by
  ``soft``: an error is logged (at most once a minute per entry point with
  the traceback) and the runtime goes on.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import wait as wait_for
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from ..errors import MissingExtraError
from ..events import FeedbackEvent, RepairPersisted
from ..recall import Guidance
from ..runtime.subscriber import FeedbackSubscriber
from ..signals import FailureBurst, context_hash_of
from ..store import ToolCall
from ..text.failures import failure_trace_text
from ..text.logs import library_logger
from ..text.tool_context import default_context_of
from ..types import RepairResult

__all__ = [
    "AdapterCore",
    "ContextOf",
    "default_context_of",
    "merged_guidance",
    "missing_extra",
    "recall",
    "soft",
]

logger = library_logger("memos_feedback.adapters")

ContextOf = Callable[[str, Any], str]
"""``context_of(tool_name, args) -> context``; ``args`` is a mapping, a JSON string or anything."""

P = ParamSpec("P")
R = TypeVar("R")

_TEXT_CAP = 2_000
_USER_TEXT_CAP = 500
_SEEN_TEXTS = 32
_RECENT_CONTEXTS = 3
_LOG_EVERY = 60.0
_last_logged: dict[str, float] = {}


def soft(default: Any) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Never let ``fn`` raise into the runtime: log the error, return ``default``.

    The traceback is logged at most once a minute per function (a broken
    database must not flood the log on every tool step); the repeats go
    out at DEBUG.
    """

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        name = getattr(fn, "__qualname__", repr(fn))

        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return fn(*args, **kwargs)
            except Exception:
                log_adapter_error(name)
                result: R = default
                return result

        return wrapper

    return decorate


def missing_extra(module: str, extra: str, exc: ImportError) -> MissingExtraError:
    """The one-line error an adapter module raises when its runtime is not installed."""
    missing = exc.name.partition(".")[0] if exc.name else str(exc)  # the distribution's top package
    return MissingExtraError(module, extra, missing)


def log_adapter_error(where: str) -> None:
    """Log the exception being handled: with traceback once a minute per ``where``."""
    now = time.monotonic()
    if now - _last_logged.get(where, -_LOG_EVERY) >= _LOG_EVERY:
        _last_logged[where] = now
        logger.exception("memos-feedback adapter error in %s (ignored; the agent goes on)", where)
    else:
        logger.debug("memos-feedback adapter error in %s (ignored)", where, exc_info=True)


def recall(
    subscriber: FeedbackSubscriber,
    *,
    tool_id: str | None = None,
    context: str | None = None,
    query: str | None = None,
    project: str | None = None,
    session_id: str | None = None,
    limit: int = 5,
    user: str | None = None,
) -> Guidance:
    """The one place adapters ask for guidance: ``subscriber.guidance_for``.

    Kept as a function so every adapter asks the same way (and a test can
    see which arguments a recall gets).
    """
    return subscriber.guidance_for(
        tool_id=tool_id,
        context=context,
        query=query,
        project=project,
        session_id=session_id,
        limit=limit,
        user=user,
    )


@dataclass
class _Session:
    step: int = 0
    last_user_text: str = ""
    # What the agent did since the last user message (its newest tool outcome),
    # the classifier's context when the runtime does not hand over the agent's reply.
    last_agent_text: str = ""
    seen_texts: deque[str] = field(default_factory=lambda: deque(maxlen=_SEEN_TEXTS))
    failed: deque[tuple[str, str]] = field(default_factory=lambda: deque(maxlen=_RECENT_CONTEXTS))
    generation: int = 0
    cached_generation: int = -1
    cached_text: str = ""
    repair_pending: bool = False
    # Repairs the session's own messages asked for, not written yet.
    asked: list[Future[RepairResult]] = field(default_factory=list)
    # Context hashes of the session's recent failing contexts and corrections:
    # a repair written for one of them makes the cached block stale.
    hashes: deque[str] = field(default_factory=lambda: deque(maxlen=2 * _RECENT_CONTEXTS))


def _remember(hashes: deque[str], context_hash: str) -> None:
    if context_hash in hashes:
        hashes.remove(context_hash)
    hashes.append(context_hash)


def _clip(text: str, cap: int) -> str:
    return text if len(text) <= cap else text[: cap - 3] + "..."


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


class AdapterCore:
    """A ``FeedbackSubscriber`` seen from an agent runtime (module docstring).

    Thread-safe: runtimes run tools in parallel threads. ``max_sessions``
    bounds the per-session state (least recently used sessions are
    forgotten first).
    """

    def __init__(
        self,
        subscriber: FeedbackSubscriber,
        *,
        context_of: ContextOf | None = None,
        project: str | None = None,
        user: str | None = None,
        episode_id: str | None = None,
        write_traces: bool = True,
        trace_successes: bool = True,
        inject_guidance: bool = True,
        guidance_limit: int = 5,
        repair_wait: float = 2.0,
        max_sessions: int = 10_000,
    ) -> None:
        self.subscriber = subscriber
        self.context_of = context_of or default_context_of
        self.project = project
        self.user = user
        self.episode_id = episode_id
        self.write_traces = write_traces
        self.trace_successes = trace_successes
        self.inject_guidance = inject_guidance
        self.guidance_limit = guidance_limit
        self.repair_wait = repair_wait
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._lock = threading.Lock()
        # Weakly: an adapter made per request must not live on in the bus;
        # its listener goes with it.
        ref = weakref.ref(self)

        def on_persisted(event: FeedbackEvent) -> None:
            core = ref()
            if core is not None and isinstance(event, RepairPersisted):
                core._repair_written(event.context_hash)

        weakref.finalize(self, subscriber.bus.on(RepairPersisted.kind, on_persisted))

    def _repair_written(self, context_hash: str) -> None:
        """A repair was written for ``context_hash``: sessions that know it read guidance again."""
        with self._lock:
            for st in self._sessions.values():
                if context_hash in st.hashes:
                    st.generation += 1

    # -- session state ------------------------------------------------------

    def _session(self, session_id: str) -> _Session:
        # Caller holds self._lock.
        st = self._sessions.get(session_id)
        if st is None:
            st = self._sessions[session_id] = _Session()
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(session_id)
        return st

    def next_step(self, session_id: str) -> int:
        """The next step number of the session (1, 2, 3, …)."""
        with self._lock:
            st = self._session(session_id)
            st.step += 1
            return st.step

    def context(self, tool_name: str, args: Any) -> str:
        """``context_of(tool_name, args)``; the default when a custom one fails."""
        try:
            ctx = self.context_of(tool_name, args)
            if isinstance(ctx, str) and ctx.strip():
                return ctx
            logger.warning("context_of returned %r for %s; using the default", ctx, tool_name)
        except Exception:
            log_adapter_error("context_of")
        return default_context_of(tool_name, args)

    # -- events from the runtime ----------------------------------------------

    @soft(None)
    def tool_failed(
        self,
        session_id: str,
        tool_name: str,
        args: Any,
        reason: str,
        *,
        error_code: str | None = None,
        context: str | None = None,
    ) -> FailureBurst | None:
        """A tool call failed: write a trace row, record the failure, note the context."""
        ctx = context if context is not None else self.context(tool_name, args)
        step = self.next_step(session_id)
        with self._lock:
            user_text = self._session(session_id).last_user_text
        trace_id = None
        if self.write_traces:
            trace_id = self._write_trace(
                session_id,
                user_text=user_text,
                agent_text=failure_trace_text(tool_name, ctx, reason, _TEXT_CAP),
                value=-1.0,
                call=ToolCall(tool_name, error_code or "error"),
            )
        burst = self.subscriber.record_tool_failure_now(
            tool_name,
            ctx,
            step,
            _clip(reason, _USER_TEXT_CAP),
            session_id=session_id,
            episode_id=self.episode_id,
            trace_id=trace_id,
            project=self.project,
            user=self.user,
        )
        with self._lock:
            st = self._session(session_id)
            key = (tool_name, ctx)
            if key in st.failed:
                st.failed.remove(key)
            else:
                st.generation += 1  # a new failing context may have older repairs
                _remember(st.hashes, context_hash_of(tool_name, ctx))
            st.failed.append(key)
            st.last_agent_text = _clip(f"{tool_name} failed ({ctx}): {reason}", _TEXT_CAP)
            if burst is not None:
                st.repair_pending = True
                st.generation += 1
        return burst

    @soft(None)
    def tool_succeeded(
        self, session_id: str, tool_name: str, args: Any, output: str = "", *, context: str | None = None
    ) -> None:
        """A tool call succeeded: record it (and a trace row unless ``trace_successes=False``)."""
        ctx = context if context is not None else self.context(tool_name, args)
        step = self.next_step(session_id)
        self.subscriber.record_tool_success(tool_name, ctx, step, session_id=session_id)
        summary = f"{tool_name} succeeded ({ctx})"
        if output:
            summary += f": {output}"
        with self._lock:
            st = self._session(session_id)
            st.last_agent_text = _clip(summary, _TEXT_CAP)
            user_text = st.last_user_text
        if self.write_traces and self.trace_successes:
            self._write_trace(
                session_id, user_text=user_text, agent_text=summary, value=0.5, call=ToolCall(tool_name)
            )

    def _write_trace(
        self, session_id: str, *, user_text: str, agent_text: str, value: float, call: ToolCall
    ) -> str | None:
        try:
            row = self.subscriber.store.traces.add(
                session_id,
                user_text=_clip(user_text, _USER_TEXT_CAP),
                agent_text=_clip(agent_text, _TEXT_CAP),
                value=value,
                tool_calls=[call],
                episode_id=self.episode_id,
                redact=True,
            )
        except Exception:
            log_adapter_error("writing a trace")
            return None
        return row.id

    @soft(False)
    def user_message(self, session_id: str, text: str, *, agent_text: str | None = None) -> bool:
        """Classify the user's message once (a text seen before in the session is skipped).

        ``agent_text`` is the agent's turn the message answers, when the runtime
        has it; else the newest tool outcome since the previous user message.
        Returns True when it was submitted now.
        """
        if not isinstance(text, str) or not text.strip():
            return False
        digest = _digest(text)
        with self._lock:
            st = self._session(session_id)
            if digest in st.seen_texts:
                return False
            st.seen_texts.append(digest)
            st.last_user_text = text
            st.generation += 1
            given = agent_text if isinstance(agent_text, str) and agent_text.strip() else ""
            previous = _clip(given, _TEXT_CAP) if given else st.last_agent_text
            st.last_agent_text = ""
        _, asked = self.subscriber.submit_user_feedback(
            text,
            session_id,
            episode_id=self.episode_id,
            agent_text=previous or None,
            project=self.project,
            user=self.user,
        )
        if self.inject_guidance and not asked.done():
            # A correction of this session: its next model call waits for the repair (guidance).
            with self._lock:
                st = self._session(session_id)
                st.asked.append(asked)
                del st.asked[:-_SEEN_TEXTS]
                st.generation += 1
            asked.add_done_callback(functools.partial(self._asked_done, session_id))
        return True

    def _asked_done(self, session_id: str, asked: Future[RepairResult]) -> None:
        """The repair a session's message asked for is done: its context now invalidates the cache."""
        if asked.cancelled() or asked.exception() is not None:
            return
        with self._lock:
            st = self._sessions.get(session_id)
            if st is not None:
                _remember(st.hashes, asked.result().context_hash)
                st.generation += 1

    # -- guidance -------------------------------------------------------------

    @soft("")
    def guidance(self, session_id: str) -> str:
        """The ``<memory-context>`` block for the session's next model call, or ``""``.

        Cached until a new user message, a new failing context, a burst or
        a repair written for one of the session's contexts; after a burst or
        a correction of the session's, waits up to ``repair_wait`` s for
        the repair.
        """
        if not self.inject_guidance:
            return ""
        with self._lock:
            st = self._session(session_id)
            if st.cached_generation == st.generation and not st.repair_pending:
                return st.cached_text
            pending = st.repair_pending
            asked = [f for f in st.asked if not f.done()]
            st.asked = asked
        started = time.monotonic()
        settled = True
        if pending:
            settled = self.subscriber.flush(self.repair_wait) if self.repair_wait > 0 else False
        if asked:
            left = max(0.0, self.repair_wait - (time.monotonic() - started))
            settled = not wait_for(asked, timeout=left).not_done and settled
        with self._lock:
            st = self._session(session_id)
            # Read after the wait: the repair's own invalidation is counted in.
            generation = st.generation
            failed = list(reversed(st.failed))
            query = st.last_user_text
        text = self._compute(session_id, failed, query)
        with self._lock:
            st = self._session(session_id)
            if st.generation == generation:
                st.cached_generation = generation
                st.cached_text = text
                if settled:
                    st.repair_pending = False
        return text

    def _compute(self, session_id: str, failed: list[tuple[str, str]], query: str) -> str:
        limit = self.guidance_limit
        found = merged_guidance(
            self.subscriber,
            failed,
            query,
            project=self.project,
            user=self.user,
            session_id=session_id,
            limit=limit,
        )
        return found.render()


def merged_guidance(
    subscriber: FeedbackSubscriber,
    failed: list[tuple[str, str]],
    query: str,
    *,
    project: str | None,
    session_id: str | None,
    limit: int,
    user: str | None = None,
) -> Guidance:
    """One recall per failing (tool, context), newest first, then one for ``query``; merged.

    A repair found twice is kept once, at its first place; at most ``limit``
    items. Empty when there is nothing to ask for.
    """
    found: list[Guidance] = []
    for tool, ctx in failed:  # the newest failing context first
        found.append(
            recall(
                subscriber,
                tool_id=tool,
                context=ctx,
                project=project,
                user=user,
                session_id=session_id,
                limit=limit,
            )
        )
    if query.strip():
        found.append(
            recall(subscriber, query=query, project=project, user=user, session_id=session_id, limit=limit)
        )
    if not found:
        return Guidance(())
    seen: set[str] = set()
    items = []
    for g in found:
        for item in g.items:
            if item.repair_id not in seen:
                seen.add(item.repair_id)
                items.append(item)
    return dataclasses.replace(found[0], items=tuple(items[:limit]))


def with_block(base: str | None, block: str) -> str:
    """``base`` followed by the guidance block (a blank line between), or ``base`` alone."""
    if not block:
        return base or ""
    if not base:
        return block
    return f"{base.rstrip()}\n\n{block}"
