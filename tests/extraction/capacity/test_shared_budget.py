"""The pool's budget is shared by every worker process (BP-2), a 429 cools the whole pool
down (BP-3), and losing Redis applies the chosen fail mode without losing a job. Real worker
processes, the real Redis limiter and the provider simulator enforcing its quota."""

from __future__ import annotations

import subprocess
import time

import pytest

from extraction.capacity import limiter
from extraction.models import Attempt, ExtractionJob
from tests.factories import submit, unique_invoice
from tests.system import all_terminal, job_states, wait_for

pytestmark = pytest.mark.slow

REDIS_START = [
    "redis-server",
    "--daemonize",
    "yes",
    "--bind",
    "127.0.0.1",
    "-::1",
    "--port",
    "6379",
    "--save",
    "",
    "--appendonly",
    "no",
    "--dir",
    "/var/lib/redis",
    "--logfile",
    "/var/log/redis/ci.log",
]


def _pool_env(pool_in_flight: int, **extra: str) -> dict[str, str]:
    return {
        "POOL_MAX_IN_FLIGHT": str(pool_in_flight),
        "POOL_REQUESTS_PER_MINUTE": "100000",
        "POOL_TOKENS_PER_MINUTE": "100000000",
        **extra,
    }


@pytest.fixture(autouse=True)
def _fresh_pool():
    limiter.reset_pool("default")
    yield
    limiter.reset_pool("default")


def _submit_many(tenant, count: int) -> list[str]:
    # Distinct bytes per job so each is its own document.
    return [submit(tenant, content=unique_invoice()) for _ in range(count)]


def test_three_processes_of_thirty_slots_never_exceed_the_pools_thirty(processes, tenant, sim):
    sim.control(latency_mean_seconds=0.4, latency_p95_seconds=0.6, max_concurrency=30, rpm=100000, tpm=100000000)
    env = _pool_env(30)
    processes.relay()
    processes.celery("ingress", "ingress", **env)
    for n in range(3):
        processes.celery(f"llm-{n}", "llm", concurrency=30, **env)
    processes.scheduler(**env)
    job_ids = _submit_many(tenant, 150)
    wait_for(lambda: all_terminal(job_ids), timeout=180, message=processes.logs)
    stats = sim.stats()
    assert stats["concurrency"]["peak"] <= 30  # 90 slots, one pool limit
    assert stats["concurrency"]["peak"] >= 20  # and the limit is actually used
    assert stats["rate_limited"] == 0  # limits configured to the provider's quota: no 429s
    assert set(ExtractionJob.objects.filter(pk__in=job_ids).values_list("state", flat=True)) == {"SUCCEEDED"}


def test_a_429_cools_the_whole_pool_down_then_it_recovers(processes, tenant, sim):
    sim.control(
        latency_mean_seconds=0.2, latency_p95_seconds=0.3, rate_limit_next=3, rate_limit_retry_after_seconds=2.0
    )
    env = _pool_env(10, CAPACITY_RAMP_SECONDS="2")
    processes.relay()
    processes.celery("ingress", "ingress", **env)
    processes.celery("llm-a", "llm", concurrency=10, **env)
    processes.celery("llm-b", "llm", concurrency=10, **env)
    processes.scheduler(**env)
    job_ids = _submit_many(tenant, 30)
    wait_for(lambda: all_terminal(job_ids), timeout=120, message=processes.logs)
    assert set(ExtractionJob.objects.filter(pk__in=job_ids).values_list("state", flat=True)) == {"SUCCEEDED"}

    limited = Attempt.objects.filter(job_id__in=job_ids, outcome="rate_limited").order_by("ended_at")
    assert limited.count() == 3
    first = limited.first()
    assert first.retry_after_seconds == pytest.approx(2.0)
    # While the pool cooled down no worker of either process started a model call.
    calls_during_cooldown = Attempt.objects.filter(
        job_id__in=job_ids,
        started_at__gt=first.ended_at,
        started_at__lt=first.ended_at + __import__("datetime").timedelta(seconds=1.8),
    ).exclude(outcome="capacity_deferred")
    assert not calls_during_cooldown.exists()
    assert sim.stats()["rate_limited"] == 3  # no 429 storm: the cooldown reached every worker


def _stop_redis() -> None:
    subprocess.run(["redis-cli", "shutdown", "nosave"], capture_output=True)
    wait_for(lambda: subprocess.run(["redis-cli", "ping"], capture_output=True).returncode != 0, timeout=10)


def _start_redis() -> None:
    subprocess.run(REDIS_START, check=True, capture_output=True)
    wait_for(lambda: subprocess.run(["redis-cli", "ping"], capture_output=True).stdout.strip() == b"PONG", timeout=10)


def test_redis_down_fail_closed_makes_no_model_call_and_loses_no_job(processes, tenant, sim):
    env = _pool_env(5, CAPACITY_FAIL_MODE="closed", CAPACITY_UNAVAILABLE_RETRY_SECONDS="0.5")
    processes.relay()
    processes.celery("ingress", "ingress", **env)
    processes.celery("llm", "llm", concurrency=5, **env)
    processes.scheduler(**env)
    _stop_redis()
    try:
        job_ids = _submit_many(tenant, 4)
        # Taking a job in needs no Redis: every job becomes READY...
        wait_for(lambda: set(job_states(job_ids).values()) == {"READY"}, timeout=30, message=processes.logs)
        # ...and stays READY while the workers find no headroom (the scheduler wakes them every
        # 0.3 s, so this is ten chances to call the model).
        time.sleep(3)
        assert sim.stats()["calls"] == 0
        assert set(job_states(job_ids).values()) == {"READY"}
    finally:
        _start_redis()
    wait_for(lambda: all_terminal(job_ids), timeout=60, message=processes.logs)
    assert set(ExtractionJob.objects.filter(pk__in=job_ids).values_list("state", flat=True)) == {"SUCCEEDED"}


def test_redis_down_fail_local_spends_a_bounded_local_share(processes, tenant, sim):
    sim.control(latency_mean_seconds=0.3, latency_p95_seconds=0.4)
    env = _pool_env(8, CAPACITY_FAIL_MODE="local", CAPACITY_LOCAL_SHARE="0.25")
    processes.relay()
    processes.celery("ingress", "ingress", **env)
    processes.celery("llm", "llm", concurrency=10, **env)
    processes.scheduler(**env)
    _stop_redis()
    try:
        job_ids = _submit_many(tenant, 12)
        wait_for(lambda: all_terminal(job_ids), timeout=90, message=processes.logs)
    finally:
        _start_redis()
    assert set(ExtractionJob.objects.filter(pk__in=job_ids).values_list("state", flat=True)) == {"SUCCEEDED"}
    assert sim.stats()["concurrency"]["peak"] <= 2  # 25 % of the pool's 8, in the one process
