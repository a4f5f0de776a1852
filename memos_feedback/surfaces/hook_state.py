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
failures of windows not yet full. What a hook owes the database is marked
here before it opens the database and struck off once it is stored: a
burst until its job is queued (``bursts_due``), a correction until its job
is (``prompts_due``). A hook the deadline ends half-way leaves the marks,
and the session's next hook, whatever its event, does that work first.

Nothing here holds a secret: contexts, error texts and held prompts are
stored redacted (``text.secrets``), as every table of the library does;
a file an earlier version wrote is redacted when it is next read. Files
live under ``<state dir>/<database key>/`` (one set per database); files
untouched for ``STALE_AFTER_S`` are deleted when a session starts.
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
from ..text.secrets import redact_secrets, stored_optional, stored_text
from ..types import FailureRecord

try:  # POSIX; elsewhere the atomic replace alone guards the file
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "STALE_AFTER_S",
    "HeldPrompt",
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
# A burst still due keeps its window's steps; one due longer than this many steps is given up.
_DUE_STEPS_CAP = 64
_PROMPTS_DUE_CAP = 8
_PROMPT_CAP = 4_000
_AGENT_TEXT_CAP = 2_000
# The file format: 2 is the first whose texts are redacted (older files are redacted on read).
_VERSION = 2


@dataclass(slots=True)
class Step:
    """One tool step of the session: its number, tool, context, outcome, error text, time (ms)."""

    step: int
    tool: str
    context: str
    ok: bool
    reason: str = ""
    ts: int = 0


