"""A worker stores each field's trust with the verdict, naming the reading that gave the value:
the rules here (the built-in extractor behind a provider pool); the e-invoice and a model's
cross-check in test_einvoice_intake.py."""

from __future__ import annotations

import uuid

import pytest

from accounts.models import EInvoiceIntake
from config.instruments import REVIEW_REASONS
from extraction.capacity import limiter
from extraction.execution import worker
from extraction.execution.runtime import WorkerRuntime
from extraction.models import ExtractionJob, ExtractionResult, JobState
from extraction.validation.fields import untrusted_blocking
from tests.factories import INVOICES, make_document, make_job

ELEKTRON = INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_Elektron.pdf"  # valid VAT id and IBAN
EINFACH = INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_Einfach.pdf"  # dummy VAT id: review


@pytest.fixture
def rules_policy(transactional_db, settings):
    pool = f"rules-{uuid.uuid4().hex[:10]}"
    settings.PROVIDER_POOLS = {
        pool: {
            "provider": "builtin",
            "model": "builtin-rules-1",
            "max_output_tokens": 500,
            "requests_per_minute": 600,
            "tokens_per_minute": 600_000,
            "max_in_flight": 30,
            "reserved_tokens": 1000,
        }
    }
    settings.MODEL_POLICIES = {
        "p-rules": {"provider_pool": pool, "reserved_tokens": 1000, "price_per_1k_tokens_micros": 0}
    }
    limiter.reset_pool(pool)
    yield "p-rules"
    limiter.reset_pool(pool)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("sample", "state"), [(ELEKTRON, JobState.SUCCEEDED), (EINFACH, JobState.REVIEW_REQUIRED)])
def test_the_rules_reading_is_stored_field_by_field(tenant, rules_policy, sample, state):
    # A Factur-X PDF goes to the rules only when the tenant turns e-invoice intake off.
    tenant.tenant.einvoice_intake = EInvoiceIntake.MODEL_ONLY
    tenant.tenant.save(update_fields=["einvoice_intake"])
    document = make_document(tenant.tenant, content=sample.read_bytes(), filename=sample.name)
    job_id = make_job(tenant.tenant, document=document, model_policy=rules_policy).pk

    before = REVIEW_REASONS.labels(reason="vat_id_invalid")._value.get()

    assert worker.run_slot(WorkerRuntime(worker_id="w-trust"), max_jobs=1) == 1

    assert ExtractionJob.objects.get(pk=job_id).state == state
    result = ExtractionResult.objects.get(job_id=job_id)
    validation = result.validation
    # Where the gross total is printed on its page (the PDF's text layer): one line, one box.
    [box] = result.output["totals"]["gross"]["evidence"]["boxes"]
    assert len(box) == 4 and 0 <= box[0] < box[2] <= 1 and 0 <= box[1] < box[3] <= 1
    fields = validation["fields"]
    assert {tuple(entry["sources"]) for entry in fields.values()} == {("rules",)}
    assert fields["invoice_number"]["status"] == "verified"
    # /metrics counts each reason of a verdict that committed (config.instruments).
    counted = REVIEW_REASONS.labels(reason="vat_id_invalid")._value.get() - before
    assert counted == (0 if state == JobState.SUCCEEDED else 1)
    if state == JobState.SUCCEEDED:
        assert untrusted_blocking(fields) == []
    else:
        assert validation["reasons"] == ["vat_id_invalid"]
        assert untrusted_blocking(fields) == ["supplier.vat_id"]
        assert fields["supplier.vat_id"]["failed"] == ["vat_id_format"]
