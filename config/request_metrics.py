"""The accept latency (config.instruments.ACCEPT_LATENCY): how long ``POST
/api/v1/extraction-jobs`` takes to answer, measured around every other middleware."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase

from config.instruments import ACCEPT_LATENCY

# config/urls.py's name for /api/v1/extraction-jobs; POST there is the accept, GET the list.
ACCEPT_URL_NAME = "extraction-job-list"


class AcceptLatencyMiddleware:
    """First in MIDDLEWARE, so the time includes authentication, parsing and the commit; a
    request that never resolved to the route (a 404) is not an accept. Sync under gunicorn,
    async under daphne, so neither server pays for adapting it."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.is_async:
            return self._acall(request)
        started = time.perf_counter()
        response: HttpResponseBase = self.get_response(request)
        _observe(request, response, started)
        return response

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        started = time.perf_counter()
        response: HttpResponseBase = await self.get_response(request)
        _observe(request, response, started)
        return response


def _observe(request: HttpRequest, response: HttpResponseBase, started: float) -> None:
    match = getattr(request, "resolver_match", None)
    if request.method == "POST" and match is not None and match.url_name == ACCEPT_URL_NAME:
        ACCEPT_LATENCY.labels(status=str(response.status_code)).observe(time.perf_counter() - started)
