"""Child processes for the crash and multi-process tests."""

from __future__ import annotations

import subprocess
import time

__all__ = ["expect_line"]


def expect_line(proc: subprocess.Popen[str], expected: str, timeout: float = 60) -> None:
    """Read the child's stdout until a line equal to ``expected``; kill it and fail otherwise.

    The deadline is checked between lines: a child that prints nothing at
    all is caught by the test's own timeout.
    """
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.strip() == expected:
            return
        if not line and proc.poll() is not None:
            break
    proc.kill()
    err = proc.stderr.read() if proc.stderr else ""
    raise AssertionError(f"child did not print {expected!r} in time; stderr:\n{err[-3000:]}")
