"""Masking of secrets in anything that could be shown: URLs, error texts, headers.

A password must never reach a terminal, a log, a screenshot or an exception, so every string built from a
URL goes through :func:`mask_url`, and free text from drivers (which like to echo the URL they failed on)
goes through :func:`mask_text` before it is printed.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

MASK = "***"

# scheme://user:password@host  ->  scheme://user:***@host ; the password may hold anything but '@' and space.
_USERINFO = re.compile(r"(?P<prefix>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)(?P<secret>[^@\s]+)(?P<at>@)")
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
    if parts.password is None:
        return mask_text(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{parts.username or ''}:{MASK}@{host}"
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
    masked = _SECRET_PAIR.sub(lambda m: f"{m['key']}{MASK}", masked)
    for secret in secrets:
        if secret and len(secret) >= 3:
            masked = masked.replace(secret, MASK)
    return masked
