"""The same invoice twice (VAL-5): a blocking check ``possible_duplicate`` when an earlier job
of the tenant holds the invoice a job read.

Paying an invoice twice is the costliest mistake an accounts-payable pipeline makes, and it
happens most when one invoice arrives by two channels: its XML and its PDF, or a PDF and a later
scan. Each reading of the same invoice names it the same way, whatever the document's format:

    document type | supplier | invoice number | issue date or gross total

with the supplier by VAT id, by IBAN and by name (each a key of its own, so a reading that
found only the IBAN still meets one that found the VAT id and the IBAN; a match by IBAN or name
does not count where both readings have a VAT id, or for a name both an IBAN, that differ: the
issue's "by VAT id, else IBAN, else name"), the number without
case, spaces or separators, and the gross total with its currency. Every such key of a job's
answer is claimed in one statement when the job is judged (duplicates.sql): a key another job
of the tenant already holds makes this job a possible duplicate of that job, and the check names
the earlier job and what matched. The database decides between two copies completing at the
same moment: each key has one holder, so exactly one of them is flagged.

A credit note is not a duplicate of its invoice (the document type is part of the key); a job
that ended in FAILED_TERMINAL (rejected as a duplicate, say) gives its keys up. A reviewer can
release a flagged job as not a duplicate (extraction.review.decisions).
"""

from __future__ import annotations

import json
import re
import uuid
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from config.db import prepared_cursor
from config.sql import load_statements
from extraction.validation.policy import BLOCKING, FAILED, OFF, PASSED, SKIPPED, ValidationOutcome
from extraction.validation.schema import InvoiceV1
from extraction.validation.suppliers import comparable_name, normalize_iban, normalize_vat_id

CHECK = "possible_duplicate"
REASON = "possible_duplicate"
SQL = load_statements(Path(__file__).with_suffix(".sql"))

# The fields a fingerprint is made of: what the check reads.
READS = (
    "document_type",
    "supplier.vat_id",
    "supplier.iban",
    "supplier.name",
    "invoice_number",
    "issue_date",
    "totals.gross",
)
# Printed inside invoice numbers without changing them: "RE-2024/0815" is "RE 2024 0815".
_NUMBER_NOISE = re.compile(r"[^0-9A-Z]+")


@dataclass(frozen=True)
class Fingerprint:
    key: str
    matched: dict[str, Any]  # what the key is made of, as read: named in the check's detail


def fingerprints(invoice: InvoiceV1) -> list[Fingerprint]:
    """Every key naming the invoice (the module's docstring); none without an invoice number
    and a supplier, or without an issue date and a gross total."""
    number = _NUMBER_NOISE.sub("", (invoice.invoice_number.value or "").upper())
    if not number:
        return []
    document_type = invoice.document_type.value or "invoice"
    suppliers = [
        (kind, normalized)
        for kind, raw, normalize in (
            ("vat_id", invoice.supplier.vat_id.value, normalize_vat_id),
            ("iban", invoice.supplier.iban.value, normalize_iban),
            ("name", invoice.supplier.name.value, comparable_name),
        )
        if raw and (normalized := normalize(raw))
    ]
    seconds = []
    if invoice.issue_date.value:
        seconds.append(("issue_date", invoice.issue_date.value.strip()))
    gross = _amount(invoice.totals.gross.value)
    if gross is not None:
        currency = (invoice.currency.value or "").strip().upper()
        seconds.append(("gross", f"{currency} {gross}".strip()))
    identifiers = dict(suppliers)
    return sorted(
        (
            Fingerprint(
                key="|".join((document_type, supplier_kind, supplier, number, second_kind, second)),
                matched={
                    "document_type": document_type,
                    "supplier": {supplier_kind: supplier},
                    "invoice_number": number,
                    second_kind: second,
                    # Every identifier this reading found: a match by a lesser one is weighed
                    # against the greater ones (same_supplier).
                    "identifiers": identifiers,
                },
            )
            for supplier_kind, supplier in suppliers
            for second_kind, second in seconds
        ),
        key=lambda fingerprint: fingerprint.key,
    )


