import json

from tqadmin.plugin.models import Message


def test_export_round_trips_binary_bodies_and_headers() -> None:
    original = Message(
        body=b"\x00\xffbinary", headers={"k": "v", "n": 3}, properties={"priority": 2}, id="m1"
    )
    line = json.dumps(original.to_json())
    restored = Message.from_json(json.loads(line))
    assert restored.body == original.body
    assert restored.headers == {"k": "v", "n": 3}
    assert restored.properties == {"priority": 2}
    assert restored.id == "m1"


def test_text_bodies_are_exported_as_text() -> None:
    doc = Message(body='{"task_type": "é"}'.encode()).to_json()
    assert doc["body_encoding"] == "utf-8"
    assert doc["body"] == '{"task_type": "é"}'
