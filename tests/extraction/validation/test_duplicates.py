"""The same invoice twice (VAL-5): a Factur-X PDF and its own XML are one invoice however they
arrive; two copies judged at the same moment are decided by the database, exactly one flagged;
a credit note is not its invoice's duplicate; a holder that failed for good gives way."""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import pytest
from django.db import connection

from accounts.models import EInvoiceIntake
from extraction.execution import worker
from extraction.execution.runtime import WorkerRuntime
from extraction.models import ExtractionJob, ExtractionResult, InvoiceFingerprint, JobState
from extraction.validation.duplicates import duplicate_check, fingerprints
from extraction.validation.schema import InvoiceV1, parse_invoice_v1
from tests.extraction.validation.test_validation import ELEKTRON, changed, pdf_case
from tests.factories import INVOICES, make_document, make_job, make_tenant

FACTUR_X = INVOICES / "zugferd-corpus/XML-Rechnung/FX/XRECHNUNG_Einfach.pdf"
ITS_XML = INVOICES / "zugferd-corpus/XML-Rechnung/FX/XRECHNUNG_Einfach.embedded.xml"


def invoice(**changes: Any) -> InvoiceV1:
    """Elektron's invoice as the rules read it, with ``path=value`` changes."""
    _, output = pdf_case(ELEKTRON)
    for path, value in changes.items():
        output = changed(output, path.replace("__", "."), value)
    return parse_invoice_v1(json.dumps(output))


def test_an_invoice_is_named_by_each_supplier_identifier_and_by_its_date_and_its_gross():
    read = invoice(invoice_number="RE-2018/471102")

    keys = [f.key for f in fingerprints(read)]

    assert keys == sorted(
        f"invoice|{supplier}|RE2018471102|{second}"
        for supplier in ("vat_id|DE136695976", "iban|DE91100000000123456789", "name|elektron industrieservice gmbh")
        for second in ("issue_date|2018-04-25", "gross|EUR 300.00")
    )


def test_an_invoice_with_no_number_cannot_be_named():
    assert fingerprints(invoice(invoice_number=None)) == []


@pytest.mark.django_db(transaction=True)
def test_a_later_job_of_the_same_invoice_is_a_possible_duplicate_naming_the_earlier(tenant):
    first, second = make_job(tenant.tenant), make_job(tenant.tenant)
    read = invoice()

    assert duplicate_check(tenant_id=tenant.tenant.pk, job_id=first.pk, invoice=read)["status"] == "passed"
    # The earlier job judged again (a retry, a policy change) still holds its invoice.
    assert duplicate_check(tenant_id=tenant.tenant.pk, job_id=first.pk, invoice=read)["status"] == "passed"
    check = duplicate_check(tenant_id=tenant.tenant.pk, job_id=second.pk, invoice=read)

    assert (check["status"], check["severity"], check["reason"]) == ("failed", "blocking", "possible_duplicate")
    assert check["detail"] == {
        "earlier_job_id": str(first.pk),
        "matched": {
            "document_type": "invoice",
            "supplier": {
                "vat_id": "DE136695976",
                "iban": "DE91100000000123456789",
                "name": "elektron industrieservice gmbh",
            },
            "invoice_number": "181301674",
            "issue_date": "2018-04-25",
            "gross": "EUR 300.00",
        },
        "other_jobs": [],
    }


@pytest.mark.django_db(transaction=True)
def test_the_same_number_and_date_from_a_reading_with_only_the_name_still_matches(tenant):
    first, second = make_job(tenant.tenant), make_job(tenant.tenant)
    duplicate_check(tenant_id=tenant.tenant.pk, job_id=first.pk, invoice=invoice())

    # A scan read with neither VAT id nor IBAN, and its gross misread.
    scan = invoice(supplier__vat_id=None, supplier__iban=None, totals__gross="330.00")
    check = duplicate_check(tenant_id=tenant.tenant.pk, job_id=second.pk, invoice=scan)

    assert check["status"] == "failed"
    assert check["detail"]["matched"] == {
        "document_type": "invoice",
        "supplier": {"name": "elektron industrieservice gmbh"},
        "invoice_number": "181301674",
        "issue_date": "2018-04-25",
    }


