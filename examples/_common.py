"""Shared by the examples: a fresh SQLite store, a subscriber, and a printed event feed."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from memos_feedback import FeedbackBus, FeedbackSubscriber, attach_feedback_subscriber, open_store
from memos_feedback.events import FeedbackEvent


def start(name: str) -> FeedbackSubscriber:
    """A subscriber on a throwaway database; events print as they happen."""
    workdir = Path(tempfile.mkdtemp(prefix=f"memos-feedback-{name}-"))
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


def finish(subscriber: FeedbackSubscriber, carried: bool) -> int:
    subscriber.flush(timeout=10)
    for repair in subscriber.store.repairs.list():
        print(f"  repair {repair.id}: {repair.preference} | {repair.anti_pattern}")
    subscriber.close(timeout=10)
    subscriber.store.close()
    print("the next model call carried the repair" if carried else "the guidance did NOT reach the model")
    return 0 if carried else 1
