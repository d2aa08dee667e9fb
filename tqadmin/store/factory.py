"""Open the state store named by a URL (``--store``, ``TQADMIN_STORE_URL``, a profile's ``store``).

A ``prefix`` query parameter (``redis://host:6379/0?prefix=staging``) namespaces every key (Redis) or row
(SQLite), so several deployments, the demo and tests can share one server; it is taken off the URL before the
driver sees it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar
from urllib.parse import urlsplit

from tqadmin.connect.prefixes import split_prefix
from tqadmin.errors import ConfigError
from tqadmin.files.access import Access
from tqadmin.show.masking import mask_url
from tqadmin.store.base import Retention, StateStore
from tqadmin.store.keys import DEFAULT_PREFIX

SCHEMES = ("redis", "rediss", "sqlite")
T = TypeVar("T")


def by_scheme(url: str, what: str, openers: Mapping[str, Callable[[], T]]) -> T:
    """``openers["redis"]()`` for ``redis://`` and ``rediss://``, ``openers["sqlite"]()`` for ``sqlite://``:
    what every opener of the state store's URL shares (the state store, its history), so that a driver is
    imported only for the URL given and a URL the driver refuses is one :class:`ConfigError` naming ``what``,
    masked."""
    scheme = urlsplit(url).scheme.lower()
    opener = openers.get("redis" if scheme == "rediss" else scheme)
    if opener is None:
        raise ConfigError(
            f"{what} URL {mask_url(url)} is not supported (use {', '.join(s + '://' for s in SCHEMES)})"
        )
    try:
        return opener()
    except ValueError as exc:
        raise ConfigError(f"{what} URL {mask_url(url)}: {exc}") from None


def open_store(
    url: str,
    *,
    timeout_s: float = 10.0,
    prefix: str | None = None,
    retention: Retention | None = None,
    access: Access = Access.CREATE,
) -> StateStore:
    """A connected :class:`StateStore` for ``redis://``, ``rediss://`` or ``sqlite:///PATH``.

    ``prefix`` given here wins over the URL's ``prefix`` parameter; the default is ``tq``. A reader passes
    ``access=Access.READ``: an SQLite file is then read without writing anything in it or beside it, and
    one that does not exist is :class:`~tqadmin.errors.NoDatabase` instead of a new, empty store left
    behind.
    """
    url, url_prefix = split_prefix(url)
    chosen = prefix or url_prefix or DEFAULT_PREFIX

    def on_redis() -> StateStore:
        from tqadmin.store.redis_store import RedisStore

        return RedisStore.from_url(url, timeout_s=timeout_s, prefix=chosen, retention=retention)

    def on_sqlite() -> StateStore:
        from tqadmin.store.sqlite_store import SQLiteStore

        return SQLiteStore.from_url(
            url, timeout_s=timeout_s, prefix=chosen, retention=retention, access=access
        )

    return by_scheme(url, "state store", {"redis": on_redis, "sqlite": on_sqlite})
