"""Celery tasks: thin interfaces over lifecycle and worker functions.

``ingest_requested`` (queue ``ingress``) moves execution responsibility into PostgreSQL and
only then lets Celery ack (acks_late). ``wake_up`` (queue ``llm``, task ``extraction.run_slot``) claims
from PostgreSQL, so a lost wake loses no job — the scheduler sends another.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from typing import Any

from celery import Task, current_app, shared_task
from celery.signals import worker_shutdown, worker_shutting_down
from django.conf import settings
from django.db import DatabaseError
from kombu import Producer

from config import tracing
from config.celery import message_origin
from config.messaging import durable_step, outbox_event, reject_to_dead_letters
from config.outages import Outage
from config.topology import LLM, WORK_EXCHANGE
from extraction.events import EventType
from extraction.execution import lifecycle, runtime, take_ins, worker
from extraction.execution.faults import fault_point
from extraction.execution.outcomes import TakeIn

logger = logging.getLogger("extraction.ingress")


@shared_task(name="extraction.ingest_requested", bind=True, acks_late=True, ignore_result=True)
def ingest_requested(self: Task, event: dict) -> TakeIn:
    """BRK-2: inbox row + READY in one transaction (with the messages that arrived together),
    commit, then (on return) ack."""
    event_id, payload = outbox_event(logger, self.request.id, event, event_types={EventType.REQUESTED})
    # With the messages the process's other ingress threads hold, in one statement.
    arrival = lifecycle.Arrival(event_id, payload)
    outcome = durable_step(logger, event, lambda: take_ins.batcher().submit(arrival))
    # Celery's run span, a child of the relay's publish (the context came in the headers).
    tracing.annotate({"extraction.job_id": str(payload["job_id"]), "extraction.ingress.outcome": outcome})
    fault_point("ingress_after_commit")
    if outcome == TakeIn.UNKNOWN_JOB:
        raise reject_to_dead_letters(logger, "no such job", event)
    if outcome == TakeIn.TAKEN_IN:
        wake_for_taken_in(payload["job_id"])
    return outcome


def wake_for_taken_in(job_id: str) -> None:
    """A job just taken in. WORKER_WAKE_UPS=broker: its wake-up message. notify: nothing more,
    the take-in's own transaction notified the dispatchers."""
    if settings.WORKER_WAKE_UPS == "broker":
        wake_workers(1, job_id=job_id)


def wake_workers(count: int, *, job_id: str | None = None) -> int:
    """Wake the llm workers for ``count`` runnable jobs; returns the wake-ups sent. Hints only: a
    failure is logged, never raised, because the scheduler re-wakes from PostgreSQL (and the
    dispatchers poll).

    WORKER_WAKE_UPS=notify: one NOTIFY on runnable_jobs (each dispatcher claims for all its
    free slots), in the caller's transaction if one is open. broker: ``count`` wake-up messages
    on the llm queue; ``job_id`` names the job one was sent for (the ingress names it; the
    scheduler's sweep does not), so a worker can drop it when one of its own slots already ran
    that job (``worker.run_slot``)."""
    if count <= 0:
        return 0
    if settings.WORKER_WAKE_UPS == "notify":
        try:
            lifecycle.notify_runnable_jobs()
        except DatabaseError as exc:
            runtime.DATABASE.failed(exc, consequence="the dispatchers find the jobs at their next poll")
            return 0
        return count
    kwargs = {"job_id": str(job_id)} if job_id is not None else {}
    kwargsrepr = f"job {job_id}" if job_id is not None else "{}"
    sent = 0
    try:
        producer = _wake_producer()
        for _ in range(count):
            # Celery builds the message; publishing it ourselves skips apply_async's routing
            # and option merging, which cost more than the publish itself.
            task_id = str(uuid.uuid4())
            message = current_app.amqp.as_task_v2(
                task_id,
                wake_up.name,
                args=(),
                kwargs=kwargs,
                argsrepr="()",
                kwargsrepr=kwargsrepr,
                origin=message_origin(),
            )
            producer.publish(
                message.body,
                exchange=WORK_EXCHANGE,
                routing_key=LLM,
                headers=message.headers,
                serializer="json",
                delivery_mode=2,
                declare=[],
                retry=False,
                **message.properties,
            )
            sent += 1
    except Exception as exc:  # noqa: BLE001 - Outage.failed logs a bug with its traceback
        _drop_wake_producer()  # a broken connection: the next wake opens another
        _wake_broker.failed(exc, consequence="wake-ups are dropped; the scheduler wakes the workers from PostgreSQL")
    else:
        _wake_broker.succeeded()
    return sent


_wake_broker = Outage(logger, "RabbitMQ (worker wake-ups)")


_wake_channel = threading.local()


def _wake_producer() -> Producer:
    """This thread's producer for wake-ups, on a connection WITHOUT publisher confirms.

    Waiting for the broker's confirm is the price of not losing a message; a wake-up may be
    lost (BRK-4: the scheduler re-wakes from PostgreSQL), so it skips the confirm round trip on
    the ingress path. Outbox events keep confirms (the relay's own connection). One per thread:
    a kombu channel is not thread-safe.
    """
    producer = getattr(_wake_channel, "producer", None)
    if producer is None:
        connection = current_app.connection_for_write(transport_options={"confirm_publish": False})
        producer = current_app.amqp.Producer(connection)
        _wake_channel.producer = producer
    return producer


def _drop_wake_producer() -> None:
    producer = getattr(_wake_channel, "producer", None)
    _wake_channel.producer = None
    if producer is not None:
        try:
            producer.connection.release()
        except Exception:  # noqa: BLE001 - closing what already broke
            pass


@shared_task(name="extraction.run_slot", acks_late=True, ignore_result=True)
def wake_up(job_id: str | None = None) -> int:
    """A wake-up on the llm queue: run one slot (``worker.run_slot``), told which job it was sent
    for. The task keeps its wire name, extraction.run_slot."""
    try:
        return worker.run_slot(woken_for=job_id)
    except DatabaseError as exc:
        # A wake-up is a hint: with the database away there is nothing to claim, and the
        # scheduler wakes workers again once it is back. Failing the task would only send the
        # hint to the dead letters and fill the log with a traceback per wake-up.
        runtime.DATABASE.failed(exc, consequence="wake-ups are dropped; the scheduler wakes the workers again")
        return 0


@worker_shutdown.connect
def _end_without_finalizing(sender: Any = None, **_kwargs: Any) -> None:
    # After a warm shutdown that abandoned model calls: every slot has handed its job back and
    # Celery has acked, but the abandoned calls still run on daemon threads. Python's teardown
    # of the interpreter would spend seconds of the grace under them (and can hang on a lock
    # one of them holds), so the process ends here. Earlier receivers flushed the traces.
    if runtime.runtime().abandoning.is_set():
        logging.shutdown()
        os._exit(int(getattr(sender, "exitcode", 0) or 0))


@worker_shutting_down.connect
def _stop_claiming(**_kwargs: Any) -> None:
    # SIGTERM (Celery's warm shutdown, which then waits for every slot): slots stop claiming at
    # once; model calls still running when the grace is nearly spent are handed back.
    runtime.runtime().begin_shutdown(settings.WORKER_SHUTDOWN_GRACE_SECONDS)
