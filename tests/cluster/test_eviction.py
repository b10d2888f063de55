"""Evictions: an orchestrator SIGTERMs an llm worker in the middle of a model call, and SIGKILLs
it if it outlives its grace period — the commonest fault in production.

On SIGTERM the worker stops claiming, gives running calls until its grace is nearly spent
(WORKER_SHUTDOWN_GRACE_SECONDS), then hands their jobs back under a new fence, READY at once,
the attempt recorded ``interrupted`` and not counted against the job's budget; it exits within
the grace. A SIGKILL can hand nothing back: the lease expires and the reaper retries, and the
wake-up the worker held returns to the queue, which RabbitMQ 3.10 counts towards the quorum
queue's delivery limit (with WORKER_WAKE_UPS=broker).
"""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest
from kombu import Connection

from config.topology import DELIVERY_LIMIT, LLM
from extraction.models import Attempt, ExtractionJob, ExtractionResult
from tests.factories import submit
from tests.system import all_terminal, queue_depth, wait_for

pytestmark = pytest.mark.slow

GRACE_SECONDS = 4.0
# Every simulated call outlasts the grace; the attempt timeout and the lease outlast the call,
# so nothing but the shutdown can end an attempt.
SLOW_CALL = {"latency_mean_seconds": 30.0, "latency_p95_seconds": 0.0}
LONG_CLOCKS = {
    "ATTEMPT_TIMEOUT_SECONDS": "60",
    "LEASE_SECONDS": "90",
    "WORKER_SHUTDOWN_GRACE_SECONDS": str(GRACE_SECONDS),
}


def _calls(sim, job_id: str) -> int:
    return int(sim.stats()["calls_by_job"].get(job_id, 0))


def _a_slow_job_ready(processes, tenant, sim) -> str:
    """Every process but the llm worker running, and one job READY whose model call will outlast
    any grace: the test starts and stops llm workers itself."""
    sim.control(**SLOW_CALL)
    processes.relay()
    processes.celery("ingress", "ingress")
    processes.scheduler()
    job_id = submit(tenant)
    wait_for(lambda: ExtractionJob.objects.get(pk=job_id).state == "READY", message=processes.logs)
    return job_id


def test_a_job_evicted_mid_call_eleven_times_ends_once_with_its_budget_intact(processes, tenant, sim):
    job_id = _a_slow_job_ready(processes, tenant, sim)

    fence = 0
    exits: list[float] = []
    for eviction in range(1, 12):
        name = f"llm-{eviction}"
        processes.celery(name, "llm", concurrency=4, **LONG_CLOCKS)
        wait_for(lambda n=eviction: _calls(sim, job_id) == n, timeout=60, message=processes.logs)  # the call is out
        job = ExtractionJob.objects.get(pk=job_id)
        assert (job.state, job.fence) == ("RUNNING", fence + 1)

        sent = time.monotonic()
        processes.procs[name].send_signal(signal.SIGTERM)
        exit_code = processes.wait_exit(name, timeout=GRACE_SECONDS + 30)
        took = time.monotonic() - sent

        assert exit_code == 0, processes.logs([name])
        assert took < GRACE_SECONDS, f"eviction {eviction}: exited after {took:.1f} s"
        exits.append(took)
        job = ExtractionJob.objects.get(pk=job_id)
        # Handed back under a new fence, claimable now (not after the 90 s lease), budget intact.
        assert (job.state, job.fence, job.attempt) == ("READY", fence + 2, 0)
        assert job.available_at <= job.updated_at
        interrupted = Attempt.objects.get(job_id=job_id, fence=fence + 1)
        assert interrupted.outcome == "interrupted" and interrupted.ended_at is not None
        fence += 2

    sim.control(latency_mean_seconds=0.05, latency_p95_seconds=0.0)
    processes.celery("llm", "llm", concurrency=4)
    wait_for(lambda: all_terminal([job_id]), timeout=60, message=processes.logs)

    job = ExtractionJob.objects.get(pk=job_id)
    assert job.state == "SUCCEEDED"
    assert job.attempt == 1  # eleven evictions spent none of the job's 5 attempts
    assert ExtractionResult.objects.filter(job_id=job_id).count() == 1
    outcomes = list(Attempt.objects.filter(job_id=job_id).order_by("fence").values_list("outcome", flat=True))
    assert outcomes == ["interrupted"] * 11 + ["succeeded"]
    assert _calls(sim, job_id) == 12 == len(outcomes)  # model calls ≤ attempts recorded
    print(f"exits after SIGTERM (grace {GRACE_SECONDS} s): " + ", ".join(f"{t:.2f}" for t in exits))


