"""Open what the state store named by a URL (``--store``, ``TQADMIN_STORE_URL``, a profile's ``store``) keeps:
its completion and heartbeats, history, pauses, the cron's lease and trigger requests. The one place that maps
a scheme to an implementation (:func:`by_scheme`); a driver is imported only for the URL given, and no
contract imports an implementation.

A ``prefix`` query parameter (``redis://host:6379/0?prefix=staging``) namespaces every key (Redis) or row
(SQLite), so several deployments, the demo and tests can share one server; it is taken off the URL before the
driver sees it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

from tqadmin.connect.prefixes import split_prefix
from tqadmin.errors import ConfigError
from tqadmin.files.access import Access
from tqadmin.show.masking import mask_url
from tqadmin.store.completion.base import Retention, StateStore
from tqadmin.store.cron.base import CronStore, check_namespace
from tqadmin.store.history.base import DEFAULT_MAX_DEPARTED, DEFAULT_MAX_SERIES, TIERS, HistoryStore, Tier
from tqadmin.store.keys import DEFAULT_PREFIX
from tqadmin.store.pauses.base import PauseStore
from tqadmin.store.triggers.base import TriggerRequests

SCHEMES = ("redis", "rediss", "sqlite")
T = TypeVar("T")


def by_scheme(url: str, what: str, openers: Mapping[str, Callable[[], T]]) -> T:
    """``openers["redis"]()`` for ``redis://`` and ``rediss://``, ``openers["sqlite"]()`` for ``sqlite://``:
    what every opener of the state store's URL shares (the state store, its history, pauses, cron and
    triggers), so that a driver is imported only for the URL given, and a URL of another scheme or one the
    driver refuses is one :class:`ConfigError` naming ``what``, masked."""
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
        from tqadmin.store.completion.redis import RedisStore

        return RedisStore.from_url(url, timeout_s=timeout_s, prefix=chosen, retention=retention)

    def on_sqlite() -> StateStore:
        from tqadmin.store.completion.sqlite import SQLiteStore

        return SQLiteStore.from_url(
            url, timeout_s=timeout_s, prefix=chosen, retention=retention, access=access
        )

    return by_scheme(url, "state store", {"redis": on_redis, "sqlite": on_sqlite})


def open_history(
    url: str,
    *,
    timeout_s: float = 10.0,
    access: Access = Access.CREATE,
    max_series: int = DEFAULT_MAX_SERIES,
    max_departed: int = DEFAULT_MAX_DEPARTED,
    prefix: str | None = None,
    tiers: Sequence[Tier] = TIERS,
) -> HistoryStore:
    """The history kept in the state store at ``url`` (``redis://``, ``rediss://``, ``sqlite:///PATH``),
    under the same prefix as :func:`open_store` uses. ``access`` says what the caller does with an SQLite
    file (:class:`~tqadmin.files.access.Access`): a reader's is ``READ``, which writes nothing and finds a
    file that does not exist :class:`~tqadmin.errors.NoDatabase`."""
    url, url_prefix = split_prefix(url)
    chosen = prefix or url_prefix or DEFAULT_PREFIX
    if max_series < 0 or max_departed < 0:
        raise ConfigError("the history's max_series and max_departed must be 0 or more")
    options: dict[str, Any] = {
        "url": url,
        "prefix": chosen,
        "max_series": max_series,
        "max_departed": max_departed,
        "tiers": tiers,
    }

    def on_redis() -> HistoryStore:
        from tqadmin.store.history.redis import RedisHistory, redis_client

        return RedisHistory(redis_client(url, timeout_s), **options)

    def on_sqlite() -> HistoryStore:
        from tqadmin.files.sqlite import path_of
        from tqadmin.store.history.sqlite import SQLiteHistory

        return SQLiteHistory(path_of(url), timeout_s=timeout_s, access=access, **options)

    return by_scheme(url, "history store", {"redis": on_redis, "sqlite": on_sqlite})


def open_pauses(
    url: str, *, timeout_s: float = 10.0, prefix: str | None = None, access: Access = Access.CREATE
) -> PauseStore:
    """The pause set in the state store at ``url`` (``redis://``, ``rediss://``, ``sqlite:///PATH``), under
    the same prefix as :func:`open_store` uses. A reader passes ``access=Access.READ`` (an SQLite file is
    then read without writing, and one not created yet is :class:`~tqadmin.errors.NoDatabase`)."""
    url, url_prefix = split_prefix(url)
    chosen = prefix or url_prefix or DEFAULT_PREFIX

    def on_redis() -> PauseStore:
        from tqadmin.store.pauses.redis import RedisPauses

        return RedisPauses.from_url(url, timeout_s=timeout_s, prefix=chosen)

    def on_sqlite() -> PauseStore:
        from tqadmin.files.sqlite import path_of
        from tqadmin.store.pauses.sqlite import SQLitePauses

        return SQLitePauses(path_of(url), url=url, prefix=chosen, timeout_s=timeout_s, access=access)

    return by_scheme(url, "state store", {"redis": on_redis, "sqlite": on_sqlite})


def open_triggers(
    url: str, namespace: str, *, timeout_s: float = 10.0, access: Access = Access.CREATE
) -> TriggerRequests:
    """The trigger requests of cron ``namespace`` in the state store at ``url`` (its ``?prefix=`` too)."""
    url, prefix = split_prefix(url)
    chosen = prefix or DEFAULT_PREFIX

    def on_redis() -> TriggerRequests:
        from tqadmin.store.triggers.redis import RedisTriggers

        return RedisTriggers.from_url(url, namespace, timeout_s=timeout_s, prefix=prefix)

    def on_sqlite() -> TriggerRequests:
        from tqadmin.files.sqlite import path_of
        from tqadmin.store.triggers.sqlite import SQLiteTriggers

        return SQLiteTriggers(
            path_of(url), namespace, url=url, prefix=chosen, timeout_s=timeout_s, access=access
        )

    return by_scheme(url, "state store", {"redis": on_redis, "sqlite": on_sqlite})


def open_cron_store(
    url: str, namespace: str = "default", timeout_s: float = 10.0, *, access: Access = Access.CREATE
) -> CronStore:
    """The cron store at ``url`` (``redis://``, ``rediss://`` or ``sqlite:///PATH``; its ``?prefix=`` is
    read by the store). A reader passes ``access=Access.READ``: an SQLite file is then read without writing
    anything, and one that does not exist is not created."""
    check_namespace(namespace)

    def on_redis() -> CronStore:
        from tqadmin.store.cron.redis import RedisCronStore

        return RedisCronStore.from_url(url, namespace, timeout_s)

    def on_sqlite() -> CronStore:
        from tqadmin.store.cron.sqlite import SQLiteCronStore

        return SQLiteCronStore.from_url(url, namespace, timeout_s, access=access)

    return by_scheme(url, "cron store", {"redis": on_redis, "sqlite": on_sqlite})
