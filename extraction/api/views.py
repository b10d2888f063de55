"""The extraction HTTP API: thin views that parse, load by id, call one domain function."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Model, QuerySet
from django.http import HttpResponse, HttpResponseBase, HttpResponseNotModified
from django.urls import reverse
from django.utils.http import parse_etags
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Principal, Role
from accounts.permissions import request_principal
from config.openapi import problems
from config.parsers import BoundedJSONParser, BoundedMultiPartParser, body_too_large
from config.problems import Problem
from extraction.api.serializers import (
    DOCUMENT_SCHEMA,
    DocumentUploadSerializer,
    JobCreateSerializer,
    document_body,
    job_body,
)
from extraction.intake.acceptance import (
    AcceptCapacityExhausted,
    IdempotencyConflict,
    JobRequest,
    TenantLimitExceeded,
    accept_job,
)
from extraction.intake.documents import TooManyPages, UnsupportedDocument, store_document
from extraction.intake.pages import (
    PAGE_IMAGE_DEFAULT_DPI,
    PAGE_IMAGE_MAX_DPI,
    PAGE_IMAGE_MIN_DPI,
    NoPageImage,
    PageOutOfRange,
    page_image,
)
from extraction.models import Document, ExtractionJob, JobState


def _principal(request: Request) -> Principal:
    return request_principal(request)


def _not_found(kind: str) -> Problem:
    # Another tenant's object answers exactly like a missing one.
    return Problem(f"No such {kind}.", slug="not-found", title="Not found", status_code=404)


def too_many_pages(exc: TooManyPages) -> Problem:
    return Problem(
        str(exc),
        slug="document-too-many-pages",
        title="Too many pages",
        status_code=422,
        extra={"pages": exc.pages, "limit_pages": exc.limit},
    )


def _status_url(job_id: uuid.UUID) -> str:
    return reverse("extraction-job-detail", args=[job_id])


class DocumentCreateView(APIView):
    parser_classes = [BoundedMultiPartParser]

    @extend_schema(
        request={"multipart/form-data": DocumentUploadSerializer},
        responses={
            201: OpenApiResponse(DOCUMENT_SCHEMA),
            **problems(
                {
                    415: {"unsupported-document-type": "The bytes are not a PDF, PNG, JPEG, TIFF, XML or UTF-8 text."},
                    422: {"document-too-many-pages": "More pages than a document may have (DOCUMENT_MAX_PAGES)."},
                }
            ),
        },
    )
    def post(self, request: Request) -> Response:
        serializer = DocumentUploadSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        upload = serializer.validated_data["file"]
        if upload.size > settings.DOCUMENT_MAX_BYTES:
            raise body_too_large(settings.DOCUMENT_MAX_BYTES)
        try:
            document, _ = store_document(tenant=_principal(request).tenant, upload=upload, filename=upload.name or "")
        except UnsupportedDocument as exc:
            raise Problem(
                str(exc), slug="unsupported-document-type", title="Unsupported document type", status_code=415
            ) from exc
        except TooManyPages as exc:
            raise too_many_pages(exc) from exc
        return Response(document_body(document), status=status.HTTP_201_CREATED)


class DocumentDetailView(APIView):
    @extend_schema(responses={200: OpenApiResponse(DOCUMENT_SCHEMA)})
    def get(self, request: Request, document_id: uuid.UUID) -> Response:
        document = Document.objects.filter(tenant=_principal(request).tenant, pk=document_id).first()
        if document is None:
            raise _not_found("document")
        return Response(document_body(document))


class PageImageRenderer(BaseRenderer):
    """The page image view's renderer: Accept is negotiated against image/png. The view answers
    the PNG itself, so what reaches this renderer is JSON whatever image type the client
    accepts: a problem (labelled application/problem+json by the handler) or OPTIONS' description
    of the view (labelled here)."""

    media_type = "image/png"
    format = "png"
    charset = None
    render_style = "binary"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        response = (renderer_context or {}).get("response")
        if response is not None and response.content_type is None:
            response["Content-Type"] = "application/json"
        return JSONRenderer().render(data, renderer_context=renderer_context)


# Document versions are immutable, so a page image never changes; private: it is the tenant's.
PAGE_IMAGE_CACHE_CONTROL = "private, max-age=86400"


def _dpi(request: Request) -> int:
    raw = request.query_params.get("dpi")
    if raw is None:
        return PAGE_IMAGE_DEFAULT_DPI
    if not (raw.isascii() and raw.isdigit() and PAGE_IMAGE_MIN_DPI <= int(raw) <= PAGE_IMAGE_MAX_DPI):
        message = f"Must be an integer from {PAGE_IMAGE_MIN_DPI} to {PAGE_IMAGE_MAX_DPI}."
        raise Problem(
            f"dpi must be an integer from {PAGE_IMAGE_MIN_DPI} to {PAGE_IMAGE_MAX_DPI}.",
            slug="validation-error",
            title="The request is not valid",
            extra={"errors": {"dpi": [message]}},
        )
    return int(raw)


def _client_holds(request: Request, etag: str) -> bool:
    """If-None-Match names ``etag`` (compared weakly, as RFC 9110 says for it) or is ``*``."""
    held = {tag.removeprefix("W/") for tag in parse_etags(request.headers.get("If-None-Match", ""))}
    return etag in held or "*" in held


class DocumentPageImageView(APIView):
    """``GET /api/v1/documents/<id>/pages/<n>.png``: a page of the document as a PNG, what
    evidence boxes (fractions of the page) are drawn on."""

    renderer_classes = [PageImageRenderer]

    @extend_schema(
        operation_id="v1_documents_pages_png_retrieve",
        parameters=[
            OpenApiParameter("page", {"type": "integer", "minimum": 1}, OpenApiParameter.PATH),
            OpenApiParameter(
                "dpi",
                {
                    "type": "integer",
                    "minimum": PAGE_IMAGE_MIN_DPI,
                    "maximum": PAGE_IMAGE_MAX_DPI,
                    "default": PAGE_IMAGE_DEFAULT_DPI,
                },
                description="The resolution of a PDF page; an image upload's frame comes at its own size.",
            ),
            OpenApiParameter(
                "If-None-Match", str, OpenApiParameter.HEADER, description="An ETag of this image: 304 if it matches."
            ),
            OpenApiParameter(
                "ETag", str, OpenApiParameter.HEADER, response=[200, 304], required=True, description="The image's tag."
            ),
            OpenApiParameter(
                "Cache-Control",
                str,
                OpenApiParameter.HEADER,
                response=[200, 304],
                required=True,
                description=f"`{PAGE_IMAGE_CACHE_CONTROL}`: a document version's pages never change.",
            ),
        ],
        responses={
            (200, "image/png"): OpenApiResponse(OpenApiTypes.BINARY, description="The page as a PNG."),
            304: OpenApiResponse(description="The image the client holds (If-None-Match) is current."),
            **problems(
                {
                    400: {
                        "validation-error": f"`dpi` is not an integer from {PAGE_IMAGE_MIN_DPI} to {PAGE_IMAGE_MAX_DPI}."
                    },
                    404: {
                        "page-out-of-range": "The document has no such page; `detail` names its page count.",
                        "no-page-image": "The document is XML or plain text, or its bytes cannot be rendered.",
                    },
                }
            ),
        },
    )
    def get(self, request: Request, document_id: uuid.UUID, page: int) -> HttpResponseBase:
        document = Document.objects.filter(tenant=_principal(request).tenant, pk=document_id).first()
        if document is None:
            raise _not_found("document")
        dpi = _dpi(request)
        try:
            image = page_image(document, page=page, dpi=dpi)
            headers = {"ETag": image.etag, "Cache-Control": PAGE_IMAGE_CACHE_CONTROL}
            if _client_holds(request, image.etag):
                return HttpResponseNotModified(headers=headers)
            return HttpResponse(image.png(), content_type="image/png", headers=headers)
        except PageOutOfRange as exc:
            raise Problem(str(exc), slug="page-out-of-range", title="No such page", status_code=404) from exc
        except NoPageImage as exc:
            raise Problem(exc.reason, slug="no-page-image", title="No page image", status_code=404) from exc


IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
# What _idempotency_key takes, for the schema: printable ASCII, and no space at either end
# (HTTP strips it, so " k" arrives as "k" and " " as an empty, refused, key).
IDEMPOTENCY_KEY_SCHEMA = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]([ -~]*[!-~])?$"}


def _idempotency_key(request: Request) -> str:
    key = request.headers.get(IDEMPOTENCY_KEY_HEADER)
    if key is None:
        raise Problem(
            "The Idempotency-Key header is required.", slug="idempotency-key-missing", title="Idempotency-Key missing"
        )
    if not 1 <= len(key) <= 255 or any(not (0x20 <= ord(ch) <= 0x7E) for ch in key):
        raise Problem(
            "The Idempotency-Key must be 1 to 255 printable ASCII characters.",
            slug="idempotency-key-invalid",
            title="Idempotency-Key invalid",
        )
    return key


_M = TypeVar("_M", bound=Model)
_R = TypeVar("_R")


class JobCursorPagination(CursorPagination):
    # created_at is the transaction's now(): jobs accepted together tie, and the id keeps the
    # order of ties stable from one page query to the next (the cursor skips ties by offset).
    ordering = ("-created_at", "-id")
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_size(self, request: Request) -> int:
        # DRF reads a page_size it cannot use as the default; bad input is an error here.
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not (raw.isascii() and raw.isdigit() and 1 <= int(raw) <= self.max_page_size):
            raise Problem(
                f"page_size must be an integer from 1 to {self.max_page_size}.",
                slug="validation-error",
                title="The request is not valid",
                extra={"errors": {"page_size": [f"Must be an integer from 1 to {self.max_page_size}."]}},
            )
        return int(raw)

    def paginate_queryset(
        self, queryset: QuerySet[_M, _R] | Sequence[_R], request: Request, view: APIView | None = None
    ) -> list[_R] | None:
        try:
            return super().paginate_queryset(queryset, request, view)
        except DjangoValidationError as exc:
            # A cursor is opaque but client-held: a forged position that is not a timestamp
            # fails in the ORM and must be a 404 like any other invalid cursor, not a 500.
            raise NotFound(self.invalid_cursor_message) from exc


class ExtractionJobListCreateView(APIView):
    parser_classes = [BoundedJSONParser]

    @extend_schema(
        request=JobCreateSerializer,
        parameters=[
            OpenApiParameter(IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_SCHEMA, OpenApiParameter.HEADER, required=True),
            OpenApiParameter("Location", str, OpenApiParameter.HEADER, response=[202], description="The status URL."),
            OpenApiParameter(
                "Idempotent-Replayed",
                {"type": "string", "enum": ["true"]},
                OpenApiParameter.HEADER,
                response=[202],
                description="Present when the key was used before for this request: its job, not a new one.",
            ),
        ],
        responses={
            202: dict,
            **problems(
                {
                    400: {
                        "idempotency-key-missing": "The Idempotency-Key header is missing.",
                        "idempotency-key-invalid": "The Idempotency-Key is not 1 to 255 printable ASCII characters.",
                    },
                    409: {"idempotency-key-conflict": "The key was used for another request; `job_id` names its job."},
                    422: {"unknown-document": "document_id names no document of this tenant."},
                    429: {"tenant-limit-exceeded": "A limit of the tenant is reached; `limit` names it."},
                    503: {"accept-capacity-exhausted": "The backlog of all tenants is at its bound."},
                }
            ),
        },
    )
    def post(self, request: Request) -> Response:
        principal = _principal(request)
        key = _idempotency_key(request)
        if not isinstance(request.data, dict):
            raise Problem("The body must be a JSON object.", slug="validation-error", title="The request is not valid")
        serializer = JobCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        document = Document.objects.reference(tenant_id=principal.tenant.pk, document_id=data["document_id"])
        if document is None:
            raise Problem(
                "document_id names no document of this tenant.",
                slug="unknown-document",
                title="Unknown document",
                status_code=422,
            )
        options = dict(data["options"])
        job_request = JobRequest(
            document=document,
            schema=data["schema"],
            model_policy=options.pop("model_policy"),
            priority_class=options.pop("priority"),
            deadline_seconds=options.pop("deadline_seconds", settings.JOB_DEFAULT_DEADLINE_SECONDS),
            options=options,
        )
        try:
            accepted = accept_job(tenant=principal.tenant, idempotency_key=key, request=job_request)
        except IdempotencyConflict as exc:
            raise Problem(
                str(exc),
                slug="idempotency-key-conflict",
                title="Idempotency-Key reused",
                status_code=409,
                extra={"job_id": str(exc.job_id)},
            ) from exc
        except TenantLimitExceeded as exc:
            retry = str(settings.ADMISSION_RETRY_AFTER_SECONDS)
            raise Problem(
                str(exc),
                slug="tenant-limit-exceeded",
                title="Tenant limit reached",
                status_code=429,
                extra={"limit": exc.limit, "current": exc.current, "maximum": exc.maximum},
                headers={"Retry-After": retry},
            ) from exc
        except AcceptCapacityExhausted as exc:
            retry = str(settings.ADMISSION_RETRY_AFTER_SECONDS)
            raise Problem(
                "The system has no accept capacity right now.",
                slug="accept-capacity-exhausted",
                title="Service overloaded",
                status_code=503,
                headers={"Retry-After": retry},
            ) from exc
        url = _status_url(accepted.job_id)
        headers = {"Location": url}
        if accepted.replayed:
            headers["Idempotent-Replayed"] = "true"
        body = {"job_id": str(accepted.job_id), "state": accepted.state, "status_url": url}
        return Response(body, status=status.HTTP_202_ACCEPTED, headers=headers)

    @extend_schema(
        operation_id="v1_extraction_jobs_list",
        parameters=[
            OpenApiParameter("state", str, enum=JobState.values),
            OpenApiParameter("cursor", str, description="Opaque: the next or previous link of a page holds it."),
            OpenApiParameter(
                "page_size",
                {"type": "integer", "minimum": 1, "maximum": JobCursorPagination.max_page_size},
                description=f"Jobs per page (default {JobCursorPagination.page_size}).",
            ),
        ],
        responses={
            200: dict,
            **problems(
                {
                    400: {"validation-error": "`state` is not a job state, or `page_size` is out of range."},
                    404: {"not-found": "The cursor is not one this list handed out."},
                }
            ),
        },
    )
    def get(self, request: Request) -> Response:
        principal = _principal(request)
        jobs = ExtractionJob.objects.filter(tenant=principal.tenant).select_related("result")
        state = request.query_params.get("state")
        if state is not None:
            if state not in JobState.values:
                raise Problem(
                    f"Unknown state {state!r}.",
                    slug="validation-error",
                    title="The request is not valid",
                    extra={"errors": {"state": [f"Must be one of {', '.join(JobState.values)}."]}},
                )
            jobs = jobs.filter(state=state)
        paginator = JobCursorPagination()
        page = paginator.paginate_queryset(jobs, request, view=self)
        assert page is not None  # None only without a page size, and get_page_size always gives one
        operator = principal.has_role(Role.OPERATOR)
        return paginator.get_paginated_response(
            [job_body(job, status_url=_status_url(job.pk), operator=operator) for job in page]
        )


class ExtractionJobDetailView(APIView):
    @extend_schema(responses={200: dict})
    def get(self, request: Request, job_id: uuid.UUID) -> Response:
        principal = _principal(request)
        job = ExtractionJob.objects.filter(tenant=principal.tenant, pk=job_id).select_related("result").first()
        if job is None:
            raise _not_found("extraction job")
        return Response(
            job_body(
                job,
                status_url=_status_url(job.pk),
                operator=principal.has_role(Role.OPERATOR),
                with_wait_reason=True,
                with_usage=True,
            )
        )
