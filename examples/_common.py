"""Shared by the examples: a fresh SQLite store, a subscriber, a printed event feed, the checks.

Each example plays two sessions: in the first, the tool keeps failing (a
burst: a repair) and then the user corrects the agent (a second repair);
the second session's first model call carries the correction. The
throwaway database is deleted when the example ends, however it ends.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from memos_feedback import FeedbackBus, FeedbackSubscriber, attach_feedback_subscriber, open_store
from memos_feedback.events import FeedbackEvent

CORRECTION = "no, use pnpm instead of npm"
SECOND_TASK = "please install react for the docs site"
LESSON = "Prefer: pnpm instead of npm"  # what the correction teaches


def start(name: str) -> FeedbackSubscriber:
    """A subscriber on a throwaway database; events print as they happen."""
    workdir = Path(tempfile.mkdtemp(prefix=f"memos-feedback-{name}-"))
    atexit.register(shutil.rmtree, workdir, True)  # True: ignore errors (gone already, say)
    store = open_store(f"sqlite:///{workdir / 'feedback.db'}")
    bus = FeedbackBus()

    def show(event: FeedbackEvent) -> None:
        if event.kind.startswith("repair."):
            print(f"    [event] {event.kind}")

    bus.on_any(show)
    print(f"{name}: database {store.url}")
    return attach_feedback_subscriber(store, bus=bus, poll_interval=0.02)


def show_prompt(n: int, prompt: str) -> None:
    """Print one model call's system prompt, the guidance block in full."""
    head, sep, block = prompt.partition("<memory-context>")
    print(f"  model call {n}: system prompt = {head.strip()!r}")
    if sep:
        print("    + guidance:")
        for line in (sep + block).splitlines():
            print(f"      {line}")


def session(title: str) -> None:
    print(f"-- {title}")


def burst_lesson(subscriber: FeedbackSubscriber) -> str:
    """The preference of the repair the failure burst wrote (the only repair so far)."""
    subscriber.flush(timeout=10)
    repairs = subscriber.store.repairs.list()
    return repairs[0].preference if repairs else "(no repair)"


def finish(subscriber: FeedbackSubscriber, checks: dict[str, bool]) -> int:
    subscriber.flush(timeout=10)
    for repair in subscriber.store.repairs.list():
        print(f"  repair {repair.id}: {repair.preference} | {repair.anti_pattern}")
    subscriber.close(timeout=10)
    subscriber.store.close()
    for what, ok in checks.items():
        print(f"{'ok' if ok else 'NOT'}: {what}")
    return 0 if all(checks.values()) else 1
