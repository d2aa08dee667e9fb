"""The admin engine and its commands import no driver and no Textual: brokers come in through plugins."""

import pytest
from test_layering import test_module_imports_no_driver_and_no_textual as imports_no_driver

PURE = [
    "tqadmin.admin.transfer",
    "tqadmin.admin.scan",
    "tqadmin.admin.purge",
    "tqadmin.admin.importer",
    "tqadmin.admin.jsonl",
    "tqadmin.commands.move",
    "tqadmin.commands.replay",
    "tqadmin.commands.peek",
    "tqadmin.commands.dead_letters",
    "tqadmin.commands.purge",
    "tqadmin.commands.export",
    "tqadmin.commands.import_",
    "tqadmin.commands.delete",
]


@pytest.mark.parametrize("module", PURE)
def test_admin_module_imports_no_driver_and_no_textual(module: str) -> None:
    imports_no_driver(module)
