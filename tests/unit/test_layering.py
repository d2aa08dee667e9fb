"""The architecture as a test: the contract and pipeline import no driver and no Textual."""

import subprocess
import sys

import pytest

PURE = [
    "tqadmin",
    "tqadmin.plugin",
    "tqadmin.admin.filters",
    "tqadmin.errors",
    "tqadmin.config",
    "tqadmin.cli",
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
