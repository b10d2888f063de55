"""Requested messages taken in together (lifecycle.take_in_requested_events, execution.take_ins)
on real PostgreSQL: one statement for what arrived, every message sorted to the outcome it would
have alone, and a message the database refuses split off from the others."""

from __future__ import annotations

import uuid

import pytest
from django.db import DataError

from extraction.execution import lifecycle, take_ins
from extraction.execution.group_commit import Pending
from extraction.execution.lifecycle import Arrival
from extraction.execution.take_ins import take_in_batch
from extraction.models import ExecutionInbox, ExtractionJob, JobEvent, OutboxEvent, QuarantinedMessage
from tests.factories import submit

pytestmark = pytest.mark.django_db(transaction=True)


def _requested(tenant) -> Arrival:
    job_id = submit(tenant)
    requested = OutboxEvent.objects.get(job_id=job_id, event_type="extraction.requested.v1")
    return Arrival(requested.event_id, requested.payload)


def test_a_batch_sorts_every_message_to_the_outcome_it_would_have_alone(tenant):
    new, again, redelivered, forged = (_requested(tenant) for _ in range(4))
    assert lifecycle.take_in_requested_events([redelivered, forged]) == ["taken_in", "taken_in"]
    republished = Arrival(uuid.uuid4(), redelivered.payload)  # the same job under another event id
    conflicting = Arrival(forged.event_id, {**forged.payload, "state_version": 99})
    unknown = Arrival(uuid.uuid4(), {"job_id": str(uuid.uuid4()), "event_version": 1, "state_version": 1})

    outcomes = lifecycle.take_in_requested_events([new, redelivered, republished, conflicting, unknown, again, new])

    assert outcomes == [
        "taken_in", "duplicate", "already_taken_in", "quarantined", "unknown_job", "taken_in", "duplicate",
    ]  # fmt: skip
    jobs = [uuid.UUID(str(a.payload["job_id"])) for a in (new, again, redelivered, forged)]
    assert set(ExtractionJob.objects.filter(pk__in=jobs).values_list("state", flat=True)) == {"READY"}
    assert ExecutionInbox.objects.filter(job_id__in=jobs).count() == 5  # four requested + the republished id
    assert JobEvent.objects.filter(job_id__in=jobs, to_state="READY").count() == 4
    assert QuarantinedMessage.objects.get().event_id == forged.event_id
    assert not ExecutionInbox.objects.filter(pk=unknown.event_id).exists()


def test_a_message_the_database_refuses_is_split_off_and_the_others_are_taken_in(tenant):
    first, refused, last = (_requested(tenant) for _ in range(3))
    # A Kafka offset's partition beyond the inbox's int column: the statement is refused.
    refused = refused._replace(source=("extraction.requested", 2**40, 1))
    batch = [Pending(first), Pending(refused), Pending(last)]

    take_in_batch(batch)

    assert [(p.answer, type(p.error)) for p in batch] == [
        ("taken_in", type(None)), (None, DataError), ("taken_in", type(None)),
    ]  # fmt: skip
    states = ExtractionJob.objects.filter(tenant=tenant.tenant).values_list("state", flat=True)
    assert sorted(states) == ["ACCEPTED", "READY", "READY"]


def test_the_process_batcher_takes_its_size_from_the_settings(settings, process_batchers_reset):
    settings.INGRESS_TAKE_IN_BATCH = 3
    assert take_ins.batcher().max_batch == 3
    assert take_ins.batcher() is take_ins.batcher()
