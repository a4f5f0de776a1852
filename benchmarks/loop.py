"""The feedback loop, measured: a scripted agent with and without memos-feedback.

    python -m benchmarks.loop [--sessions 60] [--per-session 4] [--seed 7] [--json]

A seeded agent works through sessions; each session it meets a few of
``SITUATIONS`` recurring situations (one tool and context each). Every
situation has one approach that works; the agent's default is another.

* ``easy`` — the default works.
* ``hard`` — the default fails; the first repair written is right.
* ``trap-corrected`` — the first repair is wrong (it points at a decoy
  that fails too); when following it fails, the user says so, and the
  repair written from that message is right.
* ``trap-silent`` — the first repair is wrong and nobody says so: only
  outcomes can retire it; the next repair written is right.

A failing approach fails three times in a row (a failure burst). The
repairs come out of the real pipeline — subscriber, durable queue,
``run_repair`` — with a scripted model standing in for the LLM (it writes
the wrong lesson first for traps, the right one after). With memos-feedback
the agent asks ``guidance_for(tool, context, session_id, limit=1)`` before
each step and follows the lesson it gets; without, it always uses its
default.

Reported: the repeat-failure rate (failures of a situation that already
failed in an earlier session, per encounter) over windows of sessions,
with and without; for every wrong repair, the sessions and recurrences
until it was retired (stale or superseded); how often a right repair was
served when one existed; and whether any right repair was retired.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.hot_path import machine
from memos_feedback.config import FeedbackConfig
from memos_feedback.events import FeedbackBus, FeedbackEvent
from memos_feedback.runtime.subscriber import FeedbackSubscriber, attach_feedback_subscriber
from memos_feedback.store import Store, open_store

KINDS = ("easy", "hard", "trap-corrected", "trap-silent")
SITUATIONS = 12  # three of each kind
# Distinct words per situation, so recall's text evidence never mixes them up.
_WORDS = (
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot",
    "golf", "hotel", "india", "juliet", "kilo", "lima",
)  # fmt: skip
_PLACES = (
    "kafka", "redis", "nginx", "postgres", "vault", "consul",
    "etcd", "minio", "grafana", "jenkins", "keycloak", "traefik",
)  # fmt: skip
STALE_AFTER = 3


@dataclass(frozen=True, slots=True)
class Situation:
    n: int
    kind: str

    @property
    def tool(self) -> str:
        return f"tool{self.n}"

    @property
    def context(self) -> str:
        return f"{_PLACES[self.n]} {_WORDS[self.n]}"

    def approach(self, which: str) -> str:
        return f"{_WORDS[self.n]}-{which}"

    @property
    def default(self) -> str:
        return self.approach("right" if self.kind == "easy" else "default")


def situations() -> list[Situation]:
    return [Situation(n, KINDS[n % len(KINDS)]) for n in range(SITUATIONS)]


class ScriptedModel:
    """Stands in for the LLM: the lesson for the tool named in the prompt.

    Traps get the wrong lesson (prefer the decoy) the first time, the right
    one afterwards. The wrong lesson avoids the default, the right one the
    decoy, so a right repair written later "avoids what the wrong one
    preferred" and supersedes it.
    """

    def __init__(self, by_tool: Mapping[str, Situation]) -> None:
        self._by_tool = by_tool
        self.calls: dict[str, int] = {}
        self.wrong_written: dict[int, int] = {}

    def complete_json(self, messages: Sequence[Mapping[str, str]], schema_name: str) -> dict[str, Any]:
        text = "\n".join(m.get("content", "") for m in messages)
        match = re.search(r"tool: (tool\d+)", text)
        if match is None or match.group(1) not in self._by_tool:
            raise ValueError("the prompt names no known tool")
        sit = self._by_tool[match.group(1)]
        self.calls[sit.tool] = self.calls.get(sit.tool, 0) + 1
        if sit.kind.startswith("trap") and self.calls[sit.tool] == 1:
            self.wrong_written[sit.n] = self.wrong_written.get(sit.n, 0) + 1
            prefer, avoid = sit.approach("decoy"), sit.approach("default")
        else:
            prefer = sit.approach("right")
            avoid = sit.approach("decoy") if sit.kind.startswith("trap") else sit.approach("default")
        return {
            "preference": f"Prefer: run {prefer} for {sit.context}",
            "anti_pattern": f"Avoid: run {avoid} for {sit.context}",
            "severity": "warn",
            "confidence": 0.8,
        }


@dataclass
class RunResult:
    failures: list[int] = field(default_factory=list)  # per session: repeat failures
    encounters: list[int] = field(default_factory=list)
    served_right: int = 0
    right_available: int = 0
    wrong_repairs: list[dict[str, Any]] = field(default_factory=list)
    right_retired: int = 0
    repairs: int = 0


_APPROACH = re.compile(r"run (\S+) for")


def _run(memos: bool, sessions: int, per_session: int, seed: int, workdir: Path) -> RunResult:
    rng = random.Random(seed)
    sits = situations()
    by_tool = {s.tool: s for s in sits}
    result = RunResult()
    failed_before: set[int] = set()
    sub: FeedbackSubscriber | None = None
    store: Store | None = None
    model = ScriptedModel(by_tool)
    retired_at: dict[str, tuple[int, str]] = {}
    created_at: dict[str, int] = {}
    session_no = 0

    def on_event(event: FeedbackEvent) -> None:
        data = event.__dict__ if hasattr(event, "__dict__") else {}
        repair_id = getattr(event, "repair_id", None) or data.get("repair_id")
        if event.kind == "repair.persisted" and repair_id:
            created_at[repair_id] = session_no
        elif event.kind in ("repair.stale", "repair.superseded") and repair_id:
            retired_at.setdefault(repair_id, (session_no, event.kind))

    if memos:
        store = open_store(f"sqlite:///{workdir / 'loop.db'}")
        bus = FeedbackBus()
        bus.on_any(on_event)
        config = FeedbackConfig(
            use_llm=True,
            stale_after_recurrences=STALE_AFTER,
            # One failure-burst repair per context for the whole run unless the
            # last one was retired: a wrong repair must be retired by outcomes.
            cooldown_ms=3_600_000,
            attach_to_policy=False,
        )
        sub = attach_feedback_subscriber(store, llm=model, bus=bus, config=config, poll_interval=0.005)
    try:
        for session_no in range(sessions):
            session = f"session-{session_no}"
            met = rng.sample(sits, per_session)
            repeats = 0
            for step, sit in enumerate(met):
                approach = sit.default
                served_id = None
                if sub is not None:
                    g = sub.guidance_for(tool_id=sit.tool, context=sit.context, session_id=session, limit=1)
                    if g.items:
                        served_id = g.items[0].repair_id
                        found = _APPROACH.search(g.items[0].preference)
                        approach = found.group(1) if found else approach
                    result.right_available += int(_has_right(store, sit))
                    result.served_right += int(served_id is not None and _is_right(store, served_id, sit))
                ok = approach == sit.approach("right")
                if ok:
                    if store is not None:
                        store.traces.add(session, agent_text=f"{sit.tool} {approach} worked", value=0.9)
                    if sub is not None:
                        sub.record_tool_success(sit.tool, sit.context, step, session_id=session)
                    continue
                if sit.n in failed_before:
                    repeats += 1
                failed_before.add(sit.n)
                for attempt in range(3):
                    if store is not None:
                        store.traces.add(
                            session, agent_text=f"{sit.tool} {approach} failed: error E{sit.n}", value=-0.8
                        )
                    if sub is not None:
                        sub.record_tool_failure(
                            sit.tool, sit.context, step * 10 + attempt, f"E{sit.n}", session_id=session
                        )
                if sub is not None and served_id is not None and sit.kind == "trap-corrected":
                    sub.submit_user_feedback(
                        # Phrased as a replacement: the classifier reads "wrong: run X, not Y"
                        # as a complaint (negative) since it learned from independent writers.
                        f"no, run {sit.approach('right')} instead of {approach}",
                        session,
                        tool_id=sit.tool,
                        context=sit.context,
                    )
            if sub is not None:
                sub.flush(60)
            result.failures.append(repeats)
            result.encounters.append(per_session)
        if store is not None:
            _collect(store, result, created_at, retired_at, sits)
    finally:
        if sub is not None:
            sub.close(timeout=30)
        if store is not None:
            store.close()
    return result


def _has_right(store: Store | None, sit: Situation) -> bool:
    assert store is not None
    return any(
        r.status == "active" and not r.rejected and sit.approach("right") in r.preference
        for r in store.repairs.list(limit=200)
        if r.tool_id == sit.tool
    )


def _is_right(store: Store | None, repair_id: str, sit: Situation) -> bool:
    assert store is not None
    return sit.approach("right") in store.repairs.get(repair_id).preference


def _collect(
    store: Store,
    result: RunResult,
    created_at: dict[str, int],
    retired_at: dict[str, tuple[int, str]],
    sits: list[Situation],
) -> None:
    from memos_feedback.outcomes.report import list_with_outcomes

    by_tool = {s.tool: s for s in sits}
    rows = list_with_outcomes(store, status=None, context_hash=None, limit=1000)
    result.repairs = len(rows)
    for row, counts in rows:
        sit = by_tool[row.tool_id or ""]
        right = sit.approach("right") in row.preference
        if right:
            result.right_retired += int(row.status != "active")
            continue
        retired = retired_at.get(row.id)
        result.wrong_repairs.append(
            {
                "situation": f"{sit.tool} ({sit.kind})",
                "status": row.status,
                "recurrences_before_retired": counts.recurred,
                "sessions_until_retired": None if retired is None else retired[0] - created_at.get(row.id, 0),
                "how": None if retired is None else retired[1],
            }
        )


def _windows(values: list[int], encounters: list[int], size: int) -> list[float]:
    out = []
    for i in range(0, len(values), size):
        n = sum(encounters[i : i + size])
        out.append(sum(values[i : i + size]) / n if n else 0.0)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=60)
    parser.add_argument("--per-session", type=int, default=4)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--window", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        without = _run(False, args.sessions, args.per_session, args.seed, Path(tmp))
        with_ = _run(True, args.sessions, args.per_session, args.seed, Path(tmp))
    rate_without = sum(without.failures) / sum(without.encounters)
    rate_with = sum(with_.failures) / sum(with_.encounters)
    # A wrong repair still active when the run ends is fine only while it
    # has recurred fewer than STALE_AFTER times (its situation came up too
    # rarely to retire it yet); at least one must have been retired.
    wrong_ok = any(w["status"] != "active" for w in with_.wrong_repairs) and all(
        w["recurrences_before_retired"] <= STALE_AFTER
        if w["status"] != "active"
        else w["recurrences_before_retired"] < STALE_AFTER
        for w in with_.wrong_repairs
    )
    report = {
        "sessions": args.sessions,
        "situations_per_session": args.per_session,
        "seed": args.seed,
        "stale_after_recurrences": STALE_AFTER,
        "repeat_failure_rate": {"without": round(rate_without, 4), "with": round(rate_with, 4)},
        "repeat_failure_rate_by_window": {
            "without": [round(x, 3) for x in _windows(without.failures, without.encounters, args.window)],
            "with": [round(x, 3) for x in _windows(with_.failures, with_.encounters, args.window)],
        },
        "repairs_written": with_.repairs,
        "wrong_repairs": with_.wrong_repairs,
        "right_served_when_available": round(with_.served_right / max(1, with_.right_available), 4),
        "right_repairs_retired": with_.right_retired,
        "checks": {
            "rate_halved": rate_with <= rate_without / 2,
            "every_wrong_repair_retired_within_recurrences": wrong_ok,
            "no_right_repair_retired": with_.right_retired == 0,
        },
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print("\n".join(machine()))
        for key, value in report.items():
            if key == "wrong_repairs":
                print("wrong_repairs:")
                for w in value:
                    print(f"  {w}")
            else:
                print(f"{key}: {value}")
    return 0 if all(report["checks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
