"""Shared fixtures: unique names so tests run in parallel, and clean-up of what they create."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
MANAGEMENT_URL = "http://127.0.0.1:15672/"
REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture
def unique() -> str:
    """A short unique token for queue and key names."""
    return uuid.uuid4().hex[:10]


@pytest.fixture
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No user config, audit log in tmp: a test never reads or writes the developer's own files."""
    for name in ("TQADMIN_PROFILE", "TQADMIN_BROKER_URL", "TQADMIN_MANAGEMENT_URL", "TQADMIN_STORE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TQADMIN_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    yield tmp_path
