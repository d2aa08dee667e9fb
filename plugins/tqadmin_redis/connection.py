"""Connect to the Redis a broker URL names (one server or a cluster) and translate its errors.

The URL's ``?prefix=`` query parameter (as on a store URL) puts every key under another prefix than
``tq``, so that tests and several deployments can share one Redis; it is taken off before redis-py sees the
URL. ``rediss://`` is TLS, with redis-py's usual ``ssl_*`` query parameters.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tqadmin.connect.prefixes import split_prefix
from tqadmin.connect.redis_client import ScriptCall, connect, is_cluster, run_scripts, translated
from tqadmin.errors import ConfigError
from tqadmin.plugin.base import BrokerConfig
from tqadmin.show.masking import mask_url
from tqadmin_redis.naming import DEFAULT_PREFIX, GROUP, Layout

FLAG = "--broker"


@dataclass(slots=True)
class Connection:
    """A redis-py client (thread-safe: it pools connections), the key layout, and error translation."""

    client: Any
    layout: Layout
    url: str

    @classmethod
    def open(cls, config: BrokerConfig) -> Connection:
        url, prefix = split_prefix(config.url)
        try:
            layout = Layout(prefix or DEFAULT_PREFIX)
        except ValueError as exc:
            raise ConfigError(f"broker URL {mask_url(url)}: {exc}") from None
        return cls(connect(url, config.timeout_s, where(url), FLAG), layout, url)

    @property
    def where(self) -> str:
        return where(self.url)

    @property
    def cluster(self) -> bool:
        return is_cluster(self.client)

    def translated(self) -> contextlib.AbstractContextManager[None]:
        return translated(self.where, FLAG)

    def run(self, calls: Sequence[ScriptCall]) -> list[Any]:
        return run_scripts(self.client, calls, self.where, FLAG)

    def run_one(self, call: ScriptCall) -> Any:
        return self.run([call])[0]

    def ensure_group(self, stream: str, *, create_stream: bool = True) -> None:
        """The group ``tq`` on ``stream``, reading from its start; one that exists is left as it is."""
        import redis

        with self.translated():
            try:
                self.client.xgroup_create(stream, GROUP, id="0", mkstream=create_stream)
            except redis.ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise

    def masters(self) -> list[Any]:
        """A client per master: SCAN and INFO are per server, and a cluster has several."""
        if not self.cluster:
            return [self.client]
        return [self.client.get_redis_connection(node) for node in self.client.get_primaries()]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()


def where(url: str) -> str:
    return f"Redis broker {mask_url(url)}"
