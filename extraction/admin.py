"""The Django admin for extraction: jobs (read-only), the review queue, supplier master data and
the review audit log. Access follows the tenant membership, not Django's model permissions: a
staff user sees their own tenant's rows as their role allows (reviewer: the queue and the audit
log; operator, admin: also jobs and suppliers); a superuser sees every tenant. Document text is
untrusted: it is always HTML-escaped, also inside the evidence highlights.
"""

from __future__ import annotations

import csv
import json
import uuid
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.paginator import Paginator
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from accounts.admin_scoping import TenantScopedAdmin, has_role, staff_membership
from accounts.models import Role
from extraction.bulk import actions as bulk
from extraction.intake.pages import NoPageImage, PageOutOfRange, page_image
from extraction.intake.text import DocumentText
from extraction.models import (
    ExtractionJob,
    ExtractionResult,
    JobState,
    OperatorAction,
    OperatorActionTarget,
    ProviderPool,
    ReviewDecision,
    Supplier,
)
from extraction.review import decisions as review
from extraction.validation.fields import TRUSTED
from extraction.validation.schema import parse_invoice
from extraction.validation.suppliers import CSV_COLUMNS

REVIEW_PAGE_SIZE = 50
# The review screen's page images: sharp enough to read a printed total beside its box, small
# enough that a two-page invoice arrives at once.
REVIEW_PAGE_DPI = 100
# A box's CSS class by the field's status (validation["fields"][path]["status"]).
BOX_STATUSES = frozenset({"verified", "derived", "conflicting", "unverified", "missing"})


# --- jobs and the review queue ----------------------------------------------------------------------


