"""A model policy that reads with the rules (``reading: rules_and_model``) through the worker:
the model (the simulator) invents an IBAN; alone it sends the invoice to review, read together
with the rules the printed IBAN wins and the job succeeds, each value naming who read it."""

from __future__ import annotations

import uuid

import pytest

from accounts.models import EInvoiceIntake
from extraction.capacity import limiter
from extraction.execution import worker
from extraction.execution.runtime import WorkerRuntime
from extraction.models import Attempt, ExtractionJob, ExtractionResult, JobState
from tests.factories import INVOICES, make_document, make_job

ELEKTRON = INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_Elektron.pdf"  # valid VAT id and IBAN


@pytest.fixture
def model_policy(transactional_db, sim, settings):
    """``model_policy(reading)``: a policy on a pool of its own that calls the simulator."""
    pools: list[str] = []

    def make(reading: str) -> str:
        pool = f"together-{uuid.uuid4().hex[:10]}"
        settings.PROVIDER_POOLS = {
            **getattr(settings, "PROVIDER_POOLS", {}),
            pool: {
                "provider": "openai",
                "model": "sim-model",
                "base_url": sim.base_url,
                "api_key_env": "READ_TOGETHER_TEST_API_KEY",
                "max_output_tokens": 4000,
                "requests_per_minute": 600,
                "tokens_per_minute": 600_000,
                "max_in_flight": 30,
                "reserved_tokens": 6000,
            },
        }
        settings.MODEL_POLICIES = {
            **settings.MODEL_POLICIES,
            f"p-{pool}": {
                "provider_pool": pool,
                "reserved_tokens": 6000,
                "price_per_1k_tokens_micros": 0,
                "reading": reading,
            },
        }
        limiter.reset_pool(pool)
        pools.append(pool)
        return f"p-{pool}"

    yield make
    for pool in pools:
        limiter.reset_pool(pool)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("reading", "state"), [("model", "REVIEW_REQUIRED"), ("rules_and_model", "SUCCEEDED")])
def test_an_iban_the_model_invents_loses_to_the_printed_one_read_together(tenant, sim, model_policy, reading, state):
    tenant.tenant.einvoice_intake = EInvoiceIntake.MODEL_ONLY  # the PDF's own XML is not read
    tenant.tenant.save(update_fields=["einvoice_intake"])
    sim.control(hallucination_rate=1.0)
    document = make_document(tenant.tenant, content=ELEKTRON.read_bytes(), filename=ELEKTRON.name)
    job_id = make_job(tenant.tenant, document=document, model_policy=model_policy(reading)).pk

    assert worker.run_slot(WorkerRuntime(worker_id=f"w-{reading}"), max_jobs=1) == 1

    assert ExtractionJob.objects.get(pk=job_id).state == JobState(state)
    assert Attempt.objects.filter(job_id=job_id).count() == 1  # one model call either way
    result = ExtractionResult.objects.get(job_id=job_id)
    iban = result.validation["fields"]["supplier.iban"]
    if reading == "model":
        assert result.output["supplier"]["iban"]["value"] != "DE91100000000123456789"
        assert (iban["status"], iban["sources"]) == ("unverified", ["model"])
        return
    assert result.output["supplier"]["iban"]["value"] == "DE91100000000123456789"
    assert (iban["status"], iban["sources"]) == ("verified", ["rules"])
    agreement = result.validation["checks"][-1]
    assert (agreement["check"], agreement["status"]) == ("readings_agree", "passed")
    assert [(item["field"], item["kept"]) for item in agreement["detail"]["resolved"]] == [("supplier.iban", "rules")]
    number = result.validation["fields"]["invoice_number"]
    assert (number["status"], number["sources"]) == ("verified", ["rules", "model"])
