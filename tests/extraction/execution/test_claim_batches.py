"""Slots of one process claiming at the same moment claim together (extraction.execution.claims)
on real PostgreSQL: one statement for the slots that queued, distinct jobs, None for the slots
left over, and a database error handed to each slot of the batch."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from django.db import OperationalError, connection

from extraction.execution import claims, lifecycle
from extraction.execution.claims import ClaimRequest, claim_batch
from extraction.execution.group_commit import GroupCommit, Pending
from tests.factories import make_ready_jobs, make_tenant

pytestmark = pytest.mark.django_db(transaction=True)

REQUEST = ClaimRequest("w", ("default",))


def test_slots_that_queue_while_a_claim_is_written_claim_together(monkeypatch):
    tenant = make_tenant("t", max_in_flight=100)
    make_ready_jobs(tenant, 3)
    batcher = GroupCommit(claim_batch, max_batch=64)
    counts: list[int] = []
    claim = lifecycle.claim_next_jobs

    def recorded_claim(*, count: int, **kwargs):
        counts.append(count)
        if len(counts) == 1:  # hold the first claim until the other four have queued
            deadline = time.monotonic() + 10
            while batcher.waiting() < 4 and time.monotonic() < deadline:
                time.sleep(0.01)
        return claim(count=count, **kwargs)

    monkeypatch.setattr(lifecycle, "claim_next_jobs", recorded_claim)
    got: dict[int, uuid.UUID | None] = {}

    def slot(n: int) -> None:
        taken = batcher.submit(REQUEST)
        got[n] = taken.job_id if taken is not None else None
        connection.close()

    first = threading.Thread(target=slot, args=(0,))
    first.start()
    while not counts:
        time.sleep(0.01)
    others = [threading.Thread(target=slot, args=(n,)) for n in range(1, 5)]
    for thread in others:
        thread.start()
    for thread in [first, *others]:
        thread.join(timeout=30)

    assert counts == [1, 4]
    taken = [job for job in got.values() if job is not None]
    assert len(got) == 5 and len(taken) == 3 and len(set(taken)) == 3
    assert list(got.values()).count(None) == 2


def test_claims_for_different_pools_are_claimed_apart(settings):
    settings.MODEL_POLICIES = {**settings.MODEL_POLICIES, "other": dict(settings.MODEL_POLICIES["default"])}
    tenant = make_tenant("t", max_in_flight=100)
    make_ready_jobs(tenant, 2)  # model policy "default"
    batch = [Pending(REQUEST), Pending(ClaimRequest("w", ("other",))), Pending(REQUEST)]
    claim_batch(batch)
    assert [p.answer is not None for p in batch] == [True, False, True]
    assert batch[0].answer.job_id != batch[2].answer.job_id


def test_a_claim_the_database_refuses_reaches_every_slot_of_its_batch(monkeypatch):
    error = OperationalError("the server closed the connection")

    def refused(**_kwargs):
        raise error

    monkeypatch.setattr(lifecycle, "claim_next_jobs", refused)
    batch = [Pending(REQUEST), Pending(REQUEST)]
    claim_batch(batch)
    assert [(p.settled, p.error) for p in batch] == [(True, error), (True, error)]


def test_the_process_batcher_takes_its_size_from_the_settings(settings, process_batchers_reset):
    settings.WORKER_CLAIM_BATCH = 5
    assert claims.batcher().max_batch == 5
    assert claims.batcher() is claims.batcher()
