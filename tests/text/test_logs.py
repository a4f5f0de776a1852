"""Library log records carry no secret: message and traceback are redacted."""

from __future__ import annotations

import logging

import pytest

import memos_feedback  # noqa: F401  (attaches the filter to the library's loggers)
from memos_feedback.runtime import enqueuer
from memos_feedback.text.logs import library_logger

URL = "https://x:ghp_Zq7LmR2xWv9KpT4sNb8YcHd3FgJ6uE1oAi5B@github.com/acme/app.git"


def test_a_library_loggers_message_and_traceback_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="memos_feedback")
    try:
        raise RuntimeError(f"push to {URL} failed")
    except RuntimeError as exc:
        enqueuer.logger.warning("could not store: %s", exc)
        enqueuer.logger.exception("storing failed")
    assert "ghp_" not in caplog.text
    assert "https://x:[redacted]@github.com" in caplog.text
    assert "RuntimeError" in caplog.text  # the traceback is still there


def test_a_clean_record_is_left_as_it_was(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="memos_feedback")
    log = library_logger("memos_feedback.test")
    log.info("stored %d job(s)", 3)
    (record,) = [r for r in caplog.records if r.name == "memos_feedback.test"]
    assert record.msg == "stored %d job(s)" and record.args == (3,)
