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
    import redis
    from amqp.exceptions import ConnectionError as AmqpConnectionError
    from amqp.exceptions import RecoverableConnectionError

    return isinstance(exc, OSError | AmqpConnectionError | RecoverableConnectionError | redis.ConnectionError)


class DependencyLossFilter(logging.Filter):
    """What libraries log when RabbitMQ or Redis goes away under them, as an operator should read it.

    - A Celery worker whose node went away: Celery already warns that the connection was lost
      and names each node it cannot reach. Then the ack of every message in hand fails, since
      the broker returned those messages with the connection (they are redelivered), and kombu
      logs each as CRITICAL with a traceback: those become DEBUG lines without one. A node that
      refuses the reconnection is a WARNING (Celery moves on to the next).
    - The Channels layer's subscription while Redis fails over: channels_redis logs each failed
      reconnection (about one a second) as ERROR with a traceback: a WARNING line instead.
    A failure for any other reason is left as it is."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        exc = record.exc_info[1] if record.exc_info else None
        if message.startswith(("Couldn't ack", "Couldn't reject")) and _is_connection_loss(exc):
            _without_traceback(record, logging.DEBUG)
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        if record.name == "channels_redis.pubsub" and _is_connection_loss(exc):
            record.msg, record.args = f"Redis unavailable to the channel layer, reconnecting: {exc}", ()
            _without_traceback(record, logging.WARNING)
        elif record.levelno == logging.ERROR and "Cannot connect to" in message and "failover" in message:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def _without_traceback(record: logging.LogRecord, level: int) -> None:
    record.levelno, record.levelname = level, logging.getLevelName(level)
    record.exc_info, record.exc_text = None, None
