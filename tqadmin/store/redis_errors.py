"""How a state store on Redis is named in an error: ``state store <URL, masked>``, and the ``--store`` flag
that sets it. What the Redis implementations of every contract share, so that redis-py's exceptions read the
same whichever of them met one."""

from __future__ import annotations

import contextlib

from tqadmin.connect.redis_client import translated as translated_at
from tqadmin.show.masking import mask_url

FLAG = "--store"


def where(url: str) -> str:
    return f"state store {mask_url(url)}"


def translated(url: str) -> contextlib.AbstractContextManager[None]:
    """redis-py's exceptions as tqadmin's errors, naming the store and never its password."""
    return translated_at(where(url), FLAG)
