"""A child agent process for the outcome crash tests.

    python -m tests.support.outcome_child serve DB_URL    # serve, print SERVED, settle on "settle"
    python -m tests.support.outcome_child resume DB_URL   # a new start: one success, print DONE

``serve`` asks for guidance in session ``crash-s`` (the serving is committed
before ``SERVED``), then on a line ``settle`` on stdin records the success
that settles it and prints ``SETTLED`` once committed. Failpoints come from
``MEMOS_FEEDBACK_FAILPOINTS`` (``outcomes.before_commit``/``after_commit``).
"""

from __future__ import annotations

import sys

from memos_feedback.config import FeedbackConfig
from memos_feedback.runtime.subscriber import attach_feedback_subscriber
from memos_feedback.store import open_store

SESSION, TOOL, CTX = "crash-s", "deploy", "staging"


def main(argv: list[str]) -> int:
    mode, db_url = argv[0], argv[1]
    store = open_store(db_url)
    sub = attach_feedback_subscriber(store, config=FeedbackConfig(use_llm=False), poll_interval=0.02)
    if mode == "serve":
        assert sub.guidance_for(tool_id=TOOL, context=CTX, session_id=SESSION).items
        assert sub.flush(30)
        print("SERVED", flush=True)
        assert sys.stdin.readline().strip() == "settle"
        sub.record_tool_success(TOOL, CTX, 1, session_id=SESSION)
        assert sub.flush(30)
        print("SETTLED", flush=True)
    elif mode == "resume":
        sub.record_tool_success(TOOL, CTX, 1, session_id=SESSION)
        assert sub.flush(30)
        print("DONE", flush=True)
    else:
        print(f"unknown mode {mode}", file=sys.stderr)
        return 2
    sub.close(timeout=30)
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
