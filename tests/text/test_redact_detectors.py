"""``text.redact``: every detector's own examples and look-alikes, and the engine's properties.

Each detector carries, as data, texts holding a secret that must go and
texts that must come back unchanged; one parametrised test runs them all
through the whole redactor (a detector's look-alike must survive every
other detector too). The engine's properties are checked on random and
adversarial texts: redacting twice changes nothing, every span a detector
reports is gone, and the output's length is the input's less the spans
plus one marker per span.
"""

from __future__ import annotations

import gc
import itertools
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memos_feedback.text.redact import DETECTORS, REDACTED, redact
from memos_feedback.text.redact.engine import Scan, find_spans, redact_with
from memos_feedback.text.redact.rules import RuleDetector

_EXAMPLES = [(d.name, text, secret) for d in DETECTORS for text, secret in d.examples]
_LOOKALIKES = [(d.name, text) for d in DETECTORS for text in d.lookalikes]


def test_every_detector_brings_examples_and_lookalikes() -> None:
    for detector in DETECTORS:
        assert detector.examples, detector.name
        assert detector.lookalikes, detector.name


@pytest.mark.parametrize(("detector", "text", "secret"), _EXAMPLES, ids=lambda v: str(v)[:40])
def test_a_detectors_example_loses_its_secret(detector: str, text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out, out
    assert REDACTED in out


@pytest.mark.parametrize(("detector", "text"), _LOOKALIKES, ids=lambda v: str(v)[:40])
def test_a_detectors_lookalike_comes_back_unchanged(detector: str, text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    "lesson",
    [
        "Prefer: docker login --password-stdin instead of -p on the command line",
        "Avoid passing -p on the command line; use --password-stdin.",
        "Use `ConvertTo-SecureString -AsPlainText` only in tests.",
        "Never pass --password via the CLI: it is insecure.",
        "Run mysql -p and type the password at the prompt",
        "Set the token in the environment, not with --token on the command line",
    ],
)
def test_lessons_about_flags_keep_their_words(lesson: str) -> None:
    """A flag's name with no value, or followed by a word of the sentence, is no secret
    (issue 44: "instead of -p on the command line" was stored as "-p [redacted] the command line")."""
    assert redact(lesson) == lesson


def test_a_span_across_a_key_marker_is_cut_so_the_marker_stays() -> None:
    text = "-----BEGIN PRIVATE KEY-----password=password=-----BEGIN PRIVATE KEY-----"
    out = redact(text)
    assert out.count("-----BEGIN PRIVATE KEY-----") == 2
    assert redact(out) == out


_PARTS = st.sampled_from(
    ["password=", "token: ", "ghp_Zq7LmR2xWv9KpT4sNb8YcHd3FgJ6uE1oAi5B", "AKIAQX7NR2KWZ4T6LBMV", "://u:",
     "@h", "Bearer ", REDACTED, " ", "\n", "密码是", "sk-", "A1b2C3d4" * 5, "eyJhbGciOiJIUzI1NiJ9", ".", "=",
     "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----", "\\n", "-----BEGIN CERTIFICATE-----",
     "-----END CERTIFICATE-----", "- name: DB_PASSWORD", "value: ", "Cookie: session=", "sshpass -p ", "'",
     '"', ",", "setPassword(", "<password>", "</password>", "login ", "-p ", "-u a:", "/", ":", "?sig=", "&",
     "账号 ", "mysql -p", "$ cat .pgpass\n", "the password is ", "a=b ", "7z a -p", "ConvertTo-SecureString ",
     "Zq7#Lm2x"]
)  # fmt: skip
_TEXTS = st.one_of(st.text(max_size=300), st.lists(_PARTS, max_size=40).map("".join))


# Derandomized: CI runs the same 600 examples every time (a random find must not turn a
# run red by chance); hunt with more, random ones locally (--hypothesis-seed, max_examples).
@settings(max_examples=600, deadline=None, derandomize=True)
@given(_TEXTS)
def test_property_one_pass_is_a_fixed_point_and_every_span_goes(text: str) -> None:
    once = redact(text)
    assert redact(once) == once
    spans = find_spans(text, DETECTORS)
    # Disjoint, in order, and each replaced by one marker: the length is exactly accounted for.
    assert all(a_end < b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))
    removed = sum(end - start for start, end in spans)
    assert len(once) == len(text) - removed + len(REDACTED) * len(spans)
    # Every span's text is gone (unless the same text also stands outside any span).
    for start, end in spans:
        secret = text[start:end]
        if REDACTED not in secret and text.count(secret) == 1:
            assert secret not in once, (secret, once)


