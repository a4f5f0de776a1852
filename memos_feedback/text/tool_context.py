"""The tool-call *context* and the Bash exit code: pure functions over a tool call.

The adapters, the Claude Code hook and the OpenTelemetry span processor
all name a call's situation the same way, so a repair written from one
is found by the others. Here, below them all, so that a hook that runs
once per tool call in a fresh process can name a context without loading
the database layer. ``memos_feedback.adapters.core`` re-exports
``default_context_of``; its module docstring says what a context is and
why it drops flags and numbers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .secrets import redact_secrets

__all__ = [
    "EXIT_LINE",
    "bash_exit_code",
    "call_of",
    "claude_context_of",
    "default_context_of",
    "response_text",
]

_CONTEXT_CAP = 200
_WORD_CAP = 40
_SCAN_CAP = 1024  # what is read of a word or a context that is cut
_MAX_ARGS = 16
# Claude writes a new free-text description for every retry of a Bash command.
_VOLATILE_KEYS = frozenset({"description"})
_EXIT_KEYS = ("exit_code", "exitCode", "returnCode", "return_code", "returncode")
EXIT_LINE = re.compile(r"^\s*Exit code (-?\d+)")
# A context of one argument, "command=cat x.txt": its value is the call.
_ONE_ARG = re.compile(r"^[A-Za-z_]\w*=(?!\S*=)(.+)$")


def _as_mapping(args: Any) -> Mapping[Any, Any]:
    if isinstance(args, Mapping):
        return args
    if isinstance(args, (str, bytes)):
        try:
            parsed = json.loads(args)
        except (ValueError, TypeError):
            return {"input": args}
        return parsed if isinstance(parsed, Mapping) else {"input": parsed}
    if args is None:
        return {}
    return {"input": args}


def _cut(text: str, cap: int) -> str:
    # Redacted before it is cut: a token cut short, or a URL cut before the "@" after its
    # password, is no longer recognisable by whoever redacts the context later. Text that
    # fits is left as it is (and redacted whole by its writer).
    return text if len(text) <= cap else redact_secrets(text[:_SCAN_CAP])[:cap]


def _head(text: str) -> str:
    words = [w for w in text.split() if not w.startswith("-")][:2]
    return " ".join(_cut(w, _WORD_CAP) for w in words)


def default_context_of(tool_name: str, args: Any) -> str:
    """The tool plus the stable part of its arguments (``core``'s module docstring).

    In sorted argument-name order, each string argument adds
    ``name=<its first two words>``, words starting with ``-`` skipped; an
    argument with no such word, and any value that is not a string, adds
    nothing. At most 16 arguments and 200 characters.
    """
    parts = [str(tool_name)]
    mapping = _as_mapping(args)
    for key in sorted(mapping, key=str)[:_MAX_ARGS]:
        value = mapping[key]
        head = _head(value) if isinstance(value, str) else ""
        if head:
            parts.append(f"{key}={head}")
    return _cut(" ".join(parts), _CONTEXT_CAP)


def claude_context_of(tool_name: str, args: Any) -> str:
    """The default context without the free-text ``description`` argument."""
    if isinstance(args, Mapping):
        args = {k: v for k, v in args.items() if k not in _VOLATILE_KEYS}
    return default_context_of(tool_name, args)


def bash_exit_code(response: Any) -> int | None:
    """The exit code a Bash tool response reports, or None when it reports none."""
    if isinstance(response, Mapping):
        for key in _EXIT_KEYS:
            value = response.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        for key in ("stdout", "stderr", "output"):
            text = response.get(key)
            if isinstance(text, str) and (m := EXIT_LINE.match(text)):
                return int(m.group(1))
        return None
    if isinstance(response, str) and (m := EXIT_LINE.match(response)):
        return int(m.group(1))
    return None


def response_text(response: Any) -> str:
    """A tool response as text: stderr, stdout and output joined, else its repr."""
    if isinstance(response, Mapping):
        parts = [str(response.get(k) or "") for k in ("stderr", "stdout", "output")]
        return "\n".join(p for p in parts if p) or str(dict(response))
    return str(response)


def call_of(tool: str | None, context: str) -> str:
    """``"Bash command=cat x.txt"`` → ``"cat x.txt"``: a context that names its tool, without it.

    What a lesson names as the action (synthesis) and what a served line
    names as its situation (recall) are the same words.
    """
    rest = context
    if tool and context.casefold().startswith(tool.casefold() + " "):
        rest = context[len(tool) + 1 :].strip()
    m = _ONE_ARG.match(rest)
    return m.group(1).strip() if m is not None else rest
