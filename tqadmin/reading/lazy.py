"""Readers of the store and the broker that connect on first use and again after a failure, so that a
dashboard or an exporter started while a server is down shows it as an error and recovers by itself."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from tqadmin.errors import NoDatabase


class Closeable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closeable)
R = TypeVar("R")


class Lazy(Generic[C]):
    """A connection opened on first use and dropped after an error, so the next read reconnects."""

    def __init__(self, connect: Callable[[], C]) -> None:
        self._connect = connect
        self._value: C | None = None

    @property
    def value(self) -> C | None:
        """The connection open now, if any."""
        return self._value

    def close(self) -> None:
        value, self._value = self._value, None
        if value is not None:
            with contextlib.suppress(Exception):
                value.close()

    def use(self, read: Callable[[C], R]) -> R:
        if self._value is None:
            self._value = self._connect()
        try:
            return read(self._value)
        except Exception:
            self.close()
            raise


Fresh = Callable[[NoDatabase], str | None]


def never_fresh(_missing: NoDatabase) -> str | None:
    return None


def unless_fresh(read: Callable[[], R], fresh: Fresh, empty: R) -> R:
    """``read()``, or ``empty`` while the store's file is one nothing has created yet (``fresh`` says, as
    :meth:`~tqadmin.config.Settings.not_created_yet` does); the sources open it as readers, which never
    create it, and look again at the next poll."""
    try:
        return read()
    except NoDatabase as missing:
        if fresh(missing) is None:
            raise
        return empty
