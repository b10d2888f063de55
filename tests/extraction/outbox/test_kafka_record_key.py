"""The Kafka record's key keeps one subject's records in order on one partition: a job's event
is keyed by its job, a batch's completion (which names no job) by its batch. No broker."""

from __future__ import annotations

import uuid

from extraction.events import EventType
from extraction.outbox.kafka_relay import record_key
from extraction.outbox.relay import OutboxRow


def test_a_jobs_event_is_keyed_by_its_job():
    job_id = uuid.uuid4()
    row = OutboxRow(uuid.uuid4(), EventType.COMPLETED, {"job_id": str(job_id)}, job_id=job_id)
    assert record_key(row) == str(job_id).encode()


def test_a_batch_completion_is_keyed_by_its_batch():
    batch_id = str(uuid.uuid4())
    payload = {"batch_id": batch_id, "event_version": 1, "counts": {"refused": 1}}
    row = OutboxRow(uuid.uuid4(), EventType.BATCH_COMPLETED, payload, job_id=None)
    assert record_key(row) == batch_id.encode()
