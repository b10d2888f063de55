"""The validation policy on real invoices: each check passing on a correct answer and failing on
a wrong one. Correct answers come from the test data: the built-in extractor on a ZUGFeRD PDF's
text layer, or the XML ground truth of an invoice rendered to text (exact evidence)."""

from __future__ import annotations

import copy
import datetime
import functools
import json
import random
from decimal import Decimal
from typing import Any

import pytest

from accounts.models import Tenant, create_tenant
from eval.render_invoice_xml import render_invoice_xml
from extraction.intake.text import DocumentText, extract_document_text
from extraction.models import Supplier
from extraction.providers.builtin import extract_invoice
from extraction.validation.evidence import printed_dates, printed_numbers
from extraction.validation.policy import (
    CHECKS,
    POLICY_VERSION,
    ValidationOutcome,
    round_money,
    validate_extraction,
)
from extraction.validation.schema import parse_invoice_v1
from tests.factories import INVOICES
from tests.simulator import hallucinate

EINFACH = "zugferd-corpus/XML-Rechnung/FX/EN16931_Einfach.pdf"  # 19 % + 7 %, dummy VAT id
ELEKTRON = "zugferd-corpus/XML-Rechnung/FX/EN16931_Elektron.pdf"  # valid VAT id and IBAN
DUMMY_IBAN = "zugferd-corpus/XML-Rechnung/FX/EN16931_AbweichenderZahlungsempf.pdf"  # IBAN fails mod-97
NORWAY = "en16931-examples/ubl/examples/guide-example2.xml"  # NOK, 25/15/0 %, returns, prepaid 1000
CREDIT_NOTE = "en16931-examples/ubl/examples/ubl-tc434-creditnote1.xml"
NEGATIVE = "en16931-examples/ubl/examples/BIS3_Invoice_negativ.XML"
CATEGORY_O = "en16931-examples/cii/examples/CII_example7.xml"  # no tax total at all; dummy IBAN
MINIMUM = "zugferd-corpus/ZUGFeRDv2/correct/intarsys/MINIMUM/zugferd_2p0_MINIMUM.embedded.xml"  # no lines
FORINT = "en16931-examples/cii/examples/huf_example_cii.xml"  # HUF: VAT rounded to whole forints


@functools.cache
def _pdf(relative: str) -> tuple[DocumentText, str]:
    document = extract_document_text((INVOICES / relative).read_bytes(), "application/pdf")
    return document, json.dumps(extract_invoice(document))


def pdf_case(relative: str) -> tuple[DocumentText, dict[str, Any]]:
    document, output = _pdf(relative)
    return document, json.loads(output)


@functools.cache
def _rendered(relative: str) -> tuple[DocumentText, str]:
    rendered = render_invoice_xml((INVOICES / relative).read_bytes())
    return DocumentText(pages=(rendered.text,)), json.dumps(rendered.truth)


def xml_case(relative: str) -> tuple[DocumentText, dict[str, Any]]:
    document, truth = _rendered(relative)
    return document, json.loads(truth)


def changed(output: dict[str, Any], path: str, value: Any = ..., evidence: Any = ...) -> dict[str, Any]:
    """A copy of ``output`` with one field's value and/or evidence replaced."""
    copied = copy.deepcopy(output)
    node: Any = copied
    for part in path.replace("]", "").replace("[", ".").split("."):
        node = node[int(part)] if part.isdigit() else node[part]
    if value is not ...:
        node["value"] = value
    if evidence is not ...:
        node["evidence"] = evidence
    return copied


def _evidence(output: dict[str, Any], path: str) -> dict[str, Any]:
    node: Any = output
    for part in path.replace("]", "").replace("[", ".").split("."):
        node = node[int(part)] if part.isdigit() else node[part]
    return dict(node["evidence"])


@pytest.fixture
def buyer(db) -> Tenant:
    return create_tenant(slug="validation")


