"""A model policy that reads with the rules (``reading: rules_and_model``) through the worker.
The rules read first: a reading the policy accepts alone is the answer and the model (the
simulator, which would invent an IBAN) is never asked; a document the rules cannot settle is
read by the model too, and the two readings make one answer, each value naming who read it."""

from __future__ import annotations

import pytest

from accounts.models import EInvoiceIntake
from extraction.execution import worker
from extraction.execution.runtime import WorkerRuntime
from extraction.models import Attempt, ExtractionJob, ExtractionResult, JobState
from tests.factories import INVOICES, make_document, make_job

ELEKTRON = INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_Elektron.pdf"  # valid VAT id and IBAN
# Its IBAN and VAT id are the test data's deliberate dummies: the rules cannot settle it.
DUMMY_IBAN = INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_AbweichenderZahlungsempf.pdf"


@pytest.fixture
def model_policy(sim_policy):
    """``model_policy(reading)``: a policy on a pool of its own that calls the simulator."""
    return lambda reading: sim_policy(reading=reading)


def _job(tenant, path, policy):
    tenant.tenant.einvoice_intake = EInvoiceIntake.MODEL_ONLY  # the PDF's own XML is not read
    tenant.tenant.save(update_fields=["einvoice_intake"])
    document = make_document(tenant.tenant, content=path.read_bytes(), filename=path.name)
    return make_job(tenant.tenant, document=document, model_policy=policy).pk


@pytest.mark.django_db(transaction=True)
def test_a_model_alone_invents_an_iban_and_sends_the_invoice_to_review(tenant, sim, model_policy):
    sim.control(hallucination_rate=1.0)
    job_id = _job(tenant, ELEKTRON, model_policy("model"))

    assert worker.run_slot(WorkerRuntime(worker_id="w-model"), max_jobs=1) == 1

    assert ExtractionJob.objects.get(pk=job_id).state == JobState.REVIEW_REQUIRED
    assert sim.stats()["outcomes"] == {"hallucination": 1}
    result = ExtractionResult.objects.get(job_id=job_id)
    assert result.output["supplier"]["iban"]["value"] != "DE91100000000123456789"
    iban = result.validation["fields"]["supplier.iban"]
    assert (iban["status"], iban["sources"]) == ("unverified", ["model"])


@pytest.mark.django_db(transaction=True)
def test_a_document_the_rules_settle_is_never_sent_to_the_model(tenant, sim, model_policy):
    sim.control(hallucination_rate=1.0)  # it would invent an IBAN, were it asked
    job_id = _job(tenant, ELEKTRON, model_policy("rules_and_model"))

    assert worker.run_slot(WorkerRuntime(worker_id="w-rules-first"), max_jobs=1) == 1

    assert ExtractionJob.objects.get(pk=job_id).state == JobState.SUCCEEDED
    assert sim.stats()["outcomes"] == {}  # no call, no tokens
    attempt = Attempt.objects.get(job_id=job_id)
    assert (attempt.provider, attempt.input_tokens, attempt.output_tokens) == ("builtin", 0, 0)
    result = ExtractionResult.objects.get(job_id=job_id)
    assert result.validation["reading"] == {"mode": "rules_and_model", "model_asked": False}
    assert result.output["supplier"]["iban"]["value"] == "DE91100000000123456789"
    iban = result.validation["fields"]["supplier.iban"]
    assert (iban["status"], iban["sources"]) == ("verified", ["rules"])
    assert "readings_agree" not in [check["check"] for check in result.validation["checks"]]


@pytest.mark.django_db(transaction=True)
def test_a_document_the_rules_cannot_settle_is_read_by_both(tenant, sim, model_policy):
    job_id = _job(tenant, DUMMY_IBAN, model_policy("rules_and_model"))

    assert worker.run_slot(WorkerRuntime(worker_id="w-both"), max_jobs=1) == 1

    assert ExtractionJob.objects.get(pk=job_id).state == JobState.REVIEW_REQUIRED
    assert sim.stats()["outcomes"] == {"ok": 1}  # asked once
    attempt = Attempt.objects.get(job_id=job_id)
    assert attempt.provider == "openai"
    result = ExtractionResult.objects.get(job_id=job_id)
    assert result.validation["reading"] == {"mode": "rules_and_model", "model_asked": True}
    # The test data's dummy IBAN and VAT id (both fail their checksums), whoever reads them.
    assert result.validation["reasons"] == ["iban_invalid", "vat_id_invalid"]
    agreement = next(c for c in result.validation["checks"] if c["check"] == "readings_agree")
    assert (agreement["check"], agreement["status"]) == ("readings_agree", "passed")
    number = result.validation["fields"]["invoice_number"]
    assert (number["status"], number["sources"]) == ("verified", ["rules", "model"])


@pytest.mark.django_db(transaction=True)
def test_a_model_that_fails_for_good_leaves_the_rules_reading_for_review(tenant, sim, model_policy):
    sim.control(error_rate=1.0)
    job_id = _job(tenant, DUMMY_IBAN, model_policy("rules_and_model"))
    ExtractionJob.objects.filter(pk=job_id).update(max_attempts=1)  # this failure is its last

    assert worker.run_slot(WorkerRuntime(worker_id="w-model-failed"), max_jobs=1) == 1

    assert ExtractionJob.objects.get(pk=job_id).state == JobState.REVIEW_REQUIRED
    assert sim.stats()["outcomes"] == {"server_error": 1}
    attempt = Attempt.objects.get(job_id=job_id)
    assert (attempt.provider, attempt.outcome) == ("openai", "review_required")
    assert "500" in attempt.error_detail
    result = ExtractionResult.objects.get(job_id=job_id)
    assert result.validation["reading"] == {"mode": "rules_and_model", "model_asked": True, "model_answered": False}
    assert result.validation["reasons"] == ["iban_invalid", "vat_id_invalid"]
    number = result.validation["fields"]["invoice_number"]
    assert (number["status"], number["sources"]) == ("verified", ["rules"])
