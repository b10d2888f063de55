"""The rules' and a model's readings of one real invoice made one answer (``rules_and_model``):
agreement gives both sources, a gap is filled, a disagreement is settled by which value its own
judgement verified, and otherwise conflicts and goes to review."""

from __future__ import annotations

import json
from typing import Any

from extraction.intake.text import DocumentText
from extraction.validation.fields import ReadingSource, untrusted_blocking
from extraction.validation.policy import MasterData, ValidationOutcome, check_invoice
from extraction.validation.readings import judged_together, read_together, same_value
from extraction.validation.schema import InvoiceV1, parse_invoice_v1
from tests.extraction.validation.test_validation import ELEKTRON, _evidence, changed, pdf_case

NO_MASTER_DATA = MasterData(has_records=False, supplier=None)


def judge_with(document: DocumentText):
    def judge(invoice: InvoiceV1, source: ReadingSource | dict[str, list[str]]) -> ValidationOutcome:
        return check_invoice(
            invoice=invoice,
            document=document,
            allowed_currencies=["EUR"],
            overrides={},
            master=NO_MASTER_DATA,
            sources=(source,) if isinstance(source, ReadingSource) else source,
        )

    return judge


def together(rules: dict[str, Any], model: dict[str, Any], document: DocumentText):
    judge = judge_with(document)
    combined = read_together(parse_invoice_v1(json.dumps(rules)), parse_invoice_v1(json.dumps(model)), judge)
    verdict = judged_together(judge(combined.invoice, combined.sources), combined)
    return combined, verdict


def test_readings_that_agree_make_the_same_answer_verified_by_both():
    document, rules = pdf_case(ELEKTRON)
    # The model writes the numbers its own way: the same values.
    model = changed(rules, "totals.gross", rules["totals"]["gross"]["value"] + "0")

    combined, verdict = together(rules, model, document)

    assert combined.check["status"] == "passed"
    assert combined.check["detail"]["differing"] == combined.check["detail"]["resolved"] == []
    assert combined.invoice.totals.gross.value == model["totals"]["gross"]["value"]
    assert verdict.review_required is False, verdict.failed()
    assert {tuple(entry["sources"]) for entry in verdict.fields.values()} == {("rules", "model")}
    assert verdict.fields["totals.gross"]["checks"][-1] == "readings_agree"


def test_a_value_only_the_rules_read_fills_the_models_gap():
    document, rules = pdf_case(ELEKTRON)
    model = changed(rules, "supplier.iban", None, None)

    combined, verdict = together(rules, model, document)

    assert combined.invoice.supplier.iban.value == rules["supplier"]["iban"]["value"]
    assert combined.taken_from_rules == ("supplier.iban",)
    assert (verdict.fields["supplier.iban"]["status"], verdict.fields["supplier.iban"]["sources"]) == (
        "verified",
        ["rules"],
    )


def test_a_value_only_the_model_read_is_kept_when_it_is_printed():
    document, model = pdf_case(ELEKTRON)
    rules = changed(model, "supplier.iban", None, None)

    combined, verdict = together(rules, model, document)

    assert combined.invoice.supplier.iban.value == model["supplier"]["iban"]["value"]
    assert combined.check["detail"]["left_out"] == []
    assert (verdict.fields["supplier.iban"]["status"], verdict.fields["supplier.iban"]["sources"]) == (
        "verified",
        ["model"],
    )


def test_a_value_only_the_model_read_and_printed_nowhere_is_left_out():
    document, read = pdf_case(ELEKTRON)
    rules = changed(read, "supplier.iban", None, None)
    invented = "DE02120300000000202051"
    model = changed(
        read, "supplier.iban", invented, {"page": 1, "start": 0, "end": 27, "quote": "DE02 1203 0000 0000 2020 51"}
    )

    combined, verdict = together(rules, model, document)

    assert combined.invoice.supplier.iban.value is None
    assert combined.invoice.supplier.iban.evidence is None
    assert combined.check["detail"]["left_out"] == [{"field": "supplier.iban", "model": invented}]
    assert "supplier.iban" not in combined.sources
    assert verdict.fields.get("supplier.iban") is None  # null and not needed: nothing claimed


