"""E-invoices through the real processes: an uploaded UBL/CII XML or a Factur-X PDF is read
from its XML with no model call and no tokens, validated like any answer, and a hostile XML
ends terminal with its reason; a tenant that turns e-invoice intake off gets the model."""

from __future__ import annotations

from pathlib import Path

import pytest
from pypdf import PdfReader

from accounts.models import EInvoiceIntake
from extraction.models import Attempt, ExtractedText, ExtractionJob, ExtractionResult, Supplier
from tests.einvoice_files import elektron_xml, facturx_with_xml, line_two_costs_100_more
from tests.factories import submit
from tests.system import all_terminal, wait_for

pytestmark = pytest.mark.slow

INVOICES = Path(__file__).resolve().parents[3] / "testdata" / "invoices"
XRECHNUNG_UBL = INVOICES / "xrechnung-testsuite/business-cases/standard/01.04a-INVOICE_ubl.xml"
FACTURX_PDF = INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_Elektron.pdf"
RABATTE_CII = INVOICES / "zugferd-corpus/XML-Rechnung/CII/EN16931_Rabatte.cii.xml"
BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE Invoice [
 <!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
 <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;"><!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;">
]>
<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"><ID>&e;</ID></Invoice>
"""


def _start_pipeline(processes) -> None:
    processes.relay()
    processes.celery("workers", "ingress,llm")
    processes.scheduler()


def _finished(processes, job_id: str) -> ExtractionJob:
    wait_for(lambda: all_terminal([job_id]), timeout=60, message=processes.logs)
    return ExtractionJob.objects.get(pk=job_id)


def test_an_uploaded_xrechnung_is_read_from_its_xml_with_no_model_call(processes, tenant, sim):
    _start_pipeline(processes)
    job_id = submit(tenant, content=XRECHNUNG_UBL.read_bytes())

    job = _finished(processes, job_id)

    assert job.state == "SUCCEEDED"
    attempt = Attempt.objects.get(job_id=job_id)
    assert (attempt.outcome, attempt.provider, attempt.model) == ("succeeded", "einvoice", "XRechnung (UBL)")
    assert (attempt.input_tokens, attempt.output_tokens) == (0, 0)
    assert sim.stats()["calls_by_job"].get(job_id) is None
    result = ExtractionResult.objects.get(job_id=job_id)
    assert result.provider == "einvoice"
    assert result.output["invoice_number"]["value"] == "1234/78/901"
    assert result.output["totals"]["amount_due"]["value"] == "120"
    elements = result.validation["einvoice"]["elements"]
    assert elements["totals.amount_due"] == "/Invoice/cac:LegalMonetaryTotal/cbc:PayableAmount"
    # The printed XML page has no geometry to place a quote on.
    assert result.output["totals"]["amount_due"]["evidence"]["boxes"] is None
    due = result.validation["fields"]["totals.amount_due"]
    assert (due["status"], due["sources"], due["element"]) == (
        "verified",
        ["einvoice"],
        "/Invoice/cac:LegalMonetaryTotal/cbc:PayableAmount",
    )
    text = ExtractedText.objects.get(document__jobs__pk=job_id)
    assert (text.source, text.einvoice_page, len(text.pages)) == ("einvoice_xml", 1, 1)


def test_a_factur_x_pdf_is_read_from_its_embedded_xml_and_keeps_its_visible_pages(processes, tenant, sim):
    _start_pipeline(processes)
    job_id = submit(tenant, content=FACTURX_PDF.read_bytes())

    job = _finished(processes, job_id)

    assert job.state == "SUCCEEDED", ExtractionResult.objects.get(job_id=job_id).validation["reasons"]
    assert Attempt.objects.get(job_id=job_id).provider == "einvoice"
    assert sim.stats()["calls_by_job"].get(job_id) is None
    text = ExtractedText.objects.get(document__jobs__pk=job_id)
    assert text.embedded_xml_name == "factur-x.xml"
    visible = len(PdfReader(FACTURX_PDF).pages)
    assert (visible, text.einvoice_page, len(text.pages)) == (3, 4, 4)  # the PDF's pages, then the printed XML
    assert text.pages[3].startswith("INVOICE (type 204)\nElectronic invoice: Factur-X EN 16931\n")
    gross = ExtractionResult.objects.get(job_id=job_id).output["totals"]["gross"]
    assert (gross["value"], gross["evidence"]["page"]) == ("300", 4)


def test_a_factur_x_pdf_whose_xml_states_other_totals_than_its_visible_page_goes_to_review(processes, tenant, sim):
    _start_pipeline(processes)
    job_id = submit(tenant, content=facturx_with_xml(line_two_costs_100_more(elektron_xml())))

    job = _finished(processes, job_id)

    assert job.state == "REVIEW_REQUIRED"
    result = ExtractionResult.objects.get(job_id=job_id)
    assert result.validation["reasons"] == ["visible_and_embedded_disagree"]
    assert result.output["totals"]["gross"]["value"] == "419"
    assert sim.stats()["calls_by_job"].get(job_id) is None


def test_an_invoice_with_discounts_and_a_charge_passes_as_v2_and_as_v1(processes, tenant, sim):
    # The sample's VAT id is a dummy; master data listing it exactly is what lets it pass.
    Supplier.objects.create(tenant=tenant.tenant, name="Lieferant GmbH", vat_id="DE123456789", iban="")
    # The same invoice extracted twice on purpose (as v2 and as v1): not a duplicate to hold back.
    tenant.tenant.validation_overrides = {"possible_duplicate": "off"}
    tenant.tenant.save(update_fields=["validation_overrides"])
    _start_pipeline(processes)
    as_v2 = submit(tenant, content=RABATTE_CII.read_bytes(), schema="invoice.v2")
    as_v1 = submit(tenant, content=RABATTE_CII.read_bytes(), schema="invoice.v1")

    assert _finished(processes, as_v2).state == "SUCCEEDED"
    v2 = ExtractionResult.objects.get(job_id=as_v2)
    assert v2.output["schema"] == "invoice.v2"
    assert [a["amount"]["value"] for a in v2.output["allowances"]] == ["1.00", "13.73"]
    assert [c["amount"]["value"] for c in v2.output["charges"]] == ["5.80"]
    # v1 has no place for the document's allowances and charges: its arithmetic counts the XML's
    # totals of them, and the result says what v1 left out.
    assert _finished(processes, as_v1).state == "SUCCEEDED", ExtractionResult.objects.get(job_id=as_v1).validation
    v1 = ExtractionResult.objects.get(job_id=as_v1)
    assert v1.output["schema"] == "invoice.v1" and "allowances" not in v1.output
    assert v1.validation["einvoice"]["omitted_from_v1"] == {"allowance_total": "14.73", "charge_total": "5.80"}
    assert "omitted_from_v1" not in v2.validation["einvoice"]


@pytest.mark.parametrize(
    ("invents_an_iban", "state", "reasons"),
    [(False, "SUCCEEDED", []), (True, "REVIEW_REQUIRED", ["model_and_einvoice_disagree"])],
)
def test_a_tenant_asking_for_both_gets_the_xmls_values_cross_checked_by_the_model(
    processes, tenant, sim, invents_an_iban, state, reasons
):
    tenant.tenant.einvoice_intake = EInvoiceIntake.BOTH
    tenant.tenant.save(update_fields=["einvoice_intake"])
    if invents_an_iban:
        sim.control(hallucination_rate=1.0)
    _start_pipeline(processes)
    job_id = submit(tenant, content=XRECHNUNG_UBL.read_bytes())

    assert _finished(processes, job_id).state == state
    assert sim.stats()["calls_by_job"].get(job_id) == 1
    result = ExtractionResult.objects.get(job_id=job_id)
    assert result.validation["reasons"] == reasons
    agreement = next(c for c in result.validation["checks"] if c["check"] == "model_agrees")
    assert (agreement["check"], agreement["status"]) == ("model_agrees", "failed" if reasons else "passed")
    fields = result.validation["fields"]
    differing = [item["field"] for item in agreement["detail"]["differing"]]
    assert differing == (["supplier.iban"] if invents_an_iban else [])
    for path in differing:
        assert (fields[path]["status"], fields[path]["sources"]) == ("conflicting", ["einvoice"])
    # What both read alike is verified by both.
    agreed = [path for path in agreement["detail"]["compared"] if path not in differing]
    assert "invoice_number" in agreed
    assert {path: fields[path]["sources"] for path in agreed} == {path: ["einvoice", "model"] for path in agreed}
    # The result is the XML's, whatever the model read.
    assert result.output["supplier"]["iban"]["value"] == "DE79000000001234567890"
    assert result.validation["einvoice"]["profile"] == "XRechnung (UBL)"


def test_a_tenant_that_turns_einvoice_intake_off_gets_the_model(processes, tenant, sim):
    tenant.tenant.einvoice_intake = EInvoiceIntake.MODEL_ONLY
    tenant.tenant.save(update_fields=["einvoice_intake"])
    _start_pipeline(processes)
    job_id = submit(tenant, content=XRECHNUNG_UBL.read_bytes())

    _finished(processes, job_id)

    assert sim.stats()["calls_by_job"].get(job_id) == 1
    assert Attempt.objects.get(job_id=job_id).provider != "einvoice"
    fields = ExtractionResult.objects.get(job_id=job_id).validation["fields"]
    assert {tuple(entry["sources"]) for entry in fields.values() if entry["status"] != "missing"} == {("model",)}
    assert {entry["element"] for entry in fields.values()} == {None}


def test_a_billion_laughs_upload_ends_terminal_with_its_reason_and_no_model_call(processes, tenant, sim):
    _start_pipeline(processes)
    job_id = submit(tenant, content=BILLION_LAUGHS)

    job = _finished(processes, job_id)

    assert (job.state, job.error_class) == ("FAILED_TERMINAL", "unreadable_document")
    assert job.error_detail.startswith("e-invoice XML refused: the XML declares a DTD or entities")
    assert sim.stats()["calls_by_job"].get(job_id) is None
