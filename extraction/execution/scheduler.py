"""The durable scheduler (BRK-4, EXE-5): what keeps jobs moving when messages are lost.

Every sweep is a guarded, idempotent update, so two schedulers running at once only
duplicate wake-ups (which are hints), never a transition.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.utils.module_loading import import_string
from kombu import Connection

from config.sweeps import sweep_forever
from config.topology import LLM, queue_depth
from extraction.capacity import limiter
from extraction.execution import lifecycle
from extraction.intake.batch_completion import batch_completion_sweep

logger = logging.getLogger("extraction.scheduler")


@dataclass(frozen=True)
class Sweep:
    reaped: int
    expired: int
    recovered: int
    woken: int
    batches_completed: int = 0


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
            free += max(0, limits.max_in_flight - snap.in_flight) if limits.budget != "kv_tokens" else 1
    return free


def wake_for_eligible_jobs(broker: Connection) -> int:
    """Wake the llm workers for the eligible jobs, as far as the pools have room for them: a
    notification to the dispatchers, or wake-up messages that, with those already queued,
    cover the jobs (bounded per sweep)."""
    from extraction.execution.tasks import wake_workers

    eligible = lifecycle.count_eligible_jobs(cap=settings.SCHEDULER_WAKE_CAP)
    if eligible == 0:
        return 0
    room = min(eligible, free_model_capacity())
    if settings.WORKER_WAKE_UPS == "notify":
        # One notification: every dispatcher claims for its free slots.
        return wake_workers(room)
    missing = room - queue_depth(broker, LLM)
    return wake_workers(min(missing, settings.SCHEDULER_WAKE_CAP)) if missing > 0 else 0


@functools.cache
def app_sweeps() -> tuple[Callable[[Connection], object], ...]:
    return tuple(import_string(path) for path in settings.SCHEDULER_APP_SWEEPS)


def scheduler_tick(broker: Connection) -> Sweep:
    """One sweep.

    1. Reap expired leases (fence+1, retry or terminal).
    2. Fail waiting jobs past their deadline (with a dead-letter event).
    3. Make ACCEPTED jobs READY whose ingress message never arrived.
    4. Wake workers for eligible jobs not covered by wake messages already queued.
    5. Complete the batches whose every job is finished, at most every
       BATCH_COMPLETION_SWEEP_SECONDS (extraction.batch_completed.v1).
    6. Run ``SCHEDULER_APP_SWEEPS`` (due webhook deliveries, the self-audit at its own interval):
       one process moves every row-driven queue.
    """
    reaped = lifecycle.reap_expired_leases()
    expired = lifecycle.expire_deadlines()
    recovered = lifecycle.recover_lost_ingress()
    woken = wake_for_eligible_jobs(broker)
    batches_completed = len(batch_completion_sweep() or ())
    for app_sweep in app_sweeps():
        app_sweep(broker)
    sweep = Sweep(reaped, expired, recovered, woken, batches_completed)
    if reaped or expired or recovered or batches_completed:
        logger.info("scheduler sweep", extra=sweep.__dict__)
    return sweep


def run_scheduler(*, stop: threading.Event, interval: float | None = None, once: bool = False) -> None:
    sweep_forever(scheduler_tick, stop=stop, interval=interval, once=once, log=logger, name="scheduler")
