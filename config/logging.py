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


def _is_connection_loss(exc: BaseException | None) -> bool:
    from amqp.exceptions import ConnectionError as AmqpConnectionError
    from amqp.exceptions import RecoverableConnectionError

    return isinstance(exc, OSError | AmqpConnectionError | RecoverableConnectionError)


class BrokerLossFilter(logging.Filter):
    """What a Celery worker logs when its RabbitMQ node goes away, as an operator should read it.

    Celery already warns that the connection was lost and says each node it cannot reach. Then
    the ack of every message the worker had in hand fails, since the broker has returned those
    messages with the connection (they are redelivered), and kombu logs each one as CRITICAL with
    a traceback: those become DEBUG lines without one. A node that refuses the reconnection is
    a WARNING (Celery moves to the next). A failed ack for any other reason is left as it is."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith(("Couldn't ack", "Couldn't reject")) and record.exc_info:
            if _is_connection_loss(record.exc_info[1]):
                record.levelno, record.levelname = logging.DEBUG, "DEBUG"
                record.exc_info, record.exc_text = None, None
                return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        if record.levelno == logging.ERROR and "Cannot connect to" in message and "failover" in message:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True
