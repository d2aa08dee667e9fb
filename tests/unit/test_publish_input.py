"""What `tqadmin publish` accepts as a job: the same rules the worker applies, refused before connecting."""

import json
from pathlib import Path

import pytest

from tqadmin.cli import main

UNREACHABLE = ["--broker", "amqp://guest:guest@127.0.0.1:1/%2F"]


@pytest.mark.parametrize(
    "text",
    [
        '{"task_type": "t", "x": NaN}',
        '{"task_type": "t", "x": Infinity}',
        '{"task_type": "t", "x": ' + "[" * 40 + "]" * 40 + "}",
    ],
    ids=["NaN", "Infinity", "too deep"],
)
def test_a_job_the_worker_would_dead_letter_as_malformed_is_a_usage_error_naming_the_option(
    text: str, isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No broker is needed: the job is checked before anything connects.
    code = main(["--broker", "amqp://guest:guest@127.0.0.1:1/%2F", "publish", "--queue", "q", "--job", text])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("tqadmin: --job") and err.count("\n") == 1 and "Traceback" not in err


def test_a_file_line_with_nan_is_a_usage_error_naming_the_line(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = isolated_env / "jobs.jsonl"
    jobs.write_text(json.dumps({"task_type": "t"}) + "\n" + '{"task_type": "t", "x": NaN}\n')
    code = main([*UNREACHABLE, "publish", "--queue", "q", "--from-file", str(jobs)])
    assert code == 2
    assert "line 2" in capsys.readouterr().err


def test_a_report_file_that_cannot_be_written_is_a_usage_error_before_anything_is_published(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The broker is unreachable: had publish tried to send, it would be exit 3, not 2.
    report = isolated_env / "no-such-dir" / "report.json"
    code = main(
        [*UNREACHABLE, "publish", "--queue", "q", "--job", '{"task_type": "t"}', "--report", str(report)]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "--report" in err and err.count("\n") == 1
