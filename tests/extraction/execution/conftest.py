from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.conftest import TenantContext, make_tenant_context
from tests.system import SystemProcesses, ensure_vhost, purge_queues, system_env

SAMPLE_TEXT = (
    "ACME Supplies GmbH\nVAT ID: DE136695976\nIBAN: DE89 3704 0044 0532 0130 00\n"
    "Invoice number: INV-2026-001\nInvoice date: 2026-11-02\nDue date: 2026-12-02\nCurrency: EUR\n"
    "Widget 2 x 50.00 = 100.00\nNet total: 100.00 EUR\nVAT 19%: 19.00 EUR\nTotal: 119.00 EUR\n"
)


def unique_invoice() -> bytes:
    """The sample invoice with its own invoice number: distinct bytes, so its own document."""
    return SAMPLE_TEXT.replace("INV-2026-001", f"INV-{uuid.uuid4().hex[:12].upper()}").encode()


@pytest.fixture(scope="session")
def broker_url() -> str:
    return ensure_vhost(os.environ.get("TEST_BROKER_VHOST", "extraction_test"))


@pytest.fixture
def broker(broker_url, settings) -> str:
    purge_queues(broker_url)
    settings.BROKER_URL = broker_url
    settings.CELERY_BROKER_URL = broker_url
    from config.celery import app

    app.conf.broker_url = broker_url
    return broker_url


@pytest.fixture(scope="module")
def simulator():
    from tests.simulator import SimulatorProcess

    with SimulatorProcess(latency_mean_seconds=0.05, latency_p95_seconds=0.1, time_scale=1.0) as sim:
        yield sim


@pytest.fixture
def sim(simulator):
    simulator.reset()
    return simulator


@pytest.fixture
def processes(transactional_db, broker, sim, settings, tmp_path):
    group = SystemProcesses(
        env=system_env(broker_url=broker, simulator_url=sim.base_url, media_root=Path(settings.MEDIA_ROOT)),
        log_dir=tmp_path,
    )
    yield group
    group.stop_all()


@pytest.fixture
def tenant(transactional_db) -> TenantContext:
    return make_tenant_context(f"t-{uuid.uuid4().hex[:8]}")


def submit(ctx: TenantContext, content: bytes = SAMPLE_TEXT.encode(), *, key: str | None = None,
           options: dict | None = None) -> str:
    upload = SimpleUploadedFile("invoice.txt", content)
    doc = ctx.client.post("/api/v1/documents", {"file": upload}, format="multipart")
    assert doc.status_code == 201, doc.content
    body = {"document_id": doc.json()["id"]}
    if options:
        body["options"] = options
    resp = ctx.client.post("/api/v1/extraction-jobs", body, format="json",
                           HTTP_IDEMPOTENCY_KEY=key or uuid.uuid4().hex)
    assert resp.status_code == 202, resp.content
    return resp.json()["job_id"]