def knows_supplier_of(tenant: Tenant, output: dict[str, Any], **different: str) -> Supplier:
    """Master data listing the invoice's own supplier (optionally with a field changed)."""
    supplier = output["supplier"]
    values = {
        "name": supplier["name"]["value"],
        "vat_id": (supplier["vat_id"]["value"] or "").replace(" ", ""),
        "iban": supplier["iban"]["value"] or "",
        **different,
    }
    return Supplier.objects.create(tenant=tenant, **values)


def validate(output: dict[str, Any], document: DocumentText, tenant: Tenant) -> ValidationOutcome:
    return validate_extraction(invoice=parse_invoice_v1(json.dumps(output)), document=document, tenant_id=tenant.pk)


def check(outcome: ValidationOutcome, name: str) -> dict[str, Any]:
    return next(c for c in outcome.checks if c["check"] == name)


# --- the whole policy on correct answers -------------------------------------------------------------


def test_correct_extraction_of_a_real_invoice_passes_and_lists_every_check_in_order(buyer):
    document, output = pdf_case(ELEKTRON)
    knows_supplier_of(buyer, output)

    outcome = validate(output, document, buyer)

    assert outcome.review_required is False, outcome.failed()
    assert outcome.reasons == []
    assert outcome.policy_version == POLICY_VERSION == "invoice-checks.5"
    assert [(c["check"], c["status"], c["severity"]) for c in outcome.checks] == [
        ("field_types", "passed", "blocking"),
        ("line_amounts", "passed", "warning"),
        ("lines_sum", "passed", "blocking"),
        ("tax_by_rate", "passed", "blocking"),
        ("totals_sum", "passed", "blocking"),
        ("amount_due", "passed", "blocking"),
        ("currency_allowed", "passed", "blocking"),
        ("supplier_master_data", "passed", "blocking"),
        ("iban_checksum", "passed", "blocking"),
        ("vat_id_format", "passed", "blocking"),
        ("evidence_spans", "passed", "blocking"),
        ("evidence_values", "passed", "blocking"),
        ("required_fields", "passed", "blocking"),
        ("visible_matches_embedded", "skipped", "blocking"),  # the PDF's text alone, no embedded XML read
        ("possible_duplicate", "skipped", "blocking"),  # judged against the tenant's jobs at completion
        ("bundle_part_one_invoice", "skipped", "blocking"),  # judged on a bundle's part, on its pages
    ]
    assert [c["check"] for c in outcome.checks] == list(CHECKS)
    assert [set(entry) for entry in outcome.checks] == [
        {"check", "status", "severity", "reason", "field", "detail"}
    ] * len(CHECKS)
    stored = outcome.as_dict()
    assert stored["policy_version"] == POLICY_VERSION and stored["review_required"] is False
    assert json.loads(json.dumps(stored)) == stored  # storable as JSON as is


@pytest.mark.parametrize("relative", [NORWAY, CREDIT_NOTE, NEGATIVE, MINIMUM, FORINT])
def test_ground_truth_of_real_invoices_passes(buyer, relative):
    document, truth = xml_case(relative)
    knows_supplier_of(buyer, truth)

    outcome = validate(truth, document, buyer)

    assert outcome.review_required is False, outcome.failed()


# --- arithmetic ------------------------------------------------------------------------------------


def test_gross_total_that_is_not_net_plus_tax_is_blocked(buyer):
    document, output = pdf_case(EINFACH)
    knows_supplier_of(buyer, output)

    outcome = validate(changed(output, "totals.gross", "539.87"), document, buyer)

    assert outcome.review_required
    assert "totals_sum_mismatch" in outcome.reasons
    assert check(outcome, "totals_sum")["detail"]["net_plus_tax"] == "529.87"


def test_line_nets_that_do_not_add_up_to_the_net_total_are_blocked(buyer):
    document, output = pdf_case(EINFACH)
    knows_supplier_of(buyer, output)
    assert output["lines"][0]["net_amount"]["value"] == "198.00"

    outcome = validate(changed(output, "lines[0].net_amount", "189.00"), document, buyer)

    assert "line_items_incomplete" in outcome.reasons
    assert check(outcome, "lines_sum")["detail"]["sum_of_lines"] == "464.00"
    assert check(outcome, "lines_sum")["detail"]["missing_amount"] == "9.00"


