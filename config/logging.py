"""Structured (JSON) log lines; extra fields such as job_id, attempt and fence ride along, and
the trace_id and span_id of the span the line was logged in, when one is recording (OPS-2), so
a job's log lines and its trace find each other."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from config.tracing import log_fields

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


def rfc3339_utc(timestamp: float) -> str:
    """``2026-12-01T09:41:07.123Z``: UTC with milliseconds, so lines from processes on hosts
    in other zones sort and join, and events in the same second keep their order."""
    moment = datetime.fromtimestamp(timestamp, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            # When the event was logged (record.created), not when the handler got to it.
            "ts": rfc3339_utc(record.created),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
            # Formatted in the thread that logged: the current span is the line's own.
            **log_fields(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)
