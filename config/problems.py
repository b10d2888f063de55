"""RFC 9457 problem details: every 4xx/5xx body of the API is ``application/problem+json``
with a stable ``type`` that clients can switch on."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, JsonResponse
from django.utils.encoding import escape_uri_path
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

PROBLEM_CONTENT_TYPE = "application/problem+json"
TYPE_BASE = "/problems/"

logger = logging.getLogger(__name__)


class Problem(exceptions.APIException):
    """An API error with a stable problem type. ``extra`` members are added to the body."""

    status_code: int = status.HTTP_400_BAD_REQUEST
    slug = "bad-request"
    title = "Bad request"

    def __init__(
        self,
        detail: str,
        *,
        slug: str | None = None,
        title: str | None = None,
        status_code: int | None = None,
        extra: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        if slug:
            self.slug = slug
        if title:
            self.title = title
        if status_code:
            self.status_code = status_code
        self.extra = extra or {}
        self.headers = headers or {}


# DRF's own exceptions, mapped to stable types.
_DRF_TYPES: list[tuple[type[Exception], str, str]] = [
    (exceptions.ParseError, "malformed-request-body", "Malformed request body"),
    (exceptions.ValidationError, "validation-error", "The request is not valid"),
    (exceptions.NotAuthenticated, "not-authenticated", "Authentication required"),
    (exceptions.AuthenticationFailed, "authentication-failed", "Authentication failed"),
    (exceptions.PermissionDenied, "permission-denied", "Permission denied"),
    (exceptions.NotFound, "not-found", "Not found"),
    (exceptions.MethodNotAllowed, "method-not-allowed", "Method not allowed"),
    (exceptions.NotAcceptable, "not-acceptable", "Not acceptable"),
    (exceptions.UnsupportedMediaType, "unsupported-media-type", "Unsupported media type"),
    (exceptions.Throttled, "rate-limited", "Too many requests"),
]


def problem_body(
    *, slug: str, title: str, status_code: int, detail: Any, instance: str | None = None, **extra: Any
) -> dict[str, Any]:
    """``instance`` is the request path as Django decoded it; the body carries it percent-encoded,
    so it stays a URI reference whatever bytes the client put in the path."""
    body: dict[str, Any] = {"type": TYPE_BASE + slug, "title": title, "status": status_code, "detail": detail}
    if instance:
        body["instance"] = escape_uri_path(instance)
    body.update(extra)
    return body


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    request = context.get("request")
    instance = request.path if request is not None else None
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    if isinstance(exc, RequestDataTooBig):
        # DRF reads a JSON body through request.body, whose DATA_UPLOAD_MAX_MEMORY_SIZE check
        # fires before any parser can answer 413; left alone it becomes Django's generic 400.
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        exc = Problem(
            f"The request body is larger than {limit} bytes.",
            slug="payload-too-large",
            title="Payload too large",
            status_code=413,
            extra={"limit_bytes": limit},
        )
    if isinstance(exc, Problem):
        body = problem_body(
            slug=exc.slug,
            title=exc.title,
            status_code=exc.status_code,
            detail=str(exc.detail),
            instance=instance,
            **exc.extra,
        )
        return Response(body, status=exc.status_code, headers=exc.headers, content_type=PROBLEM_CONTENT_TYPE)
    response = exception_handler(exc, context)
    if response is None:
        return None  # a real bug: Django's 500 handler answers with a problem body
    slug, title = "error", "Error"
    for klass, s, t in _DRF_TYPES:
        if isinstance(exc, klass):
            slug, title = s, t
            break
    extra: dict[str, Any] = {}
    if isinstance(exc, exceptions.ValidationError):
        detail = "One or more fields are invalid."
        extra["errors"] = response.data
    else:
        data = response.data
        detail = data.get("detail", str(data)) if isinstance(data, dict) else str(data)
    response.data = problem_body(
        slug=slug, title=title, status_code=response.status_code, detail=str(detail), instance=instance, **extra
    )
    response.content_type = PROBLEM_CONTENT_TYPE
    return response


def _django_problem(request: HttpRequest, status_code: int, slug: str, title: str, detail: str) -> JsonResponse:
    return JsonResponse(
        problem_body(slug=slug, title=title, status_code=status_code, detail=detail, instance=request.path),
        status=status_code,
        content_type=PROBLEM_CONTENT_TYPE,
    )


def handler400(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:  # noqa: ARG001
    return _django_problem(request, 400, "bad-request", "Bad request", "The request could not be understood.")


def handler403(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:  # noqa: ARG001
    return _django_problem(request, 403, "permission-denied", "Permission denied", "You may not do this.")


def handler404(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:  # noqa: ARG001
    return _django_problem(request, 404, "not-found", "Not found", "No such resource.")


def handler500(request: HttpRequest) -> JsonResponse:
    return _django_problem(
        request,
        500,
        "internal-error",
        "Internal error",
        "The server failed while handling this request; retry with the same Idempotency-Key.",
    )