def test_lines_that_add_up_to_more_than_the_net_total_are_named_so(buyer):
    document, output = pdf_case(EINFACH)
    knows_supplier_of(buyer, output)
    # A line read twice: its net counted once more.
    doubled = json.loads(json.dumps(output))
    doubled["lines"].append(doubled["lines"][0])

    outcome = validate(doubled, document, buyer)

    assert check(outcome, "lines_sum")["reason"] == "line_items_exceed"
    assert check(outcome, "lines_sum")["detail"]["excess_amount"] == "198.00"
    assert "line_items_exceed" in outcome.reasons


def test_multi_rate_tax_is_computed_per_rate_group(buyer):
    document, truth = xml_case(NORWAY)
    knows_supplier_of(buyer, truth)

    passed = check(validate(truth, document, buyer), "tax_by_rate")
    # Tax one krone too high while gross and amount due still add up: only the rate groups tell.
    wrong = changed(
        changed(changed(truth, "totals.tax", "366.28"), "totals.gross", "1802.78"), "totals.amount_due", "802.78"
    )
    failed = validate(wrong, document, buyer)

    assert passed["status"] == "passed"
    assert passed["detail"]["tax_by_rate"] == {"0": "0.00", "15": "0.15", "25": "365.13"}
    assert failed.reasons[0] == "tax_by_rate_mismatch"
    assert check(failed, "totals_sum")["status"] == "passed"


def test_two_rate_pdf_invoice_tax_matches_its_groups(buyer):
    document, output = pdf_case(EINFACH)

    result = check(validate(output, document, buyer), "tax_by_rate")

    assert result["status"] == "passed"
    assert result["detail"]["tax_by_rate"] == {"7": "19.25", "19": "37.62"}


def test_amount_due_must_be_gross_minus_prepaid(buyer):
    document, truth = xml_case(NORWAY)
    knows_supplier_of(buyer, truth)
    assert (truth["totals"]["prepaid"]["value"], truth["totals"]["amount_due"]["value"]) == ("1000.00", "801.78")

    outcome = validate(changed(truth, "totals.amount_due", "1801.78"), document, buyer)

    assert "amount_due_mismatch" in outcome.reasons


def test_invoice_without_lines_skips_the_line_checks_but_not_the_totals(buyer):
    document, truth = xml_case(MINIMUM)
    knows_supplier_of(buyer, truth)

    clean = validate(truth, document, buyer)
    wrong = validate(changed(truth, "totals.net", "189.00"), document, buyer)

    assert check(clean, "lines_sum")["status"] == "skipped" and check(clean, "lines_sum")["reason"] == "no_lines"
    assert check(clean, "tax_by_rate")["reason"] == "no_lines"
    assert not clean.review_required
    assert "totals_sum_mismatch" in wrong.reasons


def test_missing_tax_total_reads_as_zero_only_when_net_equals_gross(buyer):
    document, truth = xml_case(CATEGORY_O)
    knows_supplier_of(buyer, truth)
    assert truth["totals"]["tax"]["value"] is None

    clean = validate(truth, document, buyer)
    outcome = validate(changed(truth, "totals.gross", "3840"), document, buyer)

    assert check(clean, "totals_sum")["status"] == "passed"
    assert clean.reasons == ["iban_invalid"]  # SE1212341234123412: the sample's dummy account
    assert "totals_sum_mismatch" in outcome.reasons
    assert "totals.tax" in check(outcome, "required_fields")["detail"]["missing"]


def test_whole_unit_currency_rounds_tax_to_whole_units(buyer):
    document, truth = xml_case(FORINT)
    knows_supplier_of(buyer, truth)

    result = check(validate(truth, document, buyer), "tax_by_rate")

    # 69180.00 × 27 % = 18678.60, invoiced as 18679 forints.
    assert result["status"] == "passed"
    assert result["detail"]["tax_by_rate"] == {"27": "18679"}


