"""A value the first judgement derived by rule (an amount due printed nowhere, from gross and
prepaid) is derived again from what the reviewer corrects, never kept from the wrong inputs."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from accounts.models import Role, Tenant
from extraction.models import ExtractedText, ExtractionJob, ExtractionResult, JobState
from extraction.review import decisions as review
from extraction.validation.derivation import derive_missing
from extraction.validation.fields import ReadingSource
from extraction.validation.policy import validate_extraction
from extraction.validation.schema import parse_invoice
from tests.extraction.review.test_review import staff
from tests.extraction.validation.test_validation import NORWAY, changed, xml_case
from tests.factories import make_document, make_job, make_tenant


@pytest.fixture
def buyer(db) -> Tenant:
    tenant = make_tenant()
    tenant.allowed_currencies = ["NOK"]
    tenant.validation_overrides = {"vat_id_format": "off"}  # the sample's VAT id is a dummy
    tenant.save(update_fields=["allowed_currencies", "validation_overrides"])
    return tenant


def test_a_corrected_gross_derives_the_amount_due_again(buyer):
    document, truth = xml_case(NORWAY)  # prepaid 1000: amount due = gross − 1000
    gross = truth["totals"]["gross"]["value"]
    answer = changed(changed(truth, "totals.amount_due", None, None), "totals.gross", "99999.00")
    invoice, derived = derive_missing(parse_invoice(json.dumps(answer), schema="invoice.v1"))
    outcome = validate_extraction(
        invoice=invoice, document=document, tenant_id=buyer.pk, sources=(ReadingSource.MODEL,), derived=derived
    )
    assert outcome.review_required and outcome.fields["totals.amount_due"]["rule"] == "amount_due = gross − prepaid"
    stored = make_document(buyer, content=b"%PDF-1.7 norway", filename="norway.pdf")
    ExtractedText.objects.create(document=stored, pages=list(document.pages), source=document.source)
    job = make_job(
        buyer,
        state=JobState.REVIEW_REQUIRED,
        document=stored,
        output=invoice.to_json_dict(),
        validation=outcome.as_dict(),
        policy_version=outcome.policy_version,
        worker_id="review-test",
    )

    decided = review.approve_review(
        job_id=job.pk,
        reviewer=staff(buyer, Role.REVIEWER),
        seen_state_version=job.state_version,
        corrections={"totals.gross": gross},  # printed in the document: evidenced by being found
    )

    assert decided.status == review.APPROVED, decided
    assert ExtractionJob.objects.get(pk=job.pk).state == JobState.SUCCEEDED
    result = ExtractionResult.objects.get(job_id=job.pk)
    due = result.output["totals"]["amount_due"]
    assert (Decimal(due["value"]), due["evidence"]) == (Decimal(gross) - Decimal(1000), None)
    entry = result.validation["fields"]["totals.amount_due"]
    assert (entry["status"], entry["rule"]) == ("derived", "amount_due = gross − prepaid")