def test_a_disagreement_goes_to_the_value_whose_evidence_holds():
    document, rules = pdf_case(ELEKTRON)
    # The model invents an IBAN and quotes it where the real one is printed: printed nowhere.
    invented = "DE89370400440532013000"
    model = changed(rules, "supplier.iban", invented, {**_evidence(rules, "supplier.iban"), "quote": invented})

    combined, verdict = together(rules, model, document)

    assert combined.invoice.supplier.iban.value == rules["supplier"]["iban"]["value"]
    assert combined.check["status"] == "passed"
    assert combined.check["detail"]["resolved"] == [
        {"field": "supplier.iban", "rules": rules["supplier"]["iban"]["value"], "model": invented, "kept": "rules"}
    ]
    assert verdict.review_required is False, verdict.failed()
    assert verdict.fields["supplier.iban"]["sources"] == ["rules"]


def test_two_printed_values_that_differ_conflict_and_go_to_review():
    document, rules = pdf_case(ELEKTRON)
    # The model takes the delivery date, printed too, for the issue date: each reading's own
    # judgement verifies its value, so nothing settles which.
    delivered = document.pages[0].index("06.03.2018")
    evidence = {"page": 1, "start": delivered, "end": delivered + 10, "quote": "06.03.2018"}
    model = changed(rules, "issue_date", "2018-03-06", evidence)

    combined, verdict = together(rules, model, document)

    assert combined.conflicting == ("issue_date",)
    # The reviewer sees the rules' value (the more precise reader), in doubt.
    assert combined.invoice.issue_date.value == "2018-04-25"
    assert (combined.check["status"], combined.check["reason"]) == ("failed", "rules_and_model_disagree")
    assert combined.check["detail"]["differing"] == [
        {"field": "issue_date", "rules": "2018-04-25", "model": "2018-03-06"}
    ]
    assert verdict.reasons == ["rules_and_model_disagree"]
    issued = verdict.fields["issue_date"]
    assert (issued["status"], issued["blocking"], issued["failed"]) == ("conflicting", True, ["readings_agree"])
    assert untrusted_blocking(verdict.fields) == ["issue_date"]


def test_a_value_its_own_judgement_doubts_loses_to_the_one_that_adds_up():
    document, rules = pdf_case(ELEKTRON)
    # The model quotes the printed net total as the gross: printed, but the totals do not add up.
    net = rules["totals"]["net"]
    model = changed(rules, "totals.gross", net["value"], dict(net["evidence"]))

    combined, verdict = together(rules, model, document)

    assert combined.invoice.totals.gross.value == rules["totals"]["gross"]["value"]
    assert [item["kept"] for item in combined.check["detail"]["resolved"]] == ["rules"]
    assert verdict.review_required is False, verdict.failed()


def test_lines_of_different_counts_are_taken_whole_from_the_reading_that_verified_them():
    document, rules = pdf_case(ELEKTRON)
    model = json.loads(json.dumps(rules))
    model["lines"] = model["lines"][:1]  # the model missed the other lines

    combined, verdict = together(rules, model, document)

    assert len(combined.invoice.lines) == len(rules["lines"]) > 1
    assert combined.check["detail"]["lines_from"] == "rules"
    assert verdict.fields["lines[1].net_amount"]["sources"] == ["rules"]
    assert verdict.review_required is False, verdict.failed()


def test_the_same_value_is_read_as_a_number_an_id_or_a_name():
    assert same_value("totals.gross", "119", "119.00")
    assert same_value("lines[0].quantity", "2", "2.000")
    assert not same_value("totals.gross", "119.00", "191.00")
    assert same_value("supplier.iban", "DE89 3704 0044", "de8937040044")
    assert same_value("supplier.name", "Lieferant  GmbH", "lieferant gmbh")
    assert same_value("supplier.name", "ACME Supplies, GmbH", "Acme Supplies GmbH")
    assert not same_value("invoice_number", "471102", "471103")
