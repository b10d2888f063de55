"""What reaches the log while RabbitMQ or Redis fails over (config.logging.DependencyLossFilter):
no traceback per message in hand or per reconnection; a failure of another kind untouched."""

from __future__ import annotations

import logging

import redis
from amqp.exceptions import RecoverableConnectionError

from config.logging import DependencyLossFilter


def record(name: str, level: int, msg: str, args: tuple, exc: BaseException | None) -> logging.LogRecord:
    exc_info = (type(exc), exc, None) if exc is not None else None
    return logging.LogRecord(name, level, __file__, 1, msg, args, exc_info)


def test_an_ack_lost_with_the_connection_is_a_debug_line_without_traceback():
    lost = record(
        "celery.worker.request",
        logging.CRITICAL,
        "Couldn't ack %r, reason:%r",
        (49, "closed"),
        RecoverableConnectionError("connection already closed"),
    )
    passed = DependencyLossFilter().filter(lost)
    assert (lost.levelname, lost.exc_info) == ("DEBUG", None)
    assert passed is logging.getLogger("celery.worker.request").isEnabledFor(logging.DEBUG)


def test_an_ack_failing_for_another_reason_keeps_its_traceback():
    other = record("celery.worker.request", logging.CRITICAL, "Couldn't ack %r, reason:%r", (49, "x"), ValueError("x"))
    assert DependencyLossFilter().filter(other) is True
    assert other.levelname == "CRITICAL" and other.exc_info is not None


def test_the_channel_layer_losing_redis_is_one_warning_line():
    lost = record(
        "channels_redis.pubsub",
        logging.ERROR,
        "Unexpected exception in receive task",
        (),
        redis.ConnectionError("Error 111"),
    )
    assert DependencyLossFilter().filter(lost) is True
    assert (lost.levelname, lost.exc_info) == ("WARNING", None)
    assert lost.getMessage() == "Redis unavailable to the channel layer, reconnecting: Error 111"


def test_a_refused_node_on_failover_is_a_warning():
    refused = record(
        "celery.worker.consumer.consumer",
        logging.ERROR,
        "consumer: Cannot connect to %s: %s.\n%s\n",
        ("amqp://guest:**@127.0.0.1:5681//", "[Errno 111] Connection refused", "Will retry using next failover."),
        None,
    )
    assert DependencyLossFilter().filter(refused) is True
    assert refused.levelname == "WARNING"
