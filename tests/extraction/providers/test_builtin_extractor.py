"""The built-in extractor on real invoices, checked against their upstream ground truth
(the XML embedded in a Factur-X/ZUGFeRD PDF, invoice2data's expected JSON)."""

from __future__ import annotations

import functools
import json
import re
from decimal import Decimal
from typing import Any

import pytest

from extraction.intake.text import DocumentText, extract_document_text
from extraction.providers.base import ProviderRequest
from extraction.providers.builtin import BuiltinProvider, extract_invoice
from extraction.validation.schema import parse_invoice_v1
from tests.factories import INVOICES
from tests.golden import assert_golden, in_other_process

ZUGFERD = "zugferd-corpus"


@functools.cache
def _document(relative: str) -> DocumentText:
    path = INVOICES / relative
    content_type = "application/pdf" if path.suffix == ".pdf" else "text/plain"
    return extract_document_text(path.read_bytes(), content_type)


@functools.cache
def _xml_truth(folder: str) -> dict[str, dict[str, Any]]:
    """The embedded-XML ground truth of each PDF in a folder, keyed by the PDF's path."""
    records = json.loads((INVOICES / folder / "expected_fields.json").read_text())["records"]
    return {f"{folder}/{r['rendered_pdf']}": r for r in records if r["rendered_pdf"]}


def _value(field: dict[str, Any]) -> str | None:
    return field["value"]


def _compact(identifier: str | None) -> str | None:
    return re.sub(r"\s", "", identifier) if identifier else None


@pytest.mark.parametrize(
    "pdf",
    [
        "XML-Rechnung/FX/EN16931_Einfach.pdf",
        "XML-Rechnung/FX/XRECHNUNG_Einfach.pdf",
        "XML-Rechnung/FX/EN16931_Physiotherapeut.pdf",
        "XML-Rechnung/FX/EN16931_Rechnungskorrektur.pdf",
        "XML-Rechnung/FX/EN16931_1_Teilrechnung.pdf",
        "ZUGFeRDv2/correct/intarsys/EXTENDED/zugferd_2p0_EXTENDED_Fremdwaehrung.pdf",
        "ZUGFeRDv2/correct/FNFE-factur-x-examples/Facture_FR_BASICWL.pdf",
        "ZUGFeRDv2/correct/FNFE-factur-x-examples/Facture_UE_BASICWL.pdf",
    ],
)
def test_header_fields_and_totals_equal_the_embedded_xml(pdf):
    truth = _xml_truth(ZUGFERD)[f"{ZUGFERD}/{pdf}"]

    invoice = extract_invoice(_document(f"{ZUGFERD}/{pdf}"))

    assert _value(invoice["invoice_number"]) == truth["invoice_number"]
    assert _value(invoice["issue_date"]) == truth["issue_date"]
    assert _value(invoice["currency"]) == truth["currency"]
    assert _value(invoice["supplier"]["vat_id"]) == truth["seller_vat_id"]
    expected_iban = _compact(truth["payee_accounts"][0]) if truth["payee_accounts"] else None
    assert _value(invoice["supplier"]["iban"]) == expected_iban
    totals = invoice["totals"]
    for ours, theirs in [
        ("net", "net_total_BT109"),
        ("tax", "tax_total_BT110"),
        ("gross", "gross_total_BT112"),
        ("amount_due", "amount_due_BT115"),
    ]:
        assert Decimal(_value(totals[ours])) == Decimal(truth["totals"][theirs]), ours
    if truth["due_date"]:
        assert _value(invoice["due_date"]) == truth["due_date"]


@pytest.mark.parametrize(
    ("source", "iban"),
    [
        ("coolblue1.pdf", "NL50INGB0683251309"),
        ("coolblue2.pdf", "NL50INGB0683251309"),
        ("NetpresseInvoice.pdf", None),
        ("AzureInterior.pdf", None),
        ("free_fiber.pdf", None),
        ("QualityHosting.pdf", None),
    ],
)
def test_real_invoices_match_invoice2data_expectations(source, iban):
    expected = json.loads((INVOICES / "invoice2data/compare" / source).with_suffix(".json").read_text())[0]

    invoice = extract_invoice(_document(f"invoice2data/compare/{source}"))

    assert _value(invoice["invoice_number"]) == expected["invoice_number"]
    assert _value(invoice["issue_date"]) == expected["date"]
    assert _value(invoice["currency"]) == expected["currency"]
    assert Decimal(_value(invoice["totals"]["gross"])) == Decimal(str(expected["amount"])).quantize(Decimal("0.01"))
    if "amount_untaxed" in expected and source != "QualityHosting.pdf":  # not printed on that page
        net = Decimal(str(expected["amount_untaxed"])).quantize(Decimal("0.01"))
        assert Decimal(_value(invoice["totals"]["net"])) == net
    if iban:
        assert _value(invoice["supplier"]["iban"]) == expected["iban"] == iban


