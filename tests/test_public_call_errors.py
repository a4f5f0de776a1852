"""Bad input to public constructors and subscriptions: the library's own one-line errors.

Arguments become ``InvalidInputError``; a bad setting read from the
environment becomes ``ConfigError``. Never a raw ``TypeError``,
``ValueError``, ``UnicodeEncodeError`` or the HTTP library's ``InvalidURL``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memos_feedback.errors import ConfigError, InvalidInputError
from memos_feedback.events import FeedbackBus
from memos_feedback.runtime.audit import AuditLog
from memos_feedback.synthesis.llm import ENV_BASE_URL, OpenAIRepairLLM
from memos_feedback.types import FailureRecord, RepairInput


def _input(failures: Any) -> RepairInput:
    return RepairInput(trigger="failure-burst", context_hash="h", failures=failures)


def _llm(base_url: Any = None, environ: dict[str, str] | None = None) -> OpenAIRepairLLM:
    return OpenAIRepairLLM("m", base_url=base_url, api_key="k", environ=environ or {})


CALLS: dict[str, Callable[[], object]] = {
    "RepairInput(failures=None)": lambda: _input(None),
    "RepairInput(failures=1)": lambda: _input(1),
    "RepairInput(failures='ab')": lambda: _input("ab"),
    "RepairInput(failures={})": lambda: _input({}),
    "RepairInput(failures=[None])": lambda: _input([None]),
    "AuditLog(None)": lambda: AuditLog(None),  # type: ignore[arg-type]
    "AuditLog(int)": lambda: AuditLog(3),  # type: ignore[arg-type]
    "AuditLog(bytes)": lambda: AuditLog(b"/tmp/audit.jsonl"),  # type: ignore[arg-type]
    "AuditLog(NUL)": lambda: AuditLog("/tmp/au\x00dit.jsonl"),
    "AuditLog(surrogate)": lambda: AuditLog("/tmp/\ud800.jsonl"),
    "AuditLog('')": lambda: AuditLog(""),
    "bus.on(list)": lambda: FeedbackBus().on(["repair.persisted"], print),  # type: ignore[arg-type]
    "bus.on(dict)": lambda: FeedbackBus().on({}, print),  # type: ignore[arg-type]
    "bus.on(listener list)": lambda: FeedbackBus().on("repair.persisted", []),  # type: ignore[arg-type]
    "llm(base_url NUL)": lambda: _llm("http://127.0.0.1:9/\x00v1"),
    "llm(base_url bad port)": lambda: _llm("http://127.0.0.1:x/v1"),
    "llm(base_url no scheme)": lambda: _llm("not a url"),
    "llm(base_url ftp)": lambda: _llm("ftp://127.0.0.1/v1"),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_bad_arguments_raise_invalid_input_error(name: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        CALLS[name]()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/\x00v1", "http://127.0.0.1:x/v1", "127.0.0.1:9"])
def test_a_bad_base_url_in_the_environment_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError, match=ENV_BASE_URL):
        _llm(environ={ENV_BASE_URL: url})


def test_good_values_still_work(tmp_path: Path) -> None:
    record = FailureRecord("npm", "install", 1, "E", 1)
    assert _input(r for r in [record]).failures == (record,)  # a generator, read once
    assert _input([record]).failures == (record,)
    with AuditLog(tmp_path / "audit.jsonl") as log:
        log.write({"ok": True})
    assert (tmp_path / "audit.jsonl").read_text() == '{"ok":true}\n'
    assert _llm("http://127.0.0.1:9/v1").base_url == "http://127.0.0.1:9/v1"
    assert _llm(environ={ENV_BASE_URL: "https://llm.example/v1"}).base_url == "https://llm.example/v1"
