"""``Rule``: one linear pattern, the group that is the secret, and when it is worth trying.

Most detectors are a few rules: a bounded pattern matched where a literal
it needs is in the text (``guard``, a C-speed substring test on the
lower-cased text), the group holding the value, and a check of that value
(by default: no filter calls it a placeholder).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from .engine import Detector, Scan, Span
from .filters import is_placeholder

__all__ = ["Rule", "RuleDetector", "value_is_secret"]


def value_is_secret(match: re.Match[str], group: int) -> bool:
    """The default check: no filter calls the group's value a placeholder."""
    return not is_placeholder(match.group(group))


@dataclass(frozen=True)
class Rule:
    """A pattern whose ``group`` is a secret's value where ``accept`` agrees."""

    pattern: re.Pattern[str]
    group: int = 1
    # Any of these lower-case literals must be in the text for the rule to be tried…
    guard: tuple[str, ...] = ()
    # …and, tested first, any of these characters (one is a memchr: 0.1 µs on 10 kB) or strings.
    pre: str | tuple[str, ...] = ""
    # Words of the guard as written (case matters: "AK", "SK").
    cased: bool = False
    # The words are Chinese: an ASCII text (a flag CPython keeps: no scan) cannot hold them.
    non_ascii: bool = False
    accept: Callable[[re.Match[str], int], bool] = value_is_secret
    # The span to replace when it is not the group's own (a value without its trailing punctuation).
    span: Callable[[re.Match[str], int], Span] | None = None

    def find(self, scan: Scan) -> Iterator[Span]:
        if self.worth_trying(scan):
            yield from self.matches(scan)

    def matches(self, scan: Scan) -> Iterator[Span]:
        """The spans of accepted matches (``find`` without the check of ``worth_trying``)."""
        text, pos = scan.text, 0
        while (match := self.pattern.search(text, pos)) is not None:
            if self.accept(match, self.group):
                yield self.span(match, self.group) if self.span else match.span(self.group)
                pos = max(match.end(), match.start() + 1)
            else:
                # A rejected match hides nothing: the search goes on inside it
                # ("-a 0:(-a 0:S3cret": the first is no password, the second
                # is), as a second pass would find it once the first is gone.
                pos = match.start() + 1

    def worth_trying(self, scan: Scan) -> bool:
        """Whether the characters and words the pattern needs are in the text."""
        # Every text runs every rule's check: map over a bound method keeps
        # the loop in C (a generator costs a Python frame per rule).
        text = scan.text
        if self.non_ascii and text.isascii():
            return False
        if self.pre and not any(map(text.__contains__, self.pre)):
            return False
        if not self.guard:
            return True
        if self.cased:
            return any(map(text.__contains__, self.guard))
        return scan.has_any(self.guard)


class RuleDetector(Detector):
    """A detector made of ``rules``: the spans of all of them."""

    rules: tuple[Rule, ...] = ()

    def spans(self, scan: Scan) -> Iterable[Span]:
        for rule in self.rules:
            # Checked here too: most rules are not worth trying, and a
            # generator made for nothing costs more than the check.
            if rule.worth_trying(scan):
                yield from rule.matches(scan)
