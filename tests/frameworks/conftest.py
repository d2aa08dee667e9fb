"""Fixtures that publish through the real Celery and Dramatiq into the local RabbitMQ (and clean up after)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from framework_brokers import CeleryOnRabbit, Rabbit


@pytest.fixture
def rabbit(unique: str) -> Iterator[Rabbit]:
    broker = Rabbit(unique)
    yield broker
    broker.close()


@pytest.fixture
def celery_rabbit(rabbit: Rabbit, tmp_path: Path) -> Iterator[CeleryOnRabbit]:
    celery = CeleryOnRabbit(rabbit, tmp_path)
    yield celery
    celery.app.close()
