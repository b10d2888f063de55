"""Transport failures: poison messages go to the dead-letter queue instead of crash-looping,
a SIGTERM drains a worker gracefully, and a broker outage at accept time loses nothing."""

from __future__ import annotations

import signal
import subprocess
import time
import uuid

import pytest
from kombu import Connection, Producer

from config.celery import app as celery_app
from config.topology import WORK_EXCHANGE
from extraction.models import Attempt, ExtractionJob, OutboxEvent
from tests.factories import submit, unique_invoice
from tests.system import all_terminal, queue_depth, wait_for

pytestmark = pytest.mark.slow


def _publish_raw(broker_url: str, body, *, content_type: str = "application/json", headers=None) -> None:
    with Connection(broker_url, transport_options={"confirm_publish": True}) as conn:
        Producer(conn.channel()).publish(
            body,
            exchange=WORK_EXCHANGE,
            routing_key="ingress",
            content_type=content_type,
            content_encoding="utf-8",
            serializer=None if isinstance(body, (bytes, str)) else "json",
            headers=headers or {},
            delivery_mode=2,
            mandatory=True,
            declare=[],
        )


def _publish_task(broker_url: str, name: str, kwargs: dict, task_id: str | None = None) -> None:
    task_id = task_id or str(uuid.uuid4())
    message = celery_app.amqp.as_task_v2(task_id, name, args=(), kwargs=kwargs)
    with Connection(broker_url, transport_options={"confirm_publish": True}) as conn:
        Producer(conn.channel()).publish(
            message.body,
            exchange=WORK_EXCHANGE,
            routing_key="ingress",
            headers=message.headers,
            serializer="json",
            delivery_mode=2,
            mandatory=True,
            declare=[],
            **message.properties,
        )


def test_poison_messages_are_dead_lettered_and_good_work_continues(processes, tenant, broker):
    processes.relay()
    processes.celery("workers", "ingress,llm")
    processes.scheduler()
    _publish_raw(
        broker,
        b"{not json",
        content_type="application/json",
        headers={"id": str(uuid.uuid4()), "task": "extraction.ingest_requested", "lang": "py"},
    )
    _publish_task(
        broker,
        "extraction.ingest_requested",
        {
            "event": {
                "event_id": "x",
                "event_type": "extraction.requested.v1",
                "payload": {"job_id": str(uuid.uuid4()), "event_version": 99},
            }
        },
    )
    _publish_task(broker, "extraction.no_such_task", {})
    wait_for(lambda: queue_depth(broker, "ingress.dlq") == 3, timeout=30, message=processes.logs)
    assert queue_depth(broker, "ingress") == 0  # nothing requeued in a loop

    job_id = submit(tenant)
    wait_for(lambda: all_terminal([job_id]), timeout=60, message=processes.logs)
    assert ExtractionJob.objects.get(pk=job_id).state == "SUCCEEDED"
    assert processes.procs["workers"].poll() is None  # the worker survived the poison


def test_sigterm_finishes_attempts_in_hand_and_stops_claiming(processes, tenant, sim):
    sim.control(latency_mean_seconds=3.0, latency_p95_seconds=3.5)
    processes.relay()
    processes.celery("ingress", "ingress")
    processes.celery("llm-old", "llm", concurrency=2, ATTEMPT_TIMEOUT_SECONDS="20", LEASE_SECONDS="30")
    job_ids = [submit(tenant, content=unique_invoice()) for _ in range(4)]
    wait_for(lambda: sim.stats()["concurrency"]["current"] == 2, timeout=30, message=processes.logs)
    started = time.monotonic()
    processes.kill("llm-old", signal.SIGTERM)  # warm shutdown; waits for the process to exit
    assert time.monotonic() - started < 15
    states = ExtractionJob.objects.filter(pk__in=job_ids).values_list("state", flat=True)
    assert sorted(states) == ["READY", "READY", "SUCCEEDED", "SUCCEEDED"]  # two finished, two never claimed

    processes.celery("llm-new", "llm", concurrency=2, ATTEMPT_TIMEOUT_SECONDS="20", LEASE_SECONDS="30")
    processes.scheduler()
    wait_for(lambda: all_terminal(job_ids), timeout=60, message=processes.logs)
    assert set(ExtractionJob.objects.filter(pk__in=job_ids).values_list("state", flat=True)) == {"SUCCEEDED"}
    assert Attempt.objects.filter(job_id__in=job_ids).count() == 4  # no attempt lost or repeated


