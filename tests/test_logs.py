"""Log lines as text or as JSON (`KB_LOG_FORMAT=json`): one object per line with the fields a log
pipeline indexes, the reference id of an apology lifted out of the message, the traceback kept."""

from __future__ import annotations

import json
import logging

import pytest

from bot.logs import JsonFormatter, configure


def record(message: str, *args, exc_info=None, **extra) -> logging.LogRecord:
    made = logging.LogRecord("bot.slack_app", logging.ERROR, __file__, 1, message, args, exc_info)
    for key, value in extra.items():
        setattr(made, key, value)
    return made


def test_a_json_line_has_time_level_logger_message_and_the_apologys_reference():
    line = json.loads(JsonFormatter().format(record("unhandled error [ref %s] for a %s request", "3f9c01ab", "event_callback")))
    assert line["level"] == "ERROR" and line["logger"] == "bot.slack_app" and line["ref"] == "3f9c01ab"
    assert line["message"] == "unhandled error [ref 3f9c01ab] for a event_callback request"
    assert line["time"].endswith("+00:00") and "question_id" not in line


def test_a_json_line_keeps_the_traceback_and_a_question_id_but_no_other_attribute():
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        import sys

        made = record("answer failed", exc_info=sys.exc_info(), question_id=42, token="xoxb-secret")
    line = json.loads(JsonFormatter().format(made))
    assert line["question_id"] == 42 and "RuntimeError: boom" in line["exception"]
    assert "xoxb-secret" not in json.dumps(line)


def test_an_unknown_format_is_refused():
    with pytest.raises(ValueError, match="KB_LOG_FORMAT must be one of text, json"):
        configure("INFO", "yaml")


@pytest.mark.integration
def test_kb_with_json_logs_writes_one_object_per_log_line_and_no_secret(kb_home, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "wiki").mkdir()
    (tmp_path / "wiki" / "page.md").write_text("# Logs\n\nA page for the JSON log test.\n")
    (tmp_path / "wiki" / "broken.md").write_bytes(b"\x00\x01 not text")  # FAILED: its reason is logged
    secret = "xoxb-9999-logsecret-never-printed"
    env = {k: v for k, v in os.environ.items() if k not in ("KB_SOURCES", "KB_WIKI", "DATABASE_URL")}
    env.update({"KB_HOME": str(kb_home), "KB_LOG_FORMAT": "json", "KB_LOG_LEVEL": "INFO", "SLACK_BOT_TOKEN": secret,
                "KB_LLM_API_KEY": "sk-logsecret-never-printed"})
    kb = [sys.executable, "-m", "bot.cli"]
    run = subprocess.run([*kb, "sync", str(tmp_path / "wiki"), "--source", "json-logs-test"], capture_output=True,
                         text=True, env=env, timeout=300, cwd=Path(__file__).resolve().parents[1])
    assert run.returncode == 3, run.stderr[-2000:]  # one page FAILED, the other indexed
    lines = [json.loads(line) for line in run.stderr.splitlines() if line.startswith("{")]
    assert len(lines) >= 3 and all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    failed = [line for line in lines if line["logger"] == "indexing.ingest.sync" and line["level"] == "WARNING"]
    assert len(failed) == 1 and "json-logs-test:broken.md" in failed[0]["message"] and "binary" in failed[0]["message"]
    assert "logsecret" not in run.stdout + run.stderr
    forget = subprocess.run([*kb, "forget", "json-logs-test", "--yes"], capture_output=True, text=True, env=env,
                            timeout=120, cwd=Path(__file__).resolve().parents[1])
    assert forget.returncode == 0
