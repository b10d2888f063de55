"""Cancelling a RUNNING job while a real LLM worker is in the middle of the model call: the
worker's completion is refused by the fence, so the job stays cancelled and nothing the model
answered is written (API-2, EXE-3)."""

from __future__ import annotations

import pytest

from extraction.models import Attempt, ExtractionJob, ExtractionResult, JobEvent, OutboxEvent
from tests.factories import submit
from tests.system import wait_for

pytestmark = pytest.mark.slow


def test_a_job_cancelled_mid_call_keeps_nothing_its_worker_returns(processes, tenant, sim):
    sim.control(latency_mean_seconds=2.0, latency_p95_seconds=2.0)  # inside FAST_CLOCKS' 3 s attempt timeout
    processes.relay()
    processes.celery("workers", "ingress,llm")
    processes.scheduler()
    job_id = submit(tenant)
    wait_for(lambda: ExtractionJob.objects.get(pk=job_id).state == "RUNNING", timeout=60, message=processes.logs)

    response = tenant.client.post("/api/v1/extraction-jobs/cancel", {"filter": {"job_ids": [job_id]}}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["outcomes"] == {"changed": 1}

    # The worker finishes its call and tries to complete under the fence it claimed with.
    wait_for(
        lambda: Attempt.objects.filter(job_id=job_id, outcome="stale_completion").exists(),
        timeout=30,
        message=processes.logs,
    )
    job = ExtractionJob.objects.get(pk=job_id)
    assert (job.state, job.error_class, job.fence) == ("FAILED_TERMINAL", "cancelled", 2)
    assert not ExtractionResult.objects.filter(job_id=job_id).exists()
    assert not OutboxEvent.objects.filter(job_id=job_id, event_type="extraction.completed.v1").exists()
    assert OutboxEvent.objects.filter(job_id=job_id, event_type="extraction.dead_lettered.v1").count() == 1
    assert JobEvent.objects.filter(job_id=job_id).order_by("-state_version").values_list("reason", flat=True)[0] == (
        "cancelled"
    )
    assert sim.stats()["calls_by_job"][job_id] == 1
