"""Cost of the no-code surfaces: Claude Code hook events and ignored OpenTelemetry spans.

    python -m benchmarks.plug_in [--runs N] [--spans N] [--base DIR]

Hook latency, process start included: each event is piped to a fresh
``python -m memos_feedback hook claude-code`` the way Claude Code runs it,
``--runs`` times (default 20), timed from spawn to exit; medians and p90s
per event, as wall time and as the child's CPU time (user + system: on a
machine shared with other work the wall time stretches with the load, the
CPU time much less; on an idle machine the two meet). Beside them: a
bare ``python -c pass`` (the interpreter's own start, which no hook can
go below) and the cost *inside* the process,
``run_hook`` called in this process with everything imported, per event.

The tool events (``PostToolUse``, ``PostToolUseFailure`` that completes no
burst) take the file-only path; ``SessionStart`` and ``UserPromptSubmit``
open the database and start a subscriber.

Ignored spans: ``FeedbackSpanProcessor.on_end`` on 10,000 finished
non-tool spans (``--spans``), median of 15 runs, per span.

``--base DIR`` also times ``python -m memos_feedback --help`` in an older
checkout, alternating with this one (the package root's import cost).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.hot_path import machine

ROOT = Path(__file__).resolve().parents[1]


def _events(session: str) -> dict[str, dict[str, Any]]:
    base = {"session_id": session, "cwd": "/home/u/shop", "transcript_path": ""}
    return {
        "PostToolUse": {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls -la src"},
            "tool_response": {"stdout": "a\nb", "stderr": "", "interrupted": False},
        },
        "PostToolUseFailure": {
            **base,
            "hook_event_name": "PostToolUseFailure",
            "tool_name": "Read",
            "tool_input": {"file_path": "/nope/notes.txt"},
            "error": "File does not exist.",
        },
        "SessionStart": {**base, "hook_event_name": "SessionStart", "source": "startup"},
        "UserPromptSubmit": {
            **base,
            "hook_event_name": "UserPromptSubmit",
            "prompt": "list the files in src",
        },
    }


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _spawn(cmd: list[str], stdin: bytes, cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one child: the CPU time is what an idle machine's wall time would be."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, input=stdin, capture_output=True, cwd=cwd, env=env, check=True)
    wall = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def bench_processes(runs: int, work: Path) -> None:
    db = f"sqlite:///{work / 'bench.db'}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    hook = [
        sys.executable,
        "-m",
        "memos_feedback",
        "hook",
        "claude-code",
        "--db",
        db,
        "--state-dir",
        str(work),
    ]
    # Create and migrate the database once: the first hook of a new install pays that alone.
    subprocess.run(
        [sys.executable, "-m", "memos_feedback", "db", "upgrade", "--db", db],
        env=env,
        check=True,
        capture_output=True,
    )
    times: dict[str, list[tuple[float, float]]] = {"python -c pass": []}
    for n in range(runs):
        times["python -c pass"].append(_spawn([sys.executable, "-c", "pass"], b"", ROOT, env))
        # A new session each round: a failure never completes a burst, so tool events stay on the file path.
        for name, event in _events(f"bench-{n}").items():
            times.setdefault(name, []).append(_spawn(hook, json.dumps(event).encode(), ROOT, env))
    print(
        f"\nhook latency, process start included ({runs} runs each, ms;"
        f" load average {os.getloadavg()[0]:.1f}):"
    )
    print(f"  {'event':<22} {'wall median':>12} {'wall p90':>9} {'CPU median':>11} {'CPU p90':>8}")
    for name, values in times.items():
        wall, cpu = [v[0] for v in values], [v[1] for v in values]
        print(
            f"  {name:<22} {statistics.median(wall):12.1f} {_pct(wall, 0.9):9.1f}"
            f" {statistics.median(cpu):11.1f} {_pct(cpu, 0.9):8.1f}"
        )


def bench_in_process(runs: int, work: Path) -> None:
    from memos_feedback.surfaces.claude_code import HookOptions, run_hook

    db = f"sqlite:///{work / 'bench.db'}"
    print(f"\ncost inside the process, everything imported ({runs} runs each, ms):")
    print(f"  {'event':<22} {'median':>8} {'p90':>8}")
    per: dict[str, list[float]] = {}
    for n in range(runs):
        for name, event in _events(f"inproc-{n}").items():
            raw = json.dumps(event).encode()
            opts = HookOptions(db=db, state_dir=str(work), deadline=30, started=time.monotonic())
            t0 = time.perf_counter()
            run_hook(raw, opts)
            per.setdefault(name, []).append((time.perf_counter() - t0) * 1000)
    for name, values in per.items():
        print(f"  {name:<22} {statistics.median(values):8.2f} {_pct(values, 0.9):8.2f}")


def bench_ignored_spans(n: int, work: Path) -> None:
    import gc

    from opentelemetry.sdk.trace import TracerProvider

    from memos_feedback.integrations.otel import FeedbackSpanProcessor
    from memos_feedback.runtime.subscriber import attach_feedback_subscriber
    from memos_feedback.store import open_store

    provider = TracerProvider()
    tracer = provider.get_tracer("bench")
    spans = []
    for i in range(n):  # what a runtime ends most often: model calls and chains, not tools
        attrs = (
            {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
            if i % 2
            else {"openinference.span.kind": "LLM"}
        )
        span = tracer.start_span("chat m", attributes=attrs)
        span.end()
        spans.append(span)
    with open_store(f"sqlite:///{work / 'spans.db'}") as store, attach_feedback_subscriber(store) as sub:
        processor = FeedbackSpanProcessor(sub)
        on_end = processor.on_end
        results = []
        for _ in range(15):
            gc.disable()
            t0 = time.perf_counter_ns()
            for span in spans:
                on_end(span)
            results.append((time.perf_counter_ns() - t0) / n)
            gc.enable()
        processor.shutdown()
    print(
        f"\nFeedbackSpanProcessor.on_end on {n:,} ignored spans (median of 15 runs): "
        f"{statistics.median(results):.0f} ns/span"
    )
    print(f"  (min {min(results):.0f}, max {max(results):.0f}; target <= 2,000 ns)")


def bench_base(runs: int, base: Path) -> None:
    env_here = {**os.environ, "PYTHONPATH": str(ROOT)}
    env_base = {**os.environ, "PYTHONPATH": str(base)}
    here, there = [], []
    cmd = [sys.executable, "-m", "memos_feedback", "--help"]
    for _ in range(runs):
        here.append(_spawn(cmd, b"", ROOT, env_here))
        there.append(_spawn(cmd, b"", base, env_base))
    print(f"\n`python -m memos_feedback --help`, alternating ({runs} runs each, median ms):")
    for label, values in (("base", there), ("this checkout", here)):
        wall, cpu = statistics.median(v[0] for v in values), statistics.median(v[1] for v in values)
        print(f"  {label:<14} wall {wall:8.1f}  CPU {cpu:8.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--spans", type=int, default=10_000)
    parser.add_argument("--base", type=Path, help="an older checkout to compare the CLI start with")
    args = parser.parse_args(argv)
    for line in machine():
        print(line)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        bench_processes(args.runs, work)
        bench_in_process(args.runs, work)
        bench_ignored_spans(args.spans, work)
        if args.base:
            bench_base(args.runs, args.base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
