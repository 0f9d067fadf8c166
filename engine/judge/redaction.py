"""API keys are never echoed: in error messages, raw answers, results or log records.

A judge registers the keys it was given (`register_secrets`) and redacts its own texts with
`redact`. Libraries log what servers answer (instructor logs each failed attempt with the error
body, which a server may fill with the request's headers), so every log record made in this
process is redacted as it is made, whichever logger makes it, once a key is registered.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from ..core import environment

MIN_SECRET_LENGTH = 6  # shorter values ("x", "test") would blank out ordinary words

# every API key given to a judge in this process
_SECRETS: set[str] = set()
_FACTORY_INSTALLED = False


def kept_secrets(values: Iterable[str | None]) -> tuple[str, ...]:
    """The values long enough to be keys (None and short placeholders dropped)."""
    return tuple(v for v in values if v and len(v) >= MIN_SECRET_LENGTH)


def redact(text: str | None, secrets: Iterable[str]) -> str | None:
    """`text` with every secret replaced by ``***`` (None and '' unchanged)."""
    if text:
        for secret in secrets:
            if secret in text:
                text = text.replace(secret, "***")
    return text


def register_secrets(secrets: tuple[str, ...]) -> None:
    """Redact `secrets` from every log record made from now on in this process."""
    global _FACTORY_INSTALLED
    _SECRETS.update(secrets)
    if secrets and not _FACTORY_INSTALLED:
        _FACTORY_INSTALLED = True
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            _redact_record(record)
            return record

        logging.setLogRecordFactory(factory)


def environment_keys() -> tuple[str, ...]:
    """Values of the environment's ``*_API_KEY`` variables (`engine.core.environment.
    api_key_values`): providers reached through instructor's `from_provider` read their own
    (``GROQ_API_KEY``, ``MISTRAL_API_KEY``…), so every such key is redacted, not only the one a
    judge was given."""
    return environment.api_key_values()


def _redact_record(record: logging.LogRecord) -> None:
    """Replace any registered API key in the record's message and traceback text."""
    try:
        message = record.getMessage()
    except Exception:  # a malformed log call: leave it to logging's own error handling
        return
    secrets = tuple(_SECRETS)
    redacted = redact(message, secrets)
    if redacted != message:
        record.msg, record.args = redacted, None
    if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
        record.exc_text = redact(logging.Formatter().formatException(record.exc_info), secrets)


__all__ = ["redact", "register_secrets", "environment_keys", "kept_secrets"]
