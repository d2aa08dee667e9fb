"""Open the state store named by a URL (``--store``, ``TQADMIN_STORE_URL``, a profile's ``store``)."""

from __future__ import annotations

from urllib.parse import urlsplit

from tqadmin.errors import ConfigError
from tqadmin.masking import mask_url
from tqadmin.store.base import Retention, StateStore
from tqadmin.store.keys import DEFAULT_PREFIX

SCHEMES = ("redis", "rediss", "sqlite")


def open_store(
    url: str, *, timeout_s: float = 10.0, prefix: str = DEFAULT_PREFIX, retention: Retention | None = None
) -> StateStore:
    """A connected :class:`StateStore` for ``redis://``, ``rediss://`` or ``sqlite:///PATH``.

    ``prefix`` namespaces every key (Redis) or table row (SQLite), so several deployments or tests can share
    one server.
    """
    scheme = urlsplit(url).scheme.lower()
    if scheme in ("redis", "rediss"):
        from tqadmin.store.redis_store import RedisStore

        return RedisStore.from_url(url, timeout_s=timeout_s, prefix=prefix, retention=retention)
    if scheme == "sqlite":
        from tqadmin.store.sqlite_store import SQLiteStore

        return SQLiteStore.from_url(url, timeout_s=timeout_s, prefix=prefix, retention=retention)
    raise ConfigError(
        f"state store URL {mask_url(url)} is not supported (use {', '.join(s + '://' for s in SCHEMES)})"
    )
