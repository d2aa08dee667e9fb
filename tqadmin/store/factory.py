"""Open the state store named by a URL (``--store``, ``TQADMIN_STORE_URL``, a profile's ``store``).

A ``prefix`` query parameter (``redis://host:6379/0?prefix=staging``) namespaces every key (Redis) or row
(SQLite), so several deployments, the demo and tests can share one server; it is taken off the URL before the
driver sees it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from tqadmin.errors import ConfigError
from tqadmin.masking import mask_url
from tqadmin.prefixes import split_prefix
from tqadmin.store.base import Retention, StateStore
from tqadmin.store.keys import DEFAULT_PREFIX

SCHEMES = ("redis", "rediss", "sqlite")


def open_store(
    url: str,
    *,
    timeout_s: float = 10.0,
    prefix: str | None = None,
    retention: Retention | None = None,
    create: bool = True,
) -> StateStore:
    """A connected :class:`StateStore` for ``redis://``, ``rediss://`` or ``sqlite:///PATH``.

    ``prefix`` given here wins over the URL's ``prefix`` parameter; the default is ``tq``. A reader passes
    ``create=False``: an SQLite file that does not exist is then :class:`~tqadmin.errors.NoDatabase`
    instead of a new, empty store left behind.
    """
    url, url_prefix = split_prefix(url)
    chosen = prefix or url_prefix or DEFAULT_PREFIX
    scheme = urlsplit(url).scheme.lower()
    try:
        if scheme in ("redis", "rediss"):
            from tqadmin.store.redis_store import RedisStore

            return RedisStore.from_url(url, timeout_s=timeout_s, prefix=chosen, retention=retention)
        if scheme == "sqlite":
            from tqadmin.store.sqlite_store import SQLiteStore

            return SQLiteStore.from_url(
                url, timeout_s=timeout_s, prefix=chosen, retention=retention, create=create
            )
    except ValueError as exc:
        raise ConfigError(f"state store URL {mask_url(url)}: {exc}") from None
    raise ConfigError(
        f"state store URL {mask_url(url)} is not supported (use {', '.join(s + '://' for s in SCHEMES)})"
    )
