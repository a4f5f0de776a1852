"""The hooks' warm helper: one process per configuration answers the events over a Unix socket.

A hook process that does the work itself pays its imports every event:
SQLAlchemy, recall and the classifier's model (about a second for a
prompt). So ``memos-feedback hook claude-code`` is a thin client: it
reads the event, hands it to the helper over a Unix socket and prints
the helper's answer, importing nothing of the library's work (this module
needs the standard library only). The helper (the same command with
``--serve``) has everything imported and answers each event with
``run_hook`` in a thread of its own, exactly as a hook process would: the
same state files, the same database, the same answer.

When no helper answers (the first event, or after the helper ended) the
hook starts one in the background and does the work itself this once.
A helper serves only hooks run with its configuration: the key of its
socket covers the interpreter, the package, the working directory, the
hook's flags and every ``MEMOS_FEEDBACK_*`` variable. It ends after
``MEMOS_FEEDBACK_HOOK_HELPER_IDLE`` seconds without an event (default
900) or when its socket file is removed; ``MEMOS_FEEDBACK_HOOK_HELPER=0``
turns it off (every event is then done in the hook's own process).

Failure-soft as ever: a helper that breaks mid-event, or answers past the
deadline, gets ``{}`` printed in its place.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "HELPER_ENV",
    "IDLE_ENV",
    "HelperBroke",
    "answer_within",
    "ask_helper",
    "helper_enabled",
    "helper_socket",
    "serve",
    "start_helper",
]

HELPER_ENV = "MEMOS_FEEDBACK_HOOK_HELPER"
IDLE_ENV = "MEMOS_FEEDBACK_HOOK_HELPER_IDLE"
IDLE_S = 900.0
_ANSWER_CAP = 4 << 20
_MARGIN_S = 0.2
logger = logging.getLogger("memos_feedback.hooks")


def helper_enabled() -> bool:
    """On unless ``MEMOS_FEEDBACK_HOOK_HELPER`` says 0/off/false/no; POSIX only (Unix sockets, flock)."""
    if os.name != "posix" or not hasattr(socket, "AF_UNIX"):
        return False
    return os.environ.get(HELPER_ENV, "").strip().lower() not in ("0", "off", "false", "no")


def _idle_seconds() -> float:
    try:
        value = float(os.environ.get(IDLE_ENV, ""))
    except ValueError:
        return IDLE_S
    return value if value > 0 else IDLE_S


def _socket_dir() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"memos-feedback-{os.getuid()}"


def helper_socket(flags: list[str]) -> Path:
    """The socket of the helper for this configuration (the hook's ``flags``, env, directory, code)."""
    here = Path(__file__)
    try:
        code = str(here.stat().st_mtime_ns)
    except OSError:
        code = ""
    key = json.dumps(
        [
            sys.executable,
            str(here.parent.parent),
            code,
            os.getcwd(),
            flags,
            sorted((k, v) for k, v in os.environ.items() if k.startswith("MEMOS_FEEDBACK_")),
        ]
    )
    return _socket_dir() / f"hook-{hashlib.sha256(key.encode()).hexdigest()[:20]}.sock"


def _private_dir(path: Path) -> bool:
    """Create the socket directory (mode 0700); False when it is not this user's alone."""
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        st = path.stat()
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o077


class HelperBroke(Exception):
    """The helper took the event but gave no answer (it broke off, or ran past the deadline)."""


def ask_helper(path: Path, raw: bytes, deadline: float, started: float) -> dict[str, Any] | None:
    """The helper's answer to ``raw``; None when no helper is listening (then do it here).

    Raises ``HelperBroke`` when the helper took the event and gave no
    answer: the caller answers ``{}``, and does not do the event a second time.
    """
    if not path.parent.is_dir() or not _private_dir(path.parent):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            sock.settimeout(1.0)
            sock.connect(str(path))
        except OSError:
            return None
        try:
            # Ahead of the watchdog (answer_within), which would end the process.
            left = started + deadline - _MARGIN_S - time.monotonic()
            sock.settimeout(max(0.05, left))
            head = json.dumps({"elapsed": time.monotonic() - started, "deadline": deadline}).encode()
            sock.sendall(head + b"\n" + raw)
            sock.shutdown(socket.SHUT_WR)
            chunks: list[bytes] = []
            size = 0
            while size <= _ANSWER_CAP:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            answer = json.loads(b"".join(chunks))
        except (OSError, ValueError) as exc:
            raise HelperBroke(str(exc) or type(exc).__name__) from exc
        return answer if isinstance(answer, dict) else {}
    finally:
        sock.close()


def start_helper(flags: list[str]) -> None:
    """Start the helper for ``flags`` in the background (a new session, no shared pipes)."""
    import subprocess

    try:
        subprocess.Popen(
            [sys.executable, "-m", "memos_feedback", "hook", "claude-code", *flags, "--serve"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        logger.warning("could not start the hook helper: %s", exc)


def serve(
    path: Path, handle: Callable[[bytes, float, float], dict[str, Any]], idle: float | None = None
) -> int:
    """Answer events on ``path`` until idle for ``idle`` seconds; 0, or 1 when another helper has it.

    ``handle(raw, started, deadline)`` answers one event; ``started`` is
    the client's start on this process's monotonic clock.
    """
    import fcntl
    import signal

    idle = _idle_seconds() if idle is None else idle
    # Ended by a signal, it still removes its socket (the ``finally`` below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if not _private_dir(path.parent):
        return 1
    lock = os.open(str(path.with_suffix(".lock")), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return 1  # another helper serves this socket
        os.ftruncate(lock, 0)
        os.write(lock, f"{os.getpid()}\n".encode())  # which process it is, for whoever looks
        path.unlink(missing_ok=True)  # a dead helper's
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(path))
        server.listen(64)
        server.settimeout(min(5.0, idle))
        last = time.monotonic()
        busy = [0]
        guard = threading.Lock()

        def one(conn: socket.socket) -> None:
            try:
                conn.settimeout(30.0)
                data = bytearray()
                while len(data) <= (1 << 20) + 4096:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                head, _, raw = bytes(data).partition(b"\n")
                meta = json.loads(head)
                started = time.monotonic() - float(meta["elapsed"])
                answer = handle(raw, started, float(meta["deadline"]))
                conn.sendall(json.dumps(answer, ensure_ascii=False).encode())
            except Exception:
                logger.exception("the hook helper failed on an event")
            finally:
                conn.close()
                with guard:
                    busy[0] -= 1

        try:
            while True:
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    with guard:
                        quiet = busy[0] == 0 and time.monotonic() - last > idle
                    if quiet or not path.exists():
                        return 0
                    continue
                last = time.monotonic()
                with guard:
                    busy[0] += 1
                threading.Thread(target=one, args=(conn,), daemon=True).start()
        finally:
            server.close()
            if path.exists():
                path.unlink(missing_ok=True)
    finally:
        os.close(lock)


def answer_within(deadline: float, compute: Callable[[], dict[str, Any]], out: Any = None) -> None:
    """Print ``compute()`` as JSON; if it is not done after ``deadline`` s, print ``{}`` and exit 0.

    The watchdog ends the process (``os._exit``) so no thread stuck in a
    database call can hold the agent up.
    """
    stream = out if out is not None else sys.stdout
    lock = threading.Lock()
    answered = False

    def emit(payload: dict[str, Any]) -> bool:
        nonlocal answered
        with lock:
            if answered:
                return False
            answered = True
            stream.write(json.dumps(payload, ensure_ascii=False) + "\n")
            stream.flush()
            return True

    def bail() -> None:
        if emit({}):
            logger.warning("memos-feedback hook ran past its %.1f s deadline; answered {}", deadline)
            logging.shutdown()
            os._exit(0)

    timer = threading.Timer(deadline, bail)
    timer.daemon = True
    timer.start()
    try:
        result = compute()
    except BaseException:
        logger.exception("memos-feedback hook failed")
        result = {}
    finally:
        timer.cancel()
    emit(result)
