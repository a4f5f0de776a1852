"""What a failure says, in one line: the action that was done and how it failed.

``error_signature(text)`` is the first meaningful message line of a tool's
output: stack frames, file:line locations, path dumps, diff hunks, code
gutters, caret markers, separators and "Traceback" headers are skipped;
a line that opens like an error ("error:", "npm ERR!", "FooError:",
"fatal:", "E123") is taken first, then one that carries a failure word,
then the first line left. Log prefixes (time stamps, levels in brackets)
are dropped, and the line is cut at a clause boundary.

``failure_line(action, text, chinese)`` makes the "Avoid:" line from it.
"""

from __future__ import annotations

import functools
import re

from ..text.lessons import LESSON_CAP, lesson_problems, meaningless_object
from ..text.sanitize import SCAN_LIMIT, sanitize_line
from .clauses import fit_line, instruction_lines, split_sentences

__all__ = ["error_signature", "failed_command", "failure_line", "hint_line", "repeats", "retry_line"]

_SIGNATURE_CAP = 110
_MIN_SIGNATURE = 48
_FRAME = re.compile(
    r"^\s*(?:at\s+\S|File\s+\"|#\d+\s|\d+\s*[|│]|[|│]\s|\^|~{2,}|Traceback\b|goroutine\s+\d|\.\.\.\s*\d+\s+more"
    r"|[+\-]{3}\s|@@|diff\s+--git|index\s+[0-9a-f]{6,}|Caused\s+by:\s*$|In\s+file\s+included)"
    r"|^\s*(?:[\w.$<>]+\.)+[\w$<>]+\(.*\)\s*$"  # a bare call frame "pkg.Type.method(args)"
    r"|^\s*(?:[A-Za-z]:)?(?:[/\\][\w.@+-]+){2,}(?::\d+)*\s*$"  # a path alone
    r"|^\s*[=\-*_#~]{3,}\s*$",
    re.IGNORECASE,
)
_ERROR_OPENING = re.compile(
    r"^\s*(?:\S+:\s*)?(?:error|fatal|panic|err!|failed|failure|exception|e\d{2,}|[A-Z]\w*(?:Error|Exception|Fault)"
    r"|ERR_[A-Z_]+|FAILED|FATAL|ERROR|CRITICAL)\b",
)
_ERROR_NAME = re.compile(
    r"[\w.]*(?:Error|Exception|Fault)\b|\bERR_[A-Z_]+|\bE\d{2,}\b|\b[A-Z][A-Za-z]+Limit\b"
)
_EXCEPTION = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b:\s*\S")
_EXIT_ONLY = re.compile(r"\bexit(?:ed)?\s+(?:with\s+)?(?:exit\s+)?(?:code|status)\b", re.IGNORECASE)
_ERROR_INSIDE = re.compile(r"(?<=\s)(?:error|fatal|ERROR|FATAL|[A-Z]\w*(?:Error|Exception)|ERR_[A-Z_]+)\b:")
_FAILURE_WORD = re.compile(
    r"error|exception|\b(?:fail(?:ed|s|ure)?|fatal|denied|refused|not found|cannot|can't|could not|couldn't"
    r"|unable|invalid|unsupported|missing|timed out|timeout|forbidden|unauthori[sz]ed|conflict|mismatch"
    r"|incompatible|panic|abort(?:ed)?|killed|oom|exit (?:code|status) [1-9])\b"
    r"|报错|错误|失败|异常|超时|拒绝|找不到|不存在|无法",
    re.IGNORECASE,
)
_LOG_PREFIX = re.compile(
    r"^\s*(?:\[?\d{4}-\d\d-\d\d[T ][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?\]?\s*|\[?\d\d:\d\d:\d\d(?:[.,]\d+)?\]?\s*"
    r"|\[(?:INFO|WARN|WARNING|ERROR|DEBUG|TRACE|FATAL|E|W|I)\]\s*|\$\s+|>\s+)+",
    re.IGNORECASE,
)
_BOUNDARY = ("; ", ". ", ", ", " (", " - ", ": ")


def error_signature(text: str | None) -> str | None:
    """The first meaningful error line of ``text``, sanitised and cut short; None when there is none."""
    if not text:
        return None
    if len(text) <= _MEMO_TEXT:
        return _signature_memo(text)
    return _signature(text)


# Every repair of a session reads the same few traces: short texts keep their answer.
_MEMO_TEXT = 4_096


