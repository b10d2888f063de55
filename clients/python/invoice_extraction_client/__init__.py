"""Python client of the invoice extraction API.

``Client`` is the hand-written layer (``client.py``): upload, idempotent jobs, waiting with
backoff and ``Retry-After``, batches. ``verify_webhook`` checks the service's signed webhooks.
Below them, ``generated/`` is made from the API's OpenAPI document by openapi-python-client
(``bin/generate-client`` in the service's repository); never edit it by hand.
"""

from __future__ import annotations

from invoice_extraction_client.client import BatchItem, Client, FailedFile, Job, JobState, SubmittedFile
from invoice_extraction_client.errors import (
    ClientError,
    ProblemError,
    UnexpectedAnswer,
    WaitTimeout,
    WebhookVerificationError,
)
from invoice_extraction_client.generated.models import Document, JobResult
from invoice_extraction_client.webhooks import WebhookEvent, verify_webhook

__all__ = [
    "BatchItem",
    "Client",
    "ClientError",
    "Document",
    "FailedFile",
    "Job",
    "JobResult",
    "JobState",
    "ProblemError",
    "SubmittedFile",
    "UnexpectedAnswer",
    "WaitTimeout",
    "WebhookEvent",
    "WebhookVerificationError",
    "verify_webhook",
]