def test_line_items_equal_the_embedded_xml():
    pdf = f"{ZUGFERD}/ZUGFeRDv2/correct/intarsys/EXTENDED/zugferd_2p0_EXTENDED_Warenrechnung.pdf"
    truth = _xml_truth(ZUGFERD)[pdf]["lines"]

    lines = extract_invoice(_document(pdf))["lines"]

    assert len(lines) == len(truth)
    for ours, theirs in zip(lines, truth, strict=True):
        # A description wrapped onto the next line ("... Karton 3" / "x 20") keeps its first line.
        assert theirs["name"].startswith(_value(ours["description"]))
        for field, key in [
            ("quantity", "quantity"),
            ("unit_price", "unit_price"),
            ("net_amount", "net_amount"),
            ("tax_rate", "vat_rate"),
        ]:
            assert Decimal(_value(ours[field])) == Decimal(theirs[key]), (theirs["name"], field)


def test_credit_note_is_recognized_and_its_amounts_are_positive():
    pdf = f"{ZUGFERD}/ZUGFeRDv2/correct/FNFE-factur-x-examples/Avoir_FR_type381_BASIC.pdf"
    truth = _xml_truth(ZUGFERD)[pdf]

    invoice = extract_invoice(_document(pdf))

    assert _value(invoice["document_type"]) == "credit_note"
    assert invoice["totals"]["gross"]["evidence"]["quote"] == "-233,47"  # printed as a deduction
    assert Decimal(_value(invoice["totals"]["gross"])) == Decimal(truth["totals"]["gross_total_BT112"])


def test_buyers_iban_and_vat_id_are_not_taken_for_the_suppliers():
    # A SEPA direct debit names the buyer's account ("Käufer-IBAN"); the buyer's VAT id is printed too.
    invoice = extract_invoice(_document(f"{ZUGFERD}/XML-Rechnung/FX/EN16931_SEPA_Prenotification.pdf"))
    credit = extract_invoice(_document(f"{ZUGFERD}/XML-Rechnung/FX/EN16931_Gutschrift.pdf"))

    assert invoice["supplier"]["iban"] == {"value": None, "evidence": None}
    assert _value(credit["supplier"]["vat_id"]) == "DE123456789"  # not the buyer's DE136695976
    assert _value(credit["document_type"]) == "invoice"  # "Gutschrift (389)": self-billed invoice


def _all_sources() -> list[str]:
    pdfs = sorted(str(p.relative_to(INVOICES)) for p in INVOICES.rglob("*.pdf"))
    return [*pdfs, "invoice2data/compare/Orlen.txt"]


