"""Library log records carry no secret: message and traceback are redacted."""

from __future__ import annotations

import logging

import pytest

import memos_feedback
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


def test_every_logger_below_text_is_named_for_the_edge() -> None:
    """A module that cannot import ``text`` names its logger in ``BELOW_TEXT``, or it logs unredacted."""
    import re
    from pathlib import Path

    from memos_feedback.text.logs import BELOW_TEXT

    package = Path(memos_feedback.__file__).parent
    made = {
        name
        for path in package.rglob("*.py")
        for name in re.findall(r'logging\.getLogger\(\s*"(memos_feedback[^"]*)"', path.read_text("utf-8"))
    }
    made.discard("memos_feedback")  # the root: the CLI's hook sets its level, nothing logs through it
    assert made and made <= set(BELOW_TEXT), sorted(made - set(BELOW_TEXT))


def test_the_filter_is_installed_at_the_edge_not_by_opening_a_store(sqlite_url: str) -> None:
    from memos_feedback.config import FeedbackConfig
    from memos_feedback.runtime.subscriber import attach_feedback_subscriber
    from memos_feedback.store import open_store
    from memos_feedback.text.logs import RedactingFilter

    probe = logging.getLogger("memos_feedback.probe_below_text")  # as classify makes its own
    with open_store(sqlite_url) as store:
        assert not any(isinstance(f, RedactingFilter) for f in probe.filters)
        with attach_feedback_subscriber(store, config=FeedbackConfig(use_llm=False)):
            assert any(isinstance(f, RedactingFilter) for f in probe.filters)
