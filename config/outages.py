"""One warning when a service a loop depends on goes away, and one when it is back.

While RabbitMQ fails over to another node, or PostgreSQL restarts, every loop that uses it
fails at each turn; a traceback per turn (or per message) buries what an operator needs to
read: this process lost that service at this time, and got it back after so long. An error of
another kind still gets its traceback: that one is a bug, not an outage.
"""

from __future__ import annotations

import logging
import threading
import time

from django.db import InterfaceError, OperationalError


def broker_unavailable_errors() -> tuple[type[BaseException], ...]:
    """What a kombu/amqp call raises when the broker (or the connection to it) is away."""
    from amqp.exceptions import ConnectionError as AmqpConnectionError
    from amqp.exceptions import RecoverableConnectionError
    from kombu.exceptions import OperationalError as KombuOperationalError

    return (OSError, AmqpConnectionError, RecoverableConnectionError, KombuOperationalError)


def unavailable_errors() -> tuple[type[BaseException], ...]:
    """A dependency away: the broker, or the database (Django's errors for a lost connection)."""
    import redis

    return (*broker_unavailable_errors(), OperationalError, InterfaceError, redis.ConnectionError, redis.TimeoutError)


class Outage:
    """The state of one dependency as a loop sees it: :meth:`failed` at each failed turn,
    :meth:`succeeded` at each good one. Thread-safe (the llm worker's slots share one)."""

    def __init__(self, logger: logging.Logger, what: str) -> None:
        self.logger = logger
        self.what = what
        self._lock = threading.Lock()
        self._since: float | None = None

    @property
    def down(self) -> bool:
        return self._since is not None

    def failed(self, exc: BaseException, *, consequence: str, extra: dict[str, object] | None = None) -> None:
        """A turn failed with ``exc``; ``consequence`` says what the process does meanwhile."""
        if not isinstance(exc, unavailable_errors()):
            self.logger.error(
                "unexpected error (not %s being away): %s", self.what, consequence, exc_info=exc, extra=extra
            )
            return
        with self._lock:
            first = self._since is None
            if first:
                self._since = time.monotonic()
        if first:
            self.logger.warning(
                "%s unavailable: %s", self.what, consequence, extra={"error": f"{type(exc).__name__}: {exc}"[:300]}
            )

    def succeeded(self) -> None:
        with self._lock:
            since, self._since = self._since, None
        if since is not None:
            self.logger.warning("%s available again after %.1f s", self.what, time.monotonic() - since)
