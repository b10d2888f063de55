"""The VAT-id check on Turkish tax ids: a VKN (10 digits) or TCKN (11 digits) is checked with
python-stdnum when the invoice shows it is Turkish, and a bare number of that length is not
checked as one when it does not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from extraction.intake.text import DocumentText
from extraction.providers.builtin import extract_invoice
from extraction.validation.policy import MasterData, ValidationOutcome, check_invoice
from extraction.validation.schema import parse_invoice_v1

# A Turkish invoice whose arithmetic holds; the tax id line and the currency are filled in.
TURKISH = (
    "FATURA\n"
    "Anadolu Tekstil San. ve Tic. Ltd. Şti.\n"
    "Vergi Dairesi: Kadıköy\n"
    "{tax_id_line}\n"
    "Fatura No: ATS2024000000001\n"
    "Fatura Tarihi: 05.03.2024\n"
    "Ara Toplam        1.000,00 {currency}\n"
    "KDV %20             200,00 {currency}\n"
    "Genel Toplam      1.200,00 {currency}\n"
)


def _judge(text: str, *, currency: str) -> ValidationOutcome:
    document = DocumentText(pages=(text,))
    invoice = parse_invoice_v1(json.dumps(extract_invoice(document)))
    return check_invoice(
        invoice=invoice,
        document=document,
        allowed_currencies=[currency],
        overrides={},
        master=MasterData(has_records=False, supplier=None),
    )


def _vat_check(outcome: ValidationOutcome) -> dict[str, Any]:
    return next(check for check in outcome.checks if check["check"] == "vat_id_format")


@pytest.mark.parametrize(
    ("tax_id_line", "tax_id"),
    [("VKN: 4820173653", "4820173653"), ("T.C. Kimlik No: 28473019511", "28473019511")],
    ids=["vkn", "tckn"],
)
def test_a_vkn_or_tckn_with_a_wrong_check_digit_is_vat_id_invalid(tax_id_line, tax_id):
    outcome = _judge(TURKISH.format(tax_id_line=tax_id_line, currency="TL"), currency="TRY")

    assert outcome.reasons == ["vat_id_invalid"]
    assert _vat_check(outcome)["detail"] == {"vat_id": tax_id, "problem": "checksum"}


@pytest.mark.parametrize("tax_id_line", ["VKN: 4820173652", "TCKN: 28473019510"], ids=["vkn", "tckn"])
def test_a_valid_vkn_or_tckn_passes(tax_id_line):
    outcome = _judge(TURKISH.format(tax_id_line=tax_id_line, currency="TL"), currency="TRY")

    assert outcome.reasons == []
    assert _vat_check(outcome)["status"] == "passed"


def test_the_label_alone_makes_a_bare_id_turkish():
    # A Turkish exporter invoicing in euros: neither TRY nor a TR IBAN, but the "VKN" label.
    outcome = _judge(TURKISH.format(tax_id_line="VKN: 4820173653", currency="EUR"), currency="EUR")

    assert outcome.reasons == ["vat_id_invalid"]


def _with_vat_id(text: str, printed: str, value: str) -> dict[str, Any]:
    """The extractor's answer for ``text`` with the VAT id set to ``value``, quoted where ``printed`` is."""
    answer = extract_invoice(DocumentText(pages=(text,)))
    start = text.index(printed)
    evidence = {"page": 1, "start": start, "end": start + len(printed), "quote": printed}
    answer["supplier"]["vat_id"] = {"value": value, "evidence": evidence}
    return answer


def _judge_answer(answer: dict[str, Any], text: str, currency: str) -> ValidationOutcome:
    return check_invoice(
        invoice=parse_invoice_v1(json.dumps(answer)),
        document=DocumentText(pages=(text,)),
        allowed_currencies=[currency],
        overrides={},
        master=MasterData(has_records=False, supplier=None),
    )


GERMAN = (
    "Muster GmbH\n"
    "Steuernummer: 21/815/08150\n"
    "Rechnung Nr. RE-2024-0815\n"
    "Rechnungsdatum: 14.02.2024\n"
    "Nettobetrag gesamt        1.000,00 EUR\n"
    "zzgl. 19 % MwSt.            190,00 EUR\n"
    "Gesamtbetrag              1.190,00 EUR\n"
    "IBAN: DE89 3704 0044 0532 0130 00\n"
)


def test_a_bare_ten_digit_id_on_an_invoice_that_is_not_turkish_is_not_checked_as_a_vkn():
    # A German Steuernummer given as the VAT id normalizes to ten digits (and fails VKN check digits).
    answer = _with_vat_id(GERMAN, "21/815/08150", "2181508150")

    outcome = _judge_answer(answer, GERMAN, "EUR")

    assert outcome.reasons == []
    assert (_vat_check(outcome)["status"], _vat_check(outcome)["reason"]) == ("skipped", "vat_id_format_unknown")


def test_an_unlabelled_bare_id_on_a_euro_invoice_without_a_tr_iban_is_not_checked():
    text = TURKISH.format(tax_id_line="Kayıt: 4820173653", currency="EUR")
    answer = _with_vat_id(text, "4820173653", "4820173653")

    outcome = _judge_answer(answer, text, "EUR")

    assert (_vat_check(outcome)["status"], _vat_check(outcome)["reason"]) == ("skipped", "vat_id_format_unknown")


def test_the_currency_try_makes_a_bare_id_turkish():
    text = TURKISH.format(tax_id_line="Kayıt: 4820173653", currency="TL")
    answer = _with_vat_id(text, "4820173653", "4820173653")

    outcome = _judge_answer(answer, text, "TRY")

    assert outcome.reasons == ["vat_id_invalid"]


def test_a_tr_iban_makes_a_bare_id_turkish():
    text = TURKISH.format(tax_id_line="Kayıt: 4820173653", currency="EUR") + "IBAN: TR29 0006 4000 0011 2345 6789 01\n"
    answer = _with_vat_id(text, "4820173653", "4820173653")

    outcome = _judge_answer(answer, text, "EUR")

    assert answer["supplier"]["iban"]["value"] == "TR290006400000112345678901"
    assert outcome.reasons == ["vat_id_invalid"]


def test_a_tckn_written_with_the_tr_prefix_is_checked_as_a_tckn():
    text = TURKISH.format(tax_id_line="Tax ID: TR28473019510", currency="EUR")
    answer = _with_vat_id(text, "TR28473019510", "TR28473019510")

    outcome = _judge_answer(answer, text, "EUR")

    assert _vat_check(outcome)["status"] == "passed"
