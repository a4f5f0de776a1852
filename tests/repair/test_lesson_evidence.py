"""Issue 43: a repair sees every piece of evidence, and its lines name actions.

The issue's reproductions, through the public pipeline (``run_repair`` on a
real store, both backends): a success of the same episode gives the Prefer
line; a failed call gives the Avoid line beside a message that forbids
nothing; the host's own fields win over a clause of the text; a burst
reads what the user said in its session although no repair was asked for.
"""

from __future__ import annotations

from memos_feedback import (
    ClassifiedFeedback,
    FailureRecord,
    FailureSignals,
    RepairDeps,
    RepairInput,
    Shape,
    Store,
    ToolCall,
    context_hash_of,
    run_repair,
)
from memos_feedback.config import FeedbackConfig
from memos_feedback.types import RepairResult

CONFIG = FeedbackConfig(use_llm=False, cooldown_ms=0)
PIP = "pip install cryptography"
PIP_ERROR = "error: failed building wheel for cryptography\nerror: could not build wheels for cryptography"


def _burst(store: Store, tool: str, context: str, reason: str, session: str, episode: str) -> RepairResult:
    """A failure burst of ``tool`` in ``context`` through ``FailureSignals``, then its repair."""
    signals = FailureSignals(CONFIG)
    burst = None
    for step in range(CONFIG.failure_threshold):
        burst = signals.record_failure(FailureRecord(tool, context, step, reason, None, session, episode))
    assert burst is not None
    inp = RepairInput(
        trigger="failure-burst",
        context_hash=burst.context_hash,
        tool_id=tool,
        session_id=session,
        episode_id=episode,
        failures=burst.occurrences,
        context=context,
    )
    return run_repair(inp, RepairDeps(store=store, config=CONFIG))


def _failed_pip(store: Store, session: str, ts: int, user_text: str = "") -> None:
    store.traces.add(
        session,
        user_text=user_text,
        agent_text=f"$ {PIP}\n{PIP_ERROR}",
        value=-1.0,
        tool_calls=[ToolCall("pip.install", "exit 1")],
        episode_id="ep-1",
        ts=ts,
    )


def test_a_success_of_the_same_episode_gives_the_prefer_line(store: Store) -> None:
    # Two failed pip installs, then apt-get did it: the burst of pip.install
    # used to give preference='' (the success never names pip.install).
    _failed_pip(store, "s-a", 1_000)
    _failed_pip(store, "s-a", 2_000)
    store.traces.add(
        "s-a",
        agent_text="apt-get install python3-cryptography succeeded",
        reflection="system package avoids compiling",
        value=1.0,
        tool_calls=[ToolCall("apt.install")],
        episode_id="ep-1",
        ts=3_000,
    )
    result = _burst(store, "pip.install", PIP, "failed building wheel", "s-a", "ep-1")
    assert result.draft is not None, result.skipped_reason
    assert result.draft.preference.startswith("Prefer: apt-get install python3-cryptography")
    assert "system package avoids compiling" in result.draft.preference  # the reason follows
    assert result.draft.anti_pattern.startswith(f"Avoid: {PIP}")
    row = store.repairs.get(result.repair_id or "")
    assert len(row.high_value_trace_ids) == 1 and len(row.low_value_trace_ids) == 2


def test_a_message_that_forbids_nothing_still_avoids_the_failed_call(store: Store) -> None:
    # "no, use apk add openssl-dev first" after a failed pip install wrote only the Prefer line.
    _failed_pip(store, "s-b", 1_000)
    inp = RepairInput(
        trigger="user.correction",
        context_hash=context_hash_of("shell.run", PIP),
        tool_id="shell.run",
        user_text="no, use apk add openssl-dev first",
        session_id="s-b",
        context=PIP,
    )
    result = run_repair(inp, RepairDeps(store=store, config=CONFIG))
    assert result.draft is not None, result.skipped_reason
    assert result.draft.preference == "Prefer: use apk add openssl-dev first"
    assert result.draft.anti_pattern.startswith(f"Avoid: {PIP} — failed with: error: failed building wheel")


