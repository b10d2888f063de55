"""The llm worker's demand per provider pool, for the autoscaling signal (config/autoscaling.py).

For each configured pool:

1. Its jobs eligible now, running now, and accepted in the last ``AUTOSCALE_WINDOW_SECONDS``
   (``pool_demand`` in autoscale.sql).
2. The capacity plan's inputs (capacity/plan.py): the live limits and the ledger's recent mean
   latency, tokens per call and attempts per job (assumed where nothing was observed yet).
3. Arrivals need ``arrivals/s × attempts per job × mean latency`` slots (Little's law).
4. The budget feeds at most ``attempt capacity × mean latency`` slots: requests/min,
   tokens/min and the in-flight limit (a local server's slots, a kv_tokens pool's sequences)
   each bound the calls per second, and a call holds its slot for the mean latency. A pool
   with no shared budget (``unlimited``) has no cap.
"""

from __future__ import annotations

import math
from pathlib import Path

from django.conf import settings
from django.db.backends.utils import CursorWrapper

from config.autoscaling import Demand
from config.sql import load_statements
from extraction.capacity import limiter
from extraction.capacity.plan import (
    PlanOverrides,
    configured_pools,
    make_plan,
    plan_inputs_for_pool,
    policies_of_pool,
)
from extraction.models import ProviderPool

SQL = load_statements(Path(__file__).with_suffix(".sql"))

# Eligible and arrived jobs are counted up to this many: far more than any pool's budget feeds.
COUNT_CAP = 10_000


def llm_worker_demands(cursor: CursorWrapper) -> list[Demand]:
    """One :class:`Demand` of the ``worker`` process per configured pool (AUTOSCALE_DEMANDS)."""
    window = settings.AUTOSCALE_WINDOW_SECONDS
    demands = []
    for pool in configured_pools():
        policies = policies_of_pool(pool)
        eligible = running = arrived = 0
        if policies:
            cursor.execute(SQL["pool_demand"], {"policies": policies, "cap": COUNT_CAP, "window": window})
            eligible, running, arrived = cursor.fetchone()
        plan = make_plan(plan_inputs_for_pool(pool, PlanOverrides(backlog=float(eligible + running))))
        latency = plan.inputs.mean_latency_seconds.value
        arrival_slots = arrived / window * plan.inputs.attempts_per_job.value * latency
        unlimited = limiter.pool_limits(pool).budget == ProviderPool.Budget.UNLIMITED
        demands.append(
            Demand(
                process="worker",
                pool=pool,
                running=int(running),
                eligible=int(eligible),
                arrival_slots=arrival_slots,
                slot_cap=math.inf if unlimited else plan.in_flight_at_capacity,
                slots_per_replica=settings.LLM_WORKER_CONCURRENCY,
            )
        )
    return demands
