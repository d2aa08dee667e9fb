"""Trigger requests on Redis: a HASH ``{<prefix>:tqcron:<namespace>}:triggers`` from the request's ident
to its JSON, under the cron store's own hash tag (one slot with the cron's keys: fine on Redis Cluster)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tqadmin.connect.redis_client import connect, server_time, text, translated
from tqadmin.store.keys import check_prefix
from tqadmin.store.redis_errors import FLAG, where
from tqadmin.store.triggers.base import TriggerRequest, TriggerRequests

if TYPE_CHECKING:
    import redis


class RedisTriggers(TriggerRequests):
    def __init__(
        self, client: redis.Redis, namespace: str, *, url: str = "redis://", prefix: str | None = None
    ) -> None:
        self._client = client
        self._url = url
        tag = "{" + (f"{check_prefix(prefix)}:" if prefix else "") + "tqcron:" + namespace + "}"
        self._key = f"{tag}:triggers"

    @classmethod
    def from_url(
        cls, url: str, namespace: str, *, timeout_s: float = 10.0, prefix: str | None = None
    ) -> RedisTriggers:
        return cls(connect(url, timeout_s, where(url), FLAG), namespace, url=url, prefix=prefix)

    def request(self, schedule: str, who: str) -> TriggerRequest:
        document = json.dumps({"schedule": schedule, "who": who})
        with translated(where(self._url), FLAG):
            seconds, micros = server_time(self._client, self._key)
            ident = seconds * 1_000_000 + micros
            while not self._client.hsetnx(self._key, str(ident), document):
                ident += 1
        return TriggerRequest(schedule, ident, who)

    def waiting(self) -> list[TriggerRequest]:
        with translated(where(self._url), FLAG):
            raw = self._client.hgetall(self._key)
        found = []
        for ident, document in raw.items():
            try:
                fields = json.loads(text(document))
                found.append(
                    TriggerRequest(str(fields["schedule"]), int(text(ident)), str(fields.get("who", "")))
                )
            except (ValueError, KeyError, TypeError):
                continue  # not a request tqadmin wrote
        return sorted(found, key=lambda r: r.ident)

    def done(self, request: TriggerRequest) -> None:
        with translated(where(self._url), FLAG):
            self._client.hdel(self._key, str(request.ident))

    def close(self) -> None:
        self._client.close()
