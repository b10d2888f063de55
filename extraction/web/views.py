"""The browser UI's pages and the small read API behind them.

Pages are plain templates; the JavaScript under ``extraction/static/extraction/`` uploads with
the session (CSRF) through the public API, and stays live over the ``/ws/jobs/`` socket on
daphne (polling with backoff and jitter when the socket is down).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.http.request import split_domain_port
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Membership, Role, role_at_least
from accounts.permissions import request_principal
from config.problems import Problem
from extraction.api.batches import batch_summary
from extraction.models import ExtractedText, ExtractionBatch, ExtractionBatchItem, ExtractionJob, JobState
from extraction.notify.consumers import SUBPROTOCOL, TICKET_PROTOCOL_PREFIX
from extraction.notify.listeners import Listener, issue_ticket


def _not_found(kind: str) -> Problem:
    # Another tenant's object answers exactly like a missing one.
    return Problem(f"No such {kind}.", slug="not-found", title="Not found", status_code=404)


def websocket_url(request: HttpRequest) -> str:
    """The socket browsers open: NOTIFY_WS_URL, or the page's own host on NOTIFY_WS_PORT (so
    the cookie and the Origin match whichever name the user typed)."""
    configured = settings.NOTIFY_WS_URL
    if configured:
        return configured
    host, _ = split_domain_port(request.get_host())
    scheme = "wss" if request.is_secure() else "ws"
    return f"{scheme}://{host}:{settings.NOTIFY_WS_PORT}/ws/jobs/"


class NotificationTicketView(APIView):
    """``POST /api/v1/notification-tickets``: a single-use ticket to open ``/ws/jobs/`` with,
    sent as the subprotocol ``ticket.<ticket>`` next to ``jobs.v1`` (never in the URL)."""

    @extend_schema(request=None, responses={201: dict})
    def post(self, request: Request) -> Response:
        principal = request_principal(request)
        session_key = request.session.session_key if principal.user_id is not None else None
        listener = Listener(
            tenant_id=str(principal.tenant.pk),
            role=principal.role,
            token_id=principal.token_id,
            user_id=principal.user_id,
            session_key=session_key,
        )
        ticket = issue_ticket(listener)
        return Response(
            {
                "ticket": ticket,
                "expires_in": settings.NOTIFY_TICKET_SECONDS,
                "ws_url": websocket_url(request),
                "subprotocols": [SUBPROTOCOL, TICKET_PROTOCOL_PREFIX + ticket],
            },
            status=status.HTTP_201_CREATED,
        )


class JobDocumentTextView(APIView):
    """``GET /api/v1/extraction-jobs/<id>/document-text``: the page strings the job's evidence
    offsets (page, start, end; code points) refer to. The text is the uploader's: untrusted."""

    @extend_schema(responses={200: dict})
    def get(self, request: Request, job_id: uuid.UUID) -> Response:
        principal = request_principal(request)
        job = ExtractionJob.objects.filter(tenant=principal.tenant, pk=job_id).only("document_id").first()
        if job is None:
            raise _not_found("extraction job")
        text = ExtractedText.objects.filter(document_id=job.document_id).first()
        if text is None:
            raise Problem(
                "The document's text has not been extracted yet.",
                slug="document-text-not-ready",
                title="Not found",
                status_code=404,
            )
        return Response(
            {
                "job_id": str(job.pk),
                "document_id": str(job.document_id),
                "source": text.source,
                "pages": list(text.pages),
                # The page that prints the document's e-invoice XML (null: none).
                "einvoice_page": text.einvoice_page,
            }
        )


def _membership(request: HttpRequest) -> Membership:
    user = request.user
    membership = (
        Membership.objects.filter(user=user, revoked_at__isnull=True).first()
        if isinstance(user, AbstractBaseUser)
        else None
    )
    if membership is None:
        raise Http404("This user belongs to no tenant.")
    return membership


@login_required
def job_page(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    membership = _membership(request)
    job = ExtractionJob.objects.filter(tenant_id=membership.tenant_id, pk=job_id).first()
    if job is None:
        raise Http404("No such extraction job.")
    return render(
        request,
        "jobs/detail.html",
        {
            "job": job,
            "membership": membership,
            "reviewer": role_at_least(membership.role, Role.REVIEWER),
            "review_url": _review_url(job),
            "batch_id": job.batch_items.values_list("batch_id", flat=True).first(),
        },
    )


# A batch's job is finished in one of these (a split one's parts are jobs of their own).
FINISHED_STATES = (JobState.SUCCEEDED, JobState.REVIEW_REQUIRED, JobState.FAILED_TERMINAL, JobState.SPLIT)
BATCH_PAGE_SIZE = 50


@login_required
def batch_page(request: HttpRequest, batch_id: uuid.UUID) -> HttpResponse:
    """A batch's progress: its jobs by state, its refused files with their problems, a page of
    its files; batch.js keeps it live on the job notices the job list uses."""
    membership = _membership(request)
    batch = ExtractionBatch.objects.filter(tenant_id=membership.tenant_id, pk=batch_id).first()
    if batch is None:
        raise Http404("No such batch.")
    summary = batch_summary(batch)
    finished = sum(summary["states"][state] for state in FINISHED_STATES)
    items = ExtractionBatchItem.objects.filter(batch=batch).select_related("job").order_by("position")
    page = Paginator(items, BATCH_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "jobs/batch.html",
        {
            "batch": batch,
            "summary": summary,
            "states": [(state, summary["states"][state]) for state in JobState.values],
            "finished": finished,
            "finished_states": [state.value for state in FINISHED_STATES],
            "refusals": items.filter(problem__isnull=False),
            "page": page,
        },
    )


def _review_url(job: ExtractionJob) -> str:
    """The admin's review screen for the job (its change page where no review screen exists)."""
    try:
        return reverse("admin:extraction_review_job", args=[job.pk])
    except NoReverseMatch:
        return reverse("admin:extraction_extractionjob_change", args=[job.pk])
