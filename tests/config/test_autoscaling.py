"""The autoscaling signal: replicas of the llm worker grow with the eligible backlog and stop at
what the pool's budget can feed, however large the backlog gets. Read as Prometheus reads it,
from a real /metrics scrape, and as the command prints it (the delivery workers' share:
tests/delivery/test_autoscale.py)."""

from __future__ import annotations

import json
import math
import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from config.autoscaling import Demand
from extraction.models import ExtractionJob, JobState
from tests.extraction.capacity.test_capacity_plan import run_to_success
from tests.factories import make_job, make_ready_jobs, make_tenant

# One call a second (rpm 60) at 4 s per call keeps 4 calls busy: the budget's cap.
POOL = {
    "provider": "builtin",
    "model": "m",
    "requests_per_minute": 60,
    "tokens_per_minute": 10_000_000,
    "max_in_flight": 30,
    "reserved_tokens": 6000,
}
SLOTS_PER_REPLICA = 2


def autoscale_replicas() -> dict[tuple[str, str], float]:
    """extraction_autoscale_replicas by (process, pool), from /metrics."""
    body = Client().get("/metrics").content.decode()
    return {
        (sample.labels["process"], sample.labels["pool"]): sample.value
        for family in text_string_to_metric_families(body)
        if family.name == "extraction_autoscale_replicas"
        for sample in family.samples
    }


def slot_cap(pool: str) -> float:
    body = Client().get("/metrics").content.decode()
    return next(
        sample.value
        for family in text_string_to_metric_families(body)
        if family.name == "extraction_autoscale_slots"
        for sample in family.samples
        if sample.labels == {"process": "worker", "pool": pool, "kind": "cap"}
    )


@pytest.fixture
def pool(db, settings) -> str:
    name = f"scale-{uuid.uuid4().hex[:8]}"
    settings.PROVIDER_POOLS = {name: POOL}
    settings.MODEL_POLICIES = {
        "p-scale": {"provider_pool": name, "reserved_tokens": 6000, "price_per_1k_tokens_micros": 0}
    }
    settings.LLM_WORKER_CONCURRENCY = SLOTS_PER_REPLICA
    return name


def backdate_arrivals() -> None:
    """Move every job's acceptance out of the arrival window: only the backlog counts."""
    ExtractionJob.objects.update(created_at=timezone.now() - timedelta(hours=1))


def add_backlog(tenant, count: int) -> None:
    make_ready_jobs(tenant, count)
    ExtractionJob.objects.filter(model_policy="default", state=JobState.READY).update(model_policy="p-scale")
    backdate_arrivals()


def test_llm_replicas_grow_with_the_backlog_and_stop_at_the_budget(pool):
    tenant = make_tenant()
    make_job(tenant, model_policy="p-scale")
    run_to_success("p-scale", latency_ms=4000)  # the pool's observed mean latency: 4 s
    backdate_arrivals()

    assert autoscale_replicas()[("worker", pool)] == 0  # nothing eligible, running or arriving
    assert slot_cap(pool) == pytest.approx(4.0)

    seen = []
    for backlog in (1, 3, 13, 5000):
        add_backlog(tenant, backlog - ExtractionJob.objects.filter(state=JobState.READY).count())
        seen.append(autoscale_replicas()[("worker", pool)])
    # 1 slot → 1 replica; 3 → 2; the budget feeds 4 slots (2 replicas) however long the queue.
    assert seen == [1, 2, 2, 2]


def test_arrivals_keep_little_s_law_slots_when_nothing_waits(pool, settings):
    settings.PROVIDER_POOLS = {pool: {**POOL, "requests_per_minute": 6000}}  # a budget that does not bind
    tenant = make_tenant()
    make_job(tenant, model_policy="p-scale")
    run_to_success("p-scale", latency_ms=4000)
    # 30 jobs accepted in the last minute and already done: 0.5 jobs/s × 1 attempt × 4 s = 2 slots.
    jobs = make_ready_jobs(tenant, 29)
    ExtractionJob.objects.filter(pk__in=[j.pk for j in jobs]).update(model_policy="p-scale", state=JobState.SUCCEEDED)

    out = json.loads(call_command_output("autoscale_signal", "--format", "json"))
    worker = next(row for row in out if row["process"] == "worker" and row["pool"] == pool)
    assert (worker["eligible"], worker["running"]) == (0, 0)
    assert worker["arrival_slots"] == pytest.approx(2.0)
    assert worker["replicas"] == 1


@pytest.mark.parametrize(
    ("running", "eligible", "arrival_slots", "cap", "replicas"),
    [
        (0, 0, 0.0, 10.0, 0),
        (0, 1, 0.0, 10.0, 1),
        (3, 0, 0.0, 10.0, 1),
        (0, 0, 4.5, 10.0, 2),  # arrivals alone
        (5, 500, 0.0, 10.0, 3),  # capped at 10 slots
        (5, 500, 0.0, math.inf, 127),
    ],
)
def test_replicas_arithmetic(running, eligible, arrival_slots, cap, replicas):
    demand = Demand("worker", "p", running, eligible, arrival_slots, cap, slots_per_replica=4)
    assert demand.replicas == replicas


def call_command_output(*args: str) -> str:
    from io import StringIO

    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()
