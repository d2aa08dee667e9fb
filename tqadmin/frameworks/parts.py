"""A message as the readers see it: headers with text keys, the body parsed as JSON at most once."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

from tqadmin.frameworks.decoding import parse_json, text_keys


class MessageParts:
    """What every framework reader looks at. ``known_id`` is the id the broker already gave the message
    (an AMQP ``message_id``, a Redis key's suffix), for formats that do not repeat it in the message."""

    def __init__(self, headers: Mapping[Any, Any], body: bytes, known_id: str | None = None) -> None:
        self.headers = text_keys(headers)
        self.body = body
        self.known_id = known_id

    @cached_property
    def json(self) -> Any:
        """The body as a JSON value, or :data:`~tqadmin.frameworks.decoding.NOT_JSON`."""
        return parse_json(self.body)

    @property
    def object(self) -> dict[str, Any] | None:
        """The body when it is a JSON object."""
        value = self.json
        return value if isinstance(value, dict) else None
