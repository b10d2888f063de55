"""The one small interface between the worker and a model provider.

A provider turns a document's text into the JSON text of an ``invoice.v1`` extraction, or
raises :class:`ProviderError` with a class the retry policy understands. Providers do no
retries of their own (RTY-3: one retry layer, the worker's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from extraction.intake.text import DocumentText
from extraction.providers.boundaries import BoundaryRequest


class ErrorKind(str, Enum):
    RATE_LIMITED = "rate_limited"  # 429: retry after the provider's wait
    TIMEOUT = "timeout"  # no answer within the attempt deadline
    PROVIDER_ERROR = "provider_error"  # 5xx, connection reset: transient
    PERMANENT = "permanent"  # auth/config 4xx, unsupported input: never retried
    INVALID_OUTPUT = "invalid_output"  # an answer that is not the JSON we asked for


@dataclass(frozen=True)
class ProviderRequest:
    job_id: str
    attempt: int
    document: DocumentText
    schema: str  # "invoice.v1"
    model: str
    max_output_tokens: int
    timeout_seconds: float


@dataclass(frozen=True)
class ProviderResponse:
    output_text: str  # the model's answer, JSON text, not yet parsed
    model: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    provider_request_id: str = ""
    http_status: int | None = None
    latency_ms: int | None = None
    rate_limit_headers: dict[str, str] = field(default_factory=dict)


class ProviderError(Exception):
    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        http_status: int | None = None,
        retry_after_seconds: float | None = None,
        request_sent: bool = True,
        provider_request_id: str = "",
        rate_limit_headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.http_status = http_status
        # Already normalized from seconds or an HTTP-date (RFC 9110 §10.2.3); None if absent/invalid.
        self.retry_after_seconds = retry_after_seconds
        # False only when we know the request never left (connect refused): nothing was billed.
        self.request_sent = request_sent
        self.provider_request_id = provider_request_id
        self.rate_limit_headers = rate_limit_headers or {}


class Provider(Protocol):
    name: str

    def extract(self, request: ProviderRequest) -> ProviderResponse: ...


class BoundaryReader(Protocol):
    """A provider that also answers a bundle's boundary question (a model's, not the rules'):
    the second reader of extraction.execution.splitting."""

    name: str

    def read_boundaries(self, request: BoundaryRequest) -> ProviderResponse: ...
