"""One route to an ack: in the pipeline only the settler acks, retries or dead-letters a delivery.

"Where is this job acked?" must have one answer, so the exactly-once rules (mark before ack, successor
confirmed before the original is acked, the gate left only once settled) are read and kept in one place. The
check reads the source (AST), so a new module of ``tqadmin/pipeline`` is checked the day it is added. A
consumer that wraps another (``HoldingConsumer``) may pass its own ``ack`` on to the one it wraps: that is the
same call going through, not a second route.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import tqadmin.pipeline

PIPELINE = Path(tqadmin.pipeline.__file__).parent
SETTLER = PIPELINE / "settler.py"
VERBS = frozenset({"ack", "retry_later", "dead_letter"})


def settling_calls(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, verb) of every ``x.ack(...)``, ``x.retry_later(...)`` and ``x.dead_letter(...)`` in ``tree``,
    except a consumer's method passing its own verb on to the consumer it wraps."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, consumer_class: bool, method: str | None) -> None:
        if isinstance(node, ast.ClassDef):
            bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
            consumer_class, method = "Consumer" in bases, None
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            method = node.name
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in VERBS
            and not (consumer_class and method == node.func.attr)
        ):
            found.append((node.lineno, node.func.attr))
        for child in ast.iter_child_nodes(node):
            visit(child, consumer_class, method)

    visit(tree, False, None)
    return found


def test_no_module_of_the_pipeline_but_the_settler_acks_retries_or_dead_letters() -> None:
    modules = sorted(PIPELINE.rglob("*.py"))
    assert SETTLER in modules
    offenders = [
        f"{path.relative_to(PIPELINE.parent.parent)}:{line}: .{verb}("
        for path in modules
        if path != SETTLER
        for line, verb in settling_calls(ast.parse(path.read_text(), str(path)))
    ]
    assert offenders == [], "only tqadmin/pipeline/settler.py may settle a delivery"


def test_the_settler_calls_each_of_the_brokers_verbs_in_one_place() -> None:
    calls = settling_calls(ast.parse(SETTLER.read_text(), str(SETTLER)))
    assert Counter(verb for _, verb in calls) == dict.fromkeys(VERBS, 1)


def test_the_check_finds_an_ack_outside_a_wrappers_own_ack() -> None:
    source = """
class Wrapper(Consumer):
    def ack(self, delivery):
        return self.inner.ack(delivery)

    def release(self, deliveries):
        self.inner.dead_letter(deliveries[0], {})

class Room:
    def ack(self, delivery):
        self.consumer.ack(delivery)

def settle(consumer, delivery):
    consumer.retry_later(delivery, 1.0, {})
"""
    assert [verb for _, verb in settling_calls(ast.parse(source))] == ["dead_letter", "ack", "retry_later"]
