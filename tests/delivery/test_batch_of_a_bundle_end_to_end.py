"""A batch holding a bundle, through the real processes (issue #27): the bundle's job is split
by a worker, its parts and the batch's other file are read and completed, the scheduler's sweep
completes the batch once every job and part is finished, and the reference ERP receives every
webhook (split, the parts' outcomes, the batch's completion) signed, each once. Real processes:
the relay, the ingress/LLM workers, a delivery worker, the schedulers and the ERP on gunicorn."""

from __future__ import annotations

import socket
import sys
import uuid
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from delivery import dispatch
from delivery.erp.models import ErpInboxEntry
from delivery.models import Delivery
from extraction.models import ExtractionBatch, ExtractionJob, JobState
from tests.extraction.intake.test_bundles import bundle_of
from tests.factories import INVOICES, unique_invoice
from tests.system import SystemProcesses, connect_reference_erp, start_web, system_env, wait_for

pytestmark = pytest.mark.slow

ELEKTRON = INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_Elektron.pdf"
FREE_FIBER = INVOICES / "invoice2data/compare/free_fiber.pdf"
FAST = {"EGRESS_ALLOW_LOOPBACK": "1", "WEBHOOK_RETRY_BASE_SECONDS": "0.3", "BATCH_COMPLETION_SWEEP_SECONDS": "0.5"}
EVENT_TYPES = (
    "extraction.completed.v1",
    "extraction.review_required.v1",
    "extraction.failed.v1",
    "extraction.split.v1",
    "extraction.batch_completed.v1",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def system(transactional_db, broker, sim, settings, tmp_path):
    settings.EGRESS_ALLOW_LOOPBACK = True
    group = SystemProcesses(
        env=system_env(broker_url=broker, simulator_url=sim.base_url, media_root=Path(settings.MEDIA_ROOT), **FAST),
        log_dir=tmp_path,
    )
    yield group
    group.stop_all()


def test_a_batch_with_a_bundle_ends_with_its_parts_delivered_and_one_batch_completed_webhook(system, tenant):
    port = _free_port()
    start_web(system, "erp", port)
    registration = connect_reference_erp(tenant.tenant, port, "erp-bundle", event_types=EVENT_TYPES)
    assert dispatch.deliver(registration.verification_delivery_id) == "delivered"
    system.relay()
    system.celery("workers", "ingress,llm")
    system.celery("delivery", "delivery", concurrency=4)
    system.scheduler()
    system.start("delivery-scheduler", [sys.executable, "manage.py", "run_delivery_scheduler"])

    files = [
        SimpleUploadedFile("month.pdf", bundle_of(ELEKTRON, FREE_FIBER)),
        SimpleUploadedFile("one.txt", unique_invoice()),
    ]
    response = tenant.client.post(
        "/api/v1/extraction-batches", {"files": files}, format="multipart", HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex
    )
    assert response.status_code == 202, response.content
    batch_id = response.json()["batch_id"]
    bundle_id = response.json()["items"][0]["job"]["job_id"]

    wait_for(
        lambda: ExtractionBatch.objects.filter(pk=batch_id, completed_at__isnull=False).exists(),
        timeout=120,
        message=system.logs,
    )
    assert ExtractionJob.objects.get(pk=bundle_id).state == JobState.SPLIT
    parts = list(ExtractionJob.objects.filter(parent_id=bundle_id).order_by("first_page"))
    assert [(part.first_page, part.last_page) for part in parts] == [(1, 3), (4, 5)]
    finished = {JobState.SUCCEEDED, JobState.REVIEW_REQUIRED}
    assert {part.state for part in parts} <= finished

    # One webhook per event: the split, each part's outcome, the other file's, the batch's.
    expected = 1 + len(parts) + 1 + 1
    wait_for(
        lambda: (
            Delivery.objects.filter(
                endpoint_id=registration.endpoint.pk, is_verification=False, state="delivered"
            ).count()
            == expected
        ),
        timeout=60,
        message=system.logs,
    )
    received = sorted(
        ErpInboxEntry.objects.filter(connection__slug="erp-bundle")
        .exclude(event_type="webhook.verification.v1")
        .values_list("event_type", flat=True)
    )
    outcome_types = sorted(
        "extraction.completed.v1" if state == JobState.SUCCEEDED else "extraction.review_required.v1"
        for state in ExtractionJob.objects.filter(
            pk__in=[*(part.pk for part in parts), response.json()["items"][1]["job"]["job_id"]]
        ).values_list("state", flat=True)
    )
    assert received == sorted(["extraction.split.v1", "extraction.batch_completed.v1", *outcome_types])
