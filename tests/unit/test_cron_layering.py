import subprocess
import sys

import pytest

CRON_PURE = [
    "tqadmin.pipeline.cron.scheduler",
    "tqadmin.pipeline.cron.status",
    "tqadmin.pipeline.cron.publishing",
    "tqadmin.store.cron.base",
    "tqadmin.commands.cron",
    "tqadmin.commands.schedules",
]


@pytest.mark.parametrize("module", CRON_PURE)
def test_the_cron_logic_imports_no_driver_until_it_connects(module: str) -> None:
    code = (
        f"import sys, importlib; importlib.import_module({module!r}); "
        "print(','.join(m for m in ('redis', 'pika', 'textual', 'httpx', 'boto3') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "", f"{module} pulled in {loaded.stdout.strip()}"
