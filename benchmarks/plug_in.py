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
open the database and start a subscriber. Each event is timed twice:
answered by the warm helper (``surfaces/hook_helper.py``, started and
waited for before the runs; the CPU column adds the helper's CPU time for
the event, read from ``/proc`` in 10 ms clock ticks) and done in the hook
process itself (``MEMOS_FEEDBACK_HOOK_HELPER=0``).

Ignored spans: ``FeedbackSpanProcessor.on_end`` on 10,000 finished
non-tool spans (``--spans``), median of 15 runs, per span.

``--base DIR`` also times the events in an older checkout (``git archive``
of the base commit into DIR), taking turns with this one event by event,
and ``python -m memos_feedback --help`` there (the package root's import cost).
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


def _cpu_ms(pid: int) -> float:
    """A process's CPU time so far (user + system, ms; clock ticks, so 10 ms steps)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _hook_cmd(work: Path) -> list[str]:
    db = f"sqlite:///{work / 'bench.db'}"
    return [
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


def _start_helper(hook: list[str], root: Path, env: dict[str, str]) -> tuple[Path, int]:
    """Start the warm helper of ``hook`` (a first event does) and wait until it listens: (socket, pid)."""
    code = (
        "import sys; from memos_feedback.surfaces.hook_helper import helper_socket as h;"
        " print(h(sys.argv[1:]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *hook[5:]], env=env, cwd=root, capture_output=True, check=True
    )
    sock = Path(out.stdout.decode().strip())
    event = _events("bench-warm-up")["SessionStart"]
    subprocess.run(hook, input=json.dumps(event).encode(), env=env, cwd=root, capture_output=True, check=True)
    for _ in range(1200):
        if sock.exists():
            return sock, int(sock.with_suffix(".lock").read_text())
        time.sleep(0.1)
    raise RuntimeError("the hook helper did not start")


def bench_processes(runs: int, work: Path, checkouts: list[tuple[str, Path, bool]]) -> None:
    """Each event through a fresh hook process per checkout (label, source root, warm helper on).

    The checkouts take turns event by event, so a change in the machine's
    load falls on all of them. With the helper on, the CPU time is the
    client's plus the helper's for the event.
    """
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    setups = []
    for i, (label, root, helper) in enumerate(checkouts):
        here = work / f"checkout-{i}"
        here.mkdir()
        env = {
            **os.environ,
            "PYTHONPATH": str(root),
            "MEMOS_FEEDBACK_HOOK_HELPER": "1" if helper else "0",
            "MEMOS_FEEDBACK_HOOK_HELPER_IDLE": "120",
        }
        hook = _hook_cmd(here)
        # Create and migrate the database once: the first hook of a new install pays that alone.
        subprocess.run(
            [sys.executable, "-m", "memos_feedback", "db", "upgrade", "--db", hook[6]],
            env=env,
            cwd=root,
            check=True,
            capture_output=True,
        )
        helper_at = _start_helper(hook, root, env) if helper else None
        setups.append((label, root, env, hook, helper_at))
    try:
        for n in range(runs):
            times.setdefault(("", "python -c pass"), []).append(
                _spawn([sys.executable, "-c", "pass"], b"", ROOT, setups[0][2])
            )
            # A new session each round: a failure never completes a burst,
            # so tool events stay on the file path.
            for name, event in _events(f"bench-{n}").items():
                for label, root, env, hook, helper_at in setups:
                    before = _cpu_ms(helper_at[1]) if helper_at else 0.0
                    wall, cpu = _spawn(hook, json.dumps(event).encode(), root, env)
                    if helper_at:
                        cpu += _cpu_ms(helper_at[1]) - before
                    times.setdefault((label, name), []).append((wall, cpu))
    finally:
        for *_, helper_at in setups:
            if helper_at:
                helper_at[0].unlink(missing_ok=True)  # the helper ends when its socket goes
    print(
        f"\nhook latency, process start included ({runs} runs each, ms;"
        f" load average {os.getloadavg()[0]:.1f}):"
    )
    print(
        f"  {'checkout':<22} {'event':<22} {'wall median':>12} {'wall p90':>9}"
        f" {'CPU median':>11} {'CPU p90':>8}"
    )
    for (label, name), values in sorted(times.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        wall, cpu = [v[0] for v in values], [v[1] for v in values]
        print(
            f"  {label:<22} {name:<22} {statistics.median(wall):12.1f} {_pct(wall, 0.9):9.1f}"
            f" {statistics.median(cpu):11.1f} {_pct(cpu, 0.9):8.1f}"
        )


def bench_in_process(runs: int, work: Path) -> None:
    from memos_feedback.store import open_store
    from memos_feedback.surfaces.claude_code import HookOptions, run_hook

    db = f"sqlite:///{work / 'inproc.db'}"
    open_store(db).close()  # created and migrated before the runs
    print(f"\ncost inside the process, everything imported ({runs} runs each, ms):")
    print(f"  {'event':<22} {'median':>8} {'p90':>8}")
    per: dict[str, list[float]] = {}
    for n in range(runs):
        for name, event in _events(f"inproc-{n}").items():
            raw = json.dumps(event).encode()
            opts = HookOptions(db=db, state_dir=str(work / "inproc"), deadline=30, started=time.monotonic())
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
    parser.add_argument(
        "--base", type=Path, help="an older checkout to compare the hook events and the CLI start with"
    )
    args = parser.parse_args(argv)
    for line in machine():
        print(line)
    checkouts = [("this, warm helper", ROOT, True), ("this, in the process", ROOT, False)]
    if args.base:
        checkouts.append(("base", args.base.resolve(), False))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        bench_processes(args.runs, work, checkouts)
        bench_in_process(args.runs, work)
        bench_ignored_spans(args.spans, work)
        if args.base:
            bench_base(args.runs, args.base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
