"""An e-invoice's own answer checked against a model's reading of the same document, for a tenant
whose ``einvoice_intake`` is ``both``: the XML's values are the result, and a model that reads
other money, dates or ids in the document is a reason for a person to look."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from extraction.validation.fields import ReadingSource
from extraction.validation.policy import BLOCKING, FAILED, PASSED, ValidationOutcome
from extraction.validation.schema import InvoiceV1

CHECK = "model_agrees"
REASON = "model_and_einvoice_disagree"
# What a payment and its booking are made of. A value the model leaves null is no disagreement:
# small models miss fields, and missing is not contradicting.
COMPARED = (
    "invoice_number",
    "issue_date",
    "currency",
    "supplier.vat_id",
    "supplier.iban",
    "totals.net",
    "totals.tax",
    "totals.gross",
    "totals.amount_due",
)


def _comparable(path: str, value: str) -> Any:
    if path.startswith("totals."):
        try:
            return Decimal(value.strip())
        except InvalidOperation:
            return value.strip()
    if path.startswith("supplier.") or path == "invoice_number":
        return re.sub(r"\s", "", value).upper()
    return value.strip()


def model_agreement(einvoice: InvoiceV1, model: InvoiceV1) -> dict[str, Any]:
    """The ``model_agrees`` check (blocking), in the policy's check format: ``compared`` are the
    fields both read, ``differing`` those they read differently."""
    expected = {path: field.value for path, field in einvoice.fields() if path in COMPARED}
    read = {path: field.value for path, field in model.fields() if path in COMPARED}
    compared = [path for path in COMPARED if expected.get(path) is not None and read.get(path) is not None]
    differing = [
        {"field": path, "einvoice": expected[path], "model": read[path]}
        for path in compared
        if _comparable(path, expected[path]) != _comparable(path, read[path])  # type: ignore[arg-type]
    ]
    return {
        "check": CHECK,
        "status": FAILED if differing else PASSED,
        "severity": BLOCKING,
        "reason": REASON if differing else None,
        "field": differing[0]["field"] if differing else None,
        "detail": {"compared": compared, "differing": differing},
    }


def judged_with_model(outcome: ValidationOutcome, einvoice: InvoiceV1, model: InvoiceV1) -> ValidationOutcome:
    """``outcome`` (the e-invoice's answer judged) with the model's reading compared: a field
    both read alike has both sources, one they read differently conflicts (and goes to review)."""
    check = model_agreement(einvoice, model)
    differing = [item["field"] for item in check["detail"]["differing"]]
    agreed = [path for path in check["detail"]["compared"] if path not in differing]
    return outcome.with_second_reading(check, source=ReadingSource.MODEL, agreed=agreed, differing=differing)
