"""Secret redaction: recall, false redaction and speed, ours beside detect-secrets.

Usage::

    python -m benchmarks.secrets                 # figures of ``redact_secrets``
    python -m benchmarks.secrets --detect-secrets  # and of detect-secrets' plugins

Recall: the share of secret cases (tests/data/secrets/secrets.jsonl) whose
every secret string is gone from the redacted text. False redaction: the
share of look-alikes (lookalikes.jsonl) the redactor changed. Speed: the
median time of one call on a 10 kB context (a tool's output with a token
and a key in it), over ``--runs`` calls.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from memos_feedback.text.secrets import redact_secrets

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "secrets"


def load(name: str) -> list[dict[str, object]]:
    with open(DATA / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def score(redact: Callable[[str], str]) -> dict[str, object]:
    secrets, lookalikes = load("secrets.jsonl"), load("lookalikes.jsonl")
    missed: Counter[str] = Counter()
    for case in secrets:
        out = redact(str(case["text"]))
        if any(s in out for s in case["secrets"]):  # type: ignore[attr-defined]
            missed[str(case["family"])] += 1
    changed: Counter[str] = Counter()
    for case in lookalikes:
        if redact(str(case["text"])) != case["text"]:
            changed[str(case["family"])] += 1
    return {
        "recall": 1 - sum(missed.values()) / len(secrets),
        "false_redaction": sum(changed.values()) / len(lookalikes),
        "secrets": len(secrets),
        "lookalikes": len(lookalikes),
        "missed_by_family": dict(missed),
        "changed_by_family": dict(changed),
    }


def ten_kb_context() -> str:
    """A 10 kB tool output: log lines, a stack trace, a token and a key in the middle."""
    lines = []
    for i in range(200):
        lines.append(
            f"2026-12-04T03:{i % 60:02d}:11Z INFO worker-{i % 7} processed batch {i} in {i * 3 % 97} ms"
        )
        if i == 100:
            lines.append("git push https://x:ghp_" + "A1b2C3d4E5" * 3 + "abcdef@github.com/acme/app.git")
            lines.append("export AWS_ACCESS_KEY_ID=AKIA" + "Z" * 12 + "7Q2W")
    text = "\n".join(lines)
    return text[:10_240]


def timing(redact: Callable[[str], str], runs: int) -> float:
    text = ten_kb_context()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        redact(text)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def detect_secrets_redactor() -> Callable[[str], str]:
    """Redaction by detect-secrets' default plugins and filters, as its file scan runs them.

    Each line goes through every plugin (entropy limits applied, no eager
    search) and the default filters; each secret value reported is
    replaced. Plugins that report only a token's prefix ("ghp") have the
    whole run it starts replaced.
    """
    from detect_secrets.core.scan import _is_filtered_out, _scan_line
    from detect_secrets.settings import default_settings, get_plugins
    from detect_secrets.util.code_snippet import get_code_snippet

    # Held by the closure: the settings last as long as the redactor.
    settings = default_settings()
    settings.__enter__()

    def redact(text: str) -> str:
        out = text
        lines = text.splitlines()
        for n, line in enumerate(lines, 1):
            context = get_code_snippet(lines=lines, line_number=n)
            for plugin in get_plugins():
                for found in _scan_line(
                    plugin=plugin, filename="corpus.txt", line=line, line_number=n, context=context
                ):
                    value = found.secret_value
                    if not value or _is_filtered_out(
                        required_filter_parameters=["context"],
                        filename="corpus.txt",
                        secret=value,
                        plugin=plugin,
                        line=line,
                        context=context,
                    ):
                        continue
                    out = re.sub(re.escape(value) + r"[A-Za-z0-9_\-]*", "[redacted]", out)
        return out

    redact.settings = settings  # type: ignore[attr-defined]
    return redact


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--detect-secrets", action="store_true")
    args = parser.parse_args()
    rows = [("redact_secrets", redact_secrets, args.runs)]
    if args.detect_secrets:
        rows.append(
            ("detect-secrets 1.5 default plugins", detect_secrets_redactor(), max(1, args.runs // 100))
        )
    for name, redact, runs in rows:
        figures = score(redact)
        figures["median_ms_10kB"] = round(timing(redact, runs), 3)
        print(name, json.dumps(figures, ensure_ascii=False))


if __name__ == "__main__":
    main()