def test_the_hosts_own_fields_win_over_a_clause_of_the_text(store: Store) -> None:
    _failed_pip(store, "s-c", 1_000)
    text = "no, use apk add openssl-dev first, and don't run pip as root"
    given = ClassifiedFeedback(
        Shape.CORRECTION,
        0.9,
        prefer="apt-get install python3-cryptography",
        avoid="pip install cryptography from source",
        text=text,
    )
    inp = RepairInput(
        trigger="user.correction",
        context_hash=context_hash_of("shell.run", PIP),
        tool_id="shell.run",
        user_text=text,
        session_id="s-c",
        context=PIP,
        classified=given,
    )
    result = run_repair(inp, RepairDeps(store=store, config=CONFIG))
    assert result.draft is not None, result.skipped_reason
    assert result.draft.preference == "Prefer: apt-get install python3-cryptography"
    assert result.draft.anti_pattern == "Avoid: pip install cryptography from source"


def test_a_burst_reads_what_the_user_said_beside_it(store: Store) -> None:
    # The user spoke; no repair was asked for (the classifier abstained, or
    # read none); the socket kept resetting. The burst's lesson is theirs.
    said = "don't paper over it with a retry loop, fix the socket timeout"
    reset = "ConnectionResetError: [Errno 104] Connection reset by peer"
    store.traces.add("s-d", user_text="sync the orders feed", agent_text="started", value=0.2, ts=500)
    for ts in (1_000, 2_000, 3_000):
        store.traces.add(
            "s-d",
            user_text=said,
            agent_text=f'Traceback (most recent call last):\n  File "feed.py", line 9\n{reset}',
            value=-1.0,
            tool_calls=[ToolCall("python.run", "error")],
            episode_id="ep-1",
            ts=ts,
        )
    result = _burst(store, "python.run", "python feed.py --sync orders", reset, "s-d", "ep-1")
    assert result.draft is not None, result.skipped_reason
    assert result.draft.preference == "Prefer: fix the socket timeout"
    assert result.draft.anti_pattern == "Never: paper over it with a retry loop"


def test_a_task_request_beside_a_burst_is_not_a_lesson(store: Store) -> None:
    # The other side of the rule above: what the user asked for is no correction.
    for ts in (1_000, 2_000, 3_000):
        _failed_pip(store, "s-e", ts, user_text="set up the web app")
    result = _burst(store, "pip.install", PIP, "failed building wheel", "s-e", "ep-1")
    assert result.draft is not None, result.skipped_reason
    assert result.draft.preference == ""
    assert result.draft.anti_pattern.startswith(f"Avoid: {PIP} — failed with:")


def test_a_prohibition_in_general_words_quotes_the_failed_call(store: Store) -> None:
    # The user's rule names the program, not the call; the call the agent ran
    # (and will run again) is the instance the Avoid line quotes after it.
    store.traces.add(
        "s-f",
        agent_text="$ black --line-length 120 .\nerror: cannot format vendor/lib.py: INTERNAL ERROR",
        value=-1.0,
        tool_calls=[ToolCall("shell.run", "exit 123")],
        episode_id="ep-f",
        ts=1_000,
    )
    inp = RepairInput(
        trigger="user.correction",
        context_hash=context_hash_of("shell.run", "format the repo"),
        tool_id="shell.run",
        user_text="Don't run black over the whole tree. Vendored code stays untouched. Use make fmt instead.",
        session_id="s-f",
        context="format the repo",
    )
    result = run_repair(inp, RepairDeps(store=store, config=CONFIG))
    assert result.draft is not None, result.skipped_reason
    assert (
        result.draft.anti_pattern == "Never: run black over the whole tree (as in black --line-length 120 .)"
    )
    assert result.draft.preference.startswith("Prefer: ") and "make fmt" in result.draft.preference


def test_the_failed_call_is_not_quoted_when_the_prohibition_already_names_it(store: Store) -> None:
    _failed_pip(store, "s-g", 1_000)
    inp = RepairInput(
        trigger="user.correction",
        context_hash=context_hash_of("shell.run", PIP),
        tool_id="shell.run",
        user_text=f"never run {PIP} here, use apk add py3-cryptography",
        session_id="s-g",
        context=PIP,
    )
    result = run_repair(inp, RepairDeps(store=store, config=CONFIG))
    assert result.draft is not None, result.skipped_reason
    assert "(as in" not in result.draft.anti_pattern and PIP in result.draft.anti_pattern
