"""Batches (extraction/intake/batches.py): many files under one key, each accepted as its own
job with its outbox event in a transaction of its own, or refused alone with its problem; the
same key and files replay the same batch; an interrupted batch keeps what it committed."""

from __future__ import annotations

import hashlib
import io
import threading
from pathlib import Path

import pytest
from django.db import connections

from extraction.events import EventType
from extraction.intake.batches import BatchConflict, BatchRequest, IncomingFile, accept_batch, content_digest
from extraction.models import (
    BatchSource,
    ExtractionBatch,
    ExtractionBatchItem,
    ExtractionJob,
    OutboxEvent,
)
from tests.factories import INVOICES, make_tenant_context

SAMPLES = [
    INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_Einfach.pdf",
    INVOICES / "invoice2data/compare/AzureInterior.pdf",
    INVOICES / "invoice2data/compare/FlipkartInvoice.pdf",
]
NOT_A_DOCUMENT = bytes(range(256)) * 4


# --- accept_batch itself, durability and concurrency ----------------------------------------------


def _files_of(paths: list[Path]) -> list[IncomingFile]:
    return [IncomingFile(filename=path.name, read=lambda path=path: io.BytesIO(path.read_bytes())) for path in paths]


def _request(paths: list[Path]) -> BatchRequest:
    return BatchRequest(
        source=BatchSource.FILES,
        schema="invoice.v1",
        model_policy="default",
        priority_class="batch",
        deadline_seconds=3600,
        options={},
        content_digest=content_digest([path.name for path in paths]),
        file_count=len(paths),
    )


def _committed_counts(job_ids: list[str]) -> tuple[int, int]:
    """Jobs and requested events another connection sees: what is committed."""
    seen: list[tuple[int, int]] = []

    def look() -> None:
        try:
            jobs = ExtractionJob.objects.filter(pk__in=job_ids).count()
            events = OutboxEvent.objects.filter(job_id__in=job_ids, event_type=EventType.REQUESTED).count()
            seen.append((jobs, events))
        finally:
            connections.close_all()

    thread = threading.Thread(target=look)
    thread.start()
    thread.join()
    return seen[0]


def test_accept_batch_accepts_each_file_as_its_own_job_under_a_key_of_the_batch(tenant_a):
    accepted = accept_batch(
        tenant=tenant_a.tenant, idempotency_key="b-1", request=_request(SAMPLES), files=_files_of(SAMPLES)
    )

    batch = accepted.batch
    items = list(ExtractionBatchItem.objects.filter(batch=batch).select_related("job", "document").order_by("position"))
    assert (accepted.replayed, batch.file_count, batch.accepted_at is not None) == (False, 3, True)
    assert [item.job.idempotency_key for item in items] == [
        f"batch:{batch.pk}:{n}:{hashlib.sha256(path.read_bytes()).hexdigest()}" for n, path in enumerate(SAMPLES)
    ]
    assert [item.document.original_filename for item in items] == [path.name for path in SAMPLES]
    assert OutboxEvent.objects.filter(job__in=[item.job for item in items], event_type=EventType.REQUESTED).count() == 3


def test_accept_batch_refuses_a_file_alone_with_its_problem(tenant_a):
    files = _files_of(SAMPLES[:2])
    files.insert(1, IncomingFile(filename="data.bin", read=lambda: io.BytesIO(NOT_A_DOCUMENT)))
    paths = [SAMPLES[0], Path("data.bin"), SAMPLES[1]]

    batch = accept_batch(tenant=tenant_a.tenant, idempotency_key="b-1", request=_request(paths), files=files).batch

    items = list(ExtractionBatchItem.objects.filter(batch=batch).order_by("position"))
    assert [item.job_id is not None for item in items] == [True, False, True]
    assert items[1].problem == {
        "type": "/problems/unsupported-document-type",
        "title": "Unsupported document type",
        "status": 415,
        "detail": "Not a PDF, PNG, JPEG, TIFF, XML or UTF-8 text document.",
    }
    assert (items[1].document_id, items[1].filename) == (None, "data.bin")


def test_accept_batch_replays_the_same_request_and_refuses_another_under_its_key(tenant_a):
    first = accept_batch(
        tenant=tenant_a.tenant, idempotency_key="b-1", request=_request(SAMPLES), files=_files_of(SAMPLES)
    )
    again = accept_batch(
        tenant=tenant_a.tenant, idempotency_key="b-1", request=_request(SAMPLES), files=_files_of(SAMPLES)
    )

    assert (again.replayed, again.batch.pk) == (True, first.batch.pk)
    assert ExtractionJob.objects.count() == 3
    with pytest.raises(BatchConflict) as conflict:
        accept_batch(
            tenant=tenant_a.tenant, idempotency_key="b-1", request=_request(SAMPLES[:2]), files=_files_of(SAMPLES[:2])
        )
    assert conflict.value.batch_id == first.batch.pk


@pytest.mark.django_db(transaction=True)
def test_a_batch_interrupted_half_way_keeps_its_committed_jobs_and_a_replay_finishes_it():
    ctx = make_tenant_context()
    files = _files_of(SAMPLES)

    def dies() -> io.BytesIO:
        raise RuntimeError("the worker was killed here")

    interrupted = [files[0], IncomingFile(filename=files[1].filename, read=dies), files[2]]
    with pytest.raises(RuntimeError):
        accept_batch(tenant=ctx.tenant, idempotency_key="batch-1", request=_request(SAMPLES), files=interrupted)
    batch = ExtractionBatch.objects.get()
    [first] = ExtractionBatchItem.objects.filter(batch=batch)
    assert (first.position, batch.accepted_at) == (0, None)
    assert _committed_counts([str(first.job_id)]) == (1, 1)

    finished = accept_batch(tenant=ctx.tenant, idempotency_key="batch-1", request=_request(SAMPLES), files=files)

    assert finished.replayed and finished.batch.accepted_at is not None
    items = list(ExtractionBatchItem.objects.filter(batch=batch).order_by("position"))
    assert [item.position for item in items] == [0, 1, 2]
    assert items[0].job_id == first.job_id
    assert ExtractionJob.objects.filter(tenant=ctx.tenant).count() == 3
