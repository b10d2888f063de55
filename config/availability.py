"""A request that finds the database away answers ``503`` with ``Retry-After``, as
``application/problem+json``, instead of a ``500`` with a traceback per request.

During a database restart or failover (docs/scaling-and-failover.md) every request that
touches PostgreSQL fails for a few seconds. That is the service being briefly unavailable, not a
bug: the client should try again shortly, and the log should say once that the database is away
and once that it is back (config.outages). Nothing was written: the request's transaction did
not commit, so a retry with the same Idempotency-Key is safe.
"""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.deprecation import MiddlewareMixin

from config.outages import Outage
from config.problems import PROBLEM_CONTENT_TYPE, problem_body

RETRY_AFTER_SECONDS = 5
_database = Outage(logging.getLogger("config.availability"), "PostgreSQL (web requests)")


class DatabaseUnavailableMiddleware(MiddlewareMixin):
    """Turns a lost database connection raised by a view into a 503 problem."""

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        _database.failed(
            exception, consequence=f"requests that need it answer 503 (Retry-After {RETRY_AFTER_SECONDS} s)"
        )
        body = problem_body(
            slug="service-unavailable",
            title="Service unavailable",
            status_code=503,
            detail="The database is unavailable for a moment; nothing was stored. Try again shortly.",
            instance=request.path,
        )
        response = JsonResponse(body, status=503, content_type=PROBLEM_CONTENT_TYPE)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if _database.down and response.status_code < 500:
            _database.succeeded()
        return response
