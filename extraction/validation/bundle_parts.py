"""A bundle's part holds one invoice (issue #27): a blocking check ``bundle_part_one_invoice``
on a part's job, judged on the part's own pages when the job is judged.

A part's pages were chosen by the detector (and perhaps a model as second reader), whose
weighing can let two invoices into one part: page numbers that run on across an ERP export's
invoices outweigh a new invoice number. The part's arithmetic and evidence checks catch most
such parts, but not one whose header and totals come from different invoices and agree with
themselves. This check reads the part's pages again, unweighed
(:func:`~extraction.intake.bundles.mixed_invoice_signs`): two different invoice numbers, or
page numbering that restarts after the part's first page, and the part goes to review with
the pages named. A part that lost pages is not seen here; it mostly fails its totals.
"""

from __future__ import annotations

from typing import Any

from extraction.intake.bundles import mixed_invoice_signs
from extraction.intake.text import DocumentText
from extraction.validation.policy import BLOCKING, FAILED, OFF, PASSED, ValidationOutcome

CHECK = "bundle_part_one_invoice"
REASON = "bundle_part_mixes_invoices"


def with_part_check(outcome: ValidationOutcome, *, document: DocumentText, pages: tuple[int, int]) -> ValidationOutcome:
    """``outcome`` with ``bundle_part_one_invoice`` judged on ``document``'s pages ``pages``
    (first, last: the part's), at the severity the tenant's policy gives it."""
    severity = outcome.severities.get(CHECK, BLOCKING)
    if severity == OFF:
        return outcome
    first, last = pages
    signs = mixed_invoice_signs(document.pages[first - 1 : last], first=first)
    return outcome.with_check(_check(signs.as_dict() if signs is not None else None, severity, pages))


def _check(signs: dict[str, Any] | None, severity: str, pages: tuple[int, int]) -> dict[str, Any]:
    return {
        "check": CHECK,
        "status": FAILED if signs is not None else PASSED,
        "severity": severity,
        "reason": REASON if signs is not None else None,
        "field": "invoice_number" if signs is not None else None,
        "detail": {"pages": list(pages), **(signs or {})},
    }
