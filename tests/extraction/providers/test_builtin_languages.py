"""The built-in extractor on Turkish and French invoices: the written samples in
``testdata/invoices/written`` (true values in its ``expected.json``) and the conventions they rest
on, such as numbers grouped with narrow no-break spaces, Turkish month names and the VKN/TCKN labels."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

from extraction.intake.text import DocumentText, extract_document_text
from extraction.providers.builtin import extract_invoice
from extraction.validation.policy import MasterData, check_invoice
from extraction.validation.schema import parse_invoice_v1
from tests.factories import INVOICES

WRITTEN = INVOICES / "written"


@functools.cache
def _truth() -> dict[str, dict[str, Any]]:
    return json.loads((WRITTEN / "expected.json").read_text(encoding="utf-8"))["records"]


def _document(name: str) -> DocumentText:
    return extract_document_text((WRITTEN / name).read_bytes(), "text/plain")


def _value(invoice: dict[str, Any], path: str) -> str | None:
    node = invoice
    for part in path.split("."):
        node = node[part]
    return node["value"]


SAMPLES = sorted(_truth())


def test_there_are_turkish_and_french_samples():
    assert sum(name.startswith("tr-") for name in SAMPLES) >= 3
    assert sum(name.startswith("fr-") for name in SAMPLES) >= 3


@pytest.mark.parametrize("name", SAMPLES)
def test_each_written_sample_extracts_its_true_values(name):
    invoice = extract_invoice(_document(name))

    for path, truth in _truth()[name].items():
        assert _value(invoice, path) == truth, path


@pytest.mark.parametrize("name", SAMPLES)
def test_each_written_sample_passes_every_blocking_check(name):
    document = _document(name)
    invoice = parse_invoice_v1(json.dumps(extract_invoice(document)))

    outcome = check_invoice(
        invoice=invoice,
        document=document,
        allowed_currencies=[_truth()[name]["currency"]],
        overrides={},
        master=MasterData(has_records=False, supplier=None),
    )

    assert outcome.reasons == []
    statuses = {check["check"]: check["status"] for check in outcome.checks}
    assert statuses["vat_id_format"] == "passed"  # the VKN/TCKN too, not skipped as "unknown"
    assert statuses["iban_checksum"] == "passed"


def test_the_two_kdv_rates_are_read_per_line():
    invoice = extract_invoice(_document("tr-fatura-ege-lezzet-iki-kdv-orani.txt"))

    rates = [line["tax_rate"]["value"] for line in invoice["lines"]]
    taxes = [line["tax_amount"]["value"] for line in invoice["lines"]]
    assert rates == ["10", "10", "20", "20"]
    assert taxes == ["2220.00", "270.00", "700.00", "440.00"]


# --- French numbers ---------------------------------------------------------------------------------


def test_a_french_amount_grouped_with_narrow_no_break_spaces_is_one_number():
    document = DocumentText(pages=("FACTURE\nTotal HT : 12\u202f345,60\u00a0€\n",))

    net = extract_invoice(document)["totals"]["net"]

    assert net["value"] == "12345.60"
    assert net["evidence"]["quote"] == "12\u202f345,60"


def test_a_french_amount_grouped_with_plain_spaces_is_one_number():
    document = DocumentText(
        pages=("FACTURE\nTotal HT      1 234,56 €\nTotal TVA       246,91 €\nTotal TTC     1 481,47 €\n",)
    )

    totals = extract_invoice(document)["totals"]

    assert [totals[kind]["value"] for kind in ("net", "tax", "gross")] == ["1234.56", "246.91", "1481.47"]


def test_a_plain_space_is_a_gap_between_numbers_where_the_document_groups_with_points():
    # "1.190,00" shows how this document groups thousands, so "2 150,00" is a quantity and a price.
    document = DocumentText(
        pages=(
            "Rechnung\n"
            "Beschreibung        Menge Einzelpreis     Betrag\n"
            "Schrauben           2 150,00              300,00\n"
            "Nettobetrag gesamt  1.000,00 EUR\n"
            "Gesamtbetrag        1.190,00 EUR\n",
        )
    )

    lines = extract_invoice(document)["lines"]

    assert [(line["quantity"]["value"], line["unit_price"]["value"]) for line in lines] == [("2", "150.00")]


# --- Turkish dates, titles and tax ids ----------------------------------------------------------------


def test_turkish_month_names_are_read_in_any_case():
    document = DocumentText(pages=("FATURA\nFatura Tarihi: 3 MAYIS 2024\nSon Ödeme Tarihi: 1 EKİM 2024\n",))

    invoice = extract_invoice(document)

    assert _value(invoice, "issue_date") == "2024-05-03"
    assert _value(invoice, "due_date") == "2024-10-01"


def test_a_rate_printed_before_its_number_is_a_rate_not_the_tax_amount():
    # Turkish prints "%20": the tax total is the 200,00 under the heading, not the 20 beside it.
    document = DocumentText(
        pages=(
            "FATURA\n"
            "Mal Hizmet Toplam Tutarı   Hesaplanan KDV %20   Vergiler Dahil Toplam Tutar\n"
            "1.000,00 TL                200,00 TL            1.200,00 TL\n",
        )
    )

    totals = extract_invoice(document)["totals"]

    assert [totals[kind]["value"] for kind in ("net", "tax", "gross")] == ["1000.00", "200.00", "1200.00"]


def test_a_stated_turkish_invoice_type_decides_over_the_e_fatura_title():
    returned = DocumentText(pages=("e-FATURA\nSenaryo: TEMELFATURA\nFatura Tipi: IADE\nFatura No: ABC2024000000001\n",))
    sold = DocumentText(pages=("e-FATURA\nSenaryo: TEMELFATURA\nFatura Tipi: SATIS\nFatura No: ABC2024000000002\n",))

    assert _value(extract_invoice(returned), "document_type") == "credit_note"
    assert _value(extract_invoice(sold), "document_type") == "invoice"


def test_a_vkn_with_a_wrong_check_digit_after_its_label_is_still_what_the_invoice_shows():
    # The extractor reports what is printed; the validator is the one to reject the check digit.
    document = DocumentText(pages=("Anadolu Tekstil Ltd. Şti.\nVKN: 4820173653\n",))

    assert _value(extract_invoice(document), "supplier.vat_id") == "4820173653"


def test_a_number_after_the_tax_office_counts_only_with_valid_check_digits():
    valid = DocumentText(pages=("Ege Lezzet Ltd. Şti.\nVergi Dairesi / No: Konak / 7351209481\n",))
    wrong = DocumentText(pages=("Ege Lezzet Ltd. Şti.\nVergi Dairesi / No: Konak / 7351209480\n",))

    assert _value(extract_invoice(valid), "supplier.vat_id") == "7351209481"
    assert _value(extract_invoice(wrong), "supplier.vat_id") is None


def test_a_ten_digit_number_without_a_tax_id_label_is_not_a_vkn():
    # 1639047522 has valid VKN check digits, but here it is an order number.
    document = DocumentText(pages=("Boğaziçi Elektronik Ticaret A.Ş.\nSipariş No: 1639047522\nTel: 02125550147\n",))

    assert _value(extract_invoice(document), "supplier.vat_id") is None


def test_the_buyers_vkn_is_not_taken_for_the_suppliers():
    document = DocumentText(
        pages=("Karadeniz Yapı Ltd. Şti.\nVergi No: 2761549387\n\nSAYIN\nMarmara Boya Sanayi A.Ş.\nVKN: 6183025743\n",)
    )
    buyer_only = DocumentText(pages=("FATURA\n\nSAYIN\nMarmara Boya Sanayi A.Ş.\nVKN: 6183025743\n",))

    assert _value(extract_invoice(document), "supplier.vat_id") == "2761549387"
    assert _value(extract_invoice(buyer_only), "supplier.vat_id") is None
