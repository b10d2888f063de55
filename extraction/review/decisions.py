"""Human review of REVIEW_REQUIRED jobs (VAL-2): who may review, and approve/reject.

The decision (:func:`extraction.execution.lifecycle.decide_review`) is guarded on the
``state_version`` the reviewer saw, so of two reviewers exactly one wins, with its audit row. An
approval is re-validated first; the corrected fields are the reviewer's word, so the evidence
checks skip them. A blocking failure refuses the approval unless the reviewer overrides it with
a written comment, recorded with the reasons overridden.

A correction is evidenced before it is taken: the printed text the reviewer selected, or the
typed value found printed in the document, becomes the field's evidence; a value printed
nowhere needs the reviewer's stated reason. Each correction is kept in the decision's audit
record (``validation["review"]["corrections"]``): who changed which field from what to what,
and on what evidence or reason.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import Any, ParamSpec, TypedDict

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from accounts.models import Membership, Role, role_at_least
from config import tracing
from extraction.execution import lifecycle
from extraction.intake.geometry import boxes_for, geometry_from_json
from extraction.intake.text import DocumentText
from extraction.models import ExtractedText, ExtractionJob, ExtractionResult, JobState
from extraction.validation.derivation import derive_missing
from extraction.validation.duplicates import with_duplicate_check
from extraction.validation.evidence import find_quote, printed_numbers
from extraction.validation.policy import AmountDueTerms, validate_extraction
from extraction.validation.schema import InvoiceOutputError, parse_invoice

APPROVED = "approved"
REJECTED = "rejected"
REFUSED = "refused"  # nothing recorded: the approval does not pass the policy
CONFLICT = "conflict"  # nothing recorded: someone else decided, or the job changed

P = ParamSpec("P")
_PATH_PART = re.compile(r"([a-z_]+)(?:\[(\d+)\])?")


class EvidencedBy(StrEnum):
    """How a corrected value is vouched for."""

    SELECTED = "selected"  # the reviewer selected it where it is printed
    FOUND = "found"  # the typed value is printed in the document
    REASON = "reason"  # printed nowhere: the reviewer said why it is right anyway
    CLEARED = "cleared"  # the value was removed: "not in the document" needs no evidence


@dataclass(frozen=True)
class CorrectionSupport:
    """What the reviewer gave with one correction: the span of the document text they selected
    (page, start, end), and/or a reason for a value printed nowhere."""

    selection: tuple[int, int, int] | None = None
    reason: str = ""


# One corrected field in a decision's audit record: who changed which field from what to what,
# and what vouches for the new value ("from" is a keyword, hence the functional form).
CorrectionRecord = TypedDict(
    "CorrectionRecord",
    {
        "field": str,
        "from": str | None,
        "to": str | None,
        "evidenced_by": str,
        "evidence": dict[str, Any] | None,
        "reason": str,
        "reviewer": str,
    },
)


@dataclass(frozen=True)
class ReviewResult:
    status: str
    message: str
    reasons: list[str] = field(default_factory=list)
    validation: dict[str, Any] | None = None


def reviewer_membership(user: AbstractBaseUser | AnonymousUser) -> Membership | None:
    """The staff user's active membership with at least the reviewer role, else None."""
    if not user.is_authenticated or not getattr(user, "is_staff", False):
        return None
    membership = Membership.objects.filter(user_id=user.pk, revoked_at__isnull=True).select_related("tenant").first()
    if membership is None or not role_at_least(membership.role, Role.REVIEWER):
        return None
    return membership


def may_review(user: AbstractBaseUser | AnonymousUser, job: ExtractionJob) -> bool:
    if getattr(user, "is_superuser", False) and user.is_active:
        return True
    membership = reviewer_membership(user)
    return membership is not None and membership.tenant_id == job.tenant_id


def document_text_of(job: ExtractionJob) -> DocumentText:
    row = ExtractedText.objects.filter(document_id=job.document_id).first()
    if row is None:
        return DocumentText(pages=())  # nothing to resolve evidence against: the checks say so
    text = DocumentText(
        pages=tuple(row.pages),
        source=row.source,
        einvoice_page=row.einvoice_page,
        geometry=geometry_from_json(row.geometry),
    )
    # A bundle's part is judged on its own pages, as its attempt read them.
    return text if job.first_page is None or job.last_page is None else text.part(job.first_page, job.last_page)


