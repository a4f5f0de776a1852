"""Secret redaction: recall, false redaction and speed, ours beside detect-secrets.

Usage::

    python -m benchmarks.secrets                   # figures of ``redact_secrets`` on every corpus
    python -m benchmarks.secrets DIR [DIR ...]     # on the corpora in those directories
    python -m benchmarks.secrets --misses DIR      # and each missed secret / changed look-alike
    python -m benchmarks.secrets --detect-secrets  # and of detect-secrets' plugins
    python -m benchmarks.secrets --speed           # median on 10 kB, and each 2 MB adversarial shape

A corpus directory holds ``*secrets*.jsonl`` files (one case a line, with a
``text`` and a ``secrets`` list of strings that must not survive) and
``*lookalikes*.jsonl`` files (a ``text`` that must come back unchanged),
and may hold ``*lessons*.jsonl`` files (lesson lines about credentials
that hold none: each must come back unchanged too, counted apart as
``lesson_damage``); each line may carry a ``family`` and an ``id``. Without a directory, every
directory under tests/data/secrets that holds such files is scored, each on
its own.

Recall: the share of labelled secret strings gone from the redacted text
(and, as ``case_recall``, the share of secret cases with none left). False
redaction: the share of look-alikes the redactor changed. Speed: the
median time of one call on a 10 kB context (a tool's output with a token
and a key in it), over ``--runs`` calls; with ``--speed``, also the time of
one call on 2 MB of each adversarial shape in ``ADVERSARIAL`` (a secret's
name every few characters, long base64 runs, long lines of ``a=b``, many
``@`` and ``-p``…) and the worst of them.
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

Case = dict[str, object]


def load(name: str | Path, directory: Path = DATA) -> list[Case]:
    """The cases of one JSONL file (``name`` relative to ``directory``)."""
    with open(directory / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def corpus(directory: Path) -> tuple[list[Case], list[Case]]:
    """The secret cases and the look-alikes of every corpus file in ``directory``."""
    secrets: list[Case] = []
    lookalikes: list[Case] = []
    for path in sorted(directory.glob("*.jsonl")):
        if "lookalike" in path.name:
            lookalikes += load(path.name, directory)
        elif "secret" in path.name:
            secrets += load(path.name, directory)
    if not secrets and not lookalikes:
        raise SystemExit(f"{directory}: no *secrets*.jsonl or *lookalikes*.jsonl file")
    for case in secrets:
        listed = case.get("secrets")
        if not isinstance(listed, list) or not all(isinstance(s, str) for s in listed):
            raise SystemExit(f"{directory}: case {case.get('id')} has no list of secret strings")
    return secrets, lookalikes


def lesson_lines(directory: Path) -> list[Case]:
    """The lesson lines of ``directory`` (``*lessons*.jsonl``; none is a secret)."""
    return [case for path in sorted(directory.glob("*lessons*.jsonl")) for case in load(path.name, directory)]


def corpus_dirs(root: Path = DATA) -> list[Path]:
    """``root`` and each directory below it that holds corpus files."""
    return sorted({path.parent for path in root.rglob("*.jsonl")})


def score(redact: Callable[[str], str], directory: Path = DATA, *, misses: bool = False) -> dict[str, object]:
    """Recall and false redaction of ``redact`` on the corpus in ``directory``."""
    secrets, lookalikes = corpus(directory)
    missed: Counter[str] = Counter()
    missed_cases = labelled = 0
    missed_examples: list[dict[str, object]] = []
    for case in secrets:
        out = redact(str(case["text"]))
        listed: list[str] = case["secrets"]  # type: ignore[assignment]
        left = [s for s in listed if s in out]
        labelled += len(listed)
        if left:
            missed_cases += 1
            missed[str(case.get("family", "?"))] += len(left)
            missed_examples.append({"id": case.get("id"), "left": left, "out": out})
    changed: Counter[str] = Counter()
    changed_examples: list[dict[str, object]] = []
    for case in lookalikes:
        out = redact(str(case["text"]))
        if out != case["text"]:
            changed[str(case.get("family", "?"))] += 1
            changed_examples.append({"id": case.get("id"), "out": out})
    lessons = lesson_lines(directory)
    damaged = [c for c in lessons if redact(str(c["text"])) != c["text"]]
    changed_examples += [{"id": c.get("id"), "out": redact(str(c["text"]))} for c in damaged]
    figures: dict[str, object] = {
        "recall": _ratio(labelled - sum(missed.values()), labelled),
        "lesson_damage": len(damaged) / len(lessons) if lessons else None,
        "lessons": len(lessons),
        "case_recall": _ratio(len(secrets) - missed_cases, len(secrets)),
        "false_redaction": sum(changed.values()) / len(lookalikes) if lookalikes else 0.0,
        "secrets": labelled,
        "secret_cases": len(secrets),
        "lookalikes": len(lookalikes),
        "missed_by_family": dict(missed),
        "changed_by_family": dict(changed),
    }
    if misses:
        figures["missed"] = missed_examples
        figures["changed"] = changed_examples
    return figures


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole else 1.0


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


# 2 MB of one shape each: what makes a scan per match, or per candidate, costly.
ADVERSARIAL = {
    "assignments": "password=x ",
    "base64 run": "QWxhZGRpbjpvcGVuIHNlc2FtZQ0K",
    "a=b line": "a=b ",
    "many @": "@",
    "many -p": "-p ",
    "login -p": "login -p ",
    "sshpass": "sshpass ",
    "cookies": "Cookie: a=b ",
    "url passwords": "://u:p@",
    "key markers": "-----BEGIN PRIVATE KEY-----",
    "mysql": "mysql ",
    "query tokens": "?token=abc&sig=def ",
    "json pairs": '"password": "x", ',
    "name/value": "name: DB_PASSWORD value: ",
    "chinese labels": "密码是",
    "prose": "the password is ",
    "long names": "a" * 1000 + "_password=x ",
}


def adversarial_timings(redact: Callable[[str], str], size: int = 2 << 20) -> dict[str, float]:
    """Milliseconds of one call on ``size`` characters of each shape in ``ADVERSARIAL``."""
    figures = {}
    for name, unit in ADVERSARIAL.items():
        text = (unit * (size // len(unit) + 1))[:size]
        started = time.perf_counter()
        redact(text)
        figures[name] = round((time.perf_counter() - started) * 1000, 1)
    return figures


def timing(redact: Callable[[str], str], runs: int, text: str | None = None) -> float:
    text = ten_kb_context() if text is None else text
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
    parser.add_argument("dirs", nargs="*", type=Path, help="corpus directories")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--misses", action="store_true", help="list each miss and each changed look-alike")
    parser.add_argument("--detect-secrets", action="store_true")
    parser.add_argument("--speed", action="store_true", help="and each 2 MB adversarial shape's time")
    args = parser.parse_args()
    rows = [("redact_secrets", redact_secrets, args.runs)]
    if args.detect_secrets:
        rows.append(
            ("detect-secrets 1.5 default plugins", detect_secrets_redactor(), max(1, args.runs // 100))
        )
    dirs = args.dirs or corpus_dirs()
    for name, redact, runs in rows:
        for directory in dirs:
            figures = score(redact, directory, misses=args.misses)
            print(name, directory, json.dumps(figures, ensure_ascii=False))
        print(name, "median_ms_10kB", round(timing(redact, runs), 3))
        if args.speed:
            figures = adversarial_timings(redact)
            print(name, "ms_2MB", json.dumps(figures, ensure_ascii=False))
            print(name, "worst_ms_2MB", max(figures.values()), max(figures, key=lambda k: figures[k]))


if __name__ == "__main__":
    main()