@dataclass(frozen=True, slots=True)
class HeldPrompt:
    """A correction whose job is not stored yet: what ``submit_user_feedback`` needs, redacted."""

    id: str
    text: str
    tool: str | None = None
    context: str | None = None
    project: str | None = None
    agent_text: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "tool": self.tool,
            "context": self.context,
            "project": self.project,
            "agent_text": self.agent_text,
        }

    @classmethod
    def from_json(cls, data: Any) -> HeldPrompt | None:
        if not isinstance(data, dict):
            return None
        pid, text = data.get("id"), data.get("text")
        if not (isinstance(pid, str) and pid and isinstance(text, str) and text.strip()):
            return None

        def opt(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) else None

        return cls(pid, text, opt("tool"), opt("context"), opt("project"), opt("agent_text"))


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
    repair once, not once per hook. ``bursts_due`` — the steps of bursts
    whose job is not known to be stored (the newest per tool and context:
    a newer burst's window holds the older one's evidence); ``prompts_due``
    — corrections whose job is not known to be stored. Both are marked
    before a hook opens the database and struck off once the job is in it.
    """

    step: int = 0
    recent: list[Step] = field(default_factory=list)
    pending: bool = False
    served: list[tuple[str, str]] = field(default_factory=list)
    injected: list[str] = field(default_factory=list)
    bursts_due: list[int] = field(default_factory=list)
    prompts_due: list[HeldPrompt] = field(default_factory=list)

    def owes(self) -> bool:
        """Whether a burst or a correction still waits for its job to be stored."""
        return bool(self.bursts_due or self.prompts_due)

    def owe_burst(self, step: int) -> None:
        """The burst ``step`` made is due (it replaces an older due burst of its tool and context)."""
        pair = self._pair(step)
        self.bursts_due = [s for s in self.bursts_due if self._pair(s) != pair] + [step]

    def bursts_stored(self, steps: list[int]) -> None:
        """Strike off the bursts of ``steps`` (and older ones of their tool and context)."""
        newest: dict[tuple[str, str] | None, int] = {}
        for step in steps:
            pair = self._pair(step)
            newest[pair] = max(step, newest.get(pair, step))
        self.bursts_due = [s for s in self.bursts_due if s > newest.get(self._pair(s), -1)]

    def window(self, step: int) -> list[Step]:
        """The steps up to ``step``: the window its burst was made in."""
        return [s for s in self.recent if s.step <= step]

    def _pair(self, step: int) -> tuple[str, str] | None:
        for s in self.recent:
            if s.step == step:
                return (s.tool, s.context)
        return None

    def owe_prompt(
        self,
        text: str,
        tool: str | None,
        context: str | None,
        project: str | None,
        agent_text: str | None,
    ) -> HeldPrompt:
        """Hold a correction (redacted) until its job is stored; returns what is held."""
        held = HeldPrompt(
            os.urandom(6).hex(),
            stored_text(text, _PROMPT_CAP),
            tool,
            context,
            project,
            stored_optional(agent_text, _AGENT_TEXT_CAP),
        )
        self.prompts_due.append(held)
        if len(self.prompts_due) > _PROMPTS_DUE_CAP:
            gone = self.prompts_due.pop(0)
            logger.warning("hook state: a correction held since an earlier hook was given up (%s)", gone.id)
        return held

    def prompts_stored(self, ids: list[str]) -> None:
        self.prompts_due = [p for p in self.prompts_due if p.id not in ids]

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
        """Append a step, its context and error text redacted; returns the step as stored.

        The window keeps the last ``keep`` steps, and those of a due burst's window.
        """
        self.step += 1
        st = Step(
            self.step,
            tool,
            redact_secrets(context),
            ok,
            stored_text(reason, _REASON_CAP) if reason else "",
            time.time_ns() // 1_000_000,
        )
        self.recent.append(st)
        if self.bursts_due and self.step - min(self.bursts_due) >= _DUE_STEPS_CAP:
            logger.warning("hook state: bursts due for %d steps were given up", _DUE_STEPS_CAP)
            self.bursts_due = [s for s in self.bursts_due if self.step - s < _DUE_STEPS_CAP]
        floor = min(self.bursts_due, default=self.step) - keep
        self.recent = [s for s in self.recent if s.step > floor]
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
            "v": _VERSION,
            "step": self.step,
            "recent": [[s.step, s.tool, s.context, s.ok, s.reason, s.ts] for s in self.recent],
            "pending": self.pending,
            "served": [list(p) for p in self.served],
            "injected": list(self.injected),
            "bursts_due": list(self.bursts_due),
            "prompts_due": [p.to_json() for p in self.prompts_due],
        }

    @classmethod
    def from_json(cls, data: Any) -> HookSession:
        if not isinstance(data, dict):
            return cls()
        # Written before texts were redacted: redacted now (and so on the next write).
        scrub = redact_secrets if data.get("v") != _VERSION else str
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
                    ts = ts if type(ts) is int else 0
                    recent.append(Step(step, tool, scrub(ctx), bool(ok), scrub(str(reason)), ts))
        step = data.get("step")
        prompts = [HeldPrompt.from_json(p) for p in data.get("prompts_due") or []]
        return cls(
            step=step if type(step) is int and step >= 0 else max((s.step for s in recent), default=0),
            recent=recent,
            pending=bool(data.get("pending")),
            served=[
                (p[0], p[1])
                for p in data.get("served") or []
                if isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
            ][-_SERVED_CAP:],
            injected=[r for r in data.get("injected") or [] if isinstance(r, str) and r][-_INJECTED_CAP:],
            bursts_due=[s for s in data.get("bursts_due") or [] if type(s) is int and s > 0],
            prompts_due=[p for p in prompts if p is not None][-_PROMPTS_DUE_CAP:],
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


def _read(path: Path) -> Any:
    """The file's JSON, or None when there is none (or it is not ours)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(_FILE_CAP + 1)
    except FileNotFoundError:
        return None
    if len(raw) > _FILE_CAP:
        logger.warning("hook state %s is larger than %d bytes; starting afresh", path, _FILE_CAP)
        return None
    try:
        return json.loads(raw)
    except ValueError:
        logger.warning("hook state %s is not valid JSON; starting afresh", path)
        return None


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
        data = _read(path)
        state = HookSession.from_json(data)
        # Compared with what the file holds: a file of an older format is rewritten.
        before = data if data is not None else state.to_json()
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
