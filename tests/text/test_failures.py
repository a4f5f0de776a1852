"""``text.failures``: a failure as the tool gave it (issue 43, deliverable 4)."""

from __future__ import annotations

import traceback

from memos_feedback.text.failures import failure_message, failure_trace_text


def _raised_deep(depth: int) -> str:
    """A real traceback, ``depth`` frames deep, of a chained exception."""

    def down(n: int) -> None:
        if n == 0:
            raise ConnectionResetError(104, "Connection reset by peer")
        down(n - 1)

    try:
        try:
            down(depth)
        except ConnectionResetError as exc:
            raise ConnectionError("registry unreachable while pushing web api") from exc
    except ConnectionError:
        return traceback.format_exc()
    raise AssertionError("not raised")


def test_the_exit_code_line_gives_way_to_the_output() -> None:
    text = "Exit code 1\ncat: /nope/notes.txt: No such file or directory"
    assert failure_message(text) == "cat: /nope/notes.txt: No such file or directory"
    assert failure_message("Exit code 2") == "Exit code 2"  # nothing else to say


def test_a_traceback_is_its_last_exception_line() -> None:
    text = _raised_deep(30)
    assert len(text) > 500  # longer than the span processor's cap on a reason
    assert failure_message(text) == "ConnectionError: registry unreachable while pushing web api"


def test_langchains_repr_glued_to_the_traceback() -> None:
    # langchain_core's run.error: repr(exc) + the formatted traceback, no newline between.
    text = "ConnectionError('registry unreachable while pushing web api')" + _raised_deep(3)
    assert failure_message(text) == "ConnectionError: registry unreachable while pushing web api"


def test_a_traceback_cut_before_its_exception_keeps_what_came_before() -> None:
    text = "ConnectionError: registry unreachable\n" + _raised_deep(30)[:400]
    assert failure_message(text) == "ConnectionError: registry unreachable"
    assert failure_message(_raised_deep(30)[:400]) == ""  # nothing but frames


def test_text_without_a_traceback_is_kept_as_it_is() -> None:
    text = "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree"
    assert failure_message(text) == text
    assert failure_message("") == "" and failure_message(None) == ""
    assert failure_message("\r\n  error: x  \r\n\r\n") == "error: x"


def test_a_huge_text_is_read_from_both_ends() -> None:
    text = "error: first\n" + "  noise\n" * 100_000 + "error: last"
    out = failure_message(text)
    assert out.startswith("error: first") and out.endswith("error: last")
    assert len(out) < 40_000


def test_the_trace_text_puts_the_message_first_and_the_call_after() -> None:
    out = failure_trace_text(
        "Bash", "Bash command=cat /nope", "Exit code 1\ncat: /nope: No such file or directory"
    )
    assert out == "cat: /nope: No such file or directory\nBash call: Bash command=cat /nope"
    capped = failure_trace_text("Bash", "Bash command=cat /nope", "x" * 5_000, cap=100)
    assert len(capped) == 100 and capped.endswith("\nBash call: Bash command=cat /nope")
    assert failure_trace_text("t", "", "") == "failed\nt call"
