"""Batches for the completion, webhook and page tests: submitted through the API as a client
does, and their jobs taken to an end through the real lifecycle (ingress, claim, completion,
failure, split)."""

from __future__ import annotations

import uuid

from django.core.files.uploadedfile import SimpleUploadedFile

from extraction.execution import lifecycle
from extraction.execution.outcomes import AttemptResult
from extraction.models import AttemptOutcome, ExtractionJob, JobState
from tests.factories import SAMPLE_OUTPUT, TenantContext, take_in, unique_invoice

BATCHES_URL = "/api/v1/extraction-batches"
# Not a document of any supported type: refused alone with 415 unsupported-document-type.
NOT_A_DOCUMENT = bytes(range(256)) * 4


def submit_batch(
    ctx: TenantContext, *, documents: int, refused: int = 0, key: str | None = None
) -> tuple[str, list[str]]:
    """A batch of ``documents`` distinct text invoices then ``refused`` files that are not
    documents, accepted through the API: (batch id, its jobs' ids in file order)."""
    files = [SimpleUploadedFile(f"invoice-{n}.txt", unique_invoice()) for n in range(documents)]
    files += [SimpleUploadedFile(f"noise-{n}.bin", NOT_A_DOCUMENT) for n in range(refused)]
    response = ctx.client.post(
        BATCHES_URL, {"files": files}, format="multipart", HTTP_IDEMPOTENCY_KEY=key or uuid.uuid4().hex
    )
    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["accepted"], body["refused"]) == (documents, refused)
    return body["batch_id"], [item["job"]["job_id"] for item in body["items"] if item["job"]]


def claim(job_id: str) -> lifecycle.Claim:
    """The job, ACCEPTED or READY and the only runnable one, claimed by a worker."""
    if ExtractionJob.objects.get(pk=job_id).state == JobState.ACCEPTED:
        take_in(job_id)
    taken = lifecycle.claim_next_job(worker_id="batch-test", policies=["default"])
    assert taken is not None and str(taken.job_id) == job_id, "another runnable job was claimed first"
    return taken


def finish(job_id: str, state: str) -> None:
    """Take one job to ``state`` (SUCCEEDED, REVIEW_REQUIRED or FAILED_TERMINAL) as a worker does."""
    taken = claim(job_id)
    if state == JobState.FAILED_TERMINAL:
        report = lifecycle.AttemptReport(outcome=AttemptOutcome.PERMANENT_ERROR, error_detail="unreadable")
        result = lifecycle.retry_or_fail(taken, report=report, retry=False, delay_seconds=0, error_class="permanent")
        assert result == AttemptResult.FAILED
        return
    review = state == JobState.REVIEW_REQUIRED
    outcome = AttemptOutcome.REVIEW_REQUIRED if review else AttemptOutcome.SUCCEEDED
    assert lifecycle.complete_job(
        taken,
        review_required=review,
        output=SAMPLE_OUTPUT,
        validation={"ok": not review},
        policy_version="test",
        report=lifecycle.AttemptReport(outcome=outcome),
    )


def split(job_id: str, pages: list[tuple[int, int]]) -> list[str]:
    """Split one job into parts of ``pages`` as the worker does (RUNNING → SPLIT, one ACCEPTED
    job per part): the parts' ids in page order."""
    taken = claim(job_id)
    report = lifecycle.AttemptReport(outcome=AttemptOutcome.SPLIT)
    assert lifecycle.split_job(taken, pages, page_count=pages[-1][1], report=report, detail={})
    parts = ExtractionJob.objects.filter(parent_id=job_id).order_by("first_page")
    return [str(part.pk) for part in parts]
