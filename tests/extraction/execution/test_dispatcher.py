"""The llm worker's dispatcher (extraction.execution.dispatcher) on real PostgreSQL and Redis: it
claims for its free slots in one statement and no more, a slot freeing after a full claim claims
the rest of a backlog without waiting for the poll, the take-in's NOTIFY alone wakes it, and a
real llm worker runs a job with no broker wake-up at all, even with no broker to reach."""

from __future__ import annotations

import socket
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from extraction.execution import lifecycle
from extraction.execution.dispatcher import Dispatcher
from extraction.execution.runtime import WorkerRuntime
from extraction.models import Attempt, ExtractionJob, OutboxEvent
from tests.factories import submit
from tests.system import all_terminal, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

# Longer than any test here waits: only a notification or a freed slot can make it claim.
NO_POLL = 600.0


def _ready_job(tenant) -> str:
    job_id = submit(tenant)
    requested = OutboxEvent.objects.get(job_id=job_id, event_type="extraction.requested.v1")
    assert lifecycle.take_in_requested_event(event_id=requested.event_id, payload=requested.payload) == "taken_in"
    return job_id


def _states(job_ids: list[str]) -> list[str]:
    states = dict(ExtractionJob.objects.filter(pk__in=job_ids).values_list("id", "state"))
    return [states[ExtractionJob._meta.pk.to_python(job_id)] for job_id in job_ids]


def _listening(application_name: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND query ILIKE 'LISTEN%%'",
            [application_name],
        )
        return cursor.fetchone()[0] > 0


def test_a_dispatch_claims_as_many_jobs_as_slots_are_free_in_one_claim(tenant):
    """Seven runnable jobs, three slots: a dispatch takes three (in one statement) and runs them;
    while they run no slot is free and a dispatch takes nothing."""
    jobs = [_ready_job(tenant) for _ in range(7)]
    dispatcher = Dispatcher(3, WorkerRuntime(worker_id="w"), poll_seconds=NO_POLL)
    try:
        assert dispatcher.dispatch_once() == (3, 3)
        assert _states(jobs).count("READY") == 4
        wait_for(lambda: dispatcher.busy() == 0, timeout=30)
        assert dispatcher.dispatch_once() == (3, 3)
        wait_for(lambda: dispatcher.busy() == 0, timeout=30)
        assert dispatcher.dispatch_once() == (1, 3)  # the last one: asked for three, one was left
        wait_for(lambda: dispatcher.busy() == 0, timeout=30)
        assert dispatcher.dispatch_once() == (0, 3)
    finally:
        assert dispatcher.stop(timeout=30)
    assert set(_states(jobs)) == {"SUCCEEDED"}
    assert sorted(Attempt.objects.filter(job_id__in=jobs).values_list("fence", flat=True)) == [1] * 7


def test_a_dispatch_claims_no_more_jobs_than_the_pool_could_start(tenant):
    """Five free slots, six jobs, a pool with two in-flight permits free: two are claimed (the
    others would only be handed back); when the permits come back, the rest."""
    from extraction.capacity import limiter

    jobs = [_ready_job(tenant) for _ in range(6)]
    limits = limiter.pool_limits("default")
    held = [limiter.acquire(limits, tokens=1) for _ in range(limits.max_in_flight - 2)]
    assert all(isinstance(permit, limiter.Permit) for permit in held)
    dispatcher = Dispatcher(5, WorkerRuntime(worker_id="w"), poll_seconds=NO_POLL)
    try:
        try:
            assert limiter.headroom(limits) == 2
            assert dispatcher.dispatch_once() == (2, 2)
            wait_for(lambda: dispatcher.busy() == 0, timeout=30)
        finally:
            for permit in held:
                limiter.release(permit, actual_tokens=1)
        assert dispatcher.dispatch_once() == (4, 5)
        wait_for(lambda: dispatcher.busy() == 0, timeout=30)
    finally:
        assert dispatcher.stop(timeout=30)
    assert set(_states(jobs)) == {"SUCCEEDED"}
    assert Attempt.objects.filter(job_id__in=jobs).count() == 6  # none claimed only to be handed back


def test_a_slot_freed_after_a_full_claim_claims_the_rest_of_the_backlog_without_the_poll(tenant):
    """Two slots, nine jobs waiting when it starts and no poll in the test's time: the first
    claim fills both slots, and each slot that frees claims again, until the backlog is done."""
    jobs = [_ready_job(tenant) for _ in range(9)]
    dispatcher = Dispatcher(2, WorkerRuntime(worker_id="w"), poll_seconds=NO_POLL)
    dispatcher.start()
    try:
        wait_for(lambda: all_terminal(jobs), timeout=60)
    finally:
        assert dispatcher.stop(timeout=30)
    assert set(_states(jobs)) == {"SUCCEEDED"}
    assert Attempt.objects.filter(job_id__in=jobs).count() == 9  # each job claimed once


