"""The lesson check, the clauses a lesson is read from, a failure's error line,
and the check run over the repo's recall corpus through the public pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memos_feedback.devtools.eval import main as eval_main
from memos_feedback.devtools.lesson_match import MATCH_SHARE, error_alone, object_overlap, object_tokens
from memos_feedback.devtools.lessons_eval import evaluate_lessons, load_lesson_cases, object_match
from memos_feedback.errors import InvalidInputError
from memos_feedback.store import open_store
from memos_feedback.synthesis.clauses import fit_line, instruction_lines
from memos_feedback.synthesis.failure import error_signature, failure_line, hint_line, retry_line
from memos_feedback.text.lessons import LESSON_CAP, RULES, lesson_objects, lesson_problems

DATA = Path(__file__).resolve().parents[1] / "data"
CORPUS = sorted((DATA / "recall").glob("*.jsonl"))


# -- the rules, one family at a time (own examples, not corpus sentences) -----


@pytest.mark.parametrize(
    "line",
    [
        "Prefer: an approach that succeeded before for bash",
        "Avoid: repeating the approach that failed for make.build",
        "Prefer: the same thing that worked last time",
        "Prefer: 之前成功的方法",
    ],
)
def test_placeholders_are_caught(line: str) -> None:
    assert "placeholder" in lesson_problems(line)


@pytest.mark.parametrize(
    "line",
    [
        "Avoid: ...e 19: github.com/acme/cache.(*Cache).Get() /build/cache.go:88 +0x1f",
        'Avoid: File "/srv/app/main.py", line 12, in run',
        "Avoid: at Object.<anonymous> (/repo/src/index.js:10:5)",
        "Avoid: @@ -1,3 +1,4 @@ import os",
        "Avoid: 4 | const fetchMock = jest.fn()",
        "Avoid: /usr/lib/python3/site-packages/x.py /opt/app/lib/run/y.py",
    ],
)
def test_stack_and_diff_fragments_are_caught(line: str) -> None:
    assert "stack-or-diff" in lesson_problems(line)


@pytest.mark.parametrize(
    "line",
    [
        "Avoid: 动",
        "Prefer: redis cache instead of 用",
        "Avoid: 这样",
        "Avoid: this",
        "Never: touch them",
        "Avoid: 那个",
    ],
)
def test_tiny_and_demonstrative_objects_are_caught(line: str) -> None:
    assert "tiny-object" in lesson_problems(line)


@pytest.mark.parametrize(
    "line",
    [
        "Always: 所有外部请求都要带 timeout：req",
        "Prefer: run the migrations and",
        "Avoid: pip install (from the",
        "Prefer: use the staging cluster for…",
        "Avoid: ...tail of a message",
    ],
)
def test_cut_lines_are_caught(line: str) -> None:
    assert "cut" in lesson_problems(line)


def test_over_the_cap_and_language() -> None:
    assert "over-cap" in lesson_problems("Prefer: " + "x" * LESSON_CAP)
    # The user wrote Chinese: an English prose line is in another language …
    assert "language" in lesson_problems("Prefer: run the tests before pushing", "推送之前先跑测试")
    # … but one made of what the user wrote (a command) is not.
    assert lesson_problems("Prefer: pnpm install", "用 pnpm install 装依赖") == ()
    assert "language" in lesson_problems("Prefer: 先跑测试", "run the tests first")


@pytest.mark.parametrize(
    "line",
    [
        "Prefer: run nvm use in web/ before installing",
        "Never: touch the engines field",
        "Avoid: 写 style={{ marginTop: 12 }} 这种内联样式",
        "Prefer: uv",
        "Avoid: pip.install — failed with: ERROR: disk quota exceeded",
        "",
    ],
)
def test_good_lines_and_the_empty_line_break_nothing(line: str) -> None:
    assert lesson_problems(line) == ()


def test_objects_and_bad_input() -> None:
    assert lesson_objects("Prefer: use pnpm instead of npm") == ["use pnpm", "npm"]
    assert lesson_objects("Avoid: npm install (failed: E404)") == ["npm install"]
    with pytest.raises(InvalidInputError):
        lesson_problems(3)  # type: ignore[arg-type]
    assert set(RULES) == {"placeholder", "stack-or-diff", "tiny-object", "cut", "over-cap", "language"}


# -- clauses ------------------------------------------------------------------


def test_the_prescribing_and_forbidding_clauses_are_kept_whole() -> None:
    prefer, avoid = instruction_lines(
        "don't touch the engines field. web/ has an .nvmrc pinned to 20.11, run `nvm use` in there first"
    )
    assert prefer is not None and prefer.line == "Prefer: run `nvm use` in there first"
    assert avoid is not None and avoid.line == "Never: touch the engines field"  # not "Always: don't …"


def test_chinese_prohibitions_become_avoid_lines_without_the_cue() -> None:
    prefer, avoid = instruction_lines("不要用 npm，统一用 pnpm install。")
    assert avoid is not None and avoid.line == "Avoid: 用 npm"
    assert prefer is not None and prefer.line == "Prefer: 统一用 pnpm install"


def test_a_demonstrative_is_never_the_object() -> None:
    assert instruction_lines("别这样") == (None, None)
    assert instruction_lines("no, don't do that") == (None, None)


def test_an_omission_reproached_is_a_prescription() -> None:
    prefer, _ = instruction_lines("You forgot to pass --frozen-lockfile to the install step.")
    assert prefer is not None and prefer.line == "Prefer: pass --frozen-lockfile to the install step"


def test_commas_inside_values_do_not_split_a_clause() -> None:
    prefer, _ = instruction_lines("run it with GPUS=0,1,2,3 on the big node")
    assert prefer is not None and "GPUS=0,1,2,3" in prefer.line


def test_fit_line_cuts_at_a_boundary_and_never_leaves_a_dangling_end() -> None:
    body = "use the cache for every request, " * 12
    line = fit_line("Prefer: ", body)
    assert line is not None and len(line) <= LESSON_CAP
    assert lesson_problems(line) == ()


# -- a failure's error line ---------------------------------------------------


def test_the_error_line_skips_frames_paths_and_diffs() -> None:
    trace = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/main.py", line 3, in <module>\n'
        "    import numpy\n"
        "--- a/req.txt\n+++ b/req.txt\n@@ -1 +1 @@\n"
        "ModuleNotFoundError: No module named 'numpy'\n"
    )
    assert error_signature(trace) == "ModuleNotFoundError: No module named 'numpy'"
    assert error_signature("") is None and error_signature("   \n  ") is None


def test_an_exception_beats_a_bare_exit_status() -> None:
    trace = "srun: error: node7: task 1: Exited with exit code 1\nRuntimeError: rendezvous timed out"
    assert error_signature(trace) == "RuntimeError: rendezvous timed out"


def test_failure_line_names_the_action_and_the_error_in_the_source_language() -> None:
    en = failure_line(
        "make deploy in infra/", "Error: missing KUBECONFIG", chinese=False, source="make deploy"
    )
    assert en == "Avoid: make deploy in infra/ — failed with: Error: missing KUBECONFIG"
    zh = failure_line(
        "在 infra/ 里跑 make deploy", "Error: missing KUBECONFIG", chinese=True, source="在 infra/ 里"
    )
    assert zh == "Avoid: 在 infra/ 里跑 make deploy（报错：Error: missing KUBECONFIG）"
    assert lesson_problems(zh, "在 infra/ 里跑 make deploy") == ()


def test_a_hint_of_the_tool_is_preferred_but_never_what_is_avoided() -> None:
    out = "error: lockfile out of date\nhint: run `pnpm install` in web/ and commit pnpm-lock.yaml"
    line = hint_line(out, None)
    assert line is not None and line.startswith("Prefer: run")
    # A way out that switches the check off is not a lesson.
    assert (
        hint_line("error: lockfile out of date\nhint: run `pnpm install --no-frozen-lockfile`", None) is None
    )
    unsafe = "error: custom code\nPlease pass the argument trust_remote_code=True to allow it"
    assert hint_line(unsafe, None, avoid="Never: trust_remote_code=True") is None


# -- the check over the repo's recall corpus (acceptance) ----------------------


def test_lessons_over_the_recall_corpus_keep_the_rules(tmp_path: Path) -> None:
    cases = load_lesson_cases([DATA / "recall_dev.jsonl", *CORPUS])
    assert len(cases) >= 400
    with open_store(f"sqlite:///{tmp_path / 'lessons.db'}") as store:
        report = evaluate_lessons(cases, store)
    assert report.written >= 0.9 * report.cases
    assert report.by_rule["placeholder"] == []  # not one placeholder line
    assert report.broken.hits <= 0.05 * report.broken.total, report.by_rule
    with_reference = sum(1 for c in cases if c.expected is not None)
    assert with_reference >= 200 and report.match["all"].total >= 0.9 * with_reference


def test_object_match_needs_every_named_object_and_no_invented_preference() -> None:
    case = load_lesson_cases([CORPUS[0]])[0]
    exp = case.expected
    assert exp is not None
    prefer = f"Prefer: {exp['prefer_object']}" if exp["prefer_object"] else ""
    avoid = f"Avoid: {exp['avoid_object']}" if exp["avoid_object"] else "Avoid: something else"
    assert object_match(case, prefer, avoid) is True
    if not exp["prefer"]:
        assert object_match(case, "Prefer: an invented line", avoid) is False


def test_eval_lessons_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sample = tmp_path / "cases.jsonl"
    lines = CORPUS[0].read_text(encoding="utf-8").splitlines()[:5]
    sample.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert eval_main(["lessons", str(sample), "--json", "--show"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["cases"] == 5 and set(payload["by_rule"]) == set(RULES)
    assert "misses" in payload and "lines" in payload
    sides = payload["sides"]
    assert set(sides) == {"avoid", "prefer"}
    for side in ("avoid", "prefer"):
        assert sides[side]["all"]["total"] >= len(payload["worst"][side])
        assert all(c["overlap"] < MATCH_SHARE for c in payload["worst"][side])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"repair": {}}\n', encoding="utf-8")
    assert eval_main(["lessons", str(bad)]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err


def test_a_retry_that_printed_no_failure_is_the_success_to_prefer() -> None:
    trace = (
        "$ helm upgrade web ./chart --set image.tag=latest\n"
        "Error: UPGRADE FAILED: image tag latest is not allowed\n"
        "$ kubectl get pods\n"
        "web-1 Running\n"
        "$ helm upgrade web ./chart --set image.tag=1.4.2\n"
        "Release web has been upgraded. Happy Helming!\n"
    )
    action = "helm upgrade web ./chart --set image.tag=latest"
    assert retry_line(action, trace, None) == "Prefer: helm upgrade web ./chart --set image.tag=1.4.2"
    # A retry that only got through by switching a check off is not one.
    forced = trace.replace("--set image.tag=1.4.2", "--set image.tag=latest --skip-checks")
    assert retry_line(action, forced, None) is None
    # Diagnostics (another tool) are never the alternative.
    assert retry_line("make deploy", "$ make deploy\nError: boom\n$ ls\nMakefile\n", None) is None


def test_synthesis_names_the_failed_call_not_the_tool_as_the_action() -> None:
    # Issue 43: "Avoid: shell.run — failed with: …" named the runner, not what
    # it ran; the call's context (its arguments) is the action.
    from memos_feedback.config import FeedbackConfig
    from memos_feedback.synthesis.evidence import RepairEvidence
    from memos_feedback.synthesis.synthesize import synthesize_draft
    from memos_feedback.types import ToolCall, TraceRow

    low = TraceRow(
        "l",
        "s",
        None,
        1,
        "",
        "fatal: could not read Username for 'https://git.example'",
        None,
        -1.0,
        (ToolCall("shell.run", error_code="1"),),
    )
    out = synthesize_draft(
        context_hash="0123456789abcdef",
        trigger="failure-burst",
        tool_id="shell.run",
        evidence=RepairEvidence(high=(), low=(low,), keyword=None, relaxed=False),
        config=FeedbackConfig(),
        context="go mod tidy in services/worker",
    )
    assert out.draft is not None and out.draft.preference == ""
    assert out.draft.anti_pattern == (
        "Avoid: go mod tidy in services/worker — failed with: fatal: could not read Username for "
        "'https://git.example'"
    )


# -- per-side object match (eval lessons) --------------------------------------


@pytest.mark.parametrize(
    ("reference", "line", "share"),
    [
        ("--forcerun deseq2", "Prefer: rerun with `--forcerun deseq2` only", 1.0),
        ("numpy>=2.0", "Prefer: build against numpy>=2.0 in [build-system]", 1.0),
        ("adb logcat -d", "Prefer: dump it with adb logcat -c first", 2 / 3),
        ("pnpm install", "Avoid: npm install", 0.5),
        ("改用 pnpm", "优先：改用 pnpm 安装依赖", 1.0),
        ("kube-dns", "Avoid: default-deny egress", 0.0),
    ],
)
def test_object_overlap_is_the_share_of_the_reference_tokens(reference: str, line: str, share: float) -> None:
    assert object_overlap(reference, line) == pytest.approx(share)


def test_object_tokens_keep_code_whole_and_pair_chinese() -> None:
    assert object_tokens("`/shared/models/` and numpy>=2.0") == {"/shared/models/", "and", "numpy>=2.0"}
    assert object_tokens("重网格") == {"重网", "网格"}
    assert object_overlap("", "Prefer: x") is None
    assert object_overlap("x", "Prefer: ") == 0.0  # the label is not the object


@pytest.mark.parametrize(
    ("line", "alone"),
    [
        ("Avoid: ConnectionResetError: [Errno 104] Connection reset by peer", True),
        ("Avoid: error[E0382]: borrow of moved value", True),
        ("Avoid: npm ERR! code ERESOLVE", True),
        ("Avoid: TS2307: Cannot find module 'x'", True),
        ("Avoid: time.sleep(5) before reading the socket — still flaky: ConnectionResetError", False),
        ("Never: retry the upload in a loop", False),
        ("Avoid: errors.Is on a wrapped value", False),
    ],
)
def test_an_avoid_line_that_is_an_error_message_alone_is_counted(line: str, alone: bool) -> None:
    assert error_alone(line) is alone
