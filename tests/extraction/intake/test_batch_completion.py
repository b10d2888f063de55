"""A batch's completion (docs/batches.md): the scheduler's sweep writes one
``extraction.batch_completed.v1`` when every job of the batch is finished (SUCCEEDED,
REVIEW_REQUIRED, FAILED_TERMINAL, or SPLIT with every part finished), never before, never twice,
however many sweeps race; a batch of refusals only completes at once."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from kombu import Connection

from extraction.events import EventType
from extraction.execution import scheduler
from extraction.intake.batch_completion import PeriodicBatchCompletion, complete_finished_batches
from extraction.models import ExtractionBatch, JobState, OutboxEvent
from tests.extraction.intake.batch_support import claim, finish, split, submit_batch
from tests.factories import take_in


def completion_events(batch_id: str) -> list[OutboxEvent]:
    return list(OutboxEvent.objects.filter(event_type=EventType.BATCH_COMPLETED, payload__batch_id=batch_id))


def completed_at(batch_id: str):
    return ExtractionBatch.objects.get(pk=batch_id).completed_at


def test_the_batch_completes_once_when_its_last_job_finishes(tenant_a):
    batch_id, (first, second, third) = submit_batch(tenant_a, documents=3, refused=1)
    finish(first, JobState.SUCCEEDED)
    finish(second, JobState.REVIEW_REQUIRED)
    assert complete_finished_batches() == []
    assert completed_at(batch_id) is None

    finish(third, JobState.FAILED_TERMINAL)
    assert [str(batch) for batch in complete_finished_batches()] == [batch_id]
    assert complete_finished_batches() == []

    (event,) = completion_events(batch_id)
    assert event.job_id is None and event.tenant_id == tenant_a.tenant.pk
    assert event.payload == {
        "batch_id": batch_id,
        "event_version": 1,
        "counts": {"SUCCEEDED": 1, "REVIEW_REQUIRED": 1, "FAILED_TERMINAL": 1, "refused": 1},
    }
    assert completed_at(batch_id) is not None


@pytest.mark.parametrize("last_state", [JobState.READY, JobState.RUNNING])
def test_a_batch_with_a_job_on_its_way_is_not_completed(tenant_a, last_state):
    batch_id, (done, waiting) = submit_batch(tenant_a, documents=2)
    finish(done, JobState.SUCCEEDED)
    if last_state == JobState.RUNNING:
        claim(waiting)
    else:
        take_in(waiting)

    assert complete_finished_batches() == []
    assert completed_at(batch_id) is None
    assert completion_events(batch_id) == []


def test_a_split_job_counts_only_with_every_part_finished(tenant_a):
    batch_id, (whole, bundle) = submit_batch(tenant_a, documents=2)
    finish(whole, JobState.SUCCEEDED)
    first_part, second_part = split(bundle, [(1, 1), (2, 3)])
    finish(first_part, JobState.SUCCEEDED)

    assert complete_finished_batches() == []  # the second part is still ACCEPTED

    finish(second_part, JobState.REVIEW_REQUIRED)
    assert [str(batch) for batch in complete_finished_batches()] == [batch_id]
    (event,) = completion_events(batch_id)
    assert event.payload["counts"] == {"SUCCEEDED": 2, "SPLIT": 1, "REVIEW_REQUIRED": 1}


def test_a_batch_of_refusals_only_completes_on_the_first_sweep(tenant_a):
    batch_id, jobs = submit_batch(tenant_a, documents=0, refused=2)
    assert jobs == []

    assert [str(batch) for batch in complete_finished_batches()] == [batch_id]
    (event,) = completion_events(batch_id)
    assert event.payload["counts"] == {"refused": 2}


def test_another_tenants_open_batch_is_left_alone(tenant_a, tenant_b):
    finished_id, (job,) = submit_batch(tenant_a, documents=1)
    open_id, _ = submit_batch(tenant_b, documents=1)
    finish(job, JobState.SUCCEEDED)

    assert [str(batch) for batch in complete_finished_batches()] == [finished_id]
    assert completed_at(open_id) is None


@pytest.mark.django_db(transaction=True)
def test_two_racing_sweeps_write_one_event(tenant_a):
    batches = [submit_batch(tenant_a, documents=0, refused=1)[0] for _ in range(5)]
    barrier = threading.Barrier(2)
    results: list[list] = []
    errors: list[BaseException] = []

    def sweep() -> None:
        try:
            barrier.wait(timeout=10)
            results.append(complete_finished_batches())
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert errors == []
    completed = sorted(str(batch) for result in results for batch in result)
    assert completed == sorted(batches)  # each batch completed by exactly one of the two
    for batch_id in batches:
        assert len(completion_events(batch_id)) == 1


def test_the_periodic_sweep_waits_for_its_interval(tenant_a, settings):
    settings.BATCH_COMPLETION_SWEEP_SECONDS = 3600
    sweep = PeriodicBatchCompletion()
    assert sweep() == []
    batch_id, _ = submit_batch(tenant_a, documents=0, refused=1)
    assert sweep() is None  # within the interval: nothing runs
    settings.BATCH_COMPLETION_SWEEP_SECONDS = 0
    assert [str(batch) for batch in sweep() or ()] == [batch_id]


def test_the_scheduler_tick_completes_finished_batches(broker, tenant_a, settings):
    settings.BATCH_COMPLETION_SWEEP_SECONDS = 0
    batch_id, _ = submit_batch(tenant_a, documents=0, refused=1)

    with Connection(broker) as broker_connection:
        sweep = scheduler.scheduler_tick(broker_connection)

    assert sweep.batches_completed == 1
    assert len(completion_events(batch_id)) == 1