@pytest.mark.parametrize(
    ("amount", "unit", "rounded"),
    [
        ("2.505", "0.01", "2.51"),  # half a cent rounds up, not to even (2.50)
        ("0.125", "0.01", "0.13"),
        ("-2.505", "0.01", "-2.51"),  # away from zero for credits
        ("2.5049999", "0.01", "2.50"),
        ("18678.60", "1", "18679"),
        ("18678.50", "1", "18679"),
    ],
)
def test_money_rounds_half_up_away_from_zero(amount, unit, rounded):
    assert round_money(Decimal(amount), Decimal(unit)) == Decimal(rounded)
    assert str(round_money(Decimal(amount), Decimal(unit))) == rounded


def _screws_invoice(line_net: str, tax: str, gross: str) -> tuple[DocumentText, dict[str, Any]]:
    """A one-line invoice (3 × 0.835 at 19 %) printed with the given amounts, and its answer."""
    text = (
        "Seller: Tolerance GmbH\nInvoice number: R-1\nInvoice date: 2026-01-02\nCurrency: EUR\n"
        "Pos  Item    Qty  Price  VAT %  Net\n"
        f"1    Screws  3    0.835  19     {line_net}\n"
        f"Net total: {line_net}\nVAT: {tax}\nTotal: {gross}\n"
    )

    def field(value: str | None, label: str = "") -> dict[str, Any]:
        if value is None:
            return {"value": None, "evidence": None}
        start = text.index(value, text.index(label) if label else 0)
        return {"value": value, "evidence": {"page": 1, "start": start, "end": start + len(value), "quote": value}}

    row = "1    Screws"
    answer = {
        "schema": "invoice.v1",
        "document_type": field(None),
        "supplier": {"name": field("Tolerance GmbH"), "vat_id": field(None), "iban": field(None)},
        "invoice_number": field("R-1"),
        "issue_date": field("2026-01-02"),
        "due_date": field(None),
        "currency": field("EUR"),
        "lines": [
            {
                "description": field("Screws", row),
                "quantity": field("3", row),
                "unit_price": field("0.835", row),
                "net_amount": field(line_net, row),
                "tax_rate": field("19", row),
                "tax_amount": field(None),
            }
        ],
        "totals": {
            "net": field(line_net, "Net total"),
            "tax": field(tax, "VAT:"),
            "gross": field(gross, "Total:"),
            "prepaid": field(None),
            "amount_due": field(None),
        },
    }
    return DocumentText(pages=(text,)), answer


def test_half_cent_products_round_up_and_one_rounding_step_is_tolerated(buyer):
    # 3 × 0.835 = 2.505 → 2.51 (half up); 2.51 × 19 % = 0.4769 → 0.48.
    exact = validate(*reversed(_screws_invoice("2.51", "0.48", "2.99")), buyer)
    one_cent_off = validate(*reversed(_screws_invoice("2.51", "0.49", "3.00")), buyer)
    two_cents_off = validate(*reversed(_screws_invoice("2.51", "0.50", "3.01")), buyer)
    line_off = validate(*reversed(_screws_invoice("2.49", "0.47", "2.96")), buyer)

    assert not exact.review_required, exact.failed()
    assert check(exact, "line_amounts")["status"] == "passed"
    assert not one_cent_off.review_required, one_cent_off.failed()
    assert two_cents_off.reasons == ["tax_by_rate_mismatch"]
    assert check(two_cents_off, "tax_by_rate")["detail"]["expected_tax"] == "0.48"
    line = check(line_off, "line_amounts")
    assert line["status"] == "failed" and line["severity"] == "warning" and not line_off.review_required
    assert line["detail"]["lines"][0]["expected"] == "2.51"


# --- currency and supplier master data ---------------------------------------------------------------


