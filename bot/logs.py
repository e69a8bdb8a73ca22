"""How Docent's log lines look: text for a person at a terminal, or one JSON object per line
(`KB_LOG_FORMAT=json`) for a log pipeline (Loki, Elasticsearch, CloudWatch).

A JSON line carries `time` (UTC, ISO 8601), `level`, `logger` and `message`, plus `ref` (the
reference id an apology showed the user, so support can find the traceback) and `question_id`
where the code logging it knows them, and `exception` with the traceback. Nothing else of the
record is copied, so no token or password can ride along in an attribute; the message itself
is what the code wrote, and the code never writes secrets (tests/test_hostile.py greps for them).
"""

from __future__ import annotations

import json
import logging
import re
from datetime import datetime, timezone

FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_REF = re.compile(r"\[ref ([0-9a-f]{8})\]")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        line = {
            "time": datetime.fromtimestamp(record.created, tz=timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": message,
        }
        ref = getattr(record, "ref", None) or (match.group(1) if (match := _REF.search(message)) else None)
        if ref:
            line["ref"] = ref
        if (question_id := getattr(record, "question_id", None)) is not None:
            line["question_id"] = question_id
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def configure(level: str, fmt: str = "text") -> None:
    """Send every log record at `level` or above to stderr, as text or JSON lines.

    The level is set on the handler as well as on the root logger: a library that sets its own
    logger to DEBUG (bm25s does, when it is imported) would otherwise print past `level`.
    """
    if fmt not in FORMATS:
        raise ValueError(f"KB_LOG_FORMAT must be one of {', '.join(FORMATS)}, not {fmt!r}")
    level = level.upper()
    handler = logging.StreamHandler()
    handler.setLevel(level)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler])  # a no-op where logging is set up already (tests)
