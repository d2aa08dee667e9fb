"""What the store contract suite needs to know about each store: how to open it and count effects."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tqadmin.store.completion.base import Effect, StateStore


@dataclass
class EffectKit:
    """Counts a job's side effects the way a user's ``ctx.once`` would write them on this store."""

    effect: Callable[[str], Effect]
    count: Callable[[str], int]


@dataclass
class StoreFactory:
    kind: str
    url: str
    make: Callable[..., StateStore]
    kit: EffectKit
