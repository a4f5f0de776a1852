"""Start ``memos-feedback serve`` as a real process on a free loopback port."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["serve_process"]

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def serve_process(db_url: str, *extra: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """Yield the base URL (``http://127.0.0.1:PORT/``) of a running server; stop it after."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memos_feedback", "--db", db_url, "serve", "--port", "0", *extra],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        line = ""
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if line.startswith("serving on ") or (not line and proc.poll() is not None):
                break
        if not line.startswith("serving on "):
            err = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"serve did not start: {line!r}\n{err[-3000:]}")
        yield line.split()[-1]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait()
