"""Human review of REVIEW_REQUIRED jobs (VAL-2): who may review, and approve/reject.

The decision (:func:`extraction.execution.lifecycle.decide_review`) is guarded on the
``state_version`` the reviewer saw, so of two reviewers exactly one wins, with its audit row. An
approval is re-validated first; the corrected fields are the reviewer's word, so the evidence
checks skip them. A blocking failure refuses the approval unless the reviewer overrides it with
a written comment, recorded with the reasons overridden.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ParamSpec

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from accounts.models import Membership, Role, role_at_least
from config import tracing
from extraction.execution import lifecycle
from extraction.intake.geometry import geometry_from_json
from extraction.intake.text import DocumentText
from extraction.models import ExtractedText, ExtractionJob, ExtractionResult, JobState
from extraction.validation.policy import validate_extraction
from extraction.validation.schema import InvoiceOutputError, parse_invoice

APPROVED = "approved"
REJECTED = "rejected"
REFUSED = "refused"  # nothing recorded: the approval does not pass the policy
CONFLICT = "conflict"  # nothing recorded: someone else decided, or the job changed

P = ParamSpec("P")
_PATH_PART = re.compile(r"([a-z_]+)(?:\[(\d+)\])?")


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
    return DocumentText(
        pages=tuple(row.pages),
        source=row.source,
        einvoice_page=row.einvoice_page,
        geometry=geometry_from_json(row.geometry),
    )


def apply_corrections(output: Mapping[str, Any], corrections: Mapping[str, str | None]) -> dict[str, Any]:
    """``output`` with the value of each corrected field path (``"totals.gross"``,
    ``"lines[1].net_amount"``) replaced; an empty correction clears the field (value and
    evidence null). Raises KeyError for a path the output does not have."""
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
    return corrected


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
    override: bool = False,
    comment: str = "",
) -> ReviewResult:
    """Approve a REVIEW_REQUIRED job (→ SUCCEEDED, ``extraction.completed.v1``).

    1. Load the job; refuse unless the reviewer may review its tenant; a changed job → conflict early.
    2. Apply the corrections that change something to the stored output; parse it as invoice.v1.
    3. Re-validate under the current policy, the corrected fields attested by the reviewer.
    4. Blocking failures → refused with the reasons, unless ``override`` with a comment.
    5. ``decide_review`` guarded on ``seen_state_version``: False → conflict, nothing written.
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
    try:
        after = apply_corrections(before, changed)
        invoice = parse_invoice(json.dumps(after), schema=job.schema)
    except KeyError as error:
        return ReviewResult(REFUSED, f"There is no field {error.args[0]!r} to correct.", ["correction_invalid"])
    except InvoiceOutputError as error:
        return ReviewResult(
            REFUSED, f"The corrected result is not a valid {job.schema}: {error.message}", ["correction_invalid"]
        )
    outcome = validate_extraction(
        invoice=invoice,
        document=document_text_of(job),
        tenant_id=job.tenant_id,
        attested_fields=frozenset(changed),
        # Who gave each value the reviewer left as it was: what the first judgement recorded.
        sources={path: entry["sources"] for path, entry in (result.validation.get("fields") or {}).items()},
    ).with_relocated(
        relocation["field"]
        for relocation in result.validation.get("evidence_relocated") or ()
        if relocation["field"] not in changed
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