def with_duplicate_check(
    outcome: ValidationOutcome,
    *,
    tenant_id: uuid.UUID,
    job_id: uuid.UUID,
    invoice: InvoiceV1,
    released_by: str | None = None,
) -> ValidationOutcome:
    """``outcome`` with ``possible_duplicate`` judged for the job, at the severity the tenant's
    policy gives it (off: no key is claimed); ``released_by``: the reviewer who says the
    invoice is not the earlier job's."""
    severity = outcome.severities.get(CHECK, BLOCKING)
    if severity == OFF:
        return outcome
    check = duplicate_check(tenant_id=tenant_id, job_id=job_id, invoice=invoice, severity=severity)
    if released_by is not None and check["status"] == FAILED:
        check = released(check, reviewer=released_by)
    return outcome.with_check(check)


def duplicate_check(
    *, tenant_id: uuid.UUID, job_id: uuid.UUID, invoice: InvoiceV1, severity: str = BLOCKING
) -> dict[str, Any]:
    """Claim the invoice's fingerprints for ``job_id`` and judge: ``possible_duplicate``
    failed naming the earlier job and what matched when another job holds any of them, passed
    when this job holds them all, skipped when the invoice cannot be named."""
    claimed = fingerprints(invoice)
    if not claimed:
        return _check(SKIPPED, severity, reason="invoice_not_identifiable")
    payload = json.dumps([{"fingerprint": f.key, "matched": f.matched} for f in claimed])
    with prepared_cursor() as cursor:
        cursor.execute(
            SQL["claim_invoice_fingerprints"],
            {"tenant": tenant_id, "job": job_id, "fingerprints": payload},
            prepare=True,
        )
        rows = cursor.fetchall()
    ours = claimed[0].matched["identifiers"]
    held_by: dict[uuid.UUID, list[dict[str, Any]]] = defaultdict(list)
    since: dict[uuid.UUID, Any] = {}
    for _key, holder, matched, created_at in rows:
        holder = holder if isinstance(holder, uuid.UUID) else uuid.UUID(str(holder))
        theirs = matched if isinstance(matched, dict) else json.loads(matched)
        if holder != job_id and same_supplier(ours, theirs.get("identifiers") or {}, by=next(iter(theirs["supplier"]))):
            held_by[holder].append(theirs)
            since[holder] = min(since.get(holder, created_at), created_at)
    if not held_by:
        return _check(PASSED, severity)
    # The job that matched on most keys, the earliest of equals.
    earlier = min(held_by, key=lambda holder: (-len(held_by[holder]), since[holder], str(holder)))
    return _check(
        FAILED,
        severity,
        reason=REASON,
        detail={
            "earlier_job_id": str(earlier),
            "matched": _merged(held_by[earlier]),
            "other_jobs": sorted(str(holder) for holder in held_by if holder != earlier),
        },
    )


# The supplier's identifiers, most telling first: "supplier by VAT id, else IBAN, else name".
SUPPLIER_IDENTIFIERS = ("vat_id", "iban", "name")


def same_supplier(ours: dict[str, str], theirs: dict[str, str], *, by: str) -> bool:
    """Whether two readings that share the identifier ``by`` name the same supplier: not when
    an identifier ranked above it is on both and differs (two suppliers may share a name, or a
    test suite a placeholder IBAN; a VAT id is the supplier's own)."""
    for kind in SUPPLIER_IDENTIFIERS[: SUPPLIER_IDENTIFIERS.index(by)]:
        if ours.get(kind) and theirs.get(kind) and ours[kind] != theirs[kind]:
            return False
    return True


def released(check: dict[str, Any], *, reviewer: str) -> dict[str, Any]:
    """A failed ``possible_duplicate`` a reviewer released as not a duplicate: passed, saying
    who released it and what it had matched."""
    return {
        **check,
        "status": PASSED,
        "reason": None,
        "detail": {**(check.get("detail") or {}), "released_by": reviewer},
    }


def _check(
    status: str, severity: str, *, reason: str | None = None, detail: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "check": CHECK,
        "status": status,
        "severity": severity,
        "reason": reason,
        "field": "invoice_number" if status == FAILED else None,
        "detail": detail,
    }


def _merged(matches: list[dict[str, Any]]) -> dict[str, Any]:
    """What the earlier job's keys matched on, together: every supplier identifier and both
    the issue date and the gross total where they matched."""
    merged: dict[str, Any] = {"supplier": {}}
    for matched in matches:
        for name, value in matched.items():
            if name == "identifiers":
                continue
            if name == "supplier":
                merged["supplier"].update(value)
            else:
                merged[name] = value
    return merged


def _amount(text: str | None) -> str | None:
    if not text:
        return None
    try:
        return format(Decimal(text.strip()).quantize(Decimal("0.01")), "f")
    except InvalidOperation:
        return None
