"""Every screen as an SVG snapshot of the seeded app (frozen clock, seeded memory broker)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tqadmin
from tests.tui.seeded import SCENES, Scene


@pytest.mark.parametrize("scene", SCENES, ids=[s.name for s in SCENES])
def test_each_screen_looks_as_approved(scene: Scene, snap_compare: Any, tmp_path: Any) -> None:
    app = scene.build(audit_log=tmp_path / "audit.jsonl")
    assert snap_compare(app, terminal_size=scene.size, run_before=scene.steps)


def test_the_seeded_scenes_are_test_scaffolding_not_part_of_the_package() -> None:
    """The package once shipped them (a RabbitMQ model with x-death parsing of its own); they are a memory
    broker seeded under tests/ now, which scripts/screenshots imports from the checkout."""
    package = Path(tqadmin.__file__).parent
    assert [p.name for p in package.rglob("*.py") if p.stem in {"fake", "seeded", "seeding"}] == []