def test_no_detector_changes_what_it_does_not_report() -> None:
    text = "git push https://x:Zq7LmR2xWv9K@github.com/a.git\nDB_PASSWORD=hunter2!x\nplain words"
    assert redact_with(text, ()) == text
    assert redact(text).endswith("plain words")


# 2 MB of one shape each: the engine and every detector stay linear on them.
_ADVERSARIAL = {
    "assignments": "password=x ",
    "base64": "QWxhZGRpbjpvcGVuIHNlc2FtZQ0K",
    "pairs": "a=b ",
    "ats": "@",
    "flags": "-p ",
    "login flags": "login -p ",
    "cookies": "Cookie: a=b ",
    "urls": "://u:p@",
    "pem": "-----BEGIN PRIVATE KEY-----",
    "lessons": "docker login --password-stdin instead of -p on the command line ",
}


def _cpu_seconds(text: str, runs: int) -> float:
    # The best of ``runs``, with the cyclic collector off while timing (as timeit
    # does): one collection over 2 MB's objects made a single run look quadratic.
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        gc.disable()
        try:
            started = time.process_time()
            redact(text)
            best = min(best, time.process_time() - started)
        finally:
            gc.enable()
    return best


@pytest.mark.parametrize("unit", list(_ADVERSARIAL.values()), ids=list(_ADVERSARIAL))
def test_two_megabytes_cost_about_four_times_half_a_megabyte(unit: str) -> None:
    """Linear in CPU time: 4 times for 4 times the text (quadratic would be 16); the bound is 8."""
    small, large = ((unit * (size // len(unit) + 1))[:size] for size in (1 << 19, 1 << 21))
    base = _cpu_seconds(small, 2)
    took = _cpu_seconds(large, 2)
    assert took < 8 * base + 0.05, f"{took:.3f} s for 2 MB, {base:.3f} s for 0.5 MB"


@pytest.mark.parametrize("filler", ["x", "x" * 600])
@pytest.mark.parametrize(
    "words", [("password",), ("token", "secret"), ("cookie", "mysql", "passwd"), ("pass", "word")]
)
def test_a_short_text_searched_again_answers_as_the_memo(filler: str, words: tuple[str, ...]) -> None:
    # Scan.has_any searches a short text again for each word and remembers
    # a long text's words (has): both must give the same answer.
    for text in (f"{filler} PassWord=1", f"{filler} my.Secret here", f"{filler} nothing", f"MYSQL {filler}"):
        scan = Scan(text)
        assert scan.has_any(words) == any(Scan(text).has(w) for w in words), (text, words)


def test_a_rule_not_worth_trying_finds_nothing_and_one_worth_trying_finds_as_before() -> None:
    # RuleDetector.spans checks each rule before making its generator; the
    # spans are those of the rules' own find().
    text = "psql postgres://app:S3cretPw9x@db.internal/x failed; the password is Tiger2024#x"
    plain = [d for d in DETECTORS if isinstance(d, RuleDetector) and type(d).spans is RuleDetector.spans]
    found = 0
    for detector in plain:
        expected = [span for rule in detector.rules for span in rule.find(Scan(text))]
        assert list(detector.spans(Scan(text))) == expected, detector.name
        found += len(expected)
    assert found >= 2
    assert redact(text) != text
