"""``memos-feedback hook claude-code``: one Claude Code hook event, answered.

Claude Code runs the command once per event with the event as JSON on
stdin and reads the answer from stdout. Per event:

* ``PostToolUse`` / ``PostToolUseFailure`` — a success / failure of the tool
  in its context (``claude_context_of``: the tool and the first words of
  its arguments, the free-text ``description`` left out). A ``Bash`` result
  that reports a non-zero exit code is a failure; an interrupt is nothing.
  The step goes into the session's window file (``hook_state``); only when
  it completes a burst (or a repair is still to be written, or it is a
  success where guidance was served: that settles the serving) does the
  hook open the database: it writes the
  failures of the window as traces (the repair's evidence, redacted, each
  under an id of its own step, so hooks racing for one burst write it
  once), queues the repair and runs it in this process within the
  deadline. A job the deadline cut short stays queued and the session's
  next hook runs it.
* ``UserPromptSubmit`` — classifies the prompt (with the agent's last turn
  from the transcript when there is one), queues the repair it calls for
  (before running what else is queued) and waits for it within the
  deadline, and answers with the guidance for the session's situation (its
  newest failing contexts and the prompt) as ``additionalContext``.
* ``SessionStart`` — the project's guidance as ``additionalContext``: the
  repairs recall finds for the contexts of the newest repairs, scoped to
  the project; it also runs any repair left queued.

A burst, and a correction, is marked due in the session's state before the
hook opens the database and struck off once its job is stored
(``hook_state``): a hook the deadline ends before that leaves it to the
session's next hook, whatever its event, which queues it first.

Both answers leave out the repairs a hook already injected into the
session's context (the state file remembers them): the first prompt of a
session would otherwise carry the ``SessionStart`` block a second time.
A ``SessionStart`` after compaction or ``/clear`` starts the record afresh,
since what was injected before is no longer in the context.

The answer is ``{}`` whenever there is nothing to say, and on any error
(logged to ``hook.log`` in the state directory): a hook never blocks or
breaks the agent. ``answer_within`` makes sure of the deadline.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._failpoints import failpoint
from ..config import FeedbackConfig
from ..text.failures import failure_trace_text
from ..text.logs import library_logger
from ..text.tool_context import EXIT_LINE, bash_exit_code, claude_context_of, response_text
from .hook_helper import answer_within
from .hook_state import HeldPrompt, HookSession, Step, prune_stale, session_state, state_root

if TYPE_CHECKING:
    from concurrent.futures import Future

    from ..recall import Guidance
    from ..runtime.subscriber import FeedbackSubscriber

__all__ = [
    "EVENTS",
    "HookOptions",
    "answer_within",
    "handle_event",
    "hook_project",
    "last_agent_turn",
    "run_hook",
    "warm_up",
]

logger = library_logger("memos_feedback.hooks")

EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure")
STDIN_CAP = 1 << 20
_PROMPT_CAP = 4_000
_AGENT_TURN_CAP = 2_000
_TRANSCRIPT_TAIL = 256 * 1024
_GUIDANCE_LIMIT = 5
_SESSION_CONTEXTS = 5
# SessionStart sources after which the context no longer holds earlier injections.
_CONTEXT_RESET = frozenset({"compact", "clear"})


@dataclass(frozen=True, slots=True)
class HookOptions:
    """The flags of ``memos-feedback hook claude-code``.

    ``deadline`` — seconds from the start to the answer (the watchdog then
    answers ``{}`` itself); the work in the database gets what is left
    after a safety margin.
    """

    db: str | None = None
    state_dir: str | None = None
    project: str | None = None
    deadline: float = 10.0
    started: float = 0.0

    def remaining(self, margin: float = 0.5) -> float:
        return max(0.0, self.started + self.deadline - margin - time.monotonic())


def hook_project(event: Mapping[str, Any], explicit: str | None) -> str | None:
    """The project a hook's repairs and guidance belong to.

    ``--project-name`` when given, else the last part of the event's working
    directory (``cwd``), else none (global). The one place that decides it.
    """
    if explicit:
        return explicit
    cwd = event.get("cwd")
    if isinstance(cwd, str) and cwd.strip():
        name = Path(cwd).name
        return name or None
    return None


def _db_url(opts: HookOptions) -> str:
    from ..config import default_db_url as default_url

    return opts.db or default_url()


def _session_id(event: Mapping[str, Any]) -> str:
    sid = event.get("session_id")
    return sid[:255] if isinstance(sid, str) and sid.strip() else "claude-code"


def last_agent_turn(transcript_path: Any) -> str | None:
    """The text of the transcript's last assistant message (read from its tail), or None."""
    if not isinstance(transcript_path, str) or not transcript_path:
        return None
    try:
        with open(transcript_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - _TRANSCRIPT_TAIL))
            tail = f.read(_TRANSCRIPT_TAIL)
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # the first line of the tail may be cut
        if not isinstance(entry, dict) or entry.get("type") != "assistant":
            continue
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts = [content]
        elif isinstance(content, list):
            texts = [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
        else:
            texts = []
        text = "\n".join(t for t in texts if t.strip())
        if text:
            return text[:_AGENT_TURN_CAP]
    return None


def _answer(event: str, block: str) -> dict[str, Any]:
    if not block:
        return {}
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": block}}


# -- the database side (only when an event needs it) ---------------------------


@contextmanager
def _pipeline(opts: HookOptions, *, workers: int = 1) -> Iterator[FeedbackSubscriber]:
    from ..runtime.subscriber import attach_feedback_subscriber
    from ..store import open_store

    config = FeedbackConfig.from_env(base=FeedbackConfig(use_llm=False))
    store = open_store(_db_url(opts))
    try:
        sub = attach_feedback_subscriber(store, config=config, workers=workers, poll_interval=0.02)
        try:
            yield sub
        finally:
            try:
                sub.close(timeout=max(0.2, opts.remaining(0.3)))
            except Exception:
                logger.exception("closing the hook's subscriber")
    finally:
        store.close()


def _run_queued(sub: FeedbackSubscriber, opts: HookOptions) -> bool:
    """Run the jobs waiting in the queue (any process's) within half the time left; True when none is left.

    Only pending jobs make it wait: a job running elsewhere is its owner's
    (or, if the owner died, returns to pending when its lease lapses).
    """
    if not sub.queue.stats()["pending"]:
        return True
    return sub.drain(opts.remaining() / 2)


def _trace_id(session: str, step: Step) -> str:
    """A failure's trace id: the same in every hook that writes it (racing hooks, a cut burst's)."""
    key = f"{session}\n{step.step}\n{step.ts}".encode("utf-8", "surrogatepass")
    return "tr_" + hashlib.blake2b(key, digest_size=12).hexdigest()


def _has_trace(sub: FeedbackSubscriber, trace_id: str) -> bool:
    from ..errors import NotFoundError

    try:
        sub.store.traces.get(trace_id)
    except NotFoundError:
        return False
    return True


def _trace_once(sub: FeedbackSubscriber, session: str, step: Step) -> None:
    """The failure's trace row, written unless it is there already (redacted, as every writer's)."""
    from ..errors import StoreError
    from ..store import ToolCall

    trace_id = _trace_id(session, step)
    if _has_trace(sub, trace_id):
        return
    m = EXIT_LINE.match(step.reason)
    try:
        sub.store.traces.add(
            session,
            agent_text=failure_trace_text(step.tool, step.context, step.reason),
            value=-1.0,
            tool_calls=[ToolCall(step.tool, f"exit {m.group(1)}" if m else "error")],
            id=trace_id,
            redact=True,
        )
    except StoreError:
        if not _has_trace(sub, trace_id):  # else another hook wrote it in between
            raise


def _write_burst(
    sub: FeedbackSubscriber, window: list[Step], session: str, opts: HookOptions, project: str | None
) -> bool:
    """The window's failures as traces (each once), then the burst through the subscriber.

    True when its job is stored: a repair still running is the queue's, not this hook's.
    """
    newest = window[-1]
    for step in window:
        if not step.ok and (step.tool, step.context) == (newest.tool, newest.context):
            _trace_once(sub, session, step)
    _replay(sub, window[:-1])
    sub.record_tool_failure_now(
        newest.tool,
        newest.context,
        newest.step,
        newest.reason,
        session_id=session,
        trace_id=_trace_id(session, newest),
        project=project,
    )
    return sub.flush(opts.remaining(), jobs=False)


def _finish_owed(
    sub: FeedbackSubscriber,
    root: Path,
    session: str,
    snapshot: HookSession,
    opts: HookOptions,
    project: str | None,
    fresh: HeldPrompt | None = None,
) -> tuple[bool, Future[Any] | None]:
    """Queue what the session owes the database (``hook_state``), then strike it off.

    The bursts and corrections of ``snapshot``: this hook's own and any a
    hook cut short by its deadline left. ``fresh`` is this hook's
    correction as typed (the state holds it redacted). Returns whether all
    were stored, and the future of ``fresh``'s repair.
    """
    bursts = [k for k in snapshot.bursts_due if _write_burst(sub, snapshot.window(k), session, opts, project)]
    sent: list[str] = []
    future: Future[Any] | None = None
    for held in snapshot.prompts_due:
        p = fresh if fresh is not None and held.id == fresh.id else held
        try:
            _, f = sub.submit_user_feedback(
                p.text, session, p.tool, p.context, agent_text=p.agent_text, project=p.project
            )
        except Exception:  # held still: the next hook tries again
            logger.exception("queueing a correction the session held")
            continue
        sent.append(held.id)
        if p is fresh:
            future = f
    if bursts or sent:
        with session_state(root, session) as st:
            st.bursts_stored(bursts)
            st.prompts_stored(sent)
    done = len(bursts) == len(snapshot.bursts_due) and len(sent) == len(snapshot.prompts_due)
    return done, future


def _replay(sub: FeedbackSubscriber, steps: list[Step]) -> None:
    # Straight into the detector: these steps were recorded (and settled)
    # by the hooks that saw them; only the window must be rebuilt.
    from ..types import FailureRecord

    for s in steps:
        if s.ok:
            sub.signals.record_success(s.tool, s.context, s.step)
        else:
            sub.signals.record_failure(FailureRecord(s.tool, s.context, s.step, s.reason, s.ts))


def _tool_event(event: Mapping[str, Any], name: str, opts: HookOptions) -> dict[str, Any]:
    tool = event.get("tool_name")
    tool = tool[:200] if isinstance(tool, str) and tool.strip() else "tool"
    args = event.get("tool_input")
    if name == "PostToolUseFailure":
        if event.get("is_interrupt"):
            return {}
        ok, reason = False, str(event.get("error") or "tool failed")
    else:
        response = event.get("tool_response")
        code = bash_exit_code(response) if tool == "Bash" else None
        ok = not code
        reason = "" if ok else f"Exit code {code}\n{response_text(response)}"
    session = _session_id(event)
    config = FeedbackConfig.from_env()
    root = state_root(opts.state_dir, _db_url(opts))
    with session_state(root, session) as st:
        # As stored: the context redacted, like every pair the state holds.
        step = st.add(tool, claude_context_of(tool, args), ok, reason, keep=config.failure_window)
        burst = None if ok else st.burst(config)
        if burst is not None:
            st.owe_burst(step.step)  # until its job is stored: a hook cut before that leaves it to the next
            st.pending = True
        # A success where guidance was served settles that it held; a burst, that it recurred.
        settle = st.settle((step.tool, step.context)) if ok or burst is not None else False
        if not st.owes() and not st.pending and not settle:
            return {}  # the common case: no database at all
        snapshot = HookSession.from_json(st.to_json())
    failpoint("hook.before_database")
    # The database work runs outside the lock: the session's parallel hooks go on meanwhile.
    with _pipeline(opts) as sub:
        if settle and burst is None:  # on the servings the subscriber reloaded at start
            sub.record_tool_success(step.tool, step.context, step.step, session_id=session)
        written, _ = _finish_owed(sub, root, session, snapshot, opts, hook_project(event, opts.project))
        written = sub.flush(opts.remaining()) and written
        written = _run_queued(sub, opts) and written
    with session_state(root, session) as st:
        st.pending = not written
    return {}


def _prompt_event(event: Mapping[str, Any], opts: HookOptions) -> dict[str, Any]:
    prompt = event.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return {}
    prompt = prompt[:_PROMPT_CAP]
    session = _session_id(event)
    project = hook_project(event, opts.project)
    agent_turn = last_agent_turn(event.get("transcript_path"))
    root = state_root(opts.state_dir, _db_url(opts))
    with session_state(root, session) as st:
        failing = st.failing(_SESSION_CONTEXTS)
        tool, ctx = failing[0] if failing else (None, None)
        # Held (redacted) until its job is stored: a hook cut before that leaves it to the next.
        held = st.owe_prompt(prompt, tool, ctx, project, agent_turn)
        st.pending = True
        snapshot = HookSession.from_json(st.to_json())
    failpoint("hook.before_database")
    fresh = dataclasses.replace(held, text=prompt, agent_text=agent_turn)
    with _pipeline(opts) as sub:
        # The correction is queued first (committed), the queue's other jobs run after.
        queued_ok, future = _finish_owed(sub, root, session, snapshot, opts, project, fresh)
        queued_ok = _run_queued(sub, opts) and queued_ok
        written = False
        if future is not None:
            try:
                future.result(timeout=opts.remaining(1.0))
                written = True
            except Exception as exc:  # a timeout or a failed repair: the answer goes on
                logger.info("the prompt's repair is not written yet: %s", exc)
                written = future.done()
        found = _guidance(sub, failing, prompt, project, session)
        sub.flush(opts.remaining())
    with session_state(root, session) as st:
        st.pending = not (written and queued_ok)
        if found:  # in the context now or already: a success there settles that it held
            st.serve(failing)
        block = _not_yet_injected(st, found)
    return _answer("UserPromptSubmit", block)


def _guidance(
    sub: FeedbackSubscriber, failing: list[tuple[str, str]], query: str, project: str | None, session: str
) -> Guidance:
    from ..adapters.core import merged_guidance

    return merged_guidance(sub, failing, query, project=project, session_id=session, limit=_GUIDANCE_LIMIT)


def _not_yet_injected(st: HookSession, found: Guidance) -> str:
    """The block of ``found``'s repairs the session's context lacks; they are recorded as injected.

    Decided under the session's lock, after the database work, so two hooks
    of one session racing each other still inject a repair once.
    """
    fresh = dataclasses.replace(found, items=tuple(i for i in found.items if i.repair_id not in st.injected))
    st.inject([item.repair_id for item in fresh.shown()])
    return fresh.render()


def _session_start(event: Mapping[str, Any], opts: HookOptions) -> dict[str, Any]:
    session = _session_id(event)
    project = hook_project(event, opts.project)
    root = state_root(opts.state_dir, _db_url(opts))
    prune_stale(root)
    with session_state(root, session) as st:
        snapshot = HookSession.from_json(st.to_json())  # a resumed session may owe the database work
    with _pipeline(opts) as sub:
        if snapshot.owes():
            _finish_owed(sub, root, session, snapshot, opts, project)
        _run_queued(sub, opts)
        contexts: list[tuple[str, str]] = []
        for repair in sub.store.repairs.list(limit=50):
            key = (repair.tool_id or "", repair.context or "")
            if all(key) and key not in contexts and repair.project in (None, project):
                contexts.append(key)
        contexts = contexts[:_SESSION_CONTEXTS]
        found = _guidance(sub, contexts, "", project, session)
        sub.flush(opts.remaining())
    if not found and event.get("source") not in _CONTEXT_RESET:
        return {}
    with session_state(root, session) as st:
        if event.get("source") in _CONTEXT_RESET:
            st.injected.clear()  # the context that held them is gone
        if found:
            st.serve(contexts)
        block = _not_yet_injected(st, found)
    return _answer("SessionStart", block)


def warm_up() -> None:
    """Import what the database-side events use and load the classifier's model (the warm helper's start).

    Nothing is read or written; a failure here is logged and the first
    event pays the rest.
    """
    try:
        from ..adapters import core  # noqa: F401  # recall's guidance for the answers
        from ..classify.classifier import classify_feedback
        from ..runtime import subscriber  # noqa: F401

        classify_feedback("use the other one instead")  # the model and the embedder, loaded
    except Exception:
        logger.exception("warming up the hook helper")


_HANDLERS: dict[str, Callable[[Mapping[str, Any], HookOptions], dict[str, Any]]] = {
    "SessionStart": _session_start,
    "UserPromptSubmit": _prompt_event,
    "PostToolUse": lambda e, o: _tool_event(e, "PostToolUse", o),
    "PostToolUseFailure": lambda e, o: _tool_event(e, "PostToolUseFailure", o),
}


def handle_event(event: Mapping[str, Any], opts: HookOptions) -> dict[str, Any]:
    """The answer to one parsed event (raises on errors; ``run_hook`` catches them)."""
    handler = _HANDLERS.get(str(event.get("hook_event_name")))
    return {} if handler is None else handler(event, opts)


def run_hook(raw: bytes, opts: HookOptions) -> dict[str, Any]:
    """Parse ``raw`` (stdin), handle it, and answer ``{}`` on any error (logged)."""
    try:
        if len(raw) > STDIN_CAP:
            logger.warning("hook event of %d bytes is over the %d-byte cap; ignored", len(raw), STDIN_CAP)
            return {}
        event = json.loads(raw.decode("utf-8", "replace"))
        if not isinstance(event, dict):
            logger.warning("hook event is not a JSON object; ignored")
            return {}
        return handle_event(event, opts)
    except Exception:
        logger.exception("memos-feedback hook failed (answered {}; the agent goes on)")
        return {}
