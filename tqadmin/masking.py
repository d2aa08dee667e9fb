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

# scheme://user:password@host  ->  scheme://user:***@host. A password may hold '@', ':', '/', '?' or '#'
# written raw (people paste generated ones unencoded), so it runs to the last '@' before a blank:
# over-masking a path that holds an '@' is the price of never showing half a password.
_USERINFO = re.compile(r"(?P<prefix>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)(?P<secret>\S+)(?P<at>@)")
# ...but host:port/path?email=a@b has no password: a port followed by the path is not one.
_PORT_THEN_PATH = re.compile(r"\d{1,5}[/?#]")
# scheme://TOKEN@host (a user part without a password is a token: GitHub's, a cloud API's) -> scheme://***@host
_TOKEN_USER = re.compile(r"(?P<prefix>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<secret>[^:/?#\s]+)(?P<at>@)")
# Fields that name a secret, as found in DSNs, query strings, driver messages, JSON and Python reprs:
# password=x, aws_secret_access_key: x, "token": "x", 'client_secret': 'x' (a quoted value up to its quote).
_SECRET_NAME = r"(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|secret[_-]?key)"  # noqa: S105
_SECRET_PAIR = re.compile(
    rf"(?<![\w-])(?P<key>[\w-]*?{_SECRET_NAME}[\"']?\s*[=:]\s*)"
    r"(?P<value>\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|[^\s&,;'\"]+)",
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
    if "@" in url.partition(parts.netloc)[2]:  # a raw '/', '?' or '#' in the password cut the netloc short
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
    masked = _USERINFO.sub(_masked_userinfo, text)
    masked = _TOKEN_USER.sub(lambda m: f"{m['prefix']}{MASK}{m['at']}", masked)
    masked = _SECRET_PAIR.sub(_masked_pair, masked)
    for secret in secrets:
        if secret and len(secret) >= 3:
            masked = masked.replace(secret, MASK)
    return masked


def _masked_userinfo(match: re.Match[str]) -> str:
    if _PORT_THEN_PATH.match(match["secret"]):
        return match[0]
    return f"{match['prefix']}{MASK}{match['at']}"


def _masked_pair(match: re.Match[str]) -> str:
    """The value masked, its quotes kept: a JSON document stays JSON."""
    value = match["value"]
    quote = value[0] if value[0] in "\"'" else ""
    return f"{match['key']}{quote}{MASK}{quote}"


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
