"""The lesson check on a recall-set file (schema: ``tests/data/RECALL.md``).

    memos-feedback eval lessons FILE [FILE ...] [--show] [--json]

Every case's repair is written through the public pipeline into a fresh
SQLite store, as ``eval recall`` writes it: the trace is a failing step of
a session, then the user's feedback (``user.<shape>``) or, without
feedback, a burst of failures (``failure-burst``); the template writes the
lines (no LLM). Then:

* per rule of ``text.lessons`` (placeholder, stack-or-diff, tiny-object,
  cut, over-cap, language), the lines that break it, and the share of
  repairs with at least one broken line; the language rule's source is the
  case's feedback, else its context;
* for cases with an ``expected`` reference, **object match**: every side
  whose reference names an object has it in the matching line
  (case-folded, quotes and back-ticks ignored), and a side the reference
  leaves empty because nothing names it (``prefer: ""``) has no line
  either — an invented preference is a miss. An extra ``Avoid:`` line
  where the reference has none is not compared (the failure is evidence);
* **per side**, the share of cases whose ``Avoid:`` (``Prefer:``) line
  names the reference's avoid (prefer) object, by token overlap of the
  objects (``lesson_match``: the share of the reference object's tokens in
  the line, at least ``MATCH_SHARE``), over the cases whose reference
  names one; and the ``Avoid:`` lines whose object is an error message
  alone (``error-alone``).

Figures by language, by trigger (``user`` message / ``burst`` only) and by
domain (a file is a domain, named after its stem), with each side's macro
average over the domains and its worst domain: nothing in the template is
fitted, so a domain's figure is already what it does on a domain it was not
written from, unless its cases were read while writing the rules
(``tests/data/recall/README.md`` says which were). ``--show`` lists the
offending lines, the object misses and each side's worst cases (lowest
overlap first).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import FeedbackConfig
from ..repair.deps import RepairDeps
from ..store import Store, open_store
from ..text.lessons import RULES, lesson_problems
from .lesson_match import MATCH_SHARE, error_alone, object_overlap
from .recall_eval import write_case_repair

__all__ = ["LessonCase", "LessonReport", "evaluate_lessons", "load_lesson_cases", "main", "object_match"]

_QUOTES = "`\"'“”‘’「」"
# Cases listed per side under ``--show``, the lowest overlap first.
_SHOW_WORST = 15


class LessonDataError(ValueError):
    """A line of the cases file is not a valid case."""


@dataclass(frozen=True, slots=True)
class LessonCase:
    id: str
    lang: str
    project: str | None
    repair: dict[str, str]
    expected: dict[str, str] | None
    domain: str = ""

    @property
    def trigger(self) -> str:
        return "user" if self.repair["feedback"].strip() else "burst"


@dataclass(slots=True)
class Share:
    hits: int = 0
    total: int = 0

    def add(self, hit: bool) -> None:
        self.hits += int(hit)
        self.total += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "value": self.hits / self.total if self.total else None,
            "hits": self.hits,
            "total": self.total,
        }

    def __str__(self) -> str:
        return f"{self.hits}/{self.total} ({100 * self.hits / self.total:.1f} %)" if self.total else "-"


@dataclass(slots=True)
class LessonReport:
    cases: int = 0
    written: int = 0
    broken: Share = field(default_factory=Share)
    by_rule: dict[str, list[dict[str, str]]] = field(default_factory=lambda: {r: [] for r in RULES})
    match: dict[str, Share] = field(default_factory=dict)
    sides: dict[str, Share] = field(default_factory=dict)
    error_alone: list[dict[str, str]] = field(default_factory=list)
    misses: list[dict[str, str]] = field(default_factory=list)
    side_cases: list[dict[str, Any]] = field(default_factory=list)
    not_written: list[str] = field(default_factory=list)

    def domains(self, side: str) -> dict[str, float]:
        """Each domain's share of ``side`` matches (domains with a reference on that side)."""
        prefix = f"{side} domain="
        return {
            key[len(prefix) :]: share.hits / share.total
            for key, share in self.sides.items()
            if key.startswith(prefix) and share.total
        }

    def side_summary(self) -> dict[str, dict[str, Any]]:
        """Per side: over all cases, the macro average over domains and the worst domain."""
        out: dict[str, dict[str, Any]] = {}
        for side in ("avoid", "prefer"):
            by_domain = self.domains(side)
            worst = min(by_domain, key=lambda d: by_domain[d]) if by_domain else None
            out[side] = {
                "all": self.sides.get(side, Share()).as_dict(),
                "macro": sum(by_domain.values()) / len(by_domain) if by_domain else None,
                "worst": by_domain[worst] if worst is not None else None,
                "worst_domain": worst,
            }
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "written": self.written,
            "broken": self.broken.as_dict(),
            "by_rule": {rule: len(lines) for rule, lines in self.by_rule.items()},
            "object_match": {key: share.as_dict() for key, share in sorted(self.match.items())},
            "side_match": {key: share.as_dict() for key, share in sorted(self.sides.items())},
            "sides": self.side_summary(),
            "error_alone": len(self.error_alone),
            "not_written": self.not_written,
        }