def _rabbitmq(command: str) -> None:
    subprocess.run(["rabbitmqctl", command], check=True, capture_output=True, timeout=120)


def test_broker_down_at_accept_time_job_is_accepted_and_published_when_it_returns(processes, tenant, broker):
    processes.relay()
    processes.celery("workers", "ingress,llm")
    processes.scheduler()
    _rabbitmq("stop_app")
    try:
        job_id = submit(tenant)  # 202: acceptance never touches the broker

        def requested() -> OutboxEvent:
            return OutboxEvent.objects.get(job_id=job_id, event_type="extraction.requested.v1")

        # The relay keeps trying while the broker is away (how soon depends on how long a refused
        # connection takes to fail), and nothing is called published meanwhile.
        wait_for(lambda: requested().publish_attempts >= 2, timeout=30, message=processes.logs)
        assert requested().published_at is None
        assert ExtractionJob.objects.get(pk=job_id).state == "ACCEPTED"
    finally:
        _rabbitmq("start_app")
    wait_for(lambda: all_terminal([job_id]), timeout=120, message=processes.logs)
    assert ExtractionJob.objects.get(pk=job_id).state == "SUCCEEDED"
    assert requested().published_at is not None


def test_scheduler_on_a_broker_nobody_declared_yet_declares_the_queues(transactional_db, settings, caplog):
    """A first start or a reset broker: the scheduler's sweep asks queue depths, so it declares
    the topology itself instead of failing its sweeps until another process has."""
    import threading

    from config.topology import ALL_QUEUES
    from extraction.execution.scheduler import run_scheduler
    from tests.system import ensure_vhost

    name = f"fresh_{uuid.uuid4().hex[:8]}"
    settings.BROKER_URL = ensure_vhost(name)
    try:
        run_scheduler(stop=threading.Event(), once=True)
        assert "(scheduler sweep)" not in caplog.text  # neither an outage nor a failure was logged
        for queue in ALL_QUEUES:
            assert queue_depth(settings.BROKER_URL, queue.name) == 0  # declared (a 404 would raise)
    finally:
        subprocess.run(["rabbitmqctl", "delete_vhost", name], capture_output=True, check=False)


def test_a_wake_up_alone_makes_an_llm_worker_run_a_ready_job(processes, tenant, broker, settings):
    """WORKER_WAKE_UPS=broker: the wake-up message is built by Celery and published by us (not
    apply_async): a real worker must take it as its run_slot task. No relay, ingress or
    scheduler runs here, so nothing but this one message can make the worker claim the job."""
    from extraction.execution import lifecycle
    from extraction.execution.tasks import _drop_wake_producer, wake_workers

    settings.WORKER_WAKE_UPS = "broker"
    job_id = submit(tenant)
    requested = OutboxEvent.objects.get(job_id=job_id, event_type="extraction.requested.v1")
    assert lifecycle.take_in_requested_event(event_id=requested.event_id, payload=requested.payload) == "taken_in"
    processes.celery("llm-only", "llm", WORKER_WAKE_UPS="broker")
    _drop_wake_producer()  # a producer of an earlier test may point at another broker URL
    assert wake_workers(1, job_id=job_id) == 1  # as the ingress sends it: naming its job
    wait_for(lambda: all_terminal([job_id]), timeout=60)
    assert ExtractionJob.objects.get(pk=job_id).state == "SUCCEEDED"
