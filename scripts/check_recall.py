"""Validate the labelled recall sets: one file per domain in tests/data/recall/ (web_shop: the dev set).

    python scripts/check_recall.py [FILE ...]

Checks every case against tests/data/RECALL.md: valid JSON object, an ``id``
unique across all the files, ``lang`` and ``project``, a repair with a
tool, a context and a trace or feedback (never both empty), 2 to 5 queries
whose ``relevant`` agrees with their ``kind``, at least one relevant query
and one near miss per case (the sets that say so: tests/data/recall/), no
query text twice in a case, no repair twice in a file, and, where a case
has ``expected``, its objects verbatim in the repair's text. Then balance:
per file, the share of each language and of relevant queries, printed.
Exit 1 with one line per problem.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

LANGS = {"en", "zh", "mixed"}
RELEVANT = {"same-tool-new-context", "same-context-new-wording", "other-tool-paraphrase", "cross-language"}
UNRELATED = {"unrelated-near-miss", "unrelated-far"}
CASE_KEYS = {"id", "lang", "project", "repair", "queries", "expected"}
QUERY_FIELDS = ("tool_id", "context", "query", "kind")
EXPECTED_KEYS = {"prefer", "avoid", "prefer_object", "avoid_object"}


def _text(value: object) -> bool:
    return isinstance(value, str)


def check_case(case: dict[str, object], where: str, *, near_miss_required: bool) -> list[str]:
    problems = [f"{where}: unknown keys {sorted(set(case) - CASE_KEYS)}"] if set(case) - CASE_KEYS else []
    if case.get("lang") not in LANGS:
        problems.append(f"{where}: lang {case.get('lang')!r} not allowed")
    if not _text(case.get("project")) or not case.get("project"):
        problems.append(f"{where}: missing project")
    repair = case.get("repair")
    fields = ("tool_id", "context", "trace", "feedback")
    if not isinstance(repair, dict) or not all(_text(repair.get(k)) for k in fields):
        return [*problems, f"{where}: repair needs string tool_id, context, trace and feedback"]
    if not repair["trace"].strip() and not repair["feedback"].strip():
        problems.append(f"{where}: trace and feedback both empty")
    queries = case.get("queries")
    if not isinstance(queries, list) or not 2 <= len(queries) <= 5:
        return [*problems, f"{where}: needs 2 to 5 queries"]
    kinds = Counter()
    texts: set[str] = set()
    for n, q in enumerate(queries, 1):
        if not isinstance(q, dict) or not all(_text(q.get(k)) for k in QUERY_FIELDS):
            problems.append(f"{where} query {n}: needs string tool_id, context, query and kind")
            continue
        kind = q["kind"]
        if kind not in RELEVANT | UNRELATED or q.get("relevant") is not (kind in RELEVANT):
            problems.append(f"{where} query {n}: kind {kind!r} and relevant {q.get('relevant')!r} disagree")
        if q["query"] in texts:
            problems.append(f"{where} query {n}: the same query text twice")
        texts.add(q["query"])
        kinds[kind] += 1
    if not any(kinds[k] for k in RELEVANT):
        problems.append(f"{where}: no relevant query")
    if near_miss_required and not kinds["unrelated-near-miss"]:
        problems.append(f"{where}: no unrelated-near-miss query")
    expected = case.get("expected")
    if expected is not None:
        problems += _check_expected(expected, repair, where)
    return problems


def _check_expected(expected: object, repair: dict[str, str], where: str) -> list[str]:
    if not isinstance(expected, dict) or set(expected) != EXPECTED_KEYS:
        return [f"{where}: expected needs string {sorted(EXPECTED_KEYS)}"]
    if not all(map(_text, expected.values())):
        return [f"{where}: expected needs string {sorted(EXPECTED_KEYS)}"]
    source = "\n".join((repair["context"], repair["trace"], repair["feedback"]))
    problems = []
    for side in ("prefer", "avoid"):
        obj = expected[f"{side}_object"]
        if obj and obj not in source:
            problems.append(f"{where}: expected.{side}_object {obj!r} is not in the repair's text")
        if bool(obj) != bool(expected[side]):
            problems.append(f"{where}: expected.{side} and its object must be empty together")
    return problems


def check(path: Path, seen: set[str]) -> list[str]:
    problems: list[str] = []
    repairs: set[str] = set()
    langs: Counter[str] = Counter()
    relevant = unrelated = 0
    near_miss_required = path.parent.name == "recall"
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        where = f"{path.name}:{n}"
        try:
            case = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not JSON ({exc.msg})")
            continue
        if not isinstance(case, dict):
            problems.append(f"{where}: not an object")
            continue
        ident = case.get("id")
        if not _text(ident) or ident in seen:
            problems.append(f"{where}: missing or duplicate id {ident!r}")
        seen.add(str(ident))
        problems += check_case(case, f"{where} ({ident})", near_miss_required=near_miss_required)
        repair = json.dumps(case.get("repair"), sort_keys=True, ensure_ascii=False)
        if repair in repairs:
            problems.append(f"{where}: the same repair as an earlier case")
        repairs.add(repair)
        langs[str(case.get("lang"))] += 1
        for q in case.get("queries") or []:
            if isinstance(q, dict):
                relevant += q.get("relevant") is True
                unrelated += q.get("relevant") is False
    total = sum(langs.values()) or 1
    mix = " ".join(f"{lang} {langs[lang] / total:.0%}" for lang in sorted(LANGS))
    cases = sum(langs.values())
    print(f"{path.name}: {cases} cases ({mix}), {relevant} relevant / {unrelated} unrelated queries")
    return problems


def main(argv: list[str]) -> int:
    data = Path(__file__).resolve().parents[1] / "tests" / "data"
    paths = [Path(a) for a in argv] or sorted((data / "recall").glob("*.jsonl"))
    seen: set[str] = set()
    problems = [p for path in paths for p in check(path, seen)]
    for line in problems:
        print(line)
    print(f"{len(paths)} files, {len(seen)} cases, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
