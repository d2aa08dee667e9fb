"""Every screen as an SVG snapshot of the seeded app (frozen clock, seeded memory broker)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tui.seeded import SCENES, Scene


@pytest.mark.parametrize("scene", SCENES, ids=[s.name for s in SCENES])
def test_each_screen_looks_as_approved(scene: Scene, snap_compare: Any, tmp_path: Any) -> None:
    app = scene.build(audit_log=tmp_path / "audit.jsonl")
    assert snap_compare(app, terminal_size=scene.size, run_before=scene.steps)
