"""``memos-feedback demo``: a scripted agent session, end to end, on a fresh database.

It shows the whole loop a host would wire up: traces land in the store, a
tool fails three times in a row (a burst → a repair), the user corrects
the agent in Chinese (a preference repair), says thanks (nothing written),
and the policy the episodes came from gets its ``@repair`` block. Every
event prints as it happens.

By default the database and the audit log live in a temporary folder that
is deleted at the end, so no path to them is printed; ``workdir`` (the
command line's ``--keep DIR``) keeps them in that folder and prints where.
If stdout closes early (``memos-feedback demo | head -1``) the demo stops
printing, finishes, cleans up, and raises ``BrokenPipeError`` for the
caller to handle.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from ..config import FeedbackConfig
from ..errors import InvalidInputError
from ..events import FeedbackBus, FeedbackEvent, event_to_dict
from ..runtime.audit import AuditLog
from ..runtime.subscriber import attach_feedback_subscriber
from ..store import Store, ToolCall, open_store
from ..synthesis.llm import OpenAIRepairLLM

__all__ = ["run_demo"]

SESSION = "demo-session"
EPISODE = "ep-install"
TOOL = "npm.install"
CONTEXT = "install dependencies for web/"


def _describe(event: FeedbackEvent) -> str:
    data = event_to_dict(event)
    data.pop("kind")
    data.pop("at")
    parts = []
    for key, value in data.items():
        if isinstance(value, float):
            value = f"{value:.2f}"
        elif isinstance(value, tuple):
            value = ",".join(value) or "-"
        parts.append(f"{key}={value}")
    return " ".join(parts)


def run_demo(out: TextIO = sys.stdout, use_llm: bool = False, workdir: str | None = None) -> int:
    """Play the session; ``workdir`` keeps ``demo.db`` and ``audit.jsonl`` there."""
    if workdir is not None:
        keep = Path(workdir).expanduser()
        if (keep / "demo.db").exists():
            raise InvalidInputError(f"{keep / 'demo.db'} already exists; give --keep an empty or new folder")
        try:
            keep.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InvalidInputError(f"cannot create {keep}: {exc.strerror or exc}") from exc
        return _play(out, use_llm, keep, kept=True)
    with tempfile.TemporaryDirectory(prefix="memos-feedback-demo-") as tmp:
        return _play(out, use_llm, Path(tmp), kept=False)


def _play(out: TextIO, use_llm: bool, base: Path, *, kept: bool) -> int:
    db_path = base / "demo.db"
    audit_path = base / "audit.jsonl"
    started = time.monotonic()
    pipe_closed = False

    def say(text: str) -> None:
        # Events print from the subscriber's threads too: a closed pipe must
        # not raise there, so remember it and stop printing.
        nonlocal pipe_closed
        if pipe_closed:
            return
        try:
            print(text, file=out, flush=True)
        except BrokenPipeError:
            pipe_closed = True

    def feed(event: FeedbackEvent) -> None:
        say(f"  [{(time.monotonic() - started) * 1000:7.1f} ms] {event.kind:<20} {_describe(event)}")

    config = FeedbackConfig(use_llm=use_llm)
    llm = OpenAIRepairLLM() if use_llm else None
    store = open_store(f"sqlite:///{db_path}")
    audit = AuditLog(audit_path)
    try:
        bus = FeedbackBus()
        bus.on_any(feed)
        audit.attach(bus)
        where = f"database {db_path}" if kept else "a temporary database (pass --keep DIR to keep it)"
        say(f"memos-feedback demo — {where} (schema {store.revision()})")
        say(f"synthesis: {'LLM at ' + str(llm.base_url) if llm else 'template (no API key needed)'}\n")
        _script(store, bus, llm, config, say)
        audit_lines = audit_path.read_text(encoding="utf-8").count("\n")
        if kept:
            say(f"\naudit log: {audit_lines} lines in {audit_path}")
            say(f"kept: {db_path} and {audit_path}")
        else:
            say(f"\naudit log: {audit_lines} lines (deleted with the temporary database)")
    finally:
        audit.close()
        store.close()
    if pipe_closed:
        raise BrokenPipeError("stdout was closed")
    return 0


def _script(
    store: Store,
    bus: FeedbackBus,
    llm: OpenAIRepairLLM | None,
    config: FeedbackConfig,
    say: Callable[[str], None],
) -> None:
    policy = store.policies.add(
        "Install JavaScript dependencies",
        boundary="Install packages with the project's own package manager.\nNever edit lockfiles by hand.",
        source_episode_ids=[EPISODE],
    )
    store.traces.add(
        SESSION,
        user_text="set up the web app",
        agent_text="Ran pnpm install in web/: 312 packages, lockfile respected.",
        reflection="pnpm install with the existing pnpm-lock.yaml works for web/",
        value=0.8,
        episode_id=EPISODE,
        tool_calls=[ToolCall("pnpm.install")],
    )

    with attach_feedback_subscriber(store, llm=llm, bus=bus, config=config) as sub:
        say(f"1. the agent runs {TOOL} and it fails three times in a row")
        for step in (1, 2, 3):
            store.traces.add(
                SESSION,
                agent_text=f"npm install failed (attempt {step}): npm ERR! ERESOLVE unable to resolve "
                "dependency tree",
                reflection="npm cannot resolve the peer dependencies of the pnpm workspace",
                value=-0.7,
                episode_id=EPISODE,
                tool_calls=[ToolCall(TOOL, error_code="ERESOLVE")],
            )
            burst = sub.record_tool_failure_now(
                TOOL, CONTEXT, step, reason="ERESOLVE", session_id=SESSION, episode_id=EPISODE
            )
            say(f"   step {step}: failure recorded{' → burst, repair queued' if burst else ''}")
        sub.flush(timeout=30)

        say('\n2. the user corrects the agent: "不对，用 pnpm 而不是 npm"')
        fb, future = sub.submit_user_feedback(
            "不对，用 pnpm 而不是 npm", SESSION, context="package manager", episode_id=EPISODE
        )
        say(f"   classified: {fb.shape.value} (prefer={fb.prefer}, avoid={fb.avoid})")
        future.result(timeout=30)

        say('\n3. the user says "thanks!"')
        fb, future = sub.submit_user_feedback("thanks!", SESSION, episode_id=EPISODE)
        result = future.result(timeout=30)
        say(f"   classified: {fb.shape.value} → {result.skipped_reason}, nothing written")
        sub.flush(timeout=30)

    say("\nrepairs:")
    say(f"  {'id':<26} {'trigger':<16} {'sev':<5} {'conf':>4}  preference | anti-pattern")
    for row in store.repairs.list():
        say(
            f"  {row.id:<26} {row.trigger:<16} {row.severity:<5} {row.confidence:4.2f}  "
            f"{row.preference} | {row.anti_pattern}"
        )
    say(f"\npolicy {policy.id} boundary now:")
    for line in store.policies.get(policy.id).boundary.splitlines():
        say(f"  {line}")