def _fields(invoice: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    fields = [("document_type", invoice["document_type"])]
    fields += [(f"supplier.{k}", v) for k, v in invoice["supplier"].items()]
    fields += [(k, invoice[k]) for k in ("invoice_number", "issue_date", "due_date", "currency")]
    fields += [(f"lines[{i}].{k}", v) for i, line in enumerate(invoice["lines"]) for k, v in line.items()]
    fields += [(f"totals.{k}", v) for k, v in invoice["totals"].items()]
    return fields


@pytest.mark.parametrize("source", _all_sources())
def test_every_value_has_evidence_that_is_exactly_the_page_text(source):
    document = _document(source)

    invoice = extract_invoice(document)

    parse_invoice_v1(json.dumps(invoice))  # the shape the validator expects
    for path, field in _fields(invoice):
        evidence = field["evidence"]
        if field["value"] is None:
            assert evidence is None, path
            continue
        assert evidence is not None, path
        assert evidence["quote"], path
        assert document.span(evidence["page"], evidence["start"], evidence["end"]) == evidence["quote"], path


WARENRECHNUNG = "zugferd-corpus/ZUGFeRDv2/correct/intarsys/EXTENDED/zugferd_2p0_EXTENDED_Warenrechnung.pdf"
# Runs in a fresh interpreter: an answer that depended on set or hash order would differ
# between two processes with different PYTHONHASHSEEDs, which one process cannot notice.
EXTRACT_IN_A_NEW_PROCESS = f"""
import json
from extraction.intake.text import extract_document_text
from extraction.providers.builtin import extract_invoice
from pathlib import Path
data = Path({str(INVOICES / WARENRECHNUNG)!r}).read_bytes()
print(json.dumps(extract_invoice(extract_document_text(data, "application/pdf"))))
"""


def test_extraction_is_deterministic_across_processes_and_matches_the_golden_answer():
    data = (INVOICES / WARENRECHNUNG).read_bytes()
    answer = extract_invoice(extract_document_text(data, "application/pdf"))

    assert_golden("builtin_extractor_warenrechnung.json", answer)
    assert in_other_process(EXTRACT_IN_A_NEW_PROCESS, hash_seed=1) == answer
    assert in_other_process(EXTRACT_IN_A_NEW_PROCESS, hash_seed=2) == answer


def test_text_without_invoice_data_gives_nulls_not_guesses():
    document = DocumentText(pages=("Dear customer,\nthank you for your order.\nKind regards",))

    invoice = extract_invoice(document)

    fields = [field for _, field in _fields(invoice)]
    assert fields != []
    assert fields == [{"value": None, "evidence": None}] * len(fields)
    assert invoice["lines"] == []


def test_german_plain_text_with_decimal_comma():
    document = DocumentText(
        pages=(
            "Muster GmbH · Hauptstr. 1 · 10115 Berlin\n"
            "USt-IdNr.: DE 123 456 789\n\n"
            "Rechnung Nr. RE-2024-0815\n"
            "Rechnungsdatum: 14.02.2024\n"
            "Fällig am: 15.03.2024\n\n"
            "Nettobetrag gesamt        1.000,00 EUR\n"
            "zzgl. 19 % MwSt.            190,00 EUR\n"
            "Gesamtbetrag              1.190,00 EUR\n\n"
            "IBAN: DE89 3704 0044 0532 0130 00\n",
        )
    )

    invoice = extract_invoice(document)

    assert _value(invoice["invoice_number"]) == "RE-2024-0815"
    assert _value(invoice["issue_date"]) == "2024-02-14"
    assert _value(invoice["due_date"]) == "2024-03-15"
    assert _value(invoice["currency"]) == "EUR"
    assert _value(invoice["supplier"]["vat_id"]) == "DE123456789"
    assert invoice["supplier"]["vat_id"]["evidence"]["quote"] == "DE 123 456 789"
    assert _value(invoice["supplier"]["iban"]) == "DE89370400440532013000"
    assert _value(invoice["supplier"]["name"]) == "Muster GmbH"
    assert [_value(invoice["totals"][k]) for k in ("net", "tax", "gross")] == ["1000.00", "190.00", "1190.00"]


def test_vat_ids_are_read_in_every_form_python_stdnum_knows():
    # Belgium's older nine-digit form is the ten-digit id without its leading zero; a Swiss VAT
    # number is the UID with its "MWST" suffix. Both are what the validator checks.
    belgian = extract_invoice(DocumentText(pages=("Vendeur:\nDupont SA\nTVA: BE 428.759.497\n",)))
    swiss = extract_invoice(DocumentText(pages=("Lieferant:\nMuster AG\nMWST-Nr.: CHE-116.281.710 MWST\n",)))

    assert _value(belgian["supplier"]["vat_id"]) == "BE428759497"
    assert belgian["supplier"]["vat_id"]["evidence"]["quote"] == "BE 428.759.497"
    assert _value(swiss["supplier"]["vat_id"]) == "CHE116281710MWST"
    assert swiss["supplier"]["vat_id"]["evidence"]["quote"] == "CHE-116.281.710 MWST"


def test_a_vat_id_is_never_the_first_digits_of_a_longer_number():
    # The XRechnung test suite's placeholder "ATU123456789" has one digit more than an Austrian
    # VAT id: its first eight digits are not an id printed there. A suffix may still follow.
    austrian = extract_invoice(DocumentText(pages=("Verkäufer:\nMuster GmbH\nUSt-IdNr.: ATU123456789\n",)))
    german = extract_invoice(DocumentText(pages=("Lieferant:\nMuster AG\nUSt-IdNr.: DE 123 456 789 MWST\n",)))

    assert austrian["supplier"]["vat_id"]["value"] is None
    assert _value(german["supplier"]["vat_id"]) == "DE123456789"
    assert german["supplier"]["vat_id"]["evidence"]["quote"] == "DE 123 456 789"


def test_builtin_provider_answers_with_invoice_json():
    document = _document(f"{ZUGFERD}/XML-Rechnung/FX/EN16931_Einfach.pdf")
    request = ProviderRequest(
        job_id="job-1",
        attempt=1,
        document=document,
        schema="invoice.v1",
        model="builtin",
        max_output_tokens=6000,
        timeout_seconds=30,
    )

    response = BuiltinProvider().extract(request)

    invoice = parse_invoice_v1(response.output_text)
    assert invoice.totals.gross.as_decimal() == Decimal("529.87")
    assert response.model == "builtin"
    assert response.input_tokens == len(document.full_text) // 4
    assert response.output_tokens == len(response.output_text) // 4
    assert response.latency_ms is not None and response.latency_ms >= 0