def test_currency_outside_the_tenants_list_is_blocked(buyer):
    document, output = pdf_case(ELEKTRON)
    knows_supplier_of(buyer, output)
    Tenant.objects.filter(pk=buyer.pk).update(allowed_currencies=["USD", "GBP"])
    buyer.refresh_from_db()

    outcome = validate(output, document, buyer)

    assert outcome.reasons == ["currency_not_allowed"]
    assert check(outcome, "currency_allowed")["detail"] == {"currency": "EUR", "allowed": ["GBP", "USD"]}


def test_tenant_without_supplier_records_skips_the_master_data_check(buyer):
    document, output = pdf_case(ELEKTRON)

    result = check(validate(output, document, buyer), "supplier_master_data")

    assert result["status"] == "skipped" and result["reason"] == "no_supplier_master_data"


def test_supplier_not_in_master_data_is_blocked(buyer):
    document, output = pdf_case(ELEKTRON)
    Supplier.objects.create(tenant=buyer, name="Someone Else GmbH", vat_id="DE811193231")

    outcome = validate(output, document, buyer)

    assert outcome.reasons == ["supplier_unknown"]


def test_supplier_of_another_tenant_does_not_count(buyer):
    document, output = pdf_case(ELEKTRON)
    knows_supplier_of(create_tenant(slug="other-tenant"), output)
    Supplier.objects.create(tenant=buyer, name="Someone Else GmbH", vat_id="DE811193231")

    assert validate(output, document, buyer).reasons == ["supplier_unknown"]


def test_supplier_name_must_match_master_data(buyer):
    document, output = pdf_case(ELEKTRON)
    knows_supplier_of(buyer, output, name="Completely Different AG")

    assert validate(output, document, buyer).reasons == ["supplier_name_mismatch"]


def test_supplier_name_match_ignores_case_and_spacing(buyer):
    document, output = pdf_case(ELEKTRON)
    name = output["supplier"]["name"]["value"]
    knows_supplier_of(buyer, output, name=f"  {name.upper()}  ")

    assert validate(output, document, buyer).review_required is False


def test_iban_other_than_the_master_data_iban_is_blocked(buyer):
    document, output = pdf_case(ELEKTRON)
    knows_supplier_of(buyer, output, iban="DE89370400440532013000")

    outcome = validate(output, document, buyer)

    assert outcome.reasons == ["supplier_iban_mismatch"]
    assert check(outcome, "supplier_master_data")["detail"]["expected"] == "DE89370400440532013000"


# --- IBAN and VAT id -------------------------------------------------------------------------------


def test_dummy_iban_failing_mod_97_is_blocked(buyer):
    document, output = pdf_case(DUMMY_IBAN)
    assert output["supplier"]["iban"]["value"] == "DE12123456781234567890"

    result = check(validate(output, document, buyer), "iban_checksum")

    assert result["status"] == "failed" and result["reason"] == "iban_invalid"
    assert result["detail"]["problem"] == "checksum"


def test_valid_iban_and_vat_id_pass(buyer):
    document, output = pdf_case(ELEKTRON)

    outcome = validate(output, document, buyer)

    assert check(outcome, "iban_checksum")["status"] == "passed"
    assert check(outcome, "vat_id_format")["status"] == "passed"


def test_vat_id_with_wrong_check_digits_is_blocked_unless_master_data_lists_it(buyer):
    document, output = pdf_case(EINFACH)
    assert output["supplier"]["vat_id"]["value"] == "DE123456789"  # a sample id: check digit wrong

    unknown = validate(output, document, buyer)
    knows_supplier_of(buyer, output)
    vouched = validate(output, document, buyer)

    assert unknown.reasons == ["vat_id_invalid"]
    assert check(unknown, "vat_id_format")["detail"]["problem"] == "checksum"
    assert vouched.review_required is False
    assert check(vouched, "vat_id_format")["detail"]["vouched_by"] == "master data"