@admin.register(ExtractionJob)
class ExtractionJobAdmin(TenantScopedAdmin):
    """Jobs, read-only: an operator inspects, the state machine decides. Reviewers see the
    jobs waiting for review; their queue and review screen hang off this admin's URLs."""

    change_list_template = "admin/extraction/extractionjob/change_list.html"
    list_display = ["id", "tenant", "state", "state_version", "attempt", "error_class", "created_at", "updated_at"]
    list_filter = ["state", "priority_class"]
    search_fields = ["id", "idempotency_key"]
    ordering = ["-created_at"]
    list_select_related = ["tenant"]
    readonly_fields = ["result_summary"]
    actions = ["rerun_extraction", "cancel_jobs"]

    @admin.action(description="Re-run extraction (failed or waiting for review)")
    def rerun_extraction(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._bulk(request, queryset, bulk.rerun_jobs, "re-run")

    @admin.action(description="Cancel (waiting or running)")
    def cancel_jobs(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._bulk(request, queryset, bulk.cancel_jobs, "cancelled")

    def _bulk(self, request: HttpRequest, queryset: QuerySet, run: Any, verb: str) -> None:
        """The selected jobs, one audited operator action per tenant among them."""
        if not has_role(request, Role.OPERATOR):
            messages.error(request, "Bulk actions need the operator role.")
            return
        actor = bulk.Actor(name=f"user:{request.user.get_username()}", channel="admin")
        by_tenant: dict[Any, list[uuid.UUID]] = {}
        for job_id, tenant_id in queryset.values_list("pk", "tenant_id"):
            by_tenant.setdefault(tenant_id, []).append(job_id)
        for tenant_id, job_ids in by_tenant.items():
            try:
                report = run(tenant_id=tenant_id, job_filter=bulk.JobFilter(job_ids=tuple(job_ids)), actor=actor)
            except bulk.TooManyMatches as exc:
                messages.error(request, str(exc))
                continue
            left = {k: v for k, v in report.outcomes.items() if k != bulk.CHANGED}
            messages.info(
                request,
                f"{report.outcomes.get(bulk.CHANGED, 0)} of {len(job_ids)} selected jobs {verb}"
                + (f"; left alone: {left}" if left else "")
                + f" (operator action {report.action_id}).",
            )

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = super().get_queryset(request)
        if not has_role(request, Role.OPERATOR):
            queryset = queryset.filter(state=JobState.REVIEW_REQUIRED)
        return queryset

    def get_list_filter(self, request: HttpRequest) -> list[str]:
        return ["tenant", *self.list_filter] if request.user.is_superuser else list(self.list_filter)

    @admin.display(description="result")
    def result_summary(self, job: ExtractionJob) -> SafeString:
        result = ExtractionResult.objects.filter(job_id=job.pk).first()
        if result is None:
            return mark_safe("—")
        text = json.dumps(
            {"policy_version": result.policy_version, "validation": result.validation, "output": result.output},
            indent=2,
            ensure_ascii=False,
        )
        return format_html("<pre style='white-space:pre-wrap'>{}</pre>", text)

    def get_urls(self) -> list:
        wrap = self.admin_site.admin_view
        return [
            path("review/", wrap(self.review_queue_view), name="extraction_review_queue"),
            path("<uuid:job_id>/review/", wrap(self.review_job_view), name="extraction_review_job"),
            path(
                "<uuid:job_id>/review/pages/<int:number>.png",
                wrap(self.review_page_image_view),
                name="extraction_review_page_image",
            ),
            *super().get_urls(),
        ]

    # -- the queue ------------------------------------------------------------------------------
    def review_queue_view(self, request: HttpRequest) -> HttpResponse:
        if not has_role(request, Role.REVIEWER):
            raise PermissionDeniedPage()
        queryset = _review_queue(request).select_related("tenant", "document", "result")
        page = Paginator(queryset, REVIEW_PAGE_SIZE).get_page(request.GET.get("page"))
        rows = [{"job": job, "reasons": _stored_reasons(job)} for job in page.object_list]
        context = {
            **self.admin_site.each_context(request),
            "title": "Review queue",
            "opts": self.model._meta,
            "page": page,
            "rows": rows,
            "show_tenant": request.user.is_superuser,
        }
        return TemplateResponse(request, "admin/extraction/review_queue.html", context)

    # -- one job ----------------------------------------------------------------------------------
    def review_job_view(self, request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
        job = ExtractionJob.objects.select_related("tenant", "document").filter(pk=job_id).first()
        if job is None or not review.may_review(request.user, job):
            raise Http404("No such job in your review queue.")
        queue_url = reverse("admin:extraction_review_queue")
        if request.method == "POST":
            outcome = self._decide(request, job)
            if outcome.status in (review.APPROVED, review.REJECTED):
                messages.success(request, f"Job {job.pk}: {outcome.message}")
                return HttpResponseRedirect(queue_url)
            if outcome.status == review.CONFLICT:
                messages.error(request, f"Job {job.pk}: {outcome.message}")
                return HttpResponseRedirect(queue_url)
            return self._render_review(request, job, refusal=outcome, status=409 if outcome.reasons else 400)
        return self._render_review(request, job)

    def review_page_image_view(self, request: HttpRequest, job_id: uuid.UUID, number: int) -> HttpResponse:
        """Page ``number`` of the job's document as a PNG, for the review screen: the same
        permission as the screen itself (the API's page images need a token, not a session)."""
        job = ExtractionJob.objects.select_related("document").filter(pk=job_id).first()
        if job is None or not review.may_review(request.user, job):
            raise Http404("No such job in your review queue.")
        try:
            png = page_image(job.document, page=number, dpi=REVIEW_PAGE_DPI).png()
        except (NoPageImage, PageOutOfRange) as error:
            raise Http404(str(error)) from None
        response = HttpResponse(png, content_type="image/png")
        response["Cache-Control"] = "private, max-age=3600"  # a document version never changes
        return response

    def _decide(self, request: HttpRequest, job: ExtractionJob) -> review.ReviewResult:
        try:
            seen = int(request.POST.get("state_version", ""))
        except ValueError:
            return review.ReviewResult(review.REFUSED, "The form did not say which version of the job you saw.")
        comment = request.POST.get("comment", "")
        if request.POST.get("action") == "reject":
            return review.reject_review(job_id=job.pk, reviewer=request.user, seen_state_version=seen, comment=comment)
        if request.POST.get("action") != "approve":
            return review.ReviewResult(review.REFUSED, "Choose approve or reject.")
        corrections = {
            key.removeprefix("field:"): value for key, value in request.POST.items() if key.startswith("field:")
        }
        support = {
            path: review.CorrectionSupport(
                selection=_selection(request.POST.get(f"evidence:{path}", "")),
                reason=request.POST.get(f"reason:{path}", ""),
            )
            for path in corrections
        }
        return review.approve_review(
            job_id=job.pk,
            reviewer=request.user,
            seen_state_version=seen,
            corrections=corrections,
            support=support,
            override=request.POST.get("override") == "on",
            comment=comment,
            not_duplicate=request.POST.get("not_duplicate") == "on",
        )

    def _render_review(
        self, request: HttpRequest, job: ExtractionJob, *, refusal: review.ReviewResult | None = None, status: int = 200
    ) -> HttpResponse:
        result = ExtractionResult.objects.filter(job_id=job.pk).first()
        output = result.output if result else {}
        validation = (refusal.validation if refusal and refusal.validation else None) or (
            result.validation if result else {}
        )
        flagged = _flagged_fields(validation)
        trusts = validation.get("fields") or {}
        submitted = request.POST if refusal is not None else None
        fields = [
            {
                **entry,
                "status": _box_status(entry["path"], trusts, flagged),
                "flagged": entry["path"] in flagged,
                "trust": trusts.get(entry["path"]),
                "input": submitted.get(f"field:{entry['path']}", entry["value"] or "")
                if submitted
                else entry["value"] or "",
                "evidence_input": submitted.get(f"evidence:{entry['path']}", "") if submitted else "",
                "reason_input": submitted.get(f"reason:{entry['path']}", "") if submitted else "",
            }
            for entry in _output_fields(output)
        ]
        document = review.document_text_of(job)
        statuses = {entry["path"]: entry["status"] for entry in fields}
        context = {
            **self.admin_site.each_context(request),
            "title": f"Review job {job.pk}",
            "opts": self.model._meta,
            "job": job,
            "result": result,
            "fields": fields,
            "validation": validation,
            "failed_checks": [c for c in validation.get("checks", []) if c.get("status") == "failed"],
            "reasons": validation.get("reasons", []),
            "pages": [
                {
                    **_highlighted_page(text, number, output, flagged),
                    "printed_einvoice": number == document.einvoice_page,
                    "image_url": _page_image_url(job, document, number),
                    "boxes": _page_boxes(number, output, statuses),
                }
                for number, text in enumerate(document.pages, start=1)
                # A bundle's part: its own pages only (the others are another invoice's).
                if job.first_page is None or number >= job.first_page
            ],
            "refusal": refusal,
            "comment": submitted.get("comment", "") if submitted else "",
            "override_checked": bool(submitted and submitted.get("override") == "on"),
            # A possible duplicate: the earlier job, for the reviewer to compare before releasing.
            "duplicate_of": _duplicate_of(validation),
            "not_duplicate_checked": bool(submitted and submitted.get("not_duplicate") == "on"),
            "queue_url": reverse("admin:extraction_review_queue"),
            "next_url": _next_in_queue(request, job),
        }
        return TemplateResponse(request, "admin/extraction/review_job.html", context, status=status)


def _duplicate_of(validation: dict[str, Any]) -> dict[str, Any] | None:
    """The failed ``possible_duplicate`` check's earlier job and what matched, else None."""
    for check in validation.get("checks", []):
        if check.get("check") == "possible_duplicate" and check.get("status") == "failed":
            detail = check.get("detail") or {}
            earlier = detail.get("earlier_job_id")
            return {
                "job_id": earlier,
                "matched": detail.get("matched") or {},
                "url": reverse("admin:extraction_extractionjob_change", args=[earlier]) if earlier else None,
            }
    return None


class PermissionDeniedPage(Http404):
    """Reviewing needs the reviewer role; say "not found" rather than confirm the page exists."""


def _selection(posted: str) -> tuple[int, int, int] | None:
    """The review screen's ``evidence:<path>`` input, "page:start:end" of the text the reviewer
    selected; None when empty or malformed (the value is then looked up in the document)."""
    parts = posted.split(":")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        return None
    page, start, end = (int(part) for part in parts)
    return (page, start, end) if start < end else None


def _review_queue(request: HttpRequest) -> QuerySet[ExtractionJob]:
    """The jobs waiting for this reviewer, oldest first: their tenant's, or every tenant's."""
    queryset = ExtractionJob.objects.filter(state=JobState.REVIEW_REQUIRED).order_by("created_at", "id")
    if not request.user.is_superuser:
        queryset = queryset.filter(tenant_id=staff_membership(request).tenant_id)  # type: ignore[union-attr]
    return queryset


def _next_in_queue(request: HttpRequest, job: ExtractionJob) -> str | None:
    """The review URL of the job after ``job`` in the queue's order, wrapping to the oldest;
    None when ``job`` is the only one waiting."""
    queue = _review_queue(request).exclude(pk=job.pk)
    later = Q(created_at__gt=job.created_at) | Q(created_at=job.created_at, id__gt=job.pk)
    following = queue.filter(later).values_list("pk", flat=True).first() or queue.values_list("pk", flat=True).first()
    return reverse("admin:extraction_review_job", args=[following]) if following else None


def _page_image_url(job: ExtractionJob, document: DocumentText, number: int) -> str | None:
    """Where the review screen gets page ``number``'s image, if the page is shown as one: only a
    page whose words were placed (its evidence has boxes to draw); the printed e-invoice XML
    and plain text stay text."""
    if document.page_geometry(number) is None:
        return None
    try:
        page_image(job.document, page=number, dpi=REVIEW_PAGE_DPI)
    except (NoPageImage, PageOutOfRange):
        return None
    return reverse("admin:extraction_review_page_image", args=[job.pk, number])


def _box_status(path: str, trusts: dict[str, Any], flagged: set[str]) -> str:
    """The field's status as its box colours it; a result judged before fields had a status
    says only flagged (unverified) or not (verified)."""
    status = (trusts.get(path) or {}).get("status")
    if status in BOX_STATUSES:
        return str(status)
    return "unverified" if path in flagged else "verified"


def _page_boxes(number: int, output: dict[str, Any], statuses: dict[str, str]) -> list[dict[str, str]]:
    """The evidence boxes printed on page ``number``, as CSS percentages of the page image."""
    boxes = []
    for entry in _output_fields(output):
        evidence = entry["evidence"]
        if not isinstance(evidence, dict) or evidence.get("page") != number:
            continue
        for x0, y0, x1, y1 in evidence.get("boxes") or ():
            boxes.append(
                {
                    "path": entry["path"],
                    "status": statuses.get(entry["path"], "verified"),
                    "style": f"left:{x0 * 100:.3f}%;top:{y0 * 100:.3f}%;"
                    f"width:{(x1 - x0) * 100:.3f}%;height:{(y1 - y0) * 100:.3f}%",
                }
            )
    return boxes


def _stored_reasons(job: ExtractionJob) -> list[str]:
    try:
        return list(job.result.validation.get("reasons", []))
    except ExtractionResult.DoesNotExist:
        return []


def _output_fields(output: dict[str, Any]) -> list[dict[str, Any]]:
    """The output as rows (path, value, evidence), in document order, for the schema it is in."""
    if not output:
        return []
    invoice = parse_invoice(json.dumps(output), schema=output.get("schema", "invoice.v1"))
    return [
        {
            "path": path,
            "value": field.value,
            "evidence": field.evidence.model_dump() if field.evidence is not None else None,
        }
        for path, field in invoice.fields()
    ]


def _flagged_fields(validation: dict[str, Any]) -> set[str]:
    """The fields a reviewer must look at, for highlighting: those neither verified nor derived;
    for a result judged before fields had a status, every field a failed check points at."""
    if "fields" in validation:
        return {path for path, trust in validation["fields"].items() if trust["status"] not in TRUSTED}
    flagged: set[str] = set()
    for check in validation.get("checks", []):
        if check.get("status") != "failed":
            continue
        if check.get("field"):
            flagged.add(check["field"])
        detail = check.get("detail") or {}
        if isinstance(detail, dict):
            for key in ("problems", "lines", "fields"):
                for problem in detail.get(key) or []:
                    if isinstance(problem, dict) and problem.get("field"):
                        flagged.add(problem["field"])
            flagged.update(path for path in detail.get("missing", []) if isinstance(path, str))
    return flagged


@dataclass(frozen=True)
class _Mark:
    start: int
    end: int
    path: str
    flagged: bool


def _highlighted_page(text: str, number: int, output: dict[str, Any], flagged: set[str]) -> dict[str, Any]:
    """One page of the document as HTML: every character escaped, the evidence spans that
    really are in this page wrapped in <mark>. Overlapping spans: the first one wins."""
    marks = []
    for entry in _output_fields(output):
        evidence = entry["evidence"]
        if not isinstance(evidence, dict) or evidence.get("page") != number:
            continue
        start, end = evidence.get("start"), evidence.get("end")
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
            continue
        if text[start:end] != evidence.get("quote"):
            continue  # an evidence span that does not resolve is listed as a failure, not drawn
        marks.append(_Mark(start, end, entry["path"], entry["path"] in flagged))
    marks.sort(key=lambda m: (m.start, -m.end))
    html: list[str] = []
    position = 0
    for mark in marks:
        if mark.start < position:
            continue
        html.append(escape(text[position : mark.start]))
        css = "evidence flagged" if mark.flagged else "evidence"
        html.append(
            format_html(
                '<mark class="{}" title="{}" data-field="{}">{}</mark>',
                css,
                mark.path,
                mark.path,
                text[mark.start : mark.end],
            )
        )
        position = mark.end
    html.append(escape(text[position:]))
    return {"number": number, "html": mark_safe("".join(html))}  # every piece above is escaped


# --- supplier master data -----------------------------------------------------------------------------


class SupplierForm(forms.ModelForm):
    """The supplier rule itself is Supplier.clean(), which ModelForm validation runs. The form adds
    only what a non-superuser's form cannot get from the model: their form has no ``tenant``
    field, so the (tenant, vat_id) constraint is not checked, and a duplicate would reach the
    database as an IntegrityError."""

    class Meta:
        model = Supplier
        fields = ["tenant", "name", "vat_id", "iban"]

    tenant_id_for_new: Any = None  # set by the admin for non-superusers

    def validate_unique(self) -> None:
        super().validate_unique()
        if "tenant" in self.fields or "vat_id" in self.errors:
            return  # a superuser's form checks the constraint itself
        # This runs after Supplier.clean(): the instance holds the normalized VAT id to be stored.
        tenant_id = self.instance.tenant_id or self.tenant_id_for_new
        duplicate = Supplier.objects.filter(tenant_id=tenant_id, vat_id=self.instance.vat_id).exclude(
            pk=self.instance.pk
        )
        if duplicate.exists():
            self.add_error("vat_id", "This tenant already has a supplier with this VAT id.")


@admin.register(Supplier)
class SupplierAdmin(TenantScopedAdmin):
    """Master data invoices are matched against. Columns are those of the CSV import
    (``manage.py import_suppliers``), and the export action writes the same format."""

    form = SupplierForm
    view_role = Role.REVIEWER
    edit_role = Role.OPERATOR
    list_display = ["name", "vat_id", "iban", "updated_at"]
    search_fields = ["name", "vat_id", "iban"]
    ordering = ["name"]
    actions = ["export_csv"]

    def get_list_display(self, request: HttpRequest) -> list[str]:
        return ["tenant", *self.list_display] if request.user.is_superuser else list(self.list_display)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["tenant", "name", "vat_id", "iban"] if request.user.is_superuser else ["name", "vat_id", "iban"]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> type:
        form = super().get_form(request, obj, change, **kwargs)
        membership = staff_membership(request)
        if not request.user.is_superuser and membership is not None:
            form = type("TenantSupplierForm", (form,), {"tenant_id_for_new": membership.tenant_id})
        return form

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> forms.Field | None:
        if db_field.name in Supplier.RULE_FIELDS:
            # Supplier.clean() judges these once normalized. A form-level required or maxlength
            # check on the typed text would refuse a spaced 34-character IBAN, and its error would
            # leave clean() looking at an empty field and saying so a second time.
            kwargs.update(required=False, max_length=None)
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def save_model(self, request: HttpRequest, obj: Supplier, form: forms.ModelForm, change: bool) -> None:
        if not change and not request.user.is_superuser:
            obj.tenant_id = staff_membership(request).tenant_id  # type: ignore[union-attr]
        super().save_model(request, obj, form, change)

    @admin.action(description="Export selected suppliers as CSV (name, vat_id, iban)")
    def export_csv(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse:
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="suppliers.csv"'
        writer = csv.writer(response)
        writer.writerow(CSV_COLUMNS)
        for supplier in queryset.order_by("name"):
            writer.writerow([_csv_safe(supplier.name), supplier.vat_id, supplier.iban])
        return response


def _csv_safe(text: str) -> str:
    # A cell starting with = + - @ is run as a formula by spreadsheet programs.
    return f"'{text}" if text[:1] in ("=", "+", "-", "@") else text


# --- the audit log of review decisions ----------------------------------------------------------------


class OperatorActionTargetInline(admin.TabularInline):
    model = OperatorActionTarget
    fields = ["object_id", "from_state", "outcome", "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(OperatorAction)
class OperatorActionAdmin(TenantScopedAdmin):
    """The audit of operators' bulk actions, read-only: who did what to which jobs and deliveries."""

    view_role = Role.OPERATOR
    list_display = ["created_at", "kind", "actor", "channel", "dry_run", "status", "matched", "changed"]
    list_filter = ["kind", "channel", "dry_run", "status"]
    ordering = ["-created_at"]
    readonly_fields = [
        "id",
        "tenant",
        "kind",
        "actor",
        "channel",
        "filter",
        "dry_run",
        "status",
        "matched",
        "changed",
        "created_at",
        "finished_at",
    ]
    fields = readonly_fields
    inlines = [OperatorActionTargetInline]


@admin.register(ReviewDecision)
class ReviewDecisionAdmin(TenantScopedAdmin):
    tenant_field = "job__tenant"
    list_display = ["created_at", "job", "decision", "reviewer", "state_version", "overridden"]
    list_filter = ["decision"]
    ordering = ["-created_at"]
    list_select_related = ["job", "reviewer"]
    readonly_fields = [
        "job",
        "reviewer",
        "decision",
        "state_version",
        "comment",
        "created_at",
        "corrections",
        "pretty_before",
        "pretty_after",
        "pretty_validation",
    ]
    fields = readonly_fields

    def tenant_id_of(self, obj: ReviewDecision) -> Any:
        return obj.job.tenant_id

    @admin.display(boolean=True, description="override")
    def overridden(self, decision: ReviewDecision) -> bool:
        return bool((decision.validation or {}).get("review", {}).get("override"))

    @admin.display(description="corrections")
    def corrections(self, decision: ReviewDecision) -> SafeString:
        """Who changed which field from what to what, and what vouches for the new value."""
        records = (decision.validation or {}).get("review", {}).get("corrections") or []
        if not records:
            return mark_safe("—")
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    r["field"],
                    r["from"] if r["from"] is not None else "—",
                    r["to"] if r["to"] is not None else "—",
                    _vouched(r),
                    r["reviewer"],
                )
                for r in records
            ),
        )
        return format_html(
            '<table id="review-corrections"><thead><tr><th>Field</th><th>From</th><th>To</th><th>Evidence</th>'
            "<th>Reviewer</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )

    @admin.display(description="before")
    def pretty_before(self, decision: ReviewDecision) -> SafeString:
        return _pretty(decision.before)

    @admin.display(description="after")
    def pretty_after(self, decision: ReviewDecision) -> SafeString:
        return _pretty(decision.after)

    @admin.display(description="validation")
    def pretty_validation(self, decision: ReviewDecision) -> SafeString:
        return _pretty(decision.validation)


def _vouched(record: dict[str, Any]) -> str:
    evidence = record.get("evidence")
    if evidence:
        return f"{record['evidenced_by']}: p.{evidence['page']} [{evidence['start']}:{evidence['end']}] «{evidence['quote']}»"
    if record.get("reason"):
        return f"{record['evidenced_by']}: {record['reason']}"
    return str(record.get("evidenced_by", ""))


def _pretty(value: Any) -> SafeString:
    if value is None:
        return mark_safe("—")
    return format_html("<pre style='white-space:pre-wrap'>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False))


@admin.register(ProviderPool)
class ProviderPoolAdmin(admin.ModelAdmin):
    """Provider pool limits (BP-2): global configuration shared by every tenant, so only
    superusers see it. A row overrides settings.PROVIDER_POOLS for the pool of that name;
    workers pick a change up within a few seconds."""

    list_display = [
        "name",
        "requests_per_minute",
        "tokens_per_minute",
        "max_in_flight",
        "reserved_tokens",
        "max_output_tokens",
        "budget",
        "kv_cache_tokens",
        "updated_at",
    ]
    readonly_fields = ["updated_at"]
