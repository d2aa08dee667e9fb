"""The architecture as a test: only the TUI imports Textual, and the driver-free layers import no driver.

Every module is imported in a fresh interpreter, so what it pulls in is exactly what ``sys.modules`` shows.
Modules are discovered, not listed, so a new module is checked the day it is added.
"""

import ast
import importlib.util
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import tqadmin

DRIVERS = ["pika", "redis", "boto3", "botocore", "httpx"]
# Layers that must work without any driver installed; plugins and store implementations import theirs lazily.
DRIVER_FREE = (
    "tqadmin.plugin",
    "tqadmin.frameworks",
    "tqadmin.pipeline",
    "tqadmin.telemetry",
    "tqadmin.admin",
    "tqadmin.commands",
)
DRIVER_FREE_MODULES = {"tqadmin", "tqadmin.cli", "tqadmin.config", "tqadmin.errors", "tqadmin.store.base"}

MODULES = sorted(
    name
    for _, name, _ in pkgutil.walk_packages(tqadmin.__path__, "tqadmin.")
    if not name.startswith("tqadmin.tui")
)


def loaded_after_import(module: str, candidates: list[str]) -> list[str]:
    code = (
        f"import sys, importlib; importlib.import_module({module!r}); "
        f"print(','.join(m for m in {candidates!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return [m for m in result.stdout.strip().split(",") if m]


@pytest.mark.parametrize("module", ["tqadmin", *MODULES])
def test_only_the_tui_imports_textual_and_pure_layers_import_no_driver(module: str) -> None:
    driver_free = module in DRIVER_FREE_MODULES or module.startswith(DRIVER_FREE)
    forbidden = ["textual", *(DRIVERS if driver_free else [])]
    assert loaded_after_import(module, forbidden) == [], f"{module} imports what its layer must not"


FRAMEWORKS = [name for name in MODULES if name.startswith("tqadmin.frameworks")]
# Reading other frameworks' messages sits just above the contract, below the admin actions that use it.
FRAMEWORKS_MAY_IMPORT = ("tqadmin.frameworks", "tqadmin.plugin", "tqadmin.errors")
DESERIALISERS = ["pickle", "_pickle", "shelve", "dill", "cloudpickle"]


def tqadmin_imports(module: str) -> set[str]:
    """The tqadmin modules ``module`` names in its import statements (``import tqadmin`` pulls in more)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n for n in names if n == "tqadmin" or n.startswith("tqadmin.")}


@pytest.mark.parametrize("module", FRAMEWORKS)
def test_the_framework_readers_sit_below_the_admin_layer_and_never_unpickle(module: str) -> None:
    higher = {n for n in tqadmin_imports(module) if not n.startswith(FRAMEWORKS_MAY_IMPORT)}
    assert higher == set(), f"{module} imports a layer above it"
    assert loaded_after_import(module, DESERIALISERS) == [], f"{module} loads a deserialiser"
