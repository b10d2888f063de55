"""The quotes answer format: a model's printed texts turned into ``invoice.v1`` by the document's
own conventions, with evidence where each text is printed and nothing taken on trust."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from extraction.intake.text import DocumentText
from extraction.providers.quoted_answer import (
    HEADER_FIELDS,
    LINE_FIELDS,
    QUOTES_SCHEMA_NAME,
    TOTAL_FIELDS,
    QuotedAnswerError,
    invoice_from_quotes,
    quotes_json_schema,
)
from extraction.providers.structured_output import strict_json_schema
from extraction.validation.policy import MasterData, check_invoice
from extraction.validation.schema import parse_invoice_v1

GERMAN_PAGE = (
    "ACME Bürotechnik GmbH · Industriestr. 7 · 70173 Stuttgart\n"
    "USt-IdNr.: DE136695976\n"
    "IBAN: DE89 3704 0044 0532 0130 00\n"
    "An: Beispiel AG, Ringweg 2, 50667 Köln\n"
    "RECHNUNG\n"
    "Rechnungsnummer: RE-2018-0815   Rechnungsdatum: 05.03.2018   Fällig am: 04.04.2018\n"
    "Alle Beträge in €\n"
    "Pos  Artikel          Menge  Einzelpreis  Netto      USt   Steuer\n"
    "1    Laserdrucker X2  2      802,01       1.604,02   19 %  304,76\n"
    "Summe netto                             1.604,02\n"
    "USt 19 %                                304,76\n"
    "Gesamtbetrag                            1.908,78\n"
)
GERMAN = DocumentText(pages=(GERMAN_PAGE,))

# What a model copies from GERMAN_PAGE, as printed.
GERMAN_QUOTES: dict[str, Any] = {
    "document_type": "invoice",
    "document_title": "RECHNUNG",
    "supplier_name": "ACME Bürotechnik GmbH",
    "supplier_vat_id": "DE136695976",
    "supplier_iban": "DE89 3704 0044 0532 0130 00",
    "invoice_number": "RE-2018-0815",
    "issue_date": "05.03.2018",
    "due_date": "04.04.2018",
    "currency": "€",
    "lines": [
        {
            "description": "Laserdrucker X2",
            "quantity": "2",
            "unit_price": "802,01",
            "net_amount": "1.604,02",
            "tax_rate": "19 %",
            "tax_amount": "304,76",
        }
    ],
    "net": "1.604,02",
    "tax": "304,76",
    "gross": "1.908,78",
    "prepaid": None,
    "amount_due": None,
}

US_PAGE = (
    "Acme Tools Inc.\n"
    "1200 Main Street, Springfield, IL 62701\n"
    "INVOICE\n"
    "Invoice No: 10-4471\n"
    "Invoice Date: 03/05/2024\n"
    "Due Date: 04/04/2024\n"
    "Item            Qty  Unit Price  Amount\n"
    "Cordless drill  1    $1,234.50   $1,234.50\n"
    "Subtotal                         $1,234.50\n"
    "Total                            $1,234.50\n"
)
US = DocumentText(pages=(US_PAGE,))

NULL_FIELD = {"value": None, "evidence": None}


def at(text: str, quote: str, nth: int = 0, *, page: int = 1) -> dict[str, Any]:
    """The evidence of the ``nth`` occurrence of ``quote`` in ``text`` (page ``page``)."""
    start = -1
    for _ in range(nth + 1):
        start = text.index(quote, start + 1)
    return {"page": page, "start": start, "end": start + len(quote), "quote": quote}


def field(value: str, evidence: dict[str, Any]) -> dict[str, Any]:
    return {"value": value, "evidence": evidence}


def nowhere(quote: str) -> dict[str, Any]:
    return {"page": 1, "start": 0, "end": 0, "quote": quote}


def empty_answer(**quotes: Any) -> dict[str, Any]:
    """A quotes answer with every field null (``lines`` empty), then ``quotes`` set."""
    answer: dict[str, Any] = {
        "document_type": "invoice",
        "document_title": None,
        **dict.fromkeys(HEADER_FIELDS),
        "lines": [],
        **dict.fromkeys(TOTAL_FIELDS),
    }
    answer.update(quotes)
    return answer


def empty_line(**quotes: Any) -> dict[str, Any]:
    return {**dict.fromkeys(LINE_FIELDS), **quotes}


# --- the schema -------------------------------------------------------------------------------------


def test_the_quotes_schema_is_flat_closed_and_already_strict():
    schema = quotes_json_schema()

    text = {"type": ["string", "null"]}
    line = {
        "type": "object",
        "properties": dict.fromkeys(
            ["description", "quantity", "unit_price", "net_amount", "tax_rate", "tax_amount"], text
        ),
        "required": ["description", "quantity", "unit_price", "net_amount", "tax_rate", "tax_amount"],
        "additionalProperties": False,
    }
    keys = [
        "document_type",
        "document_title",
        "supplier_name",
        "supplier_vat_id",
        "supplier_iban",
        "invoice_number",
        "issue_date",
        "due_date",
        "currency",
        "lines",
        "net",
        "tax",
        "gross",
        "prepaid",
        "amount_due",
    ]
    assert schema == {
        "type": "object",
        "properties": {
            "document_type": {"type": "string", "enum": ["invoice", "credit_note"]},
            "document_title": text,
            **dict.fromkeys(keys[2:9], text),
            "lines": {"type": "array", "items": line},
            **dict.fromkeys(keys[10:], text),
        },
        "required": keys,
        "additionalProperties": False,
    }
    assert list(schema["properties"]) == keys  # the answer's order: header, lines, totals
    assert strict_json_schema(schema) == schema  # nothing for strict mode to change
    assert QUOTES_SCHEMA_NAME == "invoice_quotes_v1"


def test_each_call_gets_its_own_schema():
    first = quotes_json_schema()
    first["properties"]["lines"]["items"]["properties"].clear()

    assert quotes_json_schema()["properties"]["lines"]["items"]["properties"] != {}


# --- a German invoice: decimal comma, day first, a currency sign ----------------------------------------


def test_a_german_invoice_is_read_with_the_documents_conventions():
    invoice = invoice_from_quotes(GERMAN_QUOTES, GERMAN)

    page = GERMAN_PAGE
    assert invoice == {
        "schema": "invoice.v1",
        "document_type": field("invoice", at(page, "RECHNUNG")),
        "supplier": {
            "name": field("ACME Bürotechnik GmbH", at(page, "ACME Bürotechnik GmbH")),
            "vat_id": field("DE136695976", at(page, "DE136695976")),
            # The value without spaces; the quote as printed.
            "iban": field("DE89370400440532013000", at(page, "DE89 3704 0044 0532 0130 00")),
        },
        "invoice_number": field("RE-2018-0815", at(page, "RE-2018-0815")),
        "issue_date": field("2018-03-05", at(page, "05.03.2018")),
        "due_date": field("2018-04-04", at(page, "04.04.2018")),
        "currency": field("EUR", at(page, "€")),
        "lines": [
            {
                "description": field("Laserdrucker X2", at(page, "Laserdrucker X2")),
                "quantity": field("2", _whole(page, "2", after="X2")),
                "unit_price": field("802.01", at(page, "802,01")),
                "net_amount": field("1604.02", at(page, "1.604,02", 0)),
                "tax_rate": field("19", at(page, "19 %", 0)),
                "tax_amount": field("304.76", at(page, "304,76", 0)),
            }
        ],
        # Totals: the occurrence nearest the end, below the line that prints the same amounts.
        "totals": {
            "net": field("1604.02", at(page, "1.604,02", 1)),
            "tax": field("304.76", at(page, "304,76", 1)),
            "gross": field("1908.78", at(page, "1.908,78")),
            "prepaid": NULL_FIELD,
            "amount_due": NULL_FIELD,
        },
    }
    for _path, value in parse_invoice_v1(json.dumps(invoice)).fields():
        if value.evidence is not None:
            assert GERMAN.span(value.evidence.page, value.evidence.start, value.evidence.end) == value.evidence.quote


def _whole(text: str, quote: str, *, after: str) -> dict[str, Any]:
    """The evidence of ``quote`` standing alone after the text ``after``."""
    start = text.index(f" {quote} ", text.index(after) + len(after) - 1) + 1
    return {"page": 1, "start": start, "end": start + len(quote), "quote": quote}


def test_the_converted_german_invoice_passes_every_blocking_check():
    invoice = parse_invoice_v1(json.dumps(invoice_from_quotes(GERMAN_QUOTES, GERMAN)))

    outcome = check_invoice(
        invoice=invoice,
        document=GERMAN,
        allowed_currencies=["EUR"],
        overrides={},
        master=MasterData(has_records=False, supplier=None),
    )

    assert outcome.reasons == []
    statuses = {check["check"]: (check["status"], check["reason"]) for check in outcome.checks}
    assert statuses["evidence_spans"] == ("passed", None)
    assert statuses["evidence_values"] == ("passed", None)
    assert statuses["supplier_master_data"] == ("skipped", "no_supplier_master_data")
    assert [check for check in outcome.checks if check["status"] == "failed"] == []


# --- a US invoice: month first, a decimal point, dollars ------------------------------------------------


def test_a_us_invoice_is_read_month_first_with_a_decimal_point():
    answer = empty_answer(
        document_title="INVOICE",
        supplier_name="Acme Tools Inc.",
        invoice_number="10-4471",
        issue_date="03/05/2024",
        due_date="04/04/2024",
        currency="$",
        lines=[empty_line(description="Cordless drill", quantity="1", unit_price="$1,234.50", net_amount="$1,234.50")],
        net="$1,234.50",
        gross="$1,234.50",
    )

    invoice = invoice_from_quotes(answer, US)

    page = US_PAGE
    assert invoice == {
        "schema": "invoice.v1",
        "document_type": field("invoice", at(page, "INVOICE")),
        "supplier": {
            "name": field("Acme Tools Inc.", at(page, "Acme Tools Inc.")),
            "vat_id": NULL_FIELD,
            "iban": NULL_FIELD,
        },
        "invoice_number": field("10-4471", at(page, "10-4471")),
        "issue_date": field("2024-03-05", at(page, "03/05/2024")),
        "due_date": field("2024-04-04", at(page, "04/04/2024")),
        "currency": field("USD", at(page, "$")),
        "lines": [
            {
                "description": field("Cordless drill", at(page, "Cordless drill")),
                "quantity": field("1", _whole(page, "1", after="drill")),
                "unit_price": field("1234.50", at(page, "$1,234.50", 0)),
                "net_amount": field("1234.50", at(page, "$1,234.50", 1)),
                "tax_rate": NULL_FIELD,
                "tax_amount": NULL_FIELD,
            }
        ],
        "totals": {
            "net": field("1234.50", at(page, "$1,234.50", 3)),  # nearest the end: the "Total" line's
            "tax": NULL_FIELD,
            "gross": field("1234.50", at(page, "$1,234.50", 3)),
            "prepaid": NULL_FIELD,
            "amount_due": NULL_FIELD,
        },
    }


# --- what a small model gets wrong ----------------------------------------------------------------------


def test_a_currency_code_the_model_wrote_for_a_printed_sign_is_found_by_the_sign():
    # Seen on the real model: "USD" quoted for a document that prints only "$" (13 of 60 answers).
    answer = empty_answer(currency="USD", gross="$1,234.50")

    invoice = invoice_from_quotes(answer, US)

    assert invoice["currency"] == field("USD", at(US_PAGE, "$"))


def test_a_currency_printed_nowhere_keeps_an_empty_span():
    answer = empty_answer(currency="JPY")

    invoice = invoice_from_quotes(answer, US)

    assert invoice["currency"] == {"value": "JPY", "evidence": {"page": 1, "start": 0, "end": 0, "quote": "JPY"}}


def test_amounts_and_dates_the_model_normalized_are_found_by_their_value():
    page = "Rechnungsdatum: 05.03.2018\nPosition A  2  99,00  198,00\nMwSt. 19 %  37,62\nSumme 198,00\n"
    answer = empty_answer(
        issue_date="2018-03-05",
        lines=[empty_line(unit_price="99.00", net_amount="198.00", tax_rate="19.0")],
        net="198.00",
        tax="37.62",
    )

    invoice = invoice_from_quotes(answer, DocumentText(pages=(page,)))

    assert invoice["issue_date"] == field("2018-03-05", at(page, "05.03.2018"))
    (line,) = invoice["lines"]
    assert line["unit_price"] == field("99.00", at(page, "99,00"))
    assert line["net_amount"] == field("198.00", at(page, "198,00", 0))
    # A rate written "19.0" for a printed "19 %": found by value too; the quote is what is printed.
    assert line["tax_rate"] == field("19", at(page, "19 %"))
    assert invoice["totals"]["net"] == field("198.00", at(page, "198,00", 1))
    assert invoice["totals"]["tax"] == field("37.62", at(page, "37,62"))


def test_a_quote_printed_nowhere_keeps_an_empty_span():
    answer = empty_answer(supplier_iban="DE02 1203 0000 0000 2020 51", invoice_number="RE-9999", gross="2.000,00")

    invoice = invoice_from_quotes(answer, GERMAN)

    assert invoice["supplier"]["iban"] == field("DE02120300000000202051", nowhere("DE02 1203 0000 0000 2020 51"))
    assert invoice["invoice_number"] == field("RE-9999", nowhere("RE-9999"))
    assert invoice["totals"]["gross"] == field("2000.00", nowhere("2.000,00"))


def test_an_unreadable_amount_stays_the_value_for_the_field_type_check_to_report():
    answer = copy.deepcopy(GERMAN_QUOTES)
    answer["net"] = "netto"

    invoice = invoice_from_quotes(answer, GERMAN)

    assert invoice["totals"]["net"] == field("netto", at(GERMAN_PAGE, "netto"))
    outcome = check_invoice(
        invoice=parse_invoice_v1(json.dumps(invoice)),
        document=GERMAN,
        allowed_currencies=["EUR"],
        overrides={},
        master=MasterData(has_records=False, supplier=None),
    )
    assert outcome.reasons == ["field_value_unparseable", "evidence_value_mismatch"]


def test_null_and_blank_quotes_are_null_fields():
    answer = empty_answer(supplier_name="   ", invoice_number="", lines=[empty_line()])

    invoice = invoice_from_quotes(answer, GERMAN)

    title = GERMAN_PAGE.index("RECHNUNG\n")
    assert invoice == {
        "schema": "invoice.v1",
        # No title quoted: the title the document prints decides, with its evidence.
        "document_type": {
            "value": "invoice",
            "evidence": {"page": 1, "start": title, "end": title + 8, "quote": "RECHNUNG"},
        },
        "supplier": {"name": NULL_FIELD, "vat_id": NULL_FIELD, "iban": NULL_FIELD},
        "invoice_number": NULL_FIELD,
        "issue_date": NULL_FIELD,
        "due_date": NULL_FIELD,
        "currency": NULL_FIELD,
        "lines": [dict.fromkeys(LINE_FIELDS, NULL_FIELD)],
        "totals": dict.fromkeys(TOTAL_FIELDS, NULL_FIELD),
    }
    parse_invoice_v1(json.dumps(invoice))


def test_a_title_quote_that_names_no_type_leaves_the_decision_to_the_printed_title():
    # Seen on the real model: "REG Regulatory information" quoted as the title of a Rechnung,
    # and the document called a credit note.
    answer = empty_answer(document_type="credit_note", document_title="Alle Beträge in €")

    invoice = invoice_from_quotes(answer, GERMAN)

    title = GERMAN_PAGE.index("RECHNUNG\n")
    assert invoice["document_type"] == {
        "value": "invoice",
        "evidence": {"page": 1, "start": title, "end": title + 8, "quote": "RECHNUNG"},
    }


def test_a_credit_note_keeps_its_type_and_title():
    page = "Muster GmbH\nGUTSCHRIFT Nr. G-17\nSumme 10,00\n"

    invoice = invoice_from_quotes(
        empty_answer(document_type="credit_note", document_title="GUTSCHRIFT"), DocumentText(pages=(page,))
    )

    assert invoice["document_type"] == field("credit_note", at(page, "GUTSCHRIFT"))


@pytest.mark.parametrize(
    ("claimed", "title", "decided"),
    [
        ("credit_note", "Handelsrechnung (380)", "invoice"),  # the type code decides
        ("invoice", "GUTSCHRIFT", "credit_note"),
        ("credit_note", "RECHNUNG", "invoice"),
        ("invoice", "Avoir (381)", "credit_note"),
        ("credit_note", "Gutschrift (389)", "invoice"),  # a self-billed invoice
        ("credit_note", "Muster GmbH", "credit_note"),  # a title that says neither: the model's word
    ],
)
def test_the_printed_title_decides_the_document_type_over_the_model(claimed, title, decided):
    page = f"{title}\nNr. 17\nSumme 10,00\n"

    invoice = invoice_from_quotes(
        empty_answer(document_type=claimed, document_title=title), DocumentText(pages=(page,))
    )

    assert invoice["document_type"] == field(decided, at(page, title))


def test_totals_are_found_nearest_the_end_of_the_last_page():
    first = "Muster GmbH\nPos 1  Beratung  1  500,00  500,00\n"
    last = "Übertrag 500,00\nSumme netto 500,00\nMwSt. 19 % 95,00\nGesamt 595,00\n"
    line = empty_line(description="Beratung", quantity="1", unit_price="500,00", net_amount="500,00")
    answer = empty_answer(lines=[line], net="500,00")

    invoice = invoice_from_quotes(answer, DocumentText(pages=(first, last)))

    assert invoice["lines"][0]["net_amount"] == field("500.00", at(first, "500,00", 1))
    assert invoice["totals"]["net"] == field("500.00", at(last, "500,00", 1, page=2))


@pytest.mark.parametrize(
    ("printed", "quote"),
    [
        ("Menge: 9,9000 Stk", ",9000"),
        ("Menge: 9,9000 Stk", "9000"),
        ("Qty: 9.9000 pcs", ".9000"),
        ("Qty: 9.9000 pcs", "9000"),
        ("Rechnungsjahr 2019", "19"),
        ("Rechnungsjahr 2019", "201"),
    ],
)
def test_a_quote_is_found_as_a_whole_number_only(printed, quote):
    invoice = invoice_from_quotes(empty_answer(lines=[empty_line(quantity=quote)]), DocumentText(pages=(printed,)))

    assert invoice["lines"][0]["quantity"]["evidence"] == nowhere(quote)


def test_a_whole_number_printed_on_its_own_is_found():
    page = "Rechnungsjahr 2019\nMenge: 9000 Stk\n"

    invoice = invoice_from_quotes(empty_answer(lines=[empty_line(quantity="9000")]), DocumentText(pages=(page,)))

    assert invoice["lines"][0]["quantity"] == field("9000", at(page, "9000"))


# --- not a quotes answer ------------------------------------------------------------------------------


def _without(key: str) -> dict[str, Any]:
    answer = copy.deepcopy(GERMAN_QUOTES)
    del answer[key]
    return answer


def _with(key: str, value: Any) -> dict[str, Any]:
    return {**copy.deepcopy(GERMAN_QUOTES), key: value}


def _with_line(key: str, value: Any) -> dict[str, Any]:
    answer = copy.deepcopy(GERMAN_QUOTES)
    answer["lines"][0][key] = value
    return answer


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (["not", "an", "object"], "the answer is not a JSON object"),
        (_without("supplier_iban"), "supplier_iban is missing"),
        (_without("gross"), "gross is missing"),
        (_without("document_title"), "document_title is missing"),
        (_without("document_type"), "document_type None is not one of invoice, credit_note"),
        (_with("document_type", "Rechnung"), "document_type 'Rechnung' is not one of invoice, credit_note"),
        (_with("invoice_number", 815), "invoice_number is not a string or null"),
        (_with("net", {"value": "1604.02"}), "net is not a string or null"),
        (_without("lines"), "lines is not a list"),
        (_with("lines", {"description": "Laserdrucker X2"}), "lines is not a list"),
        (_with("lines", ["Laserdrucker X2"]), "lines[0] is not an object"),
        (_with_line("quantity", 2), "lines[0].quantity is not a string or null"),
        ({k: v for k, v in GERMAN_QUOTES.items() if k != "lines"} | {"lines": [{}]}, "lines[0].description is missing"),
    ],
)
def test_an_answer_of_the_wrong_shape_is_refused(answer, message):
    with pytest.raises(QuotedAnswerError) as caught:
        invoice_from_quotes(answer, GERMAN)

    assert str(caught.value) == message
