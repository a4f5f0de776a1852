"""Background WAL checkpoints for a SQLite file.

With SQLite's default auto-checkpoint, every thousandth page written makes
the *committing* transaction copy the WAL back into the database file and
fsync it — a pause of several milliseconds landing on whichever caller
happened to commit (an agent enqueuing a correction, say). The store turns
auto-checkpointing off on its connections and runs a passive checkpoint
from this thread instead, about once a second, so foreground commits never
pay for it. A passive checkpoint never blocks readers or writers; it copies
what it can. If the process stops, the WAL stays on disk and the next
connection to the file checkpoints it, so nothing is lost either way.

The same thread does the store's other periodic work first (``before``):
indexing the repairs whose search-index rows were deferred
(``search_index.py``).
"""

from __future__ import annotations

import sqlite3
import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path

from ..text.logs import library_logger

__all__ = ["INTERVAL_S", "WalCheckpointer"]

# Seconds between a store's background turns (checkpoint, and indexing the
# repairs whose search-index rows were deferred).
INTERVAL_S = 1.0

# A WAL longer than this many frames (~16 MB of 4 KB pages) is started over
# once a checkpoint has copied all of it; waiting for that costs at most
# RESTART_WAIT_MS, and only when the WAL is this long.
RESTART_FRAMES = 4096
RESTART_WAIT_MS = 5

logger = library_logger("memos_feedback.store")


class WalCheckpointer:
    """Runs ``PRAGMA wal_checkpoint(PASSIVE)`` on ``path`` every ``interval`` seconds.

    ``before``, when given, runs first each time and at ``close``: the
    store's other background work (it should not raise; if it does, the
    error is logged and the checkpoints go on).
    """

    def __init__(
        self, path: str, interval: float = INTERVAL_S, before: Callable[[], None] | None = None
    ) -> None:
        self.path = path
        self.interval = interval
        self._before = before
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memos-feedback-wal-checkpoint", daemon=True)
        self._thread.start()

    def checkpoint(self) -> None:
        """One passive checkpoint now, on a private connection."""
        # mode=rw: a file deleted under the store must not come back empty
        # from a checkpoint (store/durability.py).
        uri = f"file:{urllib.parse.quote(str(Path(self.path).absolute()))}?mode=rw"
        conn = sqlite3.connect(uri, uri=True, timeout=5, isolation_level=None, check_same_thread=False)
        try:
            busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if not busy and frames > RESTART_FRAMES and copied >= frames:
                # Under a steady stream of commits the WAL is never found fully
                # copied with nobody appending, so SQLite never starts it over
                # and it grows without bound (200 MB after 3,000 repairs), and
                # every page read searches a longer WAL index. Everything is
                # copied now: a TRUNCATE checkpoint only has to wait for the
                # readers of old frames (briefly — it gives up after a few ms)
                # and lets the next commit start the WAL from the beginning.
                conn.execute(f"PRAGMA busy_timeout={RESTART_WAIT_MS}")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        finally:
            conn.close()

    def _run_before(self) -> None:
        if self._before is None:
            return
        try:
            self._before()
        except Exception:  # a bug there must not stop the checkpoints
            logger.exception("background work on %s failed", self.path)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._run_before()
            try:
                self.checkpoint()
            except sqlite3.Error as exc:  # busy, or the file went away: try again later
                logger.debug("WAL checkpoint of %s skipped: %s", self.path, exc)

    def close(self) -> None:
        """Stop the thread and leave the WAL checkpointed as far as possible."""
        self._stop.set()
        self._thread.join(timeout=5)
        self._run_before()
        try:
            self.checkpoint()
        except sqlite3.Error as exc:
            logger.debug("final WAL checkpoint of %s skipped: %s", self.path, exc)
