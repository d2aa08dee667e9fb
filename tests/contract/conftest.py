"""The harness fixtures: every test here runs once per plugin (``harness``), and the capability checks also
over the variants that declare otherwise (``declaring_harness``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from contract_harness import HARNESSES, VARIANTS, Harness, params  # the harnesses sit beside this file

EVERY_HARNESS = {**HARNESSES, **VARIANTS}


def opened(name: str) -> Iterator[Harness]:
    h = EVERY_HARNESS[name]()
    yield h
    h.close()


@pytest.fixture(params=params(HARNESSES))
def harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    yield from opened(request.param)


@pytest.fixture(params=params(EVERY_HARNESS))
def declaring_harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    yield from opened(request.param)
