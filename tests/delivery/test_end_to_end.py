"""The ERP goes down, jobs complete, the ERP comes back: every invoice lands in its ledger
exactly once (DLV-1, DLV-3). Real processes: relay, ingress/LLM workers, a delivery worker on
the ``delivery`` queue, the schedulers, the provider simulator, and the reference ERP served
by a real gunicorn process that is stopped and started again."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from delivery import dispatch
from delivery.erp.models import ErpInboxEntry, ErpLedgerEntry
from delivery.models import Delivery, DeliveryAttempt
from tests.factories import submit
from tests.system import (
    SystemProcesses,
    all_terminal,
    connect_reference_erp,
    job_states,
    start_web,
    system_env,
    wait_for,
)

pytestmark = pytest.mark.slow

JOBS = 8
FAST_DELIVERY = {
    "EGRESS_ALLOW_LOOPBACK": "1",
    "WEBHOOK_TIMEOUT_SECONDS": "3",
    "WEBHOOK_RETRY_BASE_SECONDS": "0.3",
    "WEBHOOK_RETRY_CAP_SECONDS": "2",
    "WEBHOOK_CIRCUIT_FAILURES": "3",
    "WEBHOOK_CIRCUIT_OPEN_SECONDS": "0.5",
    "WEBHOOK_MAX_ATTEMPTS": "50",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def system(transactional_db, broker, sim, settings, tmp_path):
    settings.EGRESS_ALLOW_LOOPBACK = True
    settings.WEBHOOK_TIMEOUT_SECONDS = float(FAST_DELIVERY["WEBHOOK_TIMEOUT_SECONDS"])
    group = SystemProcesses(
        env=system_env(
            broker_url=broker, simulator_url=sim.base_url, media_root=Path(settings.MEDIA_ROOT), **FAST_DELIVERY
        ),
        log_dir=tmp_path,
    )
    yield group
    group.stop_all()


def test_erp_down_then_up_every_invoice_lands_in_the_ledger_exactly_once(system, tenant):
    port = _free_port()
    start_web(system, "erp", port)
    registration = connect_reference_erp(tenant.tenant, port, "erp-e2e")
    assert dispatch.deliver(registration.verification_delivery_id) == "delivered"
    system.kill("erp")  # the ERP goes down

    system.relay()
    system.celery("workers", "ingress,llm")
    system.celery("delivery", "delivery", concurrency=8)
    system.scheduler()
    system.start("delivery-scheduler", [sys.executable, "manage.py", "run_delivery_scheduler"])
    job_ids = [submit(tenant) for _ in range(JOBS)]
    wait_for(lambda: all_terminal(job_ids), timeout=90, message=system.logs)
    assert set(job_states(job_ids).values()) == {"SUCCEEDED"}

    def every_delivery_failed_once() -> bool:
        deliveries = Delivery.objects.filter(endpoint_id=registration.endpoint.pk, is_verification=False)
        return (
            deliveries.count() == JOBS
            and DeliveryAttempt.objects.filter(delivery__in=deliveries, outcome="connection_error")
            .values("delivery")
            .distinct()
            .count()
            == JOBS
        )

    wait_for(every_delivery_failed_once, timeout=60, message=system.logs)
    assert not ErpLedgerEntry.objects.exists()

    start_web(system, "erp", port)  # the ERP is back
    wait_for(lambda: ErpLedgerEntry.objects.count() >= JOBS, timeout=90, message=system.logs)
    wait_for(lambda: not Delivery.objects.exclude(state="delivered").exists(), timeout=30, message=system.logs)

    ledger = list(ErpLedgerEntry.objects.values_list("job_id", flat=True))
    assert sorted(map(str, ledger)) == sorted(job_ids)  # each invoice, once
    deliveries = Delivery.objects.filter(endpoint_id=registration.endpoint.pk, is_verification=False)
    assert ErpInboxEntry.objects.filter(delivery_id__in=[str(d.pk) for d in deliveries]).count() == JOBS
    assert deliveries.count() == JOBS
    assert all(d.attempts >= 2 for d in deliveries)  # failed while down, delivered after
