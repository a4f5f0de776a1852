"""OpenTelemetry tool spans as feedback signals: ``FeedbackSpanProcessor``.

Extra ``[otel]`` (``opentelemetry-sdk``). Add it to the tracer provider the
runtime already traces with::

    from memos_feedback.integrations.otel import FeedbackSpanProcessor
    provider.add_span_processor(FeedbackSpanProcessor(subscriber))

On ``on_end`` it reads two kinds of span and ignores every other one:

* **GenAI semantic conventions** — ``gen_ai.operation.name ==
  "execute_tool"``: the tool is ``gen_ai.tool.name``, its arguments
  ``gen_ai.tool.call.arguments``, the session ``gen_ai.conversation.id``
  (else ``session.id``);
* **OpenInference** — ``openinference.span.kind == "TOOL"`` (its
  instrumentations of LangChain, LlamaIndex, CrewAI, DSPy, smolagents, the
  OpenAI Agents SDK, …): the tool is ``tool.name``, its arguments
  ``input.value``, the session ``session.id``.

A span whose status is ``ERROR``, or that has ``error.type``, is a failure;
its reason is the status description, else the type and message of its
``exception`` event, else ``error.type``. Any other tool span is a success. The
context is ``default_context_of(tool, arguments)`` (arguments over
``ARGS_CAP`` characters are cut before they are parsed). Steps are
numbered per session, in the order the spans end; spans that name no
session share the session ``NO_SESSION`` (``"otel"``).

``on_end`` runs on the thread that ended the span, so it only reads the
attributes and appends the step to a bounded deque (``max_pending``; when
full, the step is dropped and counted in ``dropped``); a writer thread
writes each failure as a trace row (the repair's evidence) and records
the steps on the subscriber in order; the trace's text is redacted
(``text.secrets``), as every writer of the library's does. No exception
leaves a method of the processor: errors are logged (the traceback at most
once a minute).

Call ``provider.shutdown()`` (or ``force_flush``) before the process exits:
both wait for the pending steps and then for the subscriber
(``subscriber.flush``), so a burst the spans made is stored as a repair
job, and its repair written time allowing, before a short script ends.

``emit_spans=True`` (off by default) also traces the library itself, with
the provider given as ``tracer_provider``: ``guidance_for`` (call it on
the processor) and each repair run (one span per repair persisted or
skipped, from the subscriber's bus).
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import MissingExtraError
from ..text.failures import failure_message, failure_trace_text
from ..text.logs import library_logger
from ..text.tool_context import EXIT_LINE, default_context_of

try:
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
    from opentelemetry.trace import StatusCode
except ImportError as exc:
    missing = exc.name.partition(".")[0] if exc.name else str(exc)
    raise MissingExtraError(__name__, "otel", missing) from exc

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import Span
    from opentelemetry.trace import TracerProvider

    from ..events import FeedbackEvent
    from ..recall import Guidance
    from ..runtime.subscriber import FeedbackSubscriber

__all__ = ["ARGS_CAP", "NO_SESSION", "FeedbackSpanProcessor"]

logger = library_logger("memos_feedback.otel")

ARGS_CAP = 4_000
# The session of tool spans that name none: a repair reads its evidence by session.
NO_SESSION = "otel"
_REASON_CAP = 500
_TRACE_CAP = 2_000
_TOOL_CAP = 200
_SESSION_CAP = 255
_LOG_EVERY = 60.0
# How long provider.shutdown() waits for the steps and their repairs (OTel's own default flush).
_SHUTDOWN_MS = 30_000
_ERROR = StatusCode.ERROR

_KIND_OI = "openinference.span.kind"
_OP_GENAI = "gen_ai.operation.name"


def _text(value: Any, cap: int) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    return text[:cap]


def _args(value: Any) -> Any:
    if isinstance(value, str):
        return value[:ARGS_CAP]
    if isinstance(value, (list, tuple)):  # an attribute may be a sequence of strings
        return _text(json.dumps(list(value)), ARGS_CAP)
    return value


def _attributes_of(span: ReadableSpan) -> Mapping[str, Any] | None:
    """The span's attributes as a plain mapping, cheaply.

    Most spans a runtime ends are not tool spans, so this is the cost paid
    on every one of them. ``span.attributes`` wraps the SDK's
    ``BoundedAttributes`` in a new proxy, and each of its lookups takes a
    lock: ~1.2 µs for the two this needs. The SDK keeps a plain dict
    inside (``_dict``); read that when it is there, the public mapping
    otherwise.
    """
    bounded = getattr(span, "_attributes", None)
    inner = getattr(bounded, "_dict", None)
    if type(inner) is dict:
        return inner
    return span.attributes


def _reason(span: ReadableSpan, attrs: Mapping[str, Any]) -> str:
    # The message first and the traceback reduced to its exception line
    # before the cap: a traceback cut at the cap would lose that very line.
    described = failure_message(span.status.description)
    if described:
        return _text(described, _REASON_CAP)
    error_type = attrs.get("error.type")
    for event in span.events:
        if event.name == "exception" and event.attributes:
            message = event.attributes.get("exception.message")
            kind = event.attributes.get("exception.type") or error_type
            message = failure_message(message) if isinstance(message, str) else message
            if message:
                return _text(f"{kind}: {message}" if kind else message, _REASON_CAP)
    return _text(error_type or "tool failed", _REASON_CAP)


class FeedbackSpanProcessor(SpanProcessor):
    """Tool spans into ``record_tool_failure`` / ``record_tool_success`` (module docstring)."""

    def __init__(
        self,
        subscriber: FeedbackSubscriber,
        *,
        context_of: Callable[[str, Any], str] | None = None,
        write_traces: bool = True,
        max_pending: int = 10_000,
        max_sessions: int = 10_000,
        emit_spans: bool = False,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        self.subscriber = subscriber
        self.context_of = context_of or default_context_of
        self.write_traces = write_traces
        self.max_sessions = max_sessions
        self.dropped = 0
        self._steps: OrderedDict[str, int] = OrderedDict()
        self._pending: deque[tuple[Any, ...]] = deque()
        self._max_pending = max_pending
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._busy = False
        self._stopped = False
        self._last_logged = -_LOG_EVERY
        self._tracer: Any = None
        self._bus_off: Callable[[], None] | None = None
        if emit_spans:
            from opentelemetry import trace

            self._tracer = trace.get_tracer("memos_feedback", tracer_provider=tracer_provider)
            self._bus_off = subscriber.bus.on_any(self._repair_span)
        self._thread = threading.Thread(target=self._run, name="memos-feedback-otel", daemon=True)
        self._thread.start()

    # -- the span pipeline's side ------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        try:
            attrs = _attributes_of(span)
            if not attrs:
                return
            if attrs.get(_KIND_OI) == "TOOL":
                tool = attrs.get("tool.name") or span.name
                args = attrs.get("input.value")
                session = attrs.get("session.id")
            elif attrs.get(_OP_GENAI) == "execute_tool":
                tool = attrs.get("gen_ai.tool.name") or span.name
                args = attrs.get("gen_ai.tool.call.arguments")
                session = attrs.get("gen_ai.conversation.id") or attrs.get("session.id")
            else:
                return
            failed = span.status.status_code is _ERROR or "error.type" in attrs
            reason = _reason(span, attrs) if failed else ""
            self._add(
                _text(tool, _TOOL_CAP) or "tool",
                _args(args),
                _text(session, _SESSION_CAP) or NO_SESSION,
                failed,
                reason,
            )
        except Exception:
            self._log_error("on_end")

    def _add(self, tool: str, args: Any, session: str, failed: bool, reason: str) -> None:
        with self._lock:
            if self._stopped:
                return
            if len(self._pending) >= self._max_pending:
                self.dropped += 1
                return
            step = self._steps.pop(session, 0) + 1
            self._steps[session] = step
            if len(self._steps) > self.max_sessions:
                self._steps.popitem(last=False)
            self._pending.append((tool, args, session, failed, reason, step))
            self._wake.notify()

    def shutdown(self) -> None:
        """Record what is pending, let the subscriber store its repairs, then stop the thread.

        ``TracerProvider.shutdown()`` calls this, and it is often the last
        thing a short script does: without waiting for the subscriber here,
        the process could exit with a burst still in memory and its repair
        never queued.
        """
        try:
            self.force_flush(_SHUTDOWN_MS)
        finally:
            with self._lock:
                self._stopped = True
                self._wake.notify_all()
            if self._bus_off is not None:
                self._bus_off()
            self._thread.join(1.0)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Wait until every step seen so far is recorded and the subscriber flushed, within the timeout.

        Flushing the subscriber too (``subscriber.flush``) means a burst those
        steps made is stored as a job and, time allowing, its repair written:
        "flushed" then covers what the spans caused, not only the spans.
        False when the timeout passed first; a job already stored stays
        queued for any worker.
        """
        try:
            deadline = time.monotonic() + timeout_millis / 1000
            with self._lock:
                while (self._pending or self._busy) and not self._stopped:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._wake.wait(min(left, 0.05))
            return self.subscriber.flush(timeout=max(0.0, deadline - time.monotonic()))
        except Exception:
            self._log_error("force_flush")
            return False

    # -- the writer thread ------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._pending and not self._stopped:
                    self._busy = False
                    self._wake.notify_all()
                    self._wake.wait()
                if self._stopped and not self._pending:
                    self._busy = False
                    self._wake.notify_all()
                    return
                item = self._pending.popleft()
                self._busy = True
            try:
                self._record(*item)
            except Exception:
                self._log_error("recording a tool span")

    def _record(self, tool: str, args: Any, session: str, failed: bool, reason: str, step: int) -> None:
        try:
            ctx = self.context_of(tool, args)
            if not isinstance(ctx, str) or not ctx.strip():
                ctx = default_context_of(tool, args)
        except Exception:
            self._log_error("context_of")
            ctx = default_context_of(tool, args)
        sub = self.subscriber
        if not failed:
            sub.record_tool_success(tool, ctx, step, session_id=session)
            return
        trace_id = None
        if self.write_traces:
            from ..store import ToolCall

            m = EXIT_LINE.match(reason)
            row = sub.store.traces.add(
                session,
                agent_text=failure_trace_text(tool, ctx, reason, _TRACE_CAP),
                value=-1.0,
                tool_calls=[ToolCall(tool, f"exit {m.group(1)}" if m else "error")],
                redact=True,  # the span's text is the host's: a credential in an error stays out of the table
            )
            trace_id = row.id
        sub.record_tool_failure(tool, ctx, step, reason, session_id=session, trace_id=trace_id)

    def _log_error(self, where: str) -> None:
        now = time.monotonic()
        if now - self._last_logged >= _LOG_EVERY:
            self._last_logged = now
            logger.exception("memos-feedback span processor error in %s (ignored)", where)
        else:
            logger.debug("memos-feedback span processor error in %s (ignored)", where, exc_info=True)

    # -- the library's own spans (emit_spans=True) ---------------------------

    def guidance_for(self, **kwargs: Any) -> Guidance:
        """``subscriber.guidance_for(**kwargs)``, in a ``memos_feedback.guidance_for`` span when emitting."""
        if self._tracer is None:
            return self.subscriber.guidance_for(**kwargs)
        with self._tracer.start_as_current_span("memos_feedback.guidance_for") as span:
            for key in ("tool_id", "context", "project", "session_id"):
                if isinstance(kwargs.get(key), str):
                    span.set_attribute(f"memos_feedback.{key}", kwargs[key][:_TOOL_CAP])
            found = self.subscriber.guidance_for(**kwargs)
            span.set_attribute("memos_feedback.items", len(found.items))
            return found

    def _repair_span(self, event: FeedbackEvent) -> None:
        if event.kind not in ("repair.persisted", "repair.skipped"):
            return
        try:
            from ..events import event_to_dict

            with self._tracer.start_as_current_span("memos_feedback.repair") as span:
                for key, value in event_to_dict(event).items():
                    if isinstance(value, str):
                        span.set_attribute(f"memos_feedback.{key}", value[:_TRACE_CAP])
                    elif isinstance(value, (int, float, bool)):
                        span.set_attribute(f"memos_feedback.{key}", value)
        except Exception:
            self._log_error("repair span")
