"""Every structured invoice of the test data read exactly: the values EN 16931 names, compared
with the index the test data ships (``expected_fields.json``, derived from the XML by its
collectors, not by this reader)."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from extraction.einvoice import RefusedXml, read_einvoice
from extraction.einvoice.answer import invoice_v1_answer
from extraction.einvoice.model import EInvoice, Read
from extraction.einvoice.rendering import render
from extraction.validation.schema import parse_invoice_v1

INVOICES = Path(__file__).resolve().parents[3] / "testdata" / "invoices"
RECORDS = [
    pytest.param(folder, record, id=f"{folder.name}/{record['file']}")
    for index in sorted(INVOICES.glob("*/expected_fields.json"))
    for folder in [index.parent]
    for record in json.loads(index.read_text())["records"]
]


def _text(read: Read | None) -> str | None:
    return read.text if read is not None else None


def _same_words(text: str | None) -> str | None:
    return " ".join(text.split()) if text is not None else None


def _amount(text: str | None) -> Decimal | None:
    return Decimal(text) if text is not None else None


def _expected_lines(record: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (
            line["id"],
            _same_words(line["name"]),
            _amount(line["quantity"]),
            _amount(line["unit_price"]),
            _amount(line["net_amount"]),
            line["vat_category"],
            _amount(line["vat_rate"]),
        )
        for line in record["lines"]
    ]


def _bills_nothing(line: tuple[Any, ...]) -> bool:
    """An index line the reader keeps apart as layout (a section heading or a note): no VAT
    category, no quantity, no amount."""
    _id, _name, quantity, _price, net, category, _rate = line
    return category is None and not quantity and not net


def _read_lines(invoice: EInvoice, *, layout: bool = False) -> list[tuple[Any, ...]]:
    return [
        (
            _text(line.line_id),
            _text(line.name),
            _amount(_text(line.quantity)),
            _amount(_text(line.unit_price)),
            _amount(_text(line.net_amount)),
            _text(line.tax_category),
            _amount(_text(line.tax_rate)),
        )
        for line in (invoice.layout_lines if layout else invoice.lines)
    ]


@pytest.mark.parametrize(("folder", "record"), RECORDS)
def test_every_field_the_xml_carries_is_read_exactly(folder: Path, record: dict[str, Any]):
    invoice = read_einvoice((folder / record["file"]).read_bytes())

    assert _text(invoice.number) == record["invoice_number"]
    assert _text(invoice.type_code) == record["type_code"]
    assert _text(invoice.issue_date) == record["issue_date"]
    assert _text(invoice.due_date) == record["due_date"]
    assert _text(invoice.currency) == record["currency"]
    assert _text(invoice.tax_currency) == record["tax_currency"]
    assert _text(invoice.seller.name) == _same_words(record["seller_name"])
    assert _text(invoice.seller.vat_id) == record["seller_vat_id"]
    if record["buyer_name"] is not None:
        assert _text(invoice.buyer.name) == _same_words(record["buyer_name"])
    else:  # no legal name (BT-44): the trading name (BT-45) stands in, as a printed invoice shows it
        assert invoice.buyer.name is None or invoice.buyer.name.path.endswith("/cac:PartyName/cbc:Name")
    assert [_text(account.account_id) for account in invoice.accounts] == record["payee_accounts"]
    totals = record["totals"]
    assert [
        _amount(_text(read))
        for read in (
            invoice.totals.line_total,
            invoice.totals.allowance_total,
            invoice.totals.charge_total,
            invoice.totals.net_total,
            invoice.totals.tax_total,
            invoice.totals.gross_total,
            invoice.totals.prepaid,
            invoice.totals.rounding,
            invoice.totals.amount_due,
        )
    ] == [
        _amount(totals[key])
        for key in (
            "line_total_BT106",
            "allowance_total_BT107",
            "charge_total_BT108",
            "net_total_BT109",
            "tax_total_BT110",
            "gross_total_BT112",
            "prepaid_BT113",
            "rounding_BT114",
            "amount_due_BT115",
        )
    ]
    assert [
        (
            _text(group.category),
            _amount(_text(group.rate)),
            _amount(_text(group.taxable_amount)),
            _amount(_text(group.tax_amount)),
        )
        for group in invoice.tax_breakdown
    ] == [
        (group["category"], _amount(group["rate"]), _amount(group["taxable"]), _amount(group["tax"]))
        for group in record["vat_breakdown"]
    ]
    expected_lines = [line for line in _expected_lines(record) if not _bills_nothing(line)]
    assert _read_lines(invoice, layout=True) == [line for line in _expected_lines(record) if _bills_nothing(line)]
    read_lines = _read_lines(invoice)
    for index, line in enumerate(invoice.lines):
        if index < len(expected_lines) and expected_lines[index][-1] is None and line.tax_rate is not None:
            # The index reads a line's rate from its item's tax category only; a line may state
            # it in a TaxTotal of its own (as UBL-TR does), which is still the line's rate.
            assert re.search(
                r"/cac:InvoiceLine(\[\d+\])?/cac:TaxTotal/cac:TaxSubtotal/cbc:Percent$", line.tax_rate.path
            )
            read_lines[index] = (*read_lines[index][:-1], None)
    assert read_lines == expected_lines


@pytest.mark.parametrize(("folder", "record"), RECORDS)
def test_the_answer_is_invoice_v1_with_every_quote_at_its_span(folder: Path, record: dict[str, Any]):
    invoice = read_einvoice((folder / record["file"]).read_bytes())
    rendering = render(invoice)

    answer = parse_invoice_v1(json.dumps(invoice_v1_answer(invoice, rendering, page=1)))

    evidenced = [(path, field) for path, field in answer.fields() if field.value is not None]
    assert evidenced, "an e-invoice answer with no values"
    for path, field in evidenced:
        assert field.evidence is not None, path
        assert rendering.text[field.evidence.start : field.evidence.end] == field.evidence.quote, path
        assert field.evidence.page == 1
    assert answer.invoice_number.value == record["invoice_number"]
    assert answer.totals.gross.as_decimal() == _amount(record["totals"]["gross_total_BT112"])
    assert answer.document_type.value == ("credit_note" if invoice.is_credit_note else "invoice")


@pytest.mark.parametrize(
    ("relative", "profile"),
    [
        ("factur-x-python/fixtures/xml/factur-x-minimum.xml", "Factur-X MINIMUM"),
        ("factur-x-python/fixtures/xml/factur-x-basicwl.xml", "Factur-X BASIC WL"),
        ("factur-x-python/fixtures/xml/factur-x-basic.xml", "Factur-X BASIC"),
        ("factur-x-python/fixtures/xml/factur-x-en16931.xml", "Factur-X EN 16931"),
        ("factur-x-python/fixtures/xml/factur-x-extended.xml", "Factur-X EXTENDED"),
        ("factur-x-python/fixtures/xml/ubl-21-en16931.xml", "EN 16931 (UBL)"),
        ("xrechnung-testsuite/business-cases/extension/04.01a-INVOICE_ubl.xml", "XRechnung (UBL)"),
    ],
)
def test_the_profile_is_named_from_the_specification_identifier(relative: str, profile: str):
    assert read_einvoice((INVOICES / relative).read_bytes()).profile == profile


def test_each_value_keeps_the_element_it_was_read_from():
    ubl = read_einvoice((INVOICES / "xrechnung-testsuite/business-cases/extension/04.01a-INVOICE_ubl.xml").read_bytes())
    cii = read_einvoice((INVOICES / "factur-x-python/fixtures/xml/factur-x-en16931.xml").read_bytes())

    assert ubl.totals.amount_due == Read("4918.84", "/Invoice/cac:LegalMonetaryTotal/cbc:PayableAmount")
    assert ubl.lines[1].net_amount == Read("11718.8", "/Invoice/cac:InvoiceLine[2]/cbc:LineExtensionAmount")
    assert cii.issue_date is not None and re.fullmatch(r"\d{4}-\d{2}-\d{2}", cii.issue_date.text)
    assert cii.issue_date.path == "/CrossIndustryInvoice/rsm:ExchangedDocument/ram:IssueDateTime/udt:DateTimeString"
    rendering = render(ubl)
    assert rendering.elements["totals.prepaid"] == "/Invoice/cac:LegalMonetaryTotal/cbc:PrepaidAmount"


def test_a_credit_note_is_a_credit_note():
    invoice = read_einvoice(
        (
            INVOICES / "zugferd-corpus/ZUGFeRDv2/correct/FNFE-factur-x-examples/Avoir_FR_type381_BASIC.embedded.xml"
        ).read_bytes()
    )

    assert invoice.is_credit_note is True
    assert render(invoice).text.startswith("CREDIT NOTE (type 381)\n")


def test_a_document_that_is_not_an_e_invoice_is_refused_with_its_root_named():
    with pytest.raises(RefusedXml, match=r"not a UBL 2.1 or CII invoice \(root element \{urn:example\}Order\)"):
        read_einvoice(b'<?xml version="1.0"?><Order xmlns="urn:example"><ID>1</ID></Order>')


def test_section_headings_and_notes_written_as_lines_are_not_items():
    # Odoo writes its invoice's section headings and its note as invoice lines with no
    # quantity, no amount and no VAT category (the PDF prints them between the items).
    invoice = read_einvoice((INVOICES / "invoice2data/compare/AzureInterior.embedded.xml").read_bytes())

    assert [_text(line.name) for line in invoice.lines] == [
        "Beeswax XL",
        "Office Chair",
        "*987123* Olive Oil",
        "Luxury Truffles",
    ]
    assert [(_text(line.name), line.name.path if line.name else None) for line in invoice.layout_lines] == [
        ("--- Non Food ---", "/Invoice/cac:InvoiceLine[1]/cac:Item/cbc:Name"),
        ("--- Food Products ---", "/Invoice/cac:InvoiceLine[4]/cac:Item/cbc:Name"),
        (
            "Our Olive Oil is delivered in a re-usable glass container",
            "/Invoice/cac:InvoiceLine[7]/cac:Item/cbc:Name",
        ),
    ]
    # The items still add up to the line total the XML states (BR-CO-10).
    assert sum(Decimal(line.net_amount.text) for line in invoice.lines if line.net_amount) == Decimal(
        invoice.totals.line_total.text
    )
