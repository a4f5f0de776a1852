"""A failure as the tool gave it: the message first, no wrapper, no stack.

Hooks, the MCP server, the adapters and the span processor store a failed
call's text in a trace, and a lesson quotes that text's first meaningful
line (``synthesis.failure.error_signature``). So what is stored must start
with the tool's own message:

* a leading ``Exit code N`` line (Claude Code's Bash failures) gives way
  to the output after it; it stays only when nothing follows it;
* a Python traceback is reduced to its last exception line (the one after
  the frames, ``ConnectionError: …``); when the traceback was cut before
  that line (span status text capped at a few hundred characters) the
  lines before it are kept and the cut frames dropped;
* blank lines and surrounding space go.

``failure_message`` is pure and bounded: it reads at most the first and
last ``_SCAN`` characters of its input.
"""

from __future__ import annotations

import re

__all__ = ["failure_message", "failure_trace_text"]

# A traceback longer than this is read from both ends: its exception line is at the end.
_SCAN = 16_384
_EXIT_ONLY = re.compile(r"^\s*Exit code -?\d+\s*$")
_TRACEBACK = re.compile(r"^\s*Traceback \(most recent call last\):?\s*$")
# LangChain's run.error is repr(exc) with the traceback glued on: "X('m')Traceback (most …".
_GLUED_HEADER = re.compile(r"(?<=\S)(?=Traceback \(most recent call last\))")
# Chained exceptions: the separators between one traceback and the next.
_CHAIN = re.compile(
    r"^\s*(?:During handling of the above exception|The above exception was the direct cause)", re.IGNORECASE
)
# "ConnectionError: …", "requests.exceptions.ReadTimeout: …", "KeyboardInterrupt".
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Timeout|Fault)\b")


def failure_message(text: str | None) -> str:
    """``text`` with its message first: no ``Exit code`` lead, tracebacks as their last exception line."""
    if not text:
        return ""
    if len(text) > 2 * _SCAN:
        text = f"{text[:_SCAN]}\n{text[-_SCAN:]}"
    text = _GLUED_HEADER.sub("\n", text.replace("\r\n", "\n").replace("\r", "\n"))
    lines = [ln.rstrip() for ln in text.split("\n")]
    lines = _without_tracebacks(lines)
    kept = [ln for ln in lines if ln.strip()]
    if len(kept) > 1 and _EXIT_ONLY.match(kept[0]):
        kept = kept[1:]  # "Exit code 1" says only that it failed; the output says how
    return "\n".join(kept).strip()


def failure_trace_text(tool: str, context: str, reason: str, cap: int = 2_000) -> str:
    """A failed call as a trace's agent text: the message first, then the call on a line of its own.

    ``"cat: foo.txt: No such file or directory\\nBash call: Bash command=cat foo.txt"``,
    never ``"Bash failed (…): Exit code 1"``, whose wrapper a lesson would quote.
    The message is cut first when the whole is over ``cap``; the call line stays.
    """
    message = failure_message(reason) or "failed"
    call = f"{tool} call: {context}" if context else f"{tool} call"
    room = max(0, cap - len(call) - 1)
    return f"{message[:room]}\n{call}"[:cap]


def _without_tracebacks(lines: list[str]) -> list[str]:
    """The lines outside tracebacks; the tracebacks' last exception line in place of them all."""
    if not any(_TRACEBACK.match(ln) for ln in lines):
        return lines
    outside: list[str] = []
    last_exception: str | None = None
    n = 0
    while n < len(lines):
        line = lines[n]
        n += 1
        if _CHAIN.match(line):
            continue
        if not _TRACEBACK.match(line):
            outside.append(line)
            continue
        # The frames: indented lines (and blanks) up to the exception line.
        while n < len(lines) and (lines[n][:1].isspace() or not lines[n].strip()):
            n += 1
        if n < len(lines) and not _TRACEBACK.match(lines[n]) and not _CHAIN.match(lines[n]):
            start = n
            while n < len(lines) and lines[n].strip() and not _TRACEBACK.match(lines[n]):
                if _CHAIN.match(lines[n]):
                    break
                n += 1
            last_exception = "\n".join(lines[start:n])
    if last_exception is None:
        return outside  # cut before its exception line: what came before the stack
    # The exception line stands for the whole failure: text before a
    # traceback is usually the same message, logged once more.
    return [last_exception] + [ln for ln in outside if not _EXCEPTION_LINE.match(ln.strip())]
