"""Accepting many files in one request (``POST /api/v1/extraction-batches``).

A batch is its row (:class:`~extraction.models.ExtractionBatch`, unique per tenant and
idempotency key) and one item per file: the file's job, or the problem that refused it. Each
file goes the way a single upload and accept go (``store_document``, then ``accept_job``); what
a batch adds is how the files' transactions are cut:

* The batch row commits first, on its own: a replay or a concurrent request with the same key
  finds it, and the same key with another request is a conflict (409), as for a job (ACC-2).
* Each file then commits in a transaction of its own: its document, its job, the job's
  outbox event and charge (ACC-5, BP-1, all in ``accept_job``'s statement) and its item. So a file refused for
  its size, its type or the tenant's limits writes only its item and leaves the others alone;
  a job is never committed without its item; and the tenant's usage row is locked for one
  file, not for the whole batch.
* Every transaction has committed before the answer: a 202 names only durable jobs.
* A file's job key is derived from the batch (its id stands for the tenant's batch key), the
  file's position and its content digest, so the same batch key and the same file give the
  same job whoever sends it and however often.
* A request that died half-way (a worker killed, a lost connection) left a prefix of committed
  items; a replay with the same key finishes the rest. A replay also tries again the files
  refused for a reason that passes (the tenant's limits: 429, the system's accept capacity:
  503); other refusals stand, as another try would repeat them.

Two requests with one key may run at once: each file's transaction locks the batch row and
looks at the file's item again under it, so the second finds what the first wrote.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from django.db import transaction
from django.db.models.functions import Now

from accounts.models import Tenant
from config.problems import problem_body
from extraction.intake.acceptance import (
    AcceptCapacityExhausted,
    IdempotencyConflict,
    JobRequest,
    TenantLimitExceeded,
    accept_job,
)
from extraction.intake.documents import TooManyPages, UnsupportedDocument, store_document
from extraction.models import BatchSource, Document, ExtractionBatch, ExtractionBatchItem

# Refusals that another try may not repeat: the tenant's limits and the system's capacity
# free up as jobs finish. A replay of the batch tries these files again.
RETRYABLE_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class Refusal:
    """Why one file of a batch was not accepted, as the problem its item carries."""

    slug: str
    title: str
    status: int
    detail: str
    extra: Mapping[str, Any] = field(default_factory=dict)

    def problem(self) -> dict[str, Any]:
        return problem_body(slug=self.slug, title=self.title, status_code=self.status, detail=self.detail, **self.extra)


class FileRefused(Exception):
    """Raised by :attr:`IncomingFile.read` when reading the file shows it cannot be taken."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.detail)
        self.refusal = refusal


@dataclass(frozen=True)
class IncomingFile:
    """One file of a batch as the request carried it. ``read`` gives its bytes (or raises
    :class:`FileRefused`) and is called only if the file is to be stored; ``refusal`` is set
    when the file was refused from what the request said of it, without reading it."""

    filename: str
    read: Callable[[], IO[bytes]]
    refusal: Refusal | None = None


def document_too_large(size: int, limit: int) -> Refusal:
    return Refusal(
        "document-too-large",
        "Document too large",
        413,
        f"The file is {size} bytes; a document may have at most {limit}.",
        {"limit_bytes": limit},
    )


def _not_a_document(detail: str) -> Refusal:
    return Refusal("unsupported-document-type", "Unsupported document type", 415, detail)


@dataclass(frozen=True)
class BatchRequest:
    """The job options of every file (defaults applied, as a job's, ACC-3) and what identifies
    the files: ``content_digest`` over their bytes in order (or over the archive's bytes)."""

    source: BatchSource
    schema: str
    model_policy: str
    priority_class: str
    deadline_seconds: int
    options: dict[str, Any]
    content_digest: str
    file_count: int

    def request_hash(self) -> str:
        canonical = {
            "source": str(self.source),
            "schema": self.schema,
            "model_policy": self.model_policy,
            "priority_class": self.priority_class,
            "deadline_seconds": self.deadline_seconds,
            "options": self.options,
            "content_digest": self.content_digest,
            "file_count": self.file_count,
        }
        return hashlib.sha256(json.dumps(canonical, sort_keys=True, separators=(",", ":")).encode()).hexdigest()

    def api_options(self) -> dict[str, Any]:
        """The options as the API names them (what the batch answers with)."""
        return {
            "model_policy": self.model_policy,
            "priority": self.priority_class,
            "deadline_seconds": self.deadline_seconds,
            **self.options,
        }

    def job_request(self, document: Document) -> JobRequest:
        return JobRequest(
            document=document,
            schema=self.schema,
            model_policy=self.model_policy,
            options=self.options,
            priority_class=self.priority_class,
            deadline_seconds=self.deadline_seconds,
        )


def content_digest(file_digests: Sequence[str]) -> str:
    """One digest over the files' own, in order: other bytes, or the same files in another
    order, are another batch."""
    return hashlib.sha256("\n".join(file_digests).encode()).hexdigest()


@dataclass(frozen=True)
class BatchAccepted:
    batch: ExtractionBatch
    replayed: bool


