"""Pipeline, store contract and telemetry import no driver and no Textual; Redis loads only on use."""

import pytest
from test_layering import test_module_imports_no_driver_and_no_textual as imports_no_driver

PURE = [
    "tqadmin.pipeline.retry",
    "tqadmin.pipeline.tasks",
    "tqadmin.store",
    "tqadmin.store.base",
    "tqadmin.store.keys",
    "tqadmin.store.sqlite_store",
    "tqadmin.telemetry.window",
    "tqadmin.commands.workers",
    "tqadmin.commands.stats",
]


@pytest.mark.parametrize("module", PURE)
def test_pipeline_core_module_imports_no_driver_and_no_textual(module: str) -> None:
    imports_no_driver(module)
