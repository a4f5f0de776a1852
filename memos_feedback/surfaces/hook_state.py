"""The rolling failure windows of a hook session, kept between hook processes.

Claude Code starts a new hook process for every event, so the in-memory
``FailureSignals`` of one process never sees the failures of the last.
What a window needs is tiny: the session's step counter and its last
``failure_window`` tool steps (a window covers that many steps of the
session, whatever the tool). This module keeps exactly that in one small
JSON file per session, read and rewritten under an exclusive ``flock``
(parallel tool calls fire parallel hooks) and replaced atomically (a hook
killed mid-write leaves the previous file). A tool event then costs a
file read and write (well under a millisecond) instead of opening the
database (≈100–200 ms of imports and a schema check): only a burst, a
queued repair still to be written, or open servings to settle send a
hook to the database. Replaying the stored steps into a fresh
``FailureSignals`` gives the same decision the in-process detector makes.

The durable things — the traces of a burst, its repair job, the repair —
are in the database as ever; losing this directory loses at most the
failures of windows not yet full. Files live under
``<state dir>/<database key>/`` (one set per database); files untouched for
``STALE_AFTER_S`` are deleted when a session starts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import FeedbackConfig
from ..signals import FailureBurst, FailureSignals
from ..text.logs import library_logger
from ..types import FailureRecord

try:  # POSIX; elsewhere the atomic replace alone guards the file
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "STALE_AFTER_S",
    "HookSession",
    "Step",
    "database_key",
    "prune_stale",
    "session_state",
    "state_root",
]

logger = library_logger("memos_feedback.hooks")

STALE_AFTER_S = 7 * 24 * 3600
LOCK_WAIT_S = 2.0
_REASON_CAP = 500
_SERVED_CAP = 16
_INJECTED_CAP = 64
_FILE_CAP = 1 << 20  # a state file larger than this is not ours: start afresh
_PRUNE_SCAN_CAP = 10_000


@dataclass(slots=True)
class Step:
    """One tool step of the session: its number, tool, context, outcome, error text, time (ms)."""

    step: int
    tool: str
    context: str
    ok: bool
    reason: str = ""
    ts: int = 0


@dataclass(slots=True)
class HookSession:
    """What one session's hooks remember (module docstring).

    ``pending`` — a repair was queued and not yet seen written (the next
    hook drains the queue); ``served`` — the (tool, context) pairs guidance
    was served for: the next success there settles that it held (a burst
    there, that it recurred), so only those steps open the database;
    ``injected`` — the repairs whose lines a hook already put into this
    session's context: ``SessionStart`` and ``UserPromptSubmit`` both answer
    with guidance, often for the same repairs, and the model should read a
    repair once, not once per hook.
    """

    step: int = 0
    recent: list[Step] = field(default_factory=list)
    pending: bool = False
    traced: int = 0  # steps up to this one are in the database as traces already
    served: list[tuple[str, str]] = field(default_factory=list)
    injected: list[str] = field(default_factory=list)

    def inject(self, repair_ids: list[str]) -> None:
        """Remember that these repairs are in the session's context now."""
        for rid in repair_ids:
            if rid not in self.injected:
                self.injected.append(rid)
        del self.injected[:-_INJECTED_CAP]

    def serve(self, pairs: list[tuple[str, str]]) -> None:
        for pair in pairs:
            if pair not in self.served:
                self.served.append(pair)
        del self.served[:-_SERVED_CAP]

    def settle(self, pair: tuple[str, str]) -> bool:
        """Forget ``pair``'s serving; True when there was one."""
        if pair in self.served:
            self.served.remove(pair)
            return True
        return False

    def add(self, tool: str, context: str, ok: bool, reason: str, keep: int) -> Step:
        self.step += 1
        st = Step(self.step, tool, context, ok, reason[:_REASON_CAP], time.time_ns() // 1_000_000)
        self.recent.append(st)
        del self.recent[:-keep]
        return st

    def failing(self, limit: int = 3) -> list[tuple[str, str]]:
        """The (tool, context) pairs of the newest failures, newest first, each once."""
        out: list[tuple[str, str]] = []
        for st in reversed(self.recent):
            key = (st.tool, st.context)
            if not st.ok and key not in out:
                out.append(key)
        return out[:limit]

    def burst(self, config: FeedbackConfig) -> FailureBurst | None:
        """The burst the newest step makes when the window is replayed, or None."""
        signals = FailureSignals(config)
        burst = None
        for st in self.recent:
            if st.ok:
                signals.record_success(st.tool, st.context, st.step)
                burst = None
            else:
                burst = signals.record_failure(FailureRecord(st.tool, st.context, st.step, st.reason, st.ts))
        return burst

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "recent": [[s.step, s.tool, s.context, s.ok, s.reason, s.ts] for s in self.recent],
            "pending": self.pending,
            "traced": self.traced,
            "served": [list(p) for p in self.served],
            "injected": list(self.injected),
        }

    @classmethod
    def from_json(cls, data: Any) -> HookSession:
        if not isinstance(data, dict):
            return cls()
        recent = []
        for row in data.get("recent") or []:
            if isinstance(row, list) and len(row) == 6:
                step, tool, ctx, ok, reason, ts = row
                if (
                    type(step) is int
                    and step >= 0
                    and isinstance(tool, str)
                    and tool
                    and isinstance(ctx, str)
                ):
                    recent.append(Step(step, tool, ctx, bool(ok), str(reason), ts if type(ts) is int else 0))
        step = data.get("step")
        return cls(
            step=step if type(step) is int and step >= 0 else max((s.step for s in recent), default=0),
            recent=recent,
            pending=bool(data.get("pending")),
            traced=data["traced"] if type(data.get("traced")) is int else 0,
            served=[
                (p[0], p[1])
                for p in data.get("served") or []
                if isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
            ][-_SERVED_CAP:],
            injected=[r for r in data.get("injected") or [] if isinstance(r, str) and r][-_INJECTED_CAP:],
        )


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def database_key(url: str) -> str:
    """A file-name-safe key for one database URL (its digest)."""
    return _digest(url)