def test_vat_id_of_impossible_format_is_blocked(buyer):
    document, truth = xml_case(NORWAY)
    wrong = changed(truth, "supplier.vat_id", "NO12", {**_evidence(truth, "supplier.vat_id")})

    result = check(validate(wrong, document, buyer), "vat_id_format")

    assert result["status"] == "failed" and result["detail"]["problem"] == "format"


# --- evidence --------------------------------------------------------------------------------------


def test_invented_iban_with_evidence_pointing_at_other_text_is_caught(buyer):
    document, output = pdf_case(ELEKTRON)
    knows_supplier_of(buyer, output)
    invented = hallucinate(output, document, random.Random(7))

    outcome = validate(invented, document, buyer)

    # The span exists and its quote matches it; what it says is not the IBAN.
    assert check(outcome, "evidence_spans")["status"] == "passed"
    assert check(outcome, "evidence_values")["field"] == "supplier.iban"
    assert {"evidence_value_mismatch", "supplier_iban_mismatch"} <= set(outcome.reasons)


def test_quote_that_is_not_the_document_text_at_its_offsets_is_caught(buyer):
    document, output = pdf_case(EINFACH)
    evidence = _evidence(output, "totals.gross")

    outcome = validate(
        changed(
            output, "totals.gross", evidence={**evidence, "start": evidence["start"] + 2, "end": evidence["end"] + 2}
        ),
        document,
        buyer,
    )
    beyond = validate(
        changed(output, "totals.net", evidence={**_evidence(output, "totals.net"), "page": 9}), document, buyer
    )

    assert check(outcome, "evidence_spans")["reason"] == "evidence_span_mismatch"
    assert check(outcome, "evidence_spans")["field"] == "totals.gross"
    assert check(beyond, "evidence_spans")["detail"]["problems"][0]["document_text"] is None


def test_value_without_evidence_is_caught(buyer):
    document, output = pdf_case(EINFACH)

    outcome = validate(changed(output, "invoice_number", evidence=None), document, buyer)

    assert "evidence_missing" in outcome.reasons
    assert check(outcome, "evidence_spans")["field"] == "invoice_number"


def test_value_the_quote_does_not_say_is_caught(buyer):
    document, output = pdf_case(EINFACH)

    outcome = validate(changed(output, "issue_date", "2018-03-06"), document, buyer)

    assert "evidence_value_mismatch" in outcome.reasons
    assert check(outcome, "evidence_values")["field"] == "issue_date"


def test_sign_flip_of_an_invoice_amount_is_caught(buyer):
    document, output = pdf_case(EINFACH)
    flipped = output
    for name in ("net", "tax", "gross", "amount_due"):
        flipped = changed(flipped, f"totals.{name}", "-" + output["totals"][name]["value"])

    assert "evidence_value_mismatch" in validate(flipped, document, buyer).reasons


def test_credit_note_may_give_printed_negative_amounts_as_magnitudes(buyer):
    document = DocumentText(pages=("CREDIT NOTE\nTotal: -119.00 EUR\n",))
    start = document.pages[0].index("-119.00")
    evidence = {"page": 1, "start": start, "end": start + 7, "quote": "-119.00"}
    _, output = xml_case(CREDIT_NOTE)
    credit = changed(output, "totals.gross", "119.00", evidence)
    invoice = changed(changed(credit, "document_type", "invoice", None), "totals.gross", "119.00", evidence)

    def values_result(answer: dict[str, Any]) -> list[str]:
        problems = check(validate(answer, document, buyer), "evidence_values")["detail"].get("problems", [])
        return [p["field"] for p in problems]

    assert "totals.gross" not in values_result(credit)
    assert "totals.gross" in values_result(invoice)


@pytest.mark.parametrize(
    ("quote", "number"),
    [
        ("1.234,50", "1234.50"),
        ("1,234.50", "1234.50"),
        ("1 234,50 €", "1234.50"),
        ("529,87", "529.87"),
        ("-7,67", "-7.67"),
        ("(7.67)", "-7.67"),
        ("7,67-", "-7.67"),
        ("19 %", "19"),
        ("1,000", "1000"),
        ("1,000", "1.000"),
        ("EUR 12.345.678,90", "12345678.90"),
    ],
)
def test_printed_numbers_are_read_in_every_convention(quote, number):
    assert Decimal(number) in printed_numbers(quote)


