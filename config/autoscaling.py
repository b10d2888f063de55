"""The autoscaling signal (OPS-1, BP-5): how many replicas of a worker process are worth running,
as one gauge on ``/metrics`` (``extraction_autoscale_replicas{process, pool}``) and
``manage.py autoscale_signal``.

Queue length is the wrong signal for workers that share a provider budget: with a fixed quota
or a fixed GPU, replicas past what the budget can feed only wait on the shared limiter, and the
backlog they were added for does not drain any faster. So each app states its demand per pool
(``AUTOSCALE_DEMANDS``, each a function of a cursor returning :class:`Demand` rows), and the
arithmetic here turns it into slots and replicas:

    slots    = min(max(running + eligible, arrivals/s × mean latency), slots the budget can feed)
    replicas = ceil(slots / slots per replica), 0 when no slot is wanted

``running + eligible`` is every job that could hold a slot right now; Little's law
(arrivals × mean latency) keeps the slots steady arrivals need between bursts; the budget's
cap is the pool's sustainable calls per second × mean latency (requests/min, tokens/min, the
in-flight limit, a local server's slots). A large backlog therefore asks for exactly the
replicas that saturate the budget, however large it gets.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.conf import settings
from django.db.backends.utils import CursorWrapper
from django.utils.module_loading import import_string
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

REPLICAS_METRIC = "extraction_autoscale_replicas"


@dataclass(frozen=True)
class Demand:
    """What one process type has to do for one pool, and what it may do at most."""

    process: str  # the Procfile process that does the work ("worker", "delivery")
    pool: str  # the provider pool ("" where there is none)
    running: int  # work in flight now
    eligible: int  # work waiting that could start now
    arrival_slots: float  # arrivals per second × mean service seconds (Little's law)
    slot_cap: float  # in-flight work the budget can keep busy (math.inf: no budget)
    slots_per_replica: int  # concurrent work one replica carries

    @property
    def slots(self) -> float:
        return min(max(float(self.running + self.eligible), self.arrival_slots), self.slot_cap)

    @property
    def replicas(self) -> int:
        return math.ceil(self.slots / max(1, self.slots_per_replica) - 1e-9) if self.slots > 0 else 0


DemandSource = Callable[[CursorWrapper], Iterable[Demand]]


@functools.cache
def demand_sources() -> tuple[DemandSource, ...]:
    return tuple(import_string(path) for path in settings.AUTOSCALE_DEMANDS)


def demands(cursor: CursorWrapper) -> list[Demand]:
    return [demand for source in demand_sources() for demand in source(cursor)]


def collect(cursor: CursorWrapper) -> list[Metric]:
    """``/metrics``' autoscaling families (a METRICS_COLLECTORS entry)."""
    replicas = GaugeMetricFamily(
        REPLICAS_METRIC,
        "Replicas of a worker process worth running for a pool: enough slots for what is running, "
        "eligible and arriving, never more than the pool's budget can feed; 0 when there is nothing to do.",
        labels=["process", "pool"],
    )
    slots = GaugeMetricFamily(
        "extraction_autoscale_slots",
        "Concurrent calls the autoscaling signal wants for a pool (wanted) and the most the pool's "
        "budget can keep busy (cap; +Inf where there is no budget).",
        labels=["process", "pool", "kind"],
    )
    for demand in demands(cursor):
        replicas.add_metric([demand.process, demand.pool], demand.replicas)
        slots.add_metric([demand.process, demand.pool, "wanted"], demand.slots)
        slots.add_metric([demand.process, demand.pool, "cap"], demand.slot_cap)
    return [replicas, slots]
