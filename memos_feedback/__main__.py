"""``python -m memos_feedback``: the same command line as ``memos-feedback``."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
