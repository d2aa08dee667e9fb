"""Masking of secrets in anything that could be shown: URLs, error texts, headers.

A password must never reach a terminal, a log, a screenshot or an exception, so every string built from a
URL goes through :func:`mask_url`, and free text from drivers (which like to echo the URL they failed on)
goes through :func:`mask_text` before it is printed. A URL whose user part has no password
(``https://TOKEN@host``) carries a token there, so that part is masked whole. Log records pass through
:class:`MaskingFormatter` (installed by :mod:`tqadmin.logs`), tracebacks included.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Collection
from typing import Any
from urllib.parse import urlsplit, urlunsplit

MASK = "***"

# scheme://user:password@host  ->  scheme://user:***@host ; the password may hold anything but '@' and space.
_USERINFO = re.compile(r"(?P<prefix>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)(?P<secret>[^@\s]+)(?P<at>@)")
# scheme://TOKEN@host (a user part without a password is a token: GitHub's, a cloud API's) -> scheme://***@host
_TOKEN_USER = re.compile(r"(?P<prefix>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<secret>[^:/@\s]+)(?P<at>@)")
# key=value pairs that name a secret, as found in DSNs, query strings and driver messages.
_SECRET_PAIR = re.compile(
    r"(?P<key>\b(?:password|passwd|pwd|secret|token|aws_secret_access_key|x-amz-security-token)\b\s*[=:]\s*)"
    r"(?P<value>[^\s&,;'\"]+)",
    re.IGNORECASE,
)


def mask_url(url: str) -> str:
    """Return ``url`` with its password replaced by ``***`` (``amqp://user:***@host``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return mask_text(url)
    if parts.password is None and parts.username is None:
        return mask_text(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{MASK}@{host}" if parts.password is None else f"{parts.username or ''}:{MASK}@{host}"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None:
        netloc += f":{port}"
    return mask_text(urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)))


def mask_text(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Mask URL passwords, ``password=...`` pairs and any of the given literal ``secrets`` in free text."""
    masked = _USERINFO.sub(lambda m: f"{m['prefix']}{MASK}{m['at']}", text)
    masked = _TOKEN_USER.sub(lambda m: f"{m['prefix']}{MASK}{m['at']}", masked)
    masked = _SECRET_PAIR.sub(lambda m: f"{m['key']}{MASK}", masked)
    for secret in secrets:
        if secret and len(secret) >= 3:
            masked = masked.replace(secret, MASK)
    return masked


def masked_repr(value: Any, secret_fields: Collection[str] = ()) -> str:
    """A dataclass's repr with ``secret_fields`` shown as ``***`` and credentials in every other field
    masked: what a traceback with locals (Textual's crash report) or a debugger shows of a setting."""
    shown = []
    for spec in dataclasses.fields(value):
        if spec.repr:
            field_value = getattr(value, spec.name)
            text = repr(MASK) if spec.name in secret_fields and field_value else mask_text(repr(field_value))
            shown.append(f"{spec.name}={text}")
    return f"{type(value).__qualname__}({', '.join(shown)})"


class MaskingFormatter(logging.Formatter):
    """A formatter whose every line, exception traceback and stack included, goes through :func:`mask_text`:
    a task's exception that names a URL with a password is logged with ``***`` in its place."""

    def format(self, record: logging.LogRecord) -> str:
        return mask_text(super().format(record))