def _signature(text: str) -> str | None:
    lines = [_LOG_PREFIX.sub("", ln).strip() for ln in text[-SCAN_LIMIT:].splitlines()]
    lines = [ln for ln in lines if ln and not _FRAME.search(ln) and len(ln) > 3]
    if not lines:
        return None
    # An exception's own message first; then an error line that is not just
    # an exit status ("task 1: Exited with exit code 1" says only that it failed).
    pick = next((ln for ln in lines if _EXCEPTION.search(ln)), None)
    if pick is None:
        pick = next((ln for ln in lines if _ERROR_OPENING.match(ln) and not _EXIT_ONLY.search(ln)), None)
    if pick is None:
        pick = next((ln for ln in lines if _ERROR_OPENING.match(ln)), None)
    if pick is None:
        pick = next((ln for ln in lines if _FAILURE_WORD.search(ln)), lines[0])
    inside = _ERROR_INSIDE.search(pick)
    if inside is not None:
        pick = pick[inside.start() :]  # the message, not what was printed before it
    clean = sanitize_line(pick, SCAN_LIMIT)
    if not clean:
        return None
    return _tidy(_shorten(clean)) or None


_signature_memo = functools.lru_cache(maxsize=1_024)(_signature)


def _shorten(line: str, cap: int = _SIGNATURE_CAP) -> str:
    if len(line) <= cap:
        return line
    head = line[:cap]
    floor = min(40, cap // 2)
    for mark in _BOUNDARY:
        at = head.rfind(mark)
        if at >= floor:
            return head[:at]
    at = head.rfind(" ")
    return head[:at] if at >= floor else head


def repeats(said: str, done: str) -> bool:
    """Whether most of the words of ``said`` are words of ``done`` (it only says that again)."""
    words, other = set(_TOKEN.findall(said.casefold())), set(_TOKEN.findall(done.casefold()))
    return bool(words) and len(words & other) >= 0.6 * len(words)


def _tidy(text: str) -> str:
    line = fit_line("", text)
    return line or ""


def failure_line(action: str | None, text: str | None, *, chinese: bool, source: str | None) -> str | None:
    """``Avoid: <action> (failed: <signature>)``, or the part of it the evidence has; None for neither."""
    act = sanitize_line(action, LESSON_CAP) if action else ""
    if act and meaningless_object(act) is not None:
        act = ""
    signature = error_signature(text)
    if signature and act and repeats(signature, act):
        signature = None  # the "error" only repeats what was done: no message to quote
    if act and signature:
        # What was done is the lesson's object: the error's line gives way first.
        frame = len("Avoid: ") + (len("（报错：）") if chinese else len(" — failed with: "))
        spare = LESSON_CAP - frame - len(act)
        if len(signature) > spare:
            # Short of room, the error's name ("DistNetworkError", "E404") stands for its line.
            named = _ERROR_NAME.search(signature)
            if spare < _MIN_SIGNATURE and named is not None:
                signature = named.group(0)
            else:
                signature = _shorten(signature, max(_MIN_SIGNATURE, spare))
        tail = f"（报错：{signature}）" if chinese else f" — failed with: {signature}"
        room = LESSON_CAP - len("Avoid: ") - len(tail)
        if len(act) > room:
            act = _tidy(act[: max(0, room)].rsplit(" ", 1)[0])
        candidate = fit_line("Avoid: ", act + tail) if act else None
        if candidate is not None and not lesson_problems(candidate, source):
            return candidate
    if act:
        line = fit_line("Avoid: ", f"{act}（之前失败过）" if chinese else f"{act} as before (it failed)")
        if line is not None and not lesson_problems(line, source):
            return line
    if signature:
        line = fit_line("Avoid: ", f"再次出现 {signature}" if chinese else signature)
        if line is not None and not lesson_problems(line, source):
            return line
    return None


# The tool's own advice: "hint: …", "Did you mean X?", "To fix this, run …",
# "Use X instead". It names an alternative, so it may become a Prefer line.
_HINT = re.compile(
    r"^\s*(?:hint|help|tip|suggestion|solution|fix)\s*:\s*(?P<a>.+)$"
    r"|\b(?:did\s+you\s+mean|to\s+fix\s+(?:this|it)?\s*,?|please\s+(?:use|run)|consider\s+(?:using|running)"
    r"|you\s+(?:should|can|may|might\s+want\s+to)\s+(?:use|run|set|add|pass|call)|try\s+(?:using|running))"
    r"\s*:?\s*(?P<b>.+)$"
    r"|(?:^\s*(?:[-*•]\s*)?(?:\w+ly\s+)?|[,;]\s+|\.\s+)(?P<c>(?:use|run|try|set|pass|call|add|install)\s+.*$)",
    re.IGNORECASE | re.MULTILINE,
)
# A way out that turns a check off is not a lesson, however well it works:
# "--break-system-packages", "--no-verify", "trust_remote_code=True", "sudo".
_OVERRIDE = re.compile(
    r"\bat\s+the\s+risk|\boverrid|--(?:no|skip|force|allow|disable|ignore|insecure|unsafe|break)[\w-]*"
    r"|\b\w*(?:trust|unsafe|insecure|skip|ignore|force|allow|disable)\w*\s*=\s*(?:true|1|yes|on)\b"
    r"|\bsudo\b|\bchmod\s+(?:-R\s+)?777\b|\binsecure\b|\bdisable",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"[\w./=:@-]+")
_HAS_OBJECT = re.compile(r"[./_=`'\"-]|\b[A-Z]{2,}|\w+\(")


def hint_line(text: str | None, source: str | None, avoid: str | None = None) -> str | None:
    """``Prefer: <what the tool itself suggests>``, when its output names a concrete fix.

    Never what ``avoid`` (the other line) warns against: a tool often offers
    the unsafe way out too ("pass trust_remote_code=True").
    """
    if not text:
        return None
    avoided = {t.casefold() for t in _TOKEN.findall(avoid or "") if _HAS_OBJECT.search(t)}
    for m in _HINT.finditer(text[-SCAN_LIMIT:]):
        advice = (m.group("a") or m.group("b") or m.group("c") or "").strip()
        if m.group("c"):
            advice = next(iter(split_sentences(advice)), "")  # the advice, not the notes after it
        if m.group("a"):
            # "hint:" lines wrap mid-sentence: the instruction inside them, if any.
            found = instruction_lines(advice)[0]
            advice = found.clause if found is not None else ""
        if not _HAS_OBJECT.search(advice) or _OVERRIDE.search(advice):
            continue
        if any(t.casefold() in avoided for t in _TOKEN.findall(advice)):
            continue  # nothing concrete, or the unsafe way out the tool also offers
        line = fit_line("Prefer: ", sanitize_line(advice, LESSON_CAP))
        if line is not None and not lesson_problems(line, source):
            return line
    return None


# A command the trace shows, and what it printed: "$ cmd" or ">>> expr" lines.
_PROMPT = re.compile(r"^\s*(?:\$|>>>)\s+(?P<cmd>\S.*)$")
_HEAD = re.compile(r"[A-Za-z_][\w.-]*")


def retry_line(action: str | None, text: str | None, source: str | None) -> str | None:
    """``Prefer: <cmd>`` when the trace shows the same tool run again, differently, without failing.

    A retry of the failing command (same head word as the action, other
    arguments) that printed no failure is the success the evidence holds;
    diagnostics (``ls``, ``nvidia-smi``) do not share the action's head.
    """
    if not text or not action:
        return None
    lines = text[-SCAN_LIMIT:].splitlines()
    failed_before = False
    for n, raw in enumerate(lines):
        m = _PROMPT.match(raw)
        if m is None:
            failed_before = failed_before or _FAILURE_WORD.search(raw) is not None
            continue
        cmd = m.group("cmd").strip()
        output = "\n".join(_until_next_prompt(lines[n + 1 :]))
        head = _HEAD.match(cmd)
        if (
            failed_before
            and head is not None
            and len(head.group(0)) > 2
            and head.group(0) in action
            and cmd not in action
            and output.strip()
            and _FAILURE_WORD.search(output) is None
        ):
            if _OVERRIDE.search(cmd):
                continue  # it "worked" by switching a check off
            line = fit_line("Prefer: ", sanitize_line(cmd, LESSON_CAP))
            if line is not None and not lesson_problems(line, source):
                return line
        failed_before = failed_before or _FAILURE_WORD.search(output) is not None
    return None


def failed_command(text: str | None) -> str | None:
    """The command (a ``$ cmd`` / ``>>> expr`` line) whose output is the first to fail, or None.

    Only when the text opens with a command: output that failed before any
    command shows came from the call itself, and the commands after it are
    the agent looking into the failure (``dmesg``, ``nvidia-smi``).
    """
    lines = [ln for ln in (text or "")[-SCAN_LIMIT:].splitlines() if ln.strip()]
    if not lines or _PROMPT.match(lines[0]) is None:
        return None
    command: str | None = None
    for raw in lines:
        m = _PROMPT.match(raw)
        if m is not None:
            command = m.group("cmd").strip()
        elif command and _FAILURE_WORD.search(raw):
            return sanitize_line(command, LESSON_CAP) or None
    return None


def _until_next_prompt(lines: list[str]) -> list[str]:
    out: list[str] = []
    for raw in lines:
        if _PROMPT.match(raw):
            break
        out.append(raw)
    return out
