"""An answer judged with the worker's cached policy while the tenant's policy changed: the
completion refuses the outdated verdict and the worker judges the answer again, by the policy as
it is now, without another model call (real PostgreSQL, Redis, the built-in extractor)."""

from __future__ import annotations

import json
import logging

import pytest

from extraction.execution import lifecycle
from extraction.execution.attempt import execute_attempt
from extraction.execution.outcomes import AttemptResult
from extraction.execution.runtime import WorkerRuntime
from extraction.intake.text import DocumentText
from extraction.models import Attempt, ExtractionJob, ExtractionResult, Supplier
from extraction.providers.builtin import extract_invoice
from extraction.validation import policy_cache
from extraction.validation.policy import validate_extraction
from extraction.validation.schema import parse_invoice_v1
from tests.factories import SAMPLE_TEXT, submit, take_in

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_supplier_added_after_the_claim_decides_the_verdict(tenant, process_batchers_reset, caplog):
    job_id = submit(tenant)
    take_in(job_id)
    claim = lifecycle.claim_next_job(worker_id="w")
    assert claim is not None and claim.policy_revision == 1
    # The process already judged this tenant's invoices under revision 1 (no suppliers then)...
    policy_cache.policies.clear()
    document = DocumentText(pages=(SAMPLE_TEXT,))
    invoice = parse_invoice_v1(json.dumps(extract_invoice(document)))
    cached = validate_extraction(invoice=invoice, document=document, tenant_id=claim.tenant_id, policy_revision=1)
    assert not cached.review_required
    # ...and while the model reads, the tenant records this supplier with another IBAN.
    Supplier.objects.create(
        tenant=tenant.tenant, name="ACME Supplies GmbH", vat_id="DE136695976", iban="DE02120300000000202051"
    )

    with caplog.at_level(logging.INFO, logger="extraction.worker"):
        assert execute_attempt(claim, WorkerRuntime("w")) == AttemptResult.COMPLETED

    assert ExtractionJob.objects.get(pk=job_id).state == "REVIEW_REQUIRED"
    validation = ExtractionResult.objects.get(job_id=job_id).validation
    assert validation["tenant_policy_revision"] == 2
    assert validation["reasons"] == ["supplier_iban_mismatch"]
    assert "tenant policy changed while judging: judging again" in caplog.text
    assert list(Attempt.objects.filter(job_id=job_id).values_list("outcome", flat=True)) == ["review_required"]
