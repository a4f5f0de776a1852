"""A child agent process for the crash tests.

    python -m tests.support.crash_child submit DB_URL LLM_BASE_URL N_CORRECTIONS N_BURSTS
    python -m tests.support.crash_child drain DB_URL LLM_BASE_URL

``submit`` wires a subscriber to the LLM server, submits the corrections
and bursts, prints ``SUBMITTED`` once every trigger is in ``repair_jobs``,
then keeps working until it is killed. ``drain`` starts a subscriber on the
same database, waits until no job is pending or running, prints ``DRAINED``
and exits. Failpoints come from ``MEMOS_FEEDBACK_FAILPOINTS``.
"""

from __future__ import annotations

import sys
import time

from memos_feedback.config import FeedbackConfig
from memos_feedback.runtime.queue import RepairQueue
from memos_feedback.runtime.subscriber import attach_feedback_subscriber
from memos_feedback.store import open_store
from memos_feedback.synthesis.llm import OpenAIRepairLLM

SESSION = "crash-session"


def correction_text(i: int) -> str:
    return f"wrong port, it's {9000 + i} not 8000"


def main(argv: list[str]) -> int:
    mode, db_url, llm_url = argv[0], argv[1], argv[2]
    store = open_store(db_url)
    config = FeedbackConfig(use_llm=True, retry_initial_ms=50, retry_max_ms=200)
    llm = OpenAIRepairLLM("crash-model", base_url=llm_url, api_key="test", timeout=120.0)
    queue = RepairQueue(store, config)
    sub = attach_feedback_subscriber(store, llm=llm, config=config, poll_interval=0.02)
    if mode == "submit":
        n_corrections, n_bursts = int(argv[3]), int(argv[4])
        for i in range(n_corrections):
            sub.submit_user_feedback(correction_text(i), SESSION, tool_id="config", context=f"service-{i}")
        for i in range(n_bursts):
            for step in (1, 2, 3):
                sub.record_tool_failure(f"tool-{i}", "ctx", step, "E", SESSION)
        while sum(v or 0 for k, v in queue.stats().items() if k in ("pending", "running", "done", "dead")) < (
            n_corrections + n_bursts
        ):
            time.sleep(0.01)
        print("SUBMITTED", flush=True)
        while True:  # keep working until killed
            time.sleep(1)
    if mode == "drain":
        while True:
            stats = queue.stats()
            if stats["pending"] == 0 and stats["running"] == 0:
                break
            time.sleep(0.05)
        sub.close(timeout=30)
        print("DRAINED", flush=True)
        return 0
    print(f"unknown mode {mode}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
