"""The loop under every periodic sweep (the scheduler, the delivery sweep): it outlives the
outages of the database and the broker it uses."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.conf import settings
from django.db import connection
from kombu import Connection

from config import probes
from config.broker import broker_connection, connect_to_a_node
from config.outages import Outage
from config.topology import declare_topology


def sweep_forever(
    sweep: Callable[[Connection], object],
    *,
    stop: threading.Event,
    interval: float | None,
    once: bool,
    log: logging.Logger,
    name: str,
) -> None:
    """Run ``sweep`` every ``interval`` seconds on one broker connection until ``stop``.

    1. Connect to the broker if there is no connection, and declare the topology (sweeps ask
       queue depths, which a broker nobody has declared the queues on answers with 404).
    2. Run the sweep.
    3. On any failure (database or broker down) log it and drop both connections: the next
       round reconnects, so the loop never exits because a dependency went away.
    """
    interval = settings.SCHEDULER_INTERVAL_SECONDS if interval is None else interval
    broker: Connection | None = None
    dependencies = Outage(log, f"PostgreSQL or RabbitMQ ({name} sweep)")
    while not stop.is_set():
        probes.beat(name, bound_seconds=probes.LOOP_BOUND_SECONDS + interval)
        try:
            if broker is None:
                broker = connect_to_a_node(broker_connection(connect_timeout=5))
                declare_topology(broker)
            sweep(broker)
        except Exception as exc:  # noqa: BLE001 - Outage.failed logs a bug with its traceback
            dependencies.failed(exc, consequence=f"the {name} sweep tries again every {interval:g} s")
            connection.close()
            if broker is not None:
                broker.release()
            broker = None
        else:
            dependencies.succeeded()
        if once:
            break
        stop.wait(interval)
    probes.forget(name)
    if broker is not None:
        broker.release()
