"""The durable scheduler (BRK-4, EXE-5): what keeps jobs moving when messages are lost.

Every sweep is a guarded, idempotent update, so two schedulers running at once only
duplicate wake-ups (which are hints), never a transition.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable

from django.conf import settings
from django.db import connection
from kombu import Connection

from config.topology import LLM, declare_topology, queue_depth
from delivery.dispatch import schedule_due_deliveries

from extraction.execution import lifecycle
from extraction.capacity import limiter

logger = logging.getLogger("extraction.scheduler")


@dataclass(frozen=True)
class Sweep:
    reaped: int
    expired: int
    recovered: int
    woken: int


def free_model_capacity() -> int:
    """In-flight permits free across the pools (0 while a pool cools down). Waking more
    workers than this would only make them claim jobs and hand them back."""
    free = 0
    for pool in {config["provider_pool"] for config in settings.MODEL_POLICIES.values()}:
        limits = limiter.pool_limits(pool)
        snap = limiter.snapshot(limits)
        if snap is None:  # Redis unreachable: the fail mode decides, the wake-ups are cheap
            free += limits.max_in_flight if settings.CAPACITY_FAIL_MODE == "local" else 0
        elif snap.cooldown_remaining_seconds == 0:
            free += max(0, limits.max_in_flight - snap.in_flight) if limits.budget == "requests" else 1
    return free


def wake_for_eligible_jobs(broker: Connection) -> int:
    """Publish wake-ups so that the waiting wake messages cover the eligible jobs, as far as
    the pools have room for them (bounded per sweep)."""
    from extraction.execution.tasks import wake_workers

    eligible = lifecycle.count_eligible_jobs(cap=settings.SCHEDULER_WAKE_CAP)
    if eligible == 0:
        return 0
    missing = min(eligible, free_model_capacity()) - queue_depth(broker, LLM)
    return wake_workers(min(missing, settings.SCHEDULER_WAKE_CAP)) if missing > 0 else 0


def scheduler_tick(broker: Connection) -> Sweep:
    """One sweep.

    1. Reap expired leases (fence+1, retry or terminal).
    2. Fail waiting jobs past their deadline (with a dead-letter event).
    3. Make ACCEPTED jobs READY whose ingress message never arrived.
    4. Wake workers for eligible jobs not covered by wake messages already queued.
    5. Hint the delivery workers about due webhook deliveries.
    """
    reaped = lifecycle.reap_expired_leases()
    expired = lifecycle.expire_deadlines()
    recovered = lifecycle.recover_lost_ingress()
    woken = wake_for_eligible_jobs(broker)
    # DLV-1: webhook deliveries are driven by their rows too (reap their leases, hint due ones).
    schedule_due_deliveries(broker)
    sweep = Sweep(reaped, expired, recovered, woken)
    if reaped or expired or recovered:
        logger.info("scheduler sweep", extra=sweep.__dict__)
    return sweep


def run_scheduler(*, stop: threading.Event, interval: float | None = None, once: bool = False) -> None:
    sweep_forever(scheduler_tick, stop=stop, interval=interval, once=once, log=logger, name="scheduler")


def sweep_forever(sweep: Callable[[Connection], object], *, stop: threading.Event, interval: float | None,
                  once: bool, log: logging.Logger, name: str) -> None:
    """Run ``sweep`` every ``interval`` seconds on one broker connection until ``stop``. Any
    failure (database or broker down) is logged and the connection dropped; the next round
    reconnects, so the loop outlives its dependencies' outages."""
    interval = settings.SCHEDULER_INTERVAL_SECONDS if interval is None else interval
    broker: Connection | None = None
    while not stop.is_set():
        try:
            if broker is None:
                broker = Connection(settings.BROKER_URL, connect_timeout=5)
                broker.ensure_connection(max_retries=1)
                # Sweeps ask queue depths, which a broker that nobody has declared the queues
                # on yet (a first start, a reset) answers with 404.
                declare_topology(broker)
            sweep(broker)
        except Exception:  # noqa: BLE001 - DB or broker down: keep sweeping once they return
            log.exception("%s sweep failed", name)
            connection.close()  # the connection may be broken; the next round opens a new one
            if broker is not None:
                broker.release()
            broker = None
        if once:
            break
        stop.wait(interval)
    if broker is not None:
        broker.release()
