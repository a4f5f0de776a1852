"""Log records of the library's loggers carry no secret.

An exception's message may quote its input (a URL with a password, a
command line with a token), and so may a message that names a context.
``RedactingFilter`` runs ``redact_secrets`` over the formatted message and
the formatted traceback of every record a library logger emits, before
any handler sees it. Records are only touched when redaction changes
something, so a host's formatter and handlers see them as before.
"""

from __future__ import annotations

import logging

from .secrets import redact_secrets

__all__ = ["RedactingFilter", "library_logger", "redact_library_logs"]

ROOT = "memos_feedback"


class RedactingFilter(logging.Filter):
    """Replaces secrets in a record's message and traceback; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: logging reports it itself
            return True
        redacted = redact_secrets(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        if record.exc_info and not record.exc_text:
            trace = logging.Formatter().formatException(record.exc_info)
            clean = redact_secrets(trace)
            if clean != trace:
                record.exc_text = clean
        return True


_FILTER = RedactingFilter()


def library_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` with the redacting filter attached (once)."""
    logger = logging.getLogger(name)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    return logger


# Loggers of the layers below ``text`` (they cannot import this module, so
# they call ``logging.getLogger`` themselves). Named here so that the edge can
# attach the filter before their module is even imported: ``getLogger``
# hands the same object, filter included, to the module later.
# tests/text/test_logs.py keeps this list complete.
BELOW_TEXT = (
    "memos_feedback.classifier",
    "memos_feedback.llm_classify",
    "memos_feedback.events",
    "memos_feedback.embeddings",
    "memos_feedback.hooks",
)


def redact_library_logs() -> None:
    """Attach the filter to the library's loggers: those below ``text`` and any created so far.

    Called at the edges where a host comes in (``attach_feedback_subscriber``,
    the CLI), not by the store: opening a database is no place to change logging.
    """
    for name in BELOW_TEXT:
        library_logger(name)
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and (name == ROOT or name.startswith(ROOT + ".")):
            library_logger(name)
