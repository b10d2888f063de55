"""Batches (``POST /api/v1/extraction-batches``, docs/batches.md): many files in one request,
each accepted as its own job with its outbox event, or refused alone with its problem; the
same key and files replay the same batch; a batch over its bounds is one problem and writes
nothing; a zip archive is read defensively; a batch is its tenant's only."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
import uuid
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, connections
from rest_framework.test import APIClient

from accounts.models import Tenant, TenantUsage
from extraction.events import EventType
from extraction.intake.batches import BatchConflict, BatchRequest, IncomingFile, accept_batch, content_digest
from extraction.models import (
    BatchSource,
    Document,
    ExtractionBatch,
    ExtractionBatchItem,
    ExtractionJob,
    JobState,
    OutboxEvent,
)
from tests.factories import INVOICES, make_tenant_context, take_in

BATCHES_URL = "/api/v1/extraction-batches"
PROBLEM = "application/problem+json"
SAMPLES = [
    INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_Einfach.pdf",
    INVOICES / "invoice2data/compare/AzureInterior.pdf",
    INVOICES / "invoice2data/compare/FlipkartInvoice.pdf",
]
NOT_A_DOCUMENT = bytes(range(256)) * 4


def sample_files(paths: list[Path] = SAMPLES) -> list[SimpleUploadedFile]:
    return [SimpleUploadedFile(path.name, path.read_bytes()) for path in paths]


def post_batch(client: APIClient, key: str | None = "batch-1", **data: Any):
    if "options" in data:
        data["options"] = json.dumps(data["options"])
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return client.post(BATCHES_URL, data, format="multipart", **headers)


def zip_upload(entries: dict[str, bytes], name: str = "invoices.zip") -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for entry, data in entries.items():
            archive.writestr(entry, data)
    return SimpleUploadedFile(name, buffer.getvalue())


def problem_types(body: dict[str, Any]) -> list[str | None]:
    return [item["problem"]["type"] if item["problem"] else None for item in body["items"]]


def nothing_written() -> bool:
    return not ExtractionBatch.objects.exists() and not ExtractionJob.objects.exists()


# --- multipart batches -----------------------------------------------------------------------------


def test_three_pdfs_are_accepted_as_three_jobs_each_with_its_outbox_event(tenant_a):
    response = post_batch(tenant_a.client, files=sample_files())

    assert response.status_code == 202, response.content
    body = response.json()
    batch = ExtractionBatch.objects.get(pk=body["batch_id"])
    assert response["Location"] == body["status_url"] == f"{BATCHES_URL}/{batch.pk}"
    assert "Idempotent-Replayed" not in response
    assert (body["file_count"], body["accepted"], body["refused"]) == (3, 3, 0)
    assert body["states"][JobState.ACCEPTED] == 3
    assert body["accepted_at"] is not None
    assert [item["position"] for item in body["items"]] == [0, 1, 2]
    assert [item["filename"] for item in body["items"]] == [path.name for path in SAMPLES]
    assert problem_types(body) == [None, None, None]

    job_ids = [item["job"]["job_id"] for item in body["items"]]
    jobs = {str(job.pk): job for job in ExtractionJob.objects.filter(pk__in=job_ids)}
    assert [jobs[job_id].state for job_id in job_ids] == [JobState.ACCEPTED] * 3
    assert [str(jobs[job_id].document_id) for job_id in job_ids] == [item["document"]["id"] for item in body["items"]]
    documents = Document.objects.filter(pk__in=[item["document"]["id"] for item in body["items"]])
    assert sorted(document.sha256 for document in documents) == sorted(
        hashlib.sha256(path.read_bytes()).hexdigest() for path in SAMPLES
    )
    events = OutboxEvent.objects.filter(job_id__in=job_ids)
    assert sorted((str(event.job_id), event.event_type) for event in events) == sorted(
        (job_id, EventType.REQUESTED) for job_id in job_ids
    )
    assert TenantUsage.objects.get(tenant=tenant_a.tenant).pending_jobs == 3


def test_every_job_takes_the_batchs_options_once_given(tenant_a):
    options = {"priority": "interactive", "deadline_seconds": 3600}
    response = post_batch(tenant_a.client, files=sample_files(SAMPLES[:2]), schema="invoice.v2", options=options)

    assert response.status_code == 202, response.content
    assert response.json()["options"] == {
        "model_policy": "default",
        "priority": "interactive",
        "deadline_seconds": 3600,
    }
    jobs = ExtractionJob.objects.filter(tenant=tenant_a.tenant)
    assert (
        sorted((job.schema, job.priority_class, job.model_policy) for job in jobs)
        == [("invoice.v2", "interactive", "default")] * 2
    )


def test_the_same_key_and_files_again_is_the_same_batch_and_the_same_jobs(tenant_a):
    first = post_batch(tenant_a.client, files=sample_files())
    again = post_batch(tenant_a.client, files=sample_files())

    assert again.status_code == 202, again.content
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert (ExtractionBatch.objects.count(), ExtractionJob.objects.count(), OutboxEvent.objects.count()) == (1, 3, 3)
    assert TenantUsage.objects.get(tenant=tenant_a.tenant).pending_jobs == 3


def test_a_replay_answers_the_jobs_current_states(tenant_a):
    body = post_batch(tenant_a.client, files=sample_files()).json()
    take_in(body["items"][1]["job"]["job_id"])

    again = post_batch(tenant_a.client, files=sample_files()).json()
    assert [item["job"]["state"] for item in again["items"]] == [JobState.ACCEPTED, JobState.READY, JobState.ACCEPTED]
    assert (again["states"][JobState.ACCEPTED], again["states"][JobState.READY]) == (2, 1)


def test_the_same_key_with_other_files_is_409_naming_the_batch(tenant_a):
    batch_id = post_batch(tenant_a.client, files=sample_files()).json()["batch_id"]

    response = post_batch(tenant_a.client, files=sample_files(SAMPLES[:2]))
    assert response.status_code == 409
    assert response["Content-Type"] == PROBLEM
    assert (response.json()["type"], response.json()["batch_id"]) == ("/problems/idempotency-key-conflict", batch_id)
    assert ExtractionJob.objects.count() == 3


def test_the_same_files_in_another_order_are_another_request(tenant_a):
    post_batch(tenant_a.client, files=sample_files())
    response = post_batch(tenant_a.client, files=sample_files(SAMPLES[::-1]))
    assert response.status_code == 409


def test_the_same_files_under_another_key_are_another_batch_with_its_own_jobs(tenant_a):
    first = post_batch(tenant_a.client, "batch-1", files=sample_files()).json()
    second = post_batch(tenant_a.client, "batch-2", files=sample_files()).json()

    assert second["batch_id"] != first["batch_id"]
    assert {item["job"]["job_id"] for item in second["items"]}.isdisjoint(
        item["job"]["job_id"] for item in first["items"]
    )
    # The same bytes are the same documents (ACC-4).
    assert [item["document"]["id"] for item in second["items"]] == [item["document"]["id"] for item in first["items"]]


def test_a_file_that_is_not_a_document_is_refused_alone(tenant_a):
    files = sample_files(SAMPLES[:1]) + [SimpleUploadedFile("data.bin", NOT_A_DOCUMENT)] + sample_files(SAMPLES[1:2])

    response = post_batch(tenant_a.client, files=files)

    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["accepted"], body["refused"]) == (2, 1)
    assert problem_types(body) == [None, "/problems/unsupported-document-type", None]
    refused = body["items"][1]
    assert (refused["filename"], refused["document"], refused["job"]) == ("data.bin", None, None)
    assert refused["problem"]["status"] == 415
    assert ExtractionJob.objects.count() == OutboxEvent.objects.count() == 2


def test_an_empty_file_is_refused_alone(tenant_a):
    files = [SimpleUploadedFile("empty.pdf", b""), *sample_files(SAMPLES[:1])]
    body = post_batch(tenant_a.client, files=files).json()
    assert problem_types(body) == ["/problems/unsupported-document-type", None]


def test_a_file_over_the_document_limit_is_refused_alone_and_not_stored(tenant_a, settings):
    small, large = sorted(SAMPLES, key=lambda path: path.stat().st_size)[:2]
    settings.DOCUMENT_MAX_BYTES = small.stat().st_size

    response = post_batch(tenant_a.client, files=sample_files([large, small]))

    assert response.status_code == 202, response.content
    body = response.json()
    assert problem_types(body) == ["/problems/document-too-large", None]
    assert body["items"][0]["problem"] == {
        "type": "/problems/document-too-large",
        "title": "Document too large",
        "status": 413,
        "detail": f"The file is {large.stat().st_size} bytes; a document may have at most {small.stat().st_size}.",
        "limit_bytes": small.stat().st_size,
    }
    assert Document.objects.count() == 1


def test_files_past_the_tenants_limit_are_refused_with_429_and_a_replay_accepts_them_once_there_is_room(tenant_a):
    Tenant.objects.filter(pk=tenant_a.tenant.pk).update(max_pending_jobs=2)

    body = post_batch(tenant_a.client, files=sample_files()).json()

    assert problem_types(body) == [None, None, "/problems/tenant-limit-exceeded"]
    assert {key: body["items"][2]["problem"][key] for key in ("status", "limit", "current", "maximum")} == {
        "status": 429,
        "limit": "pending_jobs",
        "current": 2,
        "maximum": 2,
    }
    assert body["items"][2]["document"] is not None  # stored: a replay needs no new upload of it
    Tenant.objects.filter(pk=tenant_a.tenant.pk).update(max_pending_jobs=3)

    again = post_batch(tenant_a.client, files=sample_files()).json()

    assert problem_types(again) == [None, None, None]
    assert [item["job"]["job_id"] for item in again["items"][:2]] == [
        item["job"]["job_id"] for item in body["items"][:2]
    ]
    assert (again["accepted"], again["refused"]) == (3, 0)
    assert ExtractionJob.objects.count() == 3


def test_more_files_than_a_batch_may_have_is_413_and_writes_nothing(tenant_a, settings):
    settings.BATCH_MAX_FILES = 2
    response = post_batch(tenant_a.client, files=sample_files())
    assert response.status_code == 413
    assert response.json()["type"] == "/problems/batch-too-many-files"
    assert nothing_written()


def test_a_body_over_the_batch_limit_is_413_and_writes_nothing(tenant_a, settings):
    settings.BATCH_MAX_BYTES = sum(path.stat().st_size for path in SAMPLES) - 1
    response = post_batch(tenant_a.client, files=sample_files())
    assert response.status_code == 413
    assert (response.json()["type"], response.json()["limit_bytes"]) == (
        "/problems/payload-too-large",
        settings.BATCH_MAX_BYTES,
    )
    assert nothing_written() and not Document.objects.exists()


def _one_file() -> dict[str, Any]:
    return {"files": sample_files(SAMPLES[:1])}


@pytest.mark.parametrize(
    ("data", "fields"),
    [
        pytest.param(dict, ["archive", "files"], id="neither-files-nor-archive"),
        pytest.param(
            lambda: {**_one_file(), "archive": zip_upload({"a.pdf": SAMPLES[0].read_bytes()})},
            ["archive", "files"],
            id="files-and-archive",
        ),
        pytest.param(lambda: {**_one_file(), "options": '{"priority": "urgent"}'}, ["options"], id="unknown-priority"),
        pytest.param(lambda: {**_one_file(), "options": "not json"}, ["options"], id="options-not-json"),
        pytest.param(lambda: {**_one_file(), "options": "[" * 30_000}, ["options"], id="options-nested-too-deeply"),
        pytest.param(lambda: {**_one_file(), "options": "[]"}, ["options"], id="options-not-an-object"),
        pytest.param(lambda: {**_one_file(), "schema": "invoice.v9"}, ["schema"], id="unknown-schema"),
        pytest.param(
            lambda: {**_one_file(), "callback_url": "http://127.0.0.1/"}, ["callback_url"], id="unknown-field"
        ),
    ],
)
def test_a_request_that_is_not_a_batch_is_a_validation_error_and_writes_nothing(tenant_a, data, fields):
    response = tenant_a.client.post(BATCHES_URL, data(), format="multipart", HTTP_IDEMPOTENCY_KEY="batch-1")

    assert response.status_code == 400, response.content
    assert response.json()["type"] == "/problems/validation-error"
    assert sorted(response.json()["errors"]) == fields
    assert nothing_written()


def test_a_batch_without_an_idempotency_key_is_400(tenant_a):
    response = post_batch(tenant_a.client, None, files=sample_files(SAMPLES[:1]))
    assert (response.status_code, response.json()["type"]) == (400, "/problems/idempotency-key-missing")
    assert nothing_written()


# --- zip archives ------------------------------------------------------------------------------------


def test_an_archive_is_accepted_file_by_file_named_by_its_entries(tenant_a):
    entries = {"march/": b"", **{f"march/{path.name}": path.read_bytes() for path in SAMPLES[:2]}}

    response = post_batch(tenant_a.client, archive=zip_upload(entries))

    assert response.status_code == 202, response.content
    body = response.json()
    assert [item["filename"] for item in body["items"]] == [f"march/{path.name}" for path in SAMPLES[:2]]
    assert (body["file_count"], body["accepted"], body["refused"]) == (2, 2, 0)
    assert ExtractionBatch.objects.get().source == BatchSource.ARCHIVE
    assert OutboxEvent.objects.filter(event_type=EventType.REQUESTED).count() == 2


def test_the_same_archive_under_the_same_key_replays_the_batch(tenant_a):
    raw = zip_upload({path.name: path.read_bytes() for path in SAMPLES}).read()
    first = post_batch(tenant_a.client, archive=SimpleUploadedFile("march.zip", raw))
    again = post_batch(tenant_a.client, archive=SimpleUploadedFile("march.zip", raw))
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert ExtractionJob.objects.count() == 3


def test_an_empty_archive_is_422_and_writes_nothing(tenant_a):
    response = post_batch(tenant_a.client, archive=zip_upload({"empty/": b""}))
    assert response.status_code == 422
    assert response["Content-Type"] == PROBLEM
    assert response.json()["type"] == "/problems/archive-empty"
    assert nothing_written()


def test_bytes_that_are_not_an_archive_are_422_and_write_nothing(tenant_a):
    response = post_batch(tenant_a.client, archive=SimpleUploadedFile("a.zip", SAMPLES[0].read_bytes()))
    assert (response.status_code, response.json()["type"]) == (422, "/problems/archive-unreadable")
    assert nothing_written()


def test_a_bomb_in_an_archive_is_refused_and_the_rest_accepted(tenant_a):
    entries = {"bomb.pdf": b"\x00" * (8 * 1024 * 1024), SAMPLES[0].name: SAMPLES[0].read_bytes()}

    body = post_batch(tenant_a.client, archive=zip_upload(entries)).json()

    assert problem_types(body) == ["/problems/archive-entry-compression-ratio", None]
    assert (body["accepted"], body["refused"]) == (1, 1)


def test_an_archive_with_more_files_than_a_batch_may_have_is_413_and_writes_nothing(tenant_a, settings):
    settings.BATCH_MAX_FILES = 2
    response = post_batch(tenant_a.client, archive=zip_upload({path.name: path.read_bytes() for path in SAMPLES}))
    assert (response.status_code, response.json()["type"]) == (413, "/problems/batch-too-many-files")
    assert nothing_written()


def test_archives_inside_an_archive_are_refused_and_the_rest_accepted(tenant_a):
    inner = zip_upload({SAMPLES[1].name: SAMPLES[1].read_bytes()}).read()
    entries = {"inner.zip": inner, "inner.pdf": inner, SAMPLES[0].name: SAMPLES[0].read_bytes()}

    body = post_batch(tenant_a.client, archive=zip_upload(entries)).json()

    assert problem_types(body) == [
        "/problems/archive-entry-nested-archive",
        "/problems/archive-entry-nested-archive",
        None,
    ]
    assert ExtractionJob.objects.count() == 1


def test_an_encrypted_file_in_an_archive_is_refused_and_the_rest_accepted(tenant_a):
    raw = bytearray(zip_upload({"secret.pdf": SAMPLES[0].read_bytes(), "a.pdf": SAMPLES[1].read_bytes()}).read())
    # zipfile writes no encryption: flag the first entry encrypted (bit 0) in both its headers.
    raw[raw.index(b"PK\x03\x04") + 6] |= 0x01
    raw[raw.index(b"PK\x01\x02") + 8] |= 0x01

    body = post_batch(tenant_a.client, archive=SimpleUploadedFile("a.zip", bytes(raw))).json()

    assert problem_types(body) == ["/problems/archive-entry-encrypted", None]


def test_path_names_in_an_archive_are_shown_and_never_used_as_paths(tenant_a, settings):
    names = ["../../../outside.pdf", "/etc/cron.d/invoice.pdf"]
    entries = {name: path.read_bytes() for name, path in zip(names, SAMPLES, strict=False)}

    body = post_batch(tenant_a.client, archive=zip_upload(entries)).json()

    assert [item["filename"] for item in body["items"]] == names
    assert problem_types(body) == [None, None]
    stored = sorted(Document.objects.values_list("storage_name", flat=True))
    assert stored == sorted(f"documents/{tenant_a.tenant.pk}/{item['document']['sha256']}" for item in body["items"])
    media = Path(settings.MEDIA_ROOT)
    assert not (media.parent / "outside.pdf").exists() and not (media.parent.parent / "outside.pdf").exists()
    assert all(default_storage.exists(name) for name in stored)


# --- the batch's status ------------------------------------------------------------------------------


def test_a_batch_reads_back_with_its_jobs_by_state_and_its_files_in_pages(tenant_a):
    files = [*sample_files(SAMPLES[:2]), SimpleUploadedFile("data.bin", NOT_A_DOCUMENT), *sample_files(SAMPLES[2:])]
    accepted = post_batch(tenant_a.client, files=files).json()
    take_in(accepted["items"][0]["job"]["job_id"])

    first = tenant_a.client.get(accepted["status_url"], {"page_size": 3})

    assert first.status_code == 200, first.content
    page = first.json()
    assert (page["batch_id"], page["file_count"], page["accepted"], page["refused"]) == (
        accepted["batch_id"],
        4,
        3,
        1,
    )
    assert page["states"] == {**dict.fromkeys(JobState.values, 0), JobState.READY: 1, JobState.ACCEPTED: 2}
    assert [item["position"] for item in page["items"]] == [0, 1, 2]
    assert page["items"][0]["job"]["state"] == JobState.READY
    assert page["items"][2]["problem"]["type"] == "/problems/unsupported-document-type"
    assert page["previous"] is None

    second = tenant_a.client.get(page["next"]).json()
    assert [item["position"] for item in second["items"]] == [3]
    assert second["items"][0] == accepted["items"][3]
    assert second["next"] is None


def test_another_tenants_batch_is_404_like_a_missing_one(tenant_a, tenant_b):
    status_url = post_batch(tenant_a.client, files=sample_files(SAMPLES[:1])).json()["status_url"]

    theirs = tenant_b.client.get(status_url)
    missing = tenant_b.client.get(f"{BATCHES_URL}/{uuid.uuid4()}")

    assert (theirs.status_code, missing.status_code) == (404, 404)
    assert theirs.json()["type"] == missing.json()["type"] == "/problems/not-found"
    assert theirs.json()["detail"] == missing.json()["detail"]


def test_the_same_key_in_another_tenant_is_another_batch(tenant_a, tenant_b):
    mine = post_batch(tenant_a.client, files=sample_files(SAMPLES[:1])).json()
    theirs = post_batch(tenant_b.client, files=sample_files(SAMPLES[:1]))
    assert theirs.status_code == 202 and "Idempotent-Replayed" not in theirs
    assert theirs.json()["batch_id"] != mine["batch_id"]


def test_a_forged_cursor_is_404(tenant_a):
    status_url = post_batch(tenant_a.client, files=sample_files(SAMPLES[:1])).json()["status_url"]
    forged = base64.b64encode(b"p=not-a-number").decode()
    response = tenant_a.client.get(status_url, {"cursor": forged})
    assert (response.status_code, response.json()["type"]) == (404, "/problems/not-found")


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
def test_every_job_of_a_202_is_committed_with_its_event_before_the_answer():
    ctx = make_tenant_context()
    body = post_batch(ctx.client, files=sample_files()).json()
    job_ids = [item["job"]["job_id"] for item in body["items"]]
    assert _committed_counts(job_ids) == (3, 3)


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


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_key_make_one_batch_and_one_job_per_file():
    ctx = make_tenant_context()
    answers: list[int] = []
    errors: list[BaseException] = []

    def send() -> None:
        try:
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {ctx.token}")
            answers.append(post_batch(client, files=sample_files()).status_code)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert answers == [202] * 4
    assert ExtractionBatch.objects.filter(tenant=ctx.tenant).count() == 1
    assert ExtractionBatchItem.objects.count() == 3
    assert ExtractionJob.objects.filter(tenant=ctx.tenant).count() == 3
    assert OutboxEvent.objects.filter(tenant=ctx.tenant, event_type=EventType.REQUESTED).count() == 3
    assert TenantUsage.objects.get(tenant=ctx.tenant).pending_jobs == 3