def load_lesson_cases(paths: Sequence[str | Path]) -> list[LessonCase]:
    cases: list[LessonCase] = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for n, raw in enumerate(fh, start=1):
                if raw.strip():
                    cases.append(_parse(raw, f"{Path(path).name}:{n}", Path(path).stem))
    return cases


def _parse(raw: str, where: str, domain: str) -> LessonCase:
    try:
        obj = json.loads(raw)
        repair = obj["repair"]
        if not all(isinstance(repair.get(k), str) for k in ("tool_id", "context", "trace", "feedback")):
            raise KeyError("repair needs string tool_id, context, trace and feedback")
        expected = obj.get("expected")
        if expected is not None and not all(isinstance(expected.get(k), str) for k in ("prefer", "avoid")):
            raise KeyError("expected needs string prefer and avoid")
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise LessonDataError(f"{where}: {exc}") from None
    return LessonCase(
        str(obj.get("id", where)), str(obj.get("lang", "")), obj.get("project"), repair, expected, domain
    )


def _norm(text: str) -> str:
    return " ".join(text.translate({ord(q): None for q in _QUOTES}).casefold().split())


def object_match(case: LessonCase, preference: str, anti_pattern: str) -> bool | None:
    """Whether the lines name the reference's objects (see the module docstring); None without one."""
    exp = case.expected
    if exp is None:
        return None
    ok = True
    for line, side in ((preference, "prefer"), (anti_pattern, "avoid")):
        obj = exp.get(f"{side}_object", "")
        if obj:
            ok = ok and _norm(obj) in _norm(line)
        elif side == "prefer" and not exp.get("prefer"):
            ok = ok and not line.strip()
    return ok


def _write(store: Store, case: LessonCase, deps: RepairDeps) -> tuple[str, str] | None:
    """The case's repair through the pipeline, as ``eval recall`` writes it; its two lines."""
    repair_id = write_case_repair(store, case, deps, session_prefix="lessons")
    if repair_id is None:
        return None
    row = store.repairs.get(repair_id)
    return row.preference, row.anti_pattern


def evaluate_lessons(cases: Sequence[LessonCase], store: Store) -> LessonReport:
    """Write every case's repair into ``store`` and check its lines."""
    deps = RepairDeps(store=store, config=FeedbackConfig(use_llm=False, cooldown_ms=0))
    report = LessonReport(cases=len(cases))
    for case in cases:
        lines = _write(store, case, deps)
        if lines is None:
            report.not_written.append(case.id)
            continue
        report.written += 1
        source = case.repair["feedback"] if case.repair["feedback"].strip() else case.repair["context"]
        any_broken = False
        for line in lines:
            for rule in lesson_problems(line, source):
                any_broken = True
                report.by_rule[rule].append({"id": case.id, "line": line})
        report.broken.add(any_broken)
        if error_alone(lines[1]):
            report.error_alone.append({"id": case.id, "line": lines[1]})
        _score_sides(report, case, *lines)
        hit = object_match(case, *lines)
        if hit is None:
            continue
        for key in ("all", f"lang={case.lang}", f"trigger={case.trigger}", f"{case.lang}/{case.trigger}"):
            report.match.setdefault(key, Share()).add(hit)
        if not hit:
            exp = case.expected or {}
            report.misses.append(
                {
                    "id": case.id,
                    "prefer": lines[0],
                    "avoid": lines[1],
                    "expected_prefer": exp.get("prefer_object", ""),
                    "expected_avoid": exp.get("avoid_object", ""),
                }
            )
    return report