@pytest.mark.django_db(transaction=True)
def test_a_credit_note_another_number_or_another_tenant_is_not_a_duplicate(tenant):
    first, credit, other_number = make_job(tenant.tenant), make_job(tenant.tenant), make_job(tenant.tenant)
    elsewhere = make_tenant()
    duplicate_check(tenant_id=tenant.tenant.pk, job_id=first.pk, invoice=invoice())

    results = [
        duplicate_check(tenant_id=tenant.tenant.pk, job_id=credit.pk, invoice=invoice(document_type="credit_note")),
        duplicate_check(
            tenant_id=tenant.tenant.pk, job_id=other_number.pk, invoice=invoice(invoice_number="181301675")
        ),
        duplicate_check(tenant_id=elsewhere.pk, job_id=make_job(elsewhere).pk, invoice=invoice()),
    ]

    assert [result["status"] for result in results] == ["passed", "passed", "passed"]


@pytest.mark.django_db(transaction=True)
def test_a_holder_that_failed_for_good_gives_its_invoice_up(tenant):
    first, second = make_job(tenant.tenant), make_job(tenant.tenant)
    duplicate_check(tenant_id=tenant.tenant.pk, job_id=first.pk, invoice=invoice())
    # Rejected by a reviewer (as the duplicate of something else, say).
    ExtractionJob.objects.filter(pk=first.pk).update(state=JobState.FAILED_TERMINAL)

    assert duplicate_check(tenant_id=tenant.tenant.pk, job_id=second.pk, invoice=invoice())["status"] == "passed"
    assert set(InvoiceFingerprint.objects.filter(tenant=tenant.tenant).values_list("job_id", flat=True)) == {second.pk}


@pytest.mark.django_db(transaction=True)
def test_two_copies_judged_at_the_same_moment_exactly_one_is_flagged(tenant):
    rounds = 12
    for round_number in range(rounds):
        read = invoice(invoice_number=f"RACE-{round_number}-{uuid.uuid4().hex[:6]}")
        jobs = [make_job(tenant.tenant), make_job(tenant.tenant)]
        start = threading.Barrier(2)
        statuses: dict[uuid.UUID, str] = {}

        def judge(
            job_id: uuid.UUID,
            read: InvoiceV1 = read,
            start: threading.Barrier = start,
            statuses: dict[uuid.UUID, str] = statuses,
        ) -> None:
            try:
                start.wait()
                statuses[job_id] = duplicate_check(tenant_id=tenant.tenant.pk, job_id=job_id, invoice=read)["status"]
            finally:
                connection.close()  # this thread's own connection

        threads = [threading.Thread(target=judge, args=(job.pk,)) for job in jobs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert sorted(statuses.values()) == ["failed", "passed"], statuses
        holder = {
            fingerprint.job_id
            for fingerprint in InvoiceFingerprint.objects.filter(
                matched__invoice_number=read.invoice_number.value.replace("-", "").upper()
            )
        }
        winner = next(job_id for job_id, status in statuses.items() if status == "passed")
        assert holder == {winner}


@pytest.mark.django_db(transaction=True)
def test_a_factur_x_pdf_and_its_own_xml_through_the_worker_one_flagged(tenant):
    tenant.tenant.einvoice_intake = EInvoiceIntake.STRUCTURED_FIRST
    tenant.tenant.save(update_fields=["einvoice_intake"])
    pdf_job = make_job(
        tenant.tenant, document=make_document(tenant.tenant, content=FACTUR_X.read_bytes(), filename=FACTUR_X.name)
    )
    assert worker.run_slot(WorkerRuntime(worker_id="w-dup-1"), max_jobs=1) == 1
    xml_job = make_job(
        tenant.tenant, document=make_document(tenant.tenant, content=ITS_XML.read_bytes(), filename=ITS_XML.name)
    )
    assert worker.run_slot(WorkerRuntime(worker_id="w-dup-2"), max_jobs=1) == 1

    first = ExtractionResult.objects.get(job_id=pdf_job.pk).validation
    second = ExtractionResult.objects.get(job_id=xml_job.pk).validation
    assert next(c for c in first["checks"] if c["check"] == "possible_duplicate")["status"] == "passed"
    assert ExtractionJob.objects.get(pk=xml_job.pk).state == JobState.REVIEW_REQUIRED
    # Both carry the test data's dummy VAT id; the XML is also the PDF's duplicate.
    assert first["reasons"] == ["vat_id_invalid"]
    assert second["reasons"] == ["vat_id_invalid", "possible_duplicate"]
    check = next(c for c in second["checks"] if c["check"] == "possible_duplicate")
    assert check["detail"]["earlier_job_id"] == str(pdf_job.pk)