def test_a_worker_killed_after_its_grace_costs_an_attempt_and_its_wake_up_is_re_sent(
    processes, tenant, sim, broker, settings
):
    """SIGTERM, then SIGKILL before the grace is out (the orchestrator's period was shorter than
    the worker's): the lease expires and the reaper retries. Each kill returns the wake-up the
    worker held; past the quorum queue's delivery limit RabbitMQ dead-letters it although it
    never failed, and the scheduler wakes the workers again from PostgreSQL. This is the broker
    mode's trap (WORKER_WAKE_UPS=broker): a notify-mode worker holds no message to return."""
    processes.env["WORKER_WAKE_UPS"] = settings.WORKER_WAKE_UPS = "broker"
    settings.JOB_MAX_ATTEMPTS = DELIVERY_LIMIT + 5  # every SIGKILL mid-call costs an attempt
    job_id = _a_slow_job_ready(processes, tenant, sim)
    killed_clocks = {**LONG_CLOCKS, "LEASE_SECONDS": "4", "WORKER_SHUTDOWN_GRACE_SECONDS": "30"}

    kills = 0
    while queue_depth(broker, f"{LLM}.dlq") == 0:
        assert kills <= DELIVERY_LIMIT + 1, "the wake-up was never dead-lettered"
        kills += 1
        name = f"llm-killed-{kills}"
        processes.celery(name, "llm", concurrency=1, **killed_clocks)
        wait_for(lambda n=kills: _calls(sim, job_id) == n, timeout=60, message=processes.logs)
        processes.procs[name].send_signal(signal.SIGTERM)
        time.sleep(0.5)  # inside the worker's 30 s grace: the call is still running
        processes.kill(name, signal.SIGKILL)
        # The lease (4 s) runs out and the reaper makes the job claimable again.
        wait_for(
            lambda: ExtractionJob.objects.get(pk=job_id).state in ("RETRY_SCHEDULED", "READY"),
            timeout=30,
            message=processes.logs,
        )

    # RabbitMQ 3.10 (Debian's) counts a return on a closed channel as a delivery: the wake-up
    # that never failed was dead-lettered at the limit.
    assert kills == DELIVERY_LIMIT + 1
    assert _dead_lettered_tasks(broker) == ["extraction.run_slot"]
    sim.control(latency_mean_seconds=0.05, latency_p95_seconds=0.0)
    processes.celery("llm", "llm", concurrency=4)
    wait_for(lambda: all_terminal([job_id]), timeout=60, message=processes.logs)
    job = ExtractionJob.objects.get(pk=job_id)
    assert job.state == "SUCCEEDED"
    assert job.attempt == kills + 1
    outcomes = list(Attempt.objects.filter(job_id=job_id).order_by("fence").values_list("outcome", flat=True))
    assert outcomes == ["lease_lost"] * kills + ["succeeded"]
    assert ExtractionResult.objects.filter(job_id=job_id).count() == 1


def _dead_lettered_tasks(broker_url: str) -> list[str]:
    """The Celery task names of the messages in the llm queue's dead-letter queue."""
    names = []
    with Connection(broker_url) as conn:
        channel: Any = conn.channel()
        while (message := channel.basic_get(f"{LLM}.dlq", no_ack=True)) is not None:
            names.append(message.headers["task"])
    return names


# What each process may take to end on SIGTERM: the Procfile's bounds with the tests' clocks (the
# Celery workers' WORKER_SHUTDOWN_GRACE_SECONDS, gunicorn's --graceful-timeout, one turn of a loop).
EXIT_BOUNDS = {
    "web": 5.0,
    "ws": 5.0,
    "relay": 5.0,
    "ingress": GRACE_SECONDS,
    "worker": GRACE_SECONDS,
    "delivery": GRACE_SECONDS,
    "scheduler": 5.0,
    "notifier": 5.0,
}


def test_every_process_ends_cleanly_on_sigterm_within_its_grace(processes, transactional_db, sim, tmp_path):
    """Under load, each long-running process of the Procfile gets SIGTERM in turn: each exits with
    0 within its bound, and what was accepted still finishes once the others are back."""
    from config.db import database_conninfo
    from tests.cluster.scenario import Load, Pipeline, free_port, pipeline_env
    from tests.system import VENV_BIN, serves_health

    sim.control(latency_mean_seconds=0.5, latency_p95_seconds=0.0)
    processes.env = pipeline_env(processes.env, simulator=sim, WORKER_SHUTDOWN_GRACE_SECONDS=str(GRACE_SECONDS))
    pipeline = Pipeline(processes, dsn=database_conninfo(), web_port=free_port())
    ws_port = free_port()
    pipeline.start_web()
    pipeline.start_services()
    processes.start("ws", [str(VENV_BIN / "daphne"), "-b", "127.0.0.1", "-p", str(ws_port), "config.asgi:application"])
    pipeline.wait_ready()
    wait_for(lambda: serves_health(ws_port), timeout=60, message=processes.logs)
    pipeline.create_tenant()
    load = Load(pipeline, rate=3.0, seconds=8.0).start()

    def in_every_stage() -> bool:
        states = pipeline.job_states()
        return states["RUNNING"] > 0 and states["SUCCEEDED"] + states["REVIEW_REQUIRED"] > 0

    wait_for(in_every_stage, timeout=60, message=processes.logs)

    exits = {}
    for name in EXIT_BOUNDS:
        sent = time.monotonic()
        processes.procs[name].send_signal(signal.SIGTERM)
        code = processes.wait_exit(name, timeout=60)
        exits[name] = (code, round(time.monotonic() - sent, 2))
    print(f"\nexits on SIGTERM (code, seconds): {exits}")
    assert {name: code for name, (code, _) in exits.items()} == dict.fromkeys(EXIT_BOUNDS, 0)
    assert {name: took <= EXIT_BOUNDS[name] for name, (_, took) in exits.items()} == dict.fromkeys(EXIT_BOUNDS, True)

    pipeline.start_web("web-again")
    pipeline.start_services(notifier=False)
    load.finish()
    wait_for(lambda: pipeline.all_terminal(load.accepted), timeout=120, message=processes.logs)