def _score_sides(report: LessonReport, case: LessonCase, preference: str, anti_pattern: str) -> None:
    """Each side whose reference names an object: its token overlap with the matching line."""
    exp = case.expected or {}
    for side, line in (("prefer", preference), ("avoid", anti_pattern)):
        overlap = object_overlap(exp.get(f"{side}_object", ""), line)
        if overlap is None:
            continue
        hit = overlap >= MATCH_SHARE
        keys = (
            side,
            f"{side} lang={case.lang}",
            f"{side} trigger={case.trigger}",
            f"{side} domain={case.domain}",
        )
        for key in keys:
            report.sides.setdefault(key, Share()).add(hit)
        report.side_cases.append(
            {
                "id": case.id,
                "side": side,
                "overlap": round(overlap, 3),
                "line": line,
                "want": exp[f"{side}_object"],
            }
        )


def _worst(report: LessonReport, side: str, n: int) -> list[dict[str, Any]]:
    rows = [c for c in report.side_cases if c["side"] == side and c["overlap"] < MATCH_SHARE]
    return sorted(rows, key=lambda c: (c["overlap"], c["id"]))[:n]


def _side_lines(report: LessonReport, show: bool) -> list[str]:
    out = [f"each side names the reference's object (token overlap >= {MATCH_SHARE}):"]
    for side, summary in report.side_summary().items():
        share = report.sides.get(side, Share())
        macro = "-" if summary["macro"] is None else f"{summary['macro']:.3f}"
        worst = "-" if summary["worst"] is None else f"{summary['worst']:.3f} ({summary['worst_domain']})"
        out.append(f"  {side:<7} all {share}   domain macro {macro}   worst {worst}")
        out += [
            f"    {key[len(side) + 1 :]:<28} {s}"
            for key, s in sorted(report.sides.items())
            if key.startswith(side + " ")
        ]
    out.append(f"avoid lines that are an error message alone: {len(report.error_alone)}")
    if show:
        out += [f"      {h['id']}: {h['line']}" for h in report.error_alone]
        for side in ("avoid", "prefer"):
            out.append(f"worst {side} cases:")
            for c in _worst(report, side, _SHOW_WORST):
                out.append(f"  {c['id']} ({c['overlap']:.2f}): want {c['want']!r}")
                out.append(f"      {c['line'] or f'(no {side} line)'}")
    return out


def format_lessons(report: LessonReport, *, show: bool = False) -> str:
    out = [
        f"cases {report.cases}, repairs written {report.written}",
        f"repairs breaking a rule: {report.broken}",
    ]
    for rule, hits in report.by_rule.items():
        out.append(f"  {rule:<14} {len(hits)} lines")
        if show:
            out += [f"      {h['id']}: {h['line']}" for h in hits]
    if report.match:
        out.append("object matches the reference:")
        out += [f"  {key:<22} {share}" for key, share in sorted(report.match.items())]
    if report.sides:
        out += _side_lines(report, show)
    if show and report.misses:
        out.append("object misses:")
        for m in report.misses:
            out.append(f"  {m['id']}: want prefer={m['expected_prefer']!r} avoid={m['expected_avoid']!r}")
            out.append(f"      {m['prefer'] or '(no prefer line)'} | {m['avoid'] or '(no avoid line)'}")
    if report.not_written:
        out.append(f"not written: {', '.join(report.not_written)}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="memos-feedback eval lessons", description="Check the template's lessons on recall-set cases."
    )
    parser.add_argument("files", nargs="+", help="recall-set JSON Lines files (tests/data/RECALL.md)")
    parser.add_argument("--show", action="store_true", help="list the offending lines and object misses")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        cases = load_lesson_cases(args.files)
    except LessonDataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: cannot read cases: {exc}", file=sys.stderr)
        return 2
    with (
        tempfile.TemporaryDirectory(prefix="memos-lessons-") as tmp,
        open_store(f"sqlite:///{Path(tmp) / 'lessons.db'}") as store,
    ):
        report = evaluate_lessons(cases, store)
    if args.json:
        payload = report.as_dict()
        if args.show:
            payload["lines"] = report.by_rule
            payload["misses"] = report.misses
            payload["error_alone_lines"] = report.error_alone
            payload["worst"] = {side: _worst(report, side, _SHOW_WORST) for side in ("avoid", "prefer")}
        print(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        print(format_lessons(report, show=args.show))
    return 0
