"""The shared locale: month names, two-digit years, currency signs and number readings, and the
extractor and the validator reading a printed date the same way through it."""

from __future__ import annotations

import datetime
import json

import pytest

from accounts.models import create_tenant
from extraction.intake.text import DocumentText
from extraction.models import Supplier
from extraction.providers.builtin import extract_invoice
from extraction.validation.evidence import printed_dates
from extraction.validation.locale import (
    CURRENCY_CODES,
    CURRENCY_SIGNS,
    MONTHS,
    currency_of_sign,
    full_year,
    number_readings,
    read_number,
)
from extraction.validation.policy import validate_extraction
from extraction.validation.schema import parse_invoice_v1

# --- two-digit years -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("printed", "year"),
    [(98, 1998), (70, 1970), (99, 1999), (0, 2000), (24, 2024), (69, 2069), (2018, 2018), (1998, 1998)],
)
def test_two_digit_years_are_read_within_a_century_pivoting_at_70(printed, year):
    assert full_year(printed) == year


def test_validator_reads_a_two_digit_year_of_the_last_century_in_the_last_century():
    assert printed_dates("05.03.98") == {datetime.date(1998, 3, 5), datetime.date(1998, 5, 3)}
    assert printed_dates("05.03.24") == {datetime.date(2024, 3, 5), datetime.date(2024, 5, 3)}


INVOICE_DATED_98 = (
    "Muster GmbH · Hauptstr. 1 · 10115 Berlin\n"
    "USt-IdNr.: DE 136 695 976\n\n"
    "Rechnung Nr. RE-98-0815\n"
    "Rechnungsdatum: 05.03.98\n\n"
    "Nettobetrag gesamt        1.000,00 €\n"
    "zzgl. 19 % MwSt.            190,00 €\n"
    "Gesamtbetrag              1.190,00 €\n\n"
    "IBAN: DE89 3704 0044 0532 0130 00\n"
)


def test_invoice_dated_05_03_98_is_read_as_1998_and_not_sent_to_review(db):
    document = DocumentText(pages=(INVOICE_DATED_98,))
    tenant = create_tenant(slug="locale")
    Supplier.objects.create(tenant=tenant, name="Muster GmbH", vat_id="DE136695976", iban="DE89370400440532013000")

    output = extract_invoice(document)
    outcome = validate_extraction(invoice=parse_invoice_v1(json.dumps(output)), document=document, tenant_id=tenant.pk)

    assert output["issue_date"]["value"] == "1998-03-05"
    assert output["issue_date"]["evidence"]["quote"] == "05.03.98"
    assert outcome.review_required is False, outcome.failed()


# --- month names ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "month"),
    [
        ("january", 1), ("jan", 1),                             # English
        ("märz", 3), ("mär", 3), ("jänner", 1), ("dez", 12),    # German, Austrian
        ("février", 2), ("févr", 2), ("août", 8), ("aout", 8),  # French
        ("maart", 3), ("mrt", 3), ("mei", 5),                   # Dutch
        ("septiembre", 9), ("diciembre", 12),                   # Spanish
        ("giugno", 6), ("ottobre", 10),                         # Italian
        ("maja", 5), ("października", 10),                      # Polish
    ],
)  # fmt: skip
def test_month_names_of_every_language_either_side_reads(name, month):
    assert MONTHS[name] == month


@pytest.mark.parametrize(
    ("printed", "iso"),
    [
        ("5 March 2014", "2014-03-05"),
        ("March 5, 2014", "2014-03-05"),
        ("5. März 2014", "2014-03-05"),
        ("5. Mär 2014", "2014-03-05"),
        ("5. Jänner 2014", "2014-01-05"),
        ("5 févr. 2014", "2014-02-05"),
        ("5 août 2014", "2014-08-05"),
        ("5 mrt 2014", "2014-03-05"),
        ("5 de diciembre de 2014", "2014-12-05"),
        ("5 giugno 2014", "2014-06-05"),
        ("5 maja 2014", "2014-05-05"),
        ("5 października 2014", "2014-10-05"),
        ("5 Ekim 2014", "2014-10-05"),
        ("5 EKİM 2014", "2014-10-05"),
        ("5 Şubat 2014", "2014-02-05"),
        ("5 MAYIS 2014", "2014-05-05"),
    ],
)
def test_a_date_with_a_month_name_the_extractor_reads_is_one_the_validator_finds(printed, iso):
    document = DocumentText(pages=(f"Invoice date: {printed}\n",))

    issue_date = extract_invoice(document)["issue_date"]

    assert issue_date["value"] == iso
    assert datetime.date.fromisoformat(iso) in printed_dates(issue_date["evidence"]["quote"])


# --- currencies ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sign", "code"),
    [("€", "EUR"), ("$", "USD"), ("US$", "USD"), ("£", "GBP"), ("¥", "JPY"), ("₹", "INR"), ("Rs.", "INR"),
     ("zł", "PLN"), ("Kč", "CZK"), ("Ft", "HUF"), ("lei", "RON"), ("fr.", "CHF"), ("EUR", None)],
)  # fmt: skip
def test_the_currency_a_sign_printed_alone_is_taken_for(sign, code):
    assert currency_of_sign(sign) == code


def test_ambiguous_signs_stand_for_every_currency_that_prints_them():
    assert CURRENCY_SIGNS["$"] == ("USD", "CAD", "AUD", "NZD", "SGD", "HKD", "MXN")
    assert CURRENCY_SIGNS["¥"] == ("JPY", "CNY")
    assert CURRENCY_SIGNS["kr"] == ("DKK", "NOK", "SEK", "ISK")


def test_every_currency_a_sign_stands_for_is_a_known_code():
    assert {code for codes in CURRENCY_SIGNS.values() for code in codes} <= CURRENCY_CODES


@pytest.mark.parametrize("sign", ["€", "£", "₹", "zł", "Kč"])
def test_a_currency_sign_on_an_invoice_is_read_by_the_locale_table(sign):
    document = DocumentText(pages=(f"Total: {sign} 12.50\n",))

    currency = extract_invoice(document)["currency"]

    assert currency["value"] == currency_of_sign(sign)
    assert currency["evidence"]["quote"] == sign


# --- numbers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("printed", "readings"),
    [
        ("1.908,78", {"1908.78"}),
        ("2,012.40", {"2012.40"}),
        ("12.345.678,90", {"12345678.90"}),
        ("1.234.567", {"1234567"}),
        ("1\u00a0234,50", {"1234.50"}),
        ("1'234.50", {"1234.50"}),
        ("529,87", {"529.87"}),
        ("9,9000", {"9.9000"}),
        ("1,234", {"1.234", "1234"}),
        ("1.234", {"1.234", "1234"}),
        ("19", {"19"}),
    ],
)
def test_every_reading_of_a_printed_number(printed, readings):
    assert {str(value) for value in number_readings(printed)} == readings


@pytest.mark.parametrize(
    ("printed", "decimal_comma", "value"),
    [
        ("1.234", True, "1234"),
        ("1.234", False, "1.234"),
        ("1,234", True, "1.234"),
        ("1,234", False, "1234"),
        ("1.908,78", False, "1908.78"),
        ("2,012.40", True, "2012.40"),
        ("9,90", False, "9.90"),
        ("1.234.567", True, "1234567"),
    ],
)
def test_the_documents_convention_settles_only_a_lone_separator_before_three_digits(printed, decimal_comma, value):
    assert str(read_number(printed, decimal_comma=decimal_comma)) == value