def state_root(explicit: str | None, db_url: str) -> Path:
    """``explicit`` or ``$MEMOS_FEEDBACK_HOOK_STATE`` or the user state dir, then the database's key."""
    base = explicit or os.environ.get("MEMOS_FEEDBACK_HOOK_STATE")
    if not base:
        import platformdirs

        base = platformdirs.user_state_dir("memos-feedback", appauthor=False)
    return Path(base) / "hooks" / database_key(db_url)


def _read(path: Path) -> HookSession:
    try:
        with open(path, "rb") as f:
            raw = f.read(_FILE_CAP + 1)
    except FileNotFoundError:
        return HookSession()
    if len(raw) > _FILE_CAP:
        logger.warning("hook state %s is larger than %d bytes; starting afresh", path, _FILE_CAP)
        return HookSession()
    try:
        return HookSession.from_json(json.loads(raw))
    except ValueError:
        logger.warning("hook state %s is not valid JSON; starting afresh", path)
        return HookSession()


def _write(path: Path, state: HookSession) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(state.to_json(), f, ensure_ascii=False, separators=(",", ":"))
    os.replace(tmp, path)


@contextlib.contextmanager
def session_state(root: Path, session_id: str) -> Iterator[HookSession]:
    """The session's state, locked against the session's other hooks; written back on exit."""
    folder = root / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{_digest(session_id)}.json"
    with open(folder / f"{path.stem}.lock", "a+b") as lock:
        _lock(lock.fileno())
        state = _read(path)
        before = state.to_json()
        yield state
        if state.to_json() != before:
            _write(path, state)


def _lock(fd: int) -> None:
    """An exclusive lock within ``LOCK_WAIT_S`` (a hook must not wait on a stuck one for ever)."""
    if fcntl is None:
        return
    give_up = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= give_up:
                raise TimeoutError(f"the hook state lock stayed taken for {LOCK_WAIT_S} s") from None
            time.sleep(0.005)


def prune_stale(root: Path, now: float | None = None) -> int:
    """Delete session files untouched for ``STALE_AFTER_S``; returns how many went."""
    folder = root / "sessions"
    cutoff = (time.time() if now is None else now) - STALE_AFTER_S
    gone = 0
    try:
        entries = os.scandir(folder)
    except FileNotFoundError:
        return 0
    with entries:
        for n, entry in enumerate(entries):
            if n >= _PRUNE_SCAN_CAP:
                break
            try:
                if entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
                    gone += 1
            except OSError:
                continue
    return gone