@pytest.mark.parametrize(
    ("quote", "date"),
    [
        ("05.03.2018", "2018-03-05"),
        ("2018-03-05", "2018-03-05"),
        ("20180305", "2018-03-05"),
        ("5. März 2018", "2018-03-05"),
        ("March 5, 2018", "2018-03-05"),
        ("19 april 2014", "2014-04-19"),
        ("2 juillet 2015", "2015-07-02"),
        ("03/05/18", "2018-03-05"),
    ],
)
def test_printed_dates_are_read_in_every_convention(quote, date):
    assert datetime.date.fromisoformat(date) in printed_dates(quote)


# --- required fields (VAL-2) -----------------------------------------------------------------------


def test_missing_gross_total_is_never_accepted(buyer):
    document, output = pdf_case(ELEKTRON)
    knows_supplier_of(buyer, output)

    outcome = validate(changed(output, "totals.gross", None, None), document, buyer)

    assert outcome.review_required
    assert outcome.reasons == ["required_field_missing"]
    assert check(outcome, "required_fields")["field"] == "totals.gross"


def test_financial_value_withheld_while_its_evidence_is_given_is_blocked(buyer):
    document, output = pdf_case(ELEKTRON)
    knows_supplier_of(buyer, output)

    outcome = validate(changed(output, "totals.tax", None), document, buyer)

    assert "field_value_withheld" in outcome.reasons
    assert "totals.tax" in check(outcome, "required_fields")["detail"]["withheld"]


def test_unparseable_amount_is_blocked(buyer):
    document, output = pdf_case(ELEKTRON)

    outcome = validate(changed(output, "totals.net", "252,10"), document, buyer)

    assert "field_value_unparseable" in outcome.reasons
    assert check(outcome, "field_types")["field"] == "totals.net"


# --- tenant overrides ------------------------------------------------------------------------------


def _override(tenant: Tenant, overrides: dict[str, str]) -> Tenant:
    Tenant.objects.filter(pk=tenant.pk).update(validation_overrides=overrides)
    tenant.refresh_from_db()
    return tenant


def test_tenant_can_make_a_blocking_check_a_warning(buyer):
    document, output = pdf_case(EINFACH)
    _override(buyer, {"vat_id_format": "warning"})

    outcome = validate(output, document, buyer)

    assert outcome.review_required is False
    assert check(outcome, "vat_id_format")["status"] == "failed"
    assert check(outcome, "vat_id_format")["severity"] == "warning"
    assert outcome.as_dict()["severities"]["vat_id_format"] == "warning"


def test_tenant_can_make_a_warning_blocking(buyer):
    document, output = pdf_case(EINFACH)
    knows_supplier_of(buyer, output)
    wrong_price = changed(output, "lines[0].unit_price", "9.0000", {**_evidence(output, "lines[0].unit_price")})
    lenient = validate(wrong_price, document, buyer)
    _override(buyer, {"line_amounts": "blocking", "evidence_values": "off"})

    strict = validate(wrong_price, document, buyer)

    assert check(lenient, "line_amounts")["status"] == "failed" and "line_amount_mismatch" not in lenient.reasons
    assert strict.reasons == ["line_amount_mismatch"]


def test_tenant_can_switch_a_check_off_and_mistyped_overrides_change_nothing(buyer):
    document, output = pdf_case(EINFACH)
    _override(buyer, {"vat_id_format": "off", "totals_sum": "lenient", "no_such_check": "off"})

    outcome = validate(changed(output, "totals.gross", "539.87"), document, buyer)

    assert check(outcome, "vat_id_format")["status"] == "skipped"
    assert check(outcome, "vat_id_format")["reason"] == "disabled_by_tenant_policy"
    assert "totals_sum_mismatch" in outcome.reasons
