"""Masking of secrets in anything that could be shown: URLs, error texts, headers.

A password must never reach a terminal, a log, a screenshot or an exception, so every string built from a
URL goes through :func:`mask_url`, and free text from drivers (which like to echo the URL they failed on)
goes through :func:`mask_text` before it is printed. A URL whose user part has no password
(``https://TOKEN@host``) carries a token there, so that part is masked whole. Log records pass through
:class:`MaskingFormatter` (installed by :mod:`tqadmin.show.logs`), tracebacks included.

Why every pattern is linear in its input: masking runs on every log line and on every error text, which a
task or a producer can make as long as it likes, under the logging lock. A pattern that may start at every
position of a word and scan to its end is quadratic: 900 KB of letters in a ``task_type`` once held two
worker processes for over ten minutes. So a URL's scheme may start only where a run of scheme characters
starts (the lookbehind), a URL's password is found by one scan to the end of its word (the last ``@`` is
looked for once, in :func:`_masked_userinfo`, not by backtracking from every ``://``), and a secret field
starts only where a word starts. A quoted value left open runs to the end of the text: it is never scanned
again from a later key, and a value cut short stays masked. What is shown of a long text is cut by
:func:`clip_masked`, which masks only what it keeps.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Collection
from typing import Any
from urllib.parse import urlsplit, urlunsplit

MASK = "***"

# Where a URL's scheme may start: where a run of scheme characters starts, its first letter somewhere in it.
_SCHEME = r"(?<![a-zA-Z0-9+.-])[0-9+.-]*[a-zA-Z][a-zA-Z0-9+.-]*://"
# scheme://user:password@host  ->  scheme://user:***@host. A password may hold '@', ':', '/', '?' or '#'
# written raw (people paste generated ones unencoded), so it runs to the last '@' before a blank:
# over-masking a path that holds an '@' is the price of never showing half a password. The match takes the
# whole word after ``user:`` and :func:`_masked_userinfo` finds that last '@' (none: nothing to mask).
_USERINFO = re.compile(rf"(?P<prefix>{_SCHEME}[^:/@\s]*:)(?P<rest>\S*)")
# ...but host:port/path?email=a@b has no password: a port followed by the path is not one.
_PORT_THEN_PATH = re.compile(r"\d{1,5}[/?#]")
# scheme://TOKEN@host (a user part without a password is a token: GitHub's, a cloud API's) -> scheme://***@host
_TOKEN_USER = re.compile(rf"(?P<prefix>{_SCHEME})(?P<secret>[^:/?#\s]+)(?P<at>@)")
# Fields that name a secret, as found in DSNs, query strings, driver messages, JSON and Python reprs:
# password=x, aws_secret_access_key: x, "token": "x", 'client_secret': 'x' (a quoted value up to its quote,
# or to the end of the text when it is left open).
_SECRET_NAME = r"(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|secret[_-]?key)"  # noqa: S105
_SECRET_PAIR = re.compile(
    rf"(?<![\w-])(?P<key>[\w-]*?{_SECRET_NAME}[\"']?\s*[=:]\s*)"
    r"(?P<value>\"(?:\\.|[^\"\\])*(?:\"|\Z)|'(?:\\.|[^'\\])*(?:'|\Z)|[^\s&,;'\"]+)",
    re.IGNORECASE,
)
_SECRET_NAME_PARTS = ("pwd", "passw", "secret", "token", "key")
"""A part of every secret name, case folded as the pattern's IGNORECASE folds (the long s as ``s``, the
Kelvin sign as ``k``): a text holding none of them holds no secret field, and most log lines are not
scanned for one."""
# The last word of a text, tried from word starts only (one scan of each word).
_LAST_WORD = re.compile(r"(?<!\S)\S*\Z")

SHOWN_CHARS = 200
"""How much of a name or a text from a message a log line shows (:func:`shown`)."""
CLIP_MARGIN = 1024
"""Characters kept past a clip's limit while masking: a secret that straddles the limit is masked whole
when it ends within them (one that runs past them is a URL's, masked from its ``://``, or a value masked
to the end: :func:`clip_masked`)."""


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
    masked = text
    if "://" in masked:
        masked = _USERINFO.sub(_masked_userinfo, masked)
        masked = _TOKEN_USER.sub(lambda m: f"{m['prefix']}{MASK}{m['at']}", masked)
    folded = masked.casefold()
    if any(part in folded for part in _SECRET_NAME_PARTS):
        masked = _SECRET_PAIR.sub(_masked_pair, masked)
    for secret in secrets:
        if secret and len(secret) >= 3:
            masked = masked.replace(secret, MASK)
    return masked


def clip_masked(text: str, limit: int) -> str:
    """At most ``limit`` characters of ``text`` (ending in ``...`` when cut), secrets masked.

    A text is cut before it is masked, at ``limit`` + :data:`CLIP_MARGIN` characters, so showing a few
    hundred characters of a text of megabytes costs a few hundred characters; then masked, then cut at
    ``limit``. A secret that straddles the limit is never shown in part: it is masked before the last cut,
    and a URL still open at the first cut (its password may run past it) is masked from its ``://``."""
    head = text[: limit + CLIP_MARGIN]
    cut = len(head) < len(text)
    if cut and not text[len(head)].isspace():
        head = _masked_last_url(head)
    masked = mask_text(head)
    if not cut and len(masked) <= limit:
        return masked
    return masked[: max(limit - 3, 0)] + "..."


def shown(text: str) -> str:
    """``text`` (a job's id, task type or error, anything a message or a task made) as a log line shows it:
    at most :data:`SHOWN_CHARS` characters, secrets masked."""
    return clip_masked(text, SHOWN_CHARS)


def _masked_last_url(head: str) -> str:
    """``head`` with what follows the first ``://`` of its last word masked: that word was cut."""
    word = _LAST_WORD.search(head)
    start = head.find("://", word.start()) if word is not None else -1
    return head if start < 0 else f"{head[: start + 3]}{MASK}"


def _masked_userinfo(match: re.Match[str]) -> str:
    """The password up to the word's last '@' masked; the match as it was when there is none after the
    user part, or when what follows ``host:`` is a port and a path."""
    rest = match["rest"]
    at = rest.rfind("@")
    if at < 1 or _PORT_THEN_PATH.match(rest, 0, at):
        return match[0]
    return f"{match['prefix']}{MASK}{rest[at:]}"


def _masked_pair(match: re.Match[str]) -> str:
    """The value masked, its quotes kept: a JSON document stays JSON (a value left open stays open)."""
    value = match["value"]
    quote = value[0] if value[0] in "\"'" else ""
    closing = quote if len(value) > 1 and value.endswith(quote) else ""
    return f"{match['key']}{quote}{MASK}{closing}"


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