def apply_corrections(
    output: Mapping[str, Any],
    corrections: Mapping[str, str | None],
    *,
    evidence: Mapping[str, dict[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """``output`` with the value of each corrected field path (``"totals.gross"``,
    ``"lines[1].net_amount"``) replaced; an empty correction clears the field (value and
    evidence null). A path in ``evidence`` gets that evidence (None: the value is printed
    nowhere, so the old quote, which printed the old value, goes). Raises KeyError for a path
    the output does not have."""
    corrected = copy.deepcopy(dict(output))
    for path, value in corrections.items():
        node: Any = corrected
        parts = path.split(".")
        for part in parts:
            match = _PATH_PART.fullmatch(part)
            if match is None:
                raise KeyError(path)
            name, index = match[1], match[2]
            if not isinstance(node, dict) or name not in node:
                raise KeyError(path)
            node = node[name]
            if index is not None:
                if not isinstance(node, list) or int(index) >= len(node):
                    raise KeyError(path)
                node = node[int(index)]
        if not isinstance(node, dict) or "value" not in node:
            raise KeyError(path)
        if value is None or not value.strip():
            node["value"], node["evidence"] = None, None
        else:
            node["value"] = value.strip()
            if evidence is not None and path in evidence:
                node["evidence"] = evidence[path]
    return corrected


def evidence_correction(
    document: DocumentText,
    *,
    path: str,
    before: str | None,
    value: str | None,
    support: CorrectionSupport,
    reviewer: str,
) -> CorrectionRecord | None:
    """The audit record of correcting ``path`` from ``before`` to ``value``, with the evidence
    it rests on; None when it rests on nothing (not printed, no reason given).

    1. A cleared value needs nothing: "not in the document" is what it claims.
    2. The reviewer's selection, if it resolves in the document and reads as the value.
    3. Else the value found printed (as typed, or an amount in a printed form of it), on the
       selection's page first.
    4. Else the reviewer's reason, if there is one.
    """
    value = value.strip() if value else None
    reason = support.reason.strip()
    record: CorrectionRecord = {
        "field": path,
        "from": before,
        "to": value,
        "evidenced_by": EvidencedBy.CLEARED,
        "evidence": None,
        "reason": reason,
        "reviewer": reviewer,
    }
    if value is None:
        return record
    page, near = 1, 0
    if support.selection is not None:
        page, start, end = support.selection
        near = start
        quote = document.span(page, start, end)
        if quote and _reads_as(quote, value):
            record["evidenced_by"], record["evidence"] = EvidencedBy.SELECTED, _evidence(document, page, start, end)
            return record
    for printed in _printed_forms(value):
        found = find_quote(document, printed, page=page, near=near)
        if found is not None:
            record["evidenced_by"], record["evidence"] = EvidencedBy.FOUND, _evidence(document, *found)
            return record
    if reason:
        record["evidenced_by"] = EvidencedBy.REASON
        return record
    return None


def _reads_as(quote: str, value: str) -> bool:
    """Whether the selected ``quote`` says ``value``: the same words, or the same amount."""
    if " ".join(quote.split()) == " ".join(value.split()):
        return True
    amount = _amount(value)
    return amount is not None and amount in printed_numbers(quote)


def _amount(value: str) -> Decimal | None:
    try:
        amount = Decimal(value)
    except InvalidOperation:
        return None
    return amount if amount.is_finite() else None


def _printed_forms(value: str) -> list[str]:
    """``value`` as typed, and for an amount the ways invoices print it: "1234.50" is also
    found as "1.234,50", "1,234.50" and "1234,50"."""
    forms = [value]
    amount = _amount(value)
    if amount is not None and amount.as_tuple().exponent == -2:
        english = f"{amount:,.2f}"
        german = english.translate(str.maketrans(",.", ".,"))
        forms += [english, german, f"{amount:.2f}".replace(".", ",")]
    return list(dict.fromkeys(forms))


def _evidence(document: DocumentText, page: int, start: int, end: int) -> dict[str, Any]:
    return {
        "page": page,
        "start": start,
        "end": end,
        "quote": document.pages[page - 1][start:end],
        "boxes": boxes_for(document.page_geometry(page), start, end),
    }


def _traced_decision(decision: str) -> Callable[[Callable[P, ReviewResult]], Callable[P, ReviewResult]]:
    """Run a decision (called with ``job_id=``) in a span of the job's trace, read from the job
    row and linked to the reviewer's request: the review is a step of the job, and the delivery
    that follows an approval continues the job's trace."""

    def wrap(decide: Callable[P, ReviewResult]) -> Callable[P, ReviewResult]:
        @functools.wraps(decide)
        def traced(*args: P.args, **kwargs: P.kwargs) -> ReviewResult:
            job_id = str(kwargs["job_id"])
            trace_context = None
            if tracing.enabled():
                trace_context = ExtractionJob.objects.filter(pk=job_id).values_list("trace_context", flat=True).first()
            with tracing.step_span(
                "extraction.review_decision",
                trace_context=trace_context,
                attributes={"extraction.job_id": job_id, "extraction.review.decision": decision},
            ) as span:
                result = decide(*args, **kwargs)
                span.set_attribute("extraction.review.status", result.status)
                return result

        return traced

    return wrap


@_traced_decision(APPROVED)
def approve_review(
    *,
    job_id: uuid.UUID,
    reviewer: AbstractBaseUser,
    seen_state_version: int,
    corrections: Mapping[str, str | None] | None = None,
    support: Mapping[str, CorrectionSupport] | None = None,
    override: bool = False,
    comment: str = "",
    not_duplicate: bool = False,
) -> ReviewResult:
    """Approve a REVIEW_REQUIRED job (→ SUCCEEDED, ``extraction.completed.v1``).

    1. Load the job; refuse unless the reviewer may review its tenant; a changed job → conflict early.
    2. Evidence each correction that changes something (``support``: the reviewer's selection or
       reason per field); one printed nowhere and without a reason → refused, naming it.
    3. Apply the corrections, with their evidence, to the stored output; parse it as its schema.
    4. Re-validate under the current policy, the corrected fields attested by the reviewer, and
       look for an earlier job holding the invoice as corrected (``possible_duplicate``, which
       ``not_duplicate`` releases: the reviewer says it is another invoice).
    5. Blocking failures → refused with the reasons, unless ``override`` with a comment.
    6. ``decide_review`` guarded on ``seen_state_version``: False → conflict, nothing written.
    """
    job = ExtractionJob.objects.filter(pk=job_id).first()
    if job is None or not may_review(reviewer, job):
        return ReviewResult(REFUSED, "You may not review this job.", ["not_allowed"])
    if job.state != JobState.REVIEW_REQUIRED or job.state_version != seen_state_version:
        return _conflict()
    result = ExtractionResult.objects.filter(job_id=job.pk).first()
    if result is None:
        return ReviewResult(REFUSED, "This job has no stored result to approve.", ["result_missing"])
    before = result.output
    changed = {
        path: value
        for path, value in (corrections or {}).items()
        if (value.strip() if value else None) != _current_value(before, path)
    }
    document = document_text_of(job)
    records = {
        path: evidence_correction(
            document,
            path=path,
            before=_current_value(before, path),
            value=value,
            support=(support or {}).get(path, CorrectionSupport()),
            reviewer=reviewer.get_username(),
        )
        for path, value in changed.items()
    }
    unevidenced = sorted(path for path, record in records.items() if record is None)
    if unevidenced:
        return ReviewResult(
            REFUSED,
            f"Not printed in the document: {', '.join(unevidenced)}. Select the printed value in the "
            "document text, type it as printed, or give a reason for a value printed nowhere.",
            ["correction_unevidenced"],
        )
    audit = [record for record in records.values() if record is not None]
    # A value the first judgement derived by rule (an amount due from gross and prepaid) is
    # derived again from the values as corrected, unless the reviewer typed it.
    stored = result.validation.get("fields") or {}
    rederived = {path: None for path, entry in stored.items() if entry.get("rule") and path not in changed}
    try:
        after = apply_corrections(before, changed, evidence={r["field"]: r["evidence"] for r in audit})
        invoice, derived = derive_missing(
            parse_invoice(json.dumps(apply_corrections(after, rederived)), schema=job.schema)
        )
        for path in derived:  # totals only (extraction.validation.derivation); printed nowhere
            after["totals"][path.removeprefix("totals.")] = {
                "value": _current_value(invoice.to_json_dict(), path),
                "evidence": None,
            }
    except KeyError as error:
        return ReviewResult(REFUSED, f"There is no field {error.args[0]!r} to correct.", ["correction_invalid"])
    except InvoiceOutputError as error:
        return ReviewResult(
            REFUSED, f"The corrected result is not a valid {job.schema}: {error.message}", ["correction_invalid"]
        )
    # An e-invoice's totals beyond the schema, as the first judgement counted them.
    einvoice = result.validation.get("einvoice") or {}
    outcome = validate_extraction(
        invoice=invoice,
        document=document,
        tenant_id=job.tenant_id,
        attested_fields=frozenset(changed),
        # Who gave each value the reviewer left as it was: what the first judgement recorded.
        sources={path: entry["sources"] for path, entry in stored.items()},
        derived=derived,
        omitted_from_v1=einvoice.get("omitted_from_v1"),
        amount_due_terms=AmountDueTerms(
            third_party_paid=Decimal(einvoice.get("third_party_paid", "0")),
            states_prepaid=einvoice.get("states_prepaid", True),
        ),
    ).with_relocated(
        relocation["field"]
        for relocation in result.validation.get("evidence_relocated") or ()
        if relocation["field"] not in changed
    )
    outcome = with_duplicate_check(
        outcome,
        tenant_id=job.tenant_id,
        job_id=job.pk,
        invoice=invoice,
        released_by=reviewer.get_username() if not_duplicate else None,
    )
    validation = outcome.as_dict()
    if outcome.review_required:
        if not override:
            return ReviewResult(
                REFUSED,
                "The result still fails blocking checks: correct the fields, or override with a comment.",
                outcome.reasons,
                validation,
            )
        if not comment.strip():
            return ReviewResult(
                REFUSED,
                "An override needs a comment saying why the failing checks are acceptable.",
                ["override_needs_comment"],
                validation,
            )
    validation["review"] = {
        "corrected_fields": sorted(changed),
        "corrections": sorted(audit, key=lambda record: record["field"]),
        "override": bool(outcome.review_required and override),
        "overridden_reasons": outcome.reasons if override else [],
    }
    decided = lifecycle.decide_review(
        job_id=job.pk,
        seen_state_version=seen_state_version,
        reviewer_id=reviewer.pk,
        approve=True,
        before=before,
        after=after if changed else None,
        validation=validation,
        comment=comment.strip(),
    )
    if not decided:
        return _conflict()
    return ReviewResult(APPROVED, "Approved: the result goes to delivery.", [], validation)


@_traced_decision(REJECTED)
def reject_review(
    *, job_id: uuid.UUID, reviewer: AbstractBaseUser, seen_state_version: int, comment: str = ""
) -> ReviewResult:
    """Reject a REVIEW_REQUIRED job (→ FAILED_TERMINAL with a dead-letter event), audited."""
    job = ExtractionJob.objects.filter(pk=job_id).first()
    if job is None or not may_review(reviewer, job):
        return ReviewResult(REFUSED, "You may not review this job.", ["not_allowed"])
    result = ExtractionResult.objects.filter(job_id=job.pk).first()
    decided = lifecycle.decide_review(
        job_id=job.pk,
        seen_state_version=seen_state_version,
        reviewer_id=reviewer.pk,
        approve=False,
        before=result.output if result else {},
        after=None,
        validation=result.validation if result else {},
        comment=comment.strip(),
    )
    if not decided:
        return _conflict()
    return ReviewResult(REJECTED, "Rejected: the job failed terminally and will not be delivered.")


def _conflict() -> ReviewResult:
    return ReviewResult(
        CONFLICT,
        "Someone else decided this job first (or it changed since you opened it). "
        "Nothing was changed; reload to see its current state.",
        ["state_changed"],
    )


def _current_value(output: Mapping[str, Any], path: str) -> str | None:
    try:
        node: Any = output
        for part in path.split("."):
            match = _PATH_PART.fullmatch(part)
            if match is None:
                return None
            node = node[match[1]]
            if match[2] is not None:
                node = node[int(match[2])]
        return node.get("value") if isinstance(node, dict) else None
    except (KeyError, IndexError, TypeError):
        return None