class BatchConflict(Exception):
    """The key was used before for another batch (409)."""

    def __init__(self, batch_id: Any) -> None:
        super().__init__(f"Idempotency-Key already used for batch {batch_id} with a different request.")
        self.batch_id = batch_id


def accept_batch(
    *, tenant: Tenant, idempotency_key: str, request: BatchRequest, files: Sequence[IncomingFile]
) -> BatchAccepted:
    """Accept every file of a batch that can be, each durably, and record each refusal.

    1. Find or insert the batch under (tenant, key), committed; another request under the key
       is :class:`BatchConflict`.
    2. Load which positions already have a final item (a replay, a resumed batch).
    3. Each other position: :func:`_accept_file`, one committed transaction per file.
    4. When every position has its item, stamp ``accepted_at`` (once).
    """
    assert len(files) == request.file_count
    request_hash = request.request_hash()
    batch, created = ExtractionBatch.objects.get_or_create(
        tenant=tenant,
        idempotency_key=idempotency_key,
        defaults={
            "request_hash": request_hash,
            "source": request.source,
            "schema": request.schema,
            "options": request.api_options(),
            "file_count": request.file_count,
        },
    )
    if batch.request_hash != request_hash:
        raise BatchConflict(batch.pk)

    final = _final_positions(batch)
    for position, incoming in enumerate(files):
        if position not in final:
            _accept_file(batch, position, incoming, tenant=tenant, request=request)

    if batch.accepted_at is None and batch.items.count() == batch.file_count:
        ExtractionBatch.objects.filter(pk=batch.pk, accepted_at__isnull=True).update(accepted_at=Now())
    batch.refresh_from_db()
    return BatchAccepted(batch=batch, replayed=not created)


def _final_positions(batch: ExtractionBatch) -> set[int]:
    """Positions whose item stands: a job, or a refusal another try would repeat."""
    items = ExtractionBatchItem.objects.filter(batch=batch).values_list("position", "job_id", "problem")
    return {position for position, job_id, problem in items if _is_final(job_id, problem)}


def _is_final(job_id: Any, problem: dict[str, Any] | None) -> bool:
    return job_id is not None or (problem or {}).get("status") not in RETRYABLE_STATUSES


def job_idempotency_key(batch: ExtractionBatch, position: int, document: Document) -> str:
    """The key of a file's job: the batch (its id is one per tenant and batch key), the file's
    position and its content digest."""
    return f"batch:{batch.pk}:{position}:{document.sha256}"


def _accept_file(
    batch: ExtractionBatch, position: int, incoming: IncomingFile, *, tenant: Tenant, request: BatchRequest
) -> None:
    """One file, in one transaction of its own (one commit per file).

    1. Lock the batch row; if another request with the key wrote this position's final item
       meanwhile, stop.
    2. Refused already (by what the request said of it), or its bytes refuse it (an archive
       rule, not a document): that refusal. Otherwise store it (``store_document``: the same
       bytes are the same document, so doing this again is harmless).
    3. ``accept_job`` under the derived key; a refusal by admission becomes the problem.
    4. Write the item (its job, or its problem). Commit: the job, its outbox event, its charge
       and its item together.
    """
    with transaction.atomic():
        ExtractionBatch.objects.select_for_update(no_key=True).filter(pk=batch.pk).values_list("pk").get()
        item = ExtractionBatchItem.objects.filter(batch=batch, position=position).first()
        if item is not None and _is_final(item.job_id, item.problem):
            return
        refusal = incoming.refusal
        document: Document | None = None
        if refusal is None:
            try:
                document, _ = store_document(tenant=tenant, upload=incoming.read(), filename=incoming.filename)
            except FileRefused as exc:
                refusal = exc.refusal
            except UnsupportedDocument as exc:
                refusal = _not_a_document(str(exc))
            except TooManyPages as exc:
                refusal = Refusal(
                    "document-too-many-pages",
                    "Too many pages",
                    422,
                    str(exc),
                    {"pages": exc.pages, "limit_pages": exc.limit},
                )
        job_id = None
        if document is not None and refusal is None:
            try:
                accepted = accept_job(
                    tenant=tenant,
                    idempotency_key=job_idempotency_key(batch, position, document),
                    request=request.job_request(document),
                )
                job_id = accepted.job_id
            except TenantLimitExceeded as exc:
                refusal = Refusal(
                    "tenant-limit-exceeded",
                    "Tenant limit reached",
                    429,
                    str(exc),
                    {"limit": exc.limit, "current": exc.current, "maximum": exc.maximum},
                )
            except AcceptCapacityExhausted:
                refusal = Refusal(
                    "accept-capacity-exhausted",
                    "Service overloaded",
                    503,
                    "The system has no accept capacity right now.",
                )
            except IdempotencyConflict as exc:
                refusal = Refusal(
                    "idempotency-key-conflict", "Idempotency-Key reused", 409, str(exc), {"job_id": str(exc.job_id)}
                )
        fields = {
            "filename": incoming.filename[:255],
            "document": document,
            "job_id": job_id,
            "problem": refusal.problem() if refusal is not None else None,
        }
        if item is None:
            ExtractionBatchItem.objects.create(batch=batch, position=position, **fields)
        else:
            ExtractionBatchItem.objects.filter(pk=item.pk).update(updated_at=Now(), **fields)
