"""Pipeline, store contract and telemetry import no driver and no Textual; Redis loads only on use."""

import subprocess
import sys

import pytest

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
FORBIDDEN = ["textual", "pika", "redis", "boto3", "botocore", "httpx"]


@pytest.mark.parametrize("module", PURE)
def test_module_imports_no_driver_and_no_textual(module: str) -> None:
    code = (
        f"import sys, importlib; importlib.import_module({module!r}); "
        f"print(','.join(m for m in {FORBIDDEN!r} if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "", f"{module} pulled in {loaded}"