def test_the_take_ins_notification_alone_wakes_the_dispatcher(tenant):
    """Idle, listening, no poll in the test's time: a job taken in afterwards is claimed because
    the take-in's transaction notified runnable_jobs (without it the job would stay READY)."""
    dispatcher = Dispatcher(2, WorkerRuntime(worker_id="w"), poll_seconds=NO_POLL)
    dispatcher.start()
    try:
        wait_for(lambda: _listening("dispatcher-listen"), timeout=30)
        time.sleep(0.5)  # the wake that a new LISTEN connection counts as has been spent
        job_id = _ready_job(tenant)
        wait_for(lambda: all_terminal([job_id]), timeout=30)
    finally:
        assert dispatcher.stop(timeout=30)
    assert ExtractionJob.objects.get(pk=job_id).state == "SUCCEEDED"


def test_wake_workers_notifies_the_dispatchers(tenant, settings):
    """What the scheduler and an operator's rerun send in notify mode: a NOTIFY, no message."""
    from extraction.execution.tasks import wake_workers

    settings.WORKER_WAKE_UPS = "notify"
    dispatcher = Dispatcher(2, WorkerRuntime(worker_id="w"), poll_seconds=NO_POLL)
    # Runnable before the dispatcher listens, as a job the scheduler recovered would be.
    job_id = _ready_job(tenant)
    dispatcher.start()
    try:
        wait_for(lambda: _listening("dispatcher-listen"), timeout=30)
        wait_for(lambda: all_terminal([job_id]), timeout=30)  # the new connection's look took it
        # Taken in while not due (its notification finds nothing to claim), then due with no
        # notification: only wake_workers can wake the dispatcher now.
        second = submit(tenant)
        ExtractionJob.objects.filter(pk=second).update(available_at=timezone.now() + timedelta(hours=1))
        requested = OutboxEvent.objects.get(job_id=second, event_type="extraction.requested.v1")
        assert lifecycle.take_in_requested_event(event_id=requested.event_id, payload=requested.payload) == "taken_in"
        time.sleep(0.5)
        ExtractionJob.objects.filter(pk=second).update(available_at=timezone.now() - timedelta(seconds=1))
        time.sleep(1.0)
        assert ExtractionJob.objects.get(pk=second).state == "READY"  # nothing woke it yet
        assert wake_workers(1) == 1
        wait_for(lambda: all_terminal([second]), timeout=30)
    finally:
        assert dispatcher.stop(timeout=30)


@pytest.mark.slow
def test_an_llm_worker_runs_a_taken_in_job_with_no_wake_up_message(processes, tenant):
    """A real llm worker in notify mode, polling too rarely to matter: the take-in's NOTIFY alone
    makes it claim; no message was ever published to the llm queue."""
    processes.celery("llm-only", "llm", WORKER_WAKE_UPS="notify", WORKER_DISPATCH_POLL_SECONDS=str(NO_POLL))
    wait_for(lambda: _listening("dispatcher-listen"), timeout=60, message=processes.logs)
    time.sleep(0.5)
    job_id = _ready_job(tenant)
    wait_for(lambda: all_terminal([job_id]), timeout=60, message=processes.logs)
    assert ExtractionJob.objects.get(pk=job_id).state == "SUCCEEDED"


@pytest.mark.slow
def test_an_llm_worker_claims_and_completes_while_the_broker_is_unreachable(processes, tenant):
    """RabbitMQ away from the start (the worker's broker URL names a loopback port nothing
    listens on): the Celery consumer keeps trying to connect, and meanwhile the dispatcher,
    which needs only PostgreSQL and Redis, claims and completes the jobs taken in."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    processes.celery(
        "llm-no-broker",
        "llm",
        BROKER_URL=f"amqp://guest:guest@127.0.0.1:{closed_port}//",
        WORKER_WAKE_UPS="notify",
        WORKER_DISPATCH_POLL_SECONDS="0.5",
    )
    jobs = [_ready_job(tenant) for _ in range(3)]
    wait_for(lambda: all_terminal(jobs), timeout=90, message=processes.logs)
    assert _states(jobs) == ["SUCCEEDED"] * 3
    assert "Cannot connect to amqp" in processes.logs(["llm-no-broker"])


def test_the_listen_session_goes_where_postgres_listen_host_says(settings):
    """Past a transaction-mode pooler (POSTGRES_HOST) a LISTEN session never hears a NOTIFY: it
    goes to PostgreSQL itself; unset, to the same server as every other connection."""
    from psycopg.conninfo import conninfo_to_dict

    from config.db import database_conninfo, listen_conninfo

    assert conninfo_to_dict(listen_conninfo()) == conninfo_to_dict(database_conninfo())
    settings.POSTGRES_LISTEN_HOST, settings.POSTGRES_LISTEN_PORT = "pg-direct.example", "6543"
    direct = conninfo_to_dict(listen_conninfo(application_name="dispatcher-listen"))
    assert (direct["host"], direct["port"], direct["application_name"]) == (
        "pg-direct.example",
        "6543",
        "dispatcher-listen",
    )
    assert direct["dbname"] == conninfo_to_dict(database_conninfo())["dbname"]
