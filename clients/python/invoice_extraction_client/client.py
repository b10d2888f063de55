"""The hand-written layer over the generated code: upload, accept a job idempotently, wait for
it with backoff and the server's ``Retry-After``, submit a batch of files in one request.

Every request goes through the generated operations (``generated/api/v1``); every answer of
4xx or 5xx is raised as :class:`ProblemError` by one response hook, before the generated code
reads it, so a caller handles one exception type whatever the operation or the status.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar
from uuid import UUID

import httpx

from invoice_extraction_client.errors import ProblemError, UnexpectedAnswer, WaitTimeout, parse_retry_after
from invoice_extraction_client.generated import AuthenticatedClient
from invoice_extraction_client.generated.api.v1 import (
    v1_documents_create,
    v1_extraction_batches_create,
    v1_extraction_jobs_create,
    v1_extraction_jobs_retrieve,
)
from invoice_extraction_client.generated.models import (
    BatchAccepted,
    BatchCreateRequest,
    Document,
    DocumentUploadRequest,
    JobCreateRequest,
    JobDetail,
    JobOptionsRequest,
    JobOptionsRequestModelPolicy,
    JobResult,
    PriorityEnum,
    SchemaEnum,
    V1ExtractionJobsCreateResponse202,
)
from invoice_extraction_client.generated.types import UNSET, File, Response

# Statuses worth asking again: the server (or a proxy in front of it) is briefly unable, or
# asks for room. Anything else is an answer that another try would repeat.
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})
# An accepted job is asked again this many times at most when the connection fails or the
# server is briefly unable; the same Idempotency-Key each time, so at most one job exists.
CREATE_ATTEMPTS = 3
# What submit_batch sends in one batch: within the server's default bounds (BATCH_MAX_FILES,
# BATCH_MAX_BYTES), so that a large submission is several batches rather than one refused.
BATCH_FILES = 1000
BATCH_BYTES = 128 * 1024 * 1024

_T = TypeVar("_T")


class JobState(StrEnum):
    """A job's state; prints as its name, as the API spells it."""

    ACCEPTED = "ACCEPTED"
    READY = "READY"
    RUNNING = "RUNNING"
    RETRY_SCHEDULED = "RETRY_SCHEDULED"
    SUCCEEDED = "SUCCEEDED"
    REVIEW_REQUIRED = "REVIEW_REQUIRED"
    FAILED_TERMINAL = "FAILED_TERMINAL"
    # The document held several invoices: each part is a job of its own, this one is done.
    SPLIT = "SPLIT"

    @property
    def settled(self) -> bool:
        """Whether the service is done with the job. REVIEW_REQUIRED is: what happens next is
        a reviewer's decision, which can take days, not the service's work."""
        return self in (JobState.SUCCEEDED, JobState.REVIEW_REQUIRED, JobState.FAILED_TERMINAL, JobState.SPLIT)


@dataclass(frozen=True)
class Job:
    """A job as the client last saw it. ``detail`` is the generated model of the job's status
    (``GET /api/v1/extraction-jobs/{id}``), None for the answer to an accept, which carries
    only the id, the state and the status URL."""

    id: UUID
    state: JobState
    status_url: str
    # Set on a job create_job accepted: send it again to get the same job. (A batch's jobs
    # have keys the server derives; the batch's key gives them back.)
    idempotency_key: str | None = None
    # The accept (or the batch) found the key used before for this same request: the existing job.
    replayed: bool = False
    detail: JobDetail | None = None

    @property
    def settled(self) -> bool:
        return self.state.settled

    @property
    def result(self) -> JobResult | None:
        """The stored result (the invoice and its validation), once there is one."""
        result = self.detail.result if self.detail is not None else None
        return result if isinstance(result, JobResult) else None

    @classmethod
    def from_detail(cls, detail: JobDetail) -> Job:
        body = detail.additional_properties
        return cls(id=UUID(body["job_id"]), state=JobState(body["state"]), status_url=body["status_url"], detail=detail)


@dataclass(frozen=True)
class SubmittedFile:
    """A file of a batch that became a job."""

    path: Path
    document: Document
    job: Job


@dataclass(frozen=True)
class FailedFile:
    """A file of a batch that did not: the server's problem, or the file could not be read.
    ``document`` is set when the upload worked and the job was refused."""

    path: Path
    error: ProblemError | OSError
    document: Document | None = None


BatchItem = SubmittedFile | FailedFile


def _raise_problem(response: httpx.Response) -> None:
    # An httpx response hook: runs before the generated code parses the answer, so an error
    # answer of any status, documented or not, problem+json or a proxy's HTML, is one exception.
    if response.status_code >= 400:
        response.read()
        raise ProblemError.from_response(response)


class Client:
    """``Client(base_url, token)``: the API of one tenant, as the token's role allows.

    ``sleep``, ``clock`` and ``rng`` are the waiting's time source and jitter (tests pass their
    own); ``transport`` an httpx transport to send through instead of the network.
    ``client.api`` is the generated client, for the operations this layer does not wrap
    (``generated.api.v1.*.sync(client=client.api, …)``), with the same problem handling."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        poll_initial_seconds: float = 0.5,
        poll_max_seconds: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        httpx_args: dict[str, Any] = {"event_hooks": {"response": [_raise_problem]}}
        if transport is not None:
            httpx_args["transport"] = transport
        self.api = AuthenticatedClient(
            base_url=base_url.rstrip("/"),
            token=token,
            timeout=httpx.Timeout(timeout),
            raise_on_unexpected_status=False,
            httpx_args=httpx_args,
        )
        self._poll_initial = poll_initial_seconds
        self._poll_max = poll_max_seconds
        self._sleep = sleep
        self._clock = clock
        self._rng = rng or random.Random()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self.api.get_httpx_client().close()

    # --- documents and jobs -------------------------------------------------------------------

    def upload(self, path: str | os.PathLike[str]) -> Document:
        """Upload one file (PDF, PNG, JPEG, TIFF, XML or UTF-8 text; the server reads the type
        from the bytes). The same bytes give the same document, so uploading again is harmless."""
        path = Path(path)
        with path.open("rb") as handle:
            body = DocumentUploadRequest(file=File(payload=handle, file_name=path.name))
            response = v1_documents_create.sync_detailed(client=self.api, body=body)
        return _parsed(response, Document)

    def create_job(
        self,
        document_id: UUID | str,
        *,
        idempotency_key: str | None = None,
        schema: str = "invoice.v1",
        priority: str | None = None,
        model_policy: str | None = None,
        deadline_seconds: int | None = None,
    ) -> Job:
        """Accept an extraction job for a document (``POST /api/v1/extraction-jobs``).

        The same ``idempotency_key`` with the same request returns the same job
        (``job.replayed``); with another request it is a ``ProblemError`` of type
        ``/problems/idempotency-key-conflict`` naming the first job (``error.job_id``). Without
        a key, a new one is made and kept on the job. A connection lost on the way or a brief
        502/503/504 is asked again with the same key, after the server's ``Retry-After``.
        Options left None take the server's defaults; a ``schema``, ``priority`` or
        ``model_policy`` the API's document does not list is a ``ValueError`` before anything
        is sent.
        """
        key = idempotency_key if idempotency_key is not None else f"client-{uuid.uuid4()}"
        body = JobCreateRequest(
            document_id=UUID(str(document_id)),
            schema=SchemaEnum(schema),
            options=JobOptionsRequest(
                model_policy=JobOptionsRequestModelPolicy(model_policy) if model_policy is not None else UNSET,
                priority=PriorityEnum(priority) if priority is not None else UNSET,
                deadline_seconds=deadline_seconds if deadline_seconds is not None else UNSET,
            ),
        )
        attempt = 0
        while True:
            attempt += 1
            try:
                response = v1_extraction_jobs_create.sync_detailed(client=self.api, body=body, idempotency_key=key)
                break
            except ProblemError as exc:
                if exc.status == 429 or exc.status not in RETRYABLE_STATUSES or attempt >= CREATE_ATTEMPTS:
                    # 429 names a limit of the tenant: its jobs must finish first, the caller decides.
                    raise
                self._sleep(exc.retry_after if exc.retry_after is not None else self._backoff(attempt))
            except httpx.TransportError:
                if attempt >= CREATE_ATTEMPTS:
                    raise
                self._sleep(self._backoff(attempt))
        accepted = _parsed(response, V1ExtractionJobsCreateResponse202).additional_properties
        return Job(
            id=UUID(accepted["job_id"]),
            state=JobState(accepted["state"]),
            status_url=accepted["status_url"],
            idempotency_key=key,
            replayed=response.headers.get("Idempotent-Replayed") == "true",
        )

    def get_job(self, job_id: Job | UUID | str) -> Job:
        """The job's status now, with its result once there is one."""
        response = v1_extraction_jobs_retrieve.sync_detailed(_job_id(job_id), client=self.api)
        return Job.from_detail(_parsed(response, JobDetail))

    def wait(self, job_or_id: Job | UUID | str, *, timeout: float = 300.0) -> Job:
        """Poll the job until it is settled (SUCCEEDED, REVIEW_REQUIRED or FAILED_TERMINAL) and
        return it; :class:`WaitTimeout` if it is not within ``timeout`` seconds.

        1. Read the job; settled: return it.
        2. Otherwise wait: the server's ``Retry-After`` when it sent one (on a 429 or 503, or
           as a hint on the status itself), else exponential backoff from
           ``poll_initial_seconds`` doubling to ``poll_max_seconds``, each wait drawn between
           half and all of it so that many clients do not poll in step.
        3. A 429/502/503/504 or a lost connection is waited out the same way; any other
           problem (404: not this tenant's job) is raised.
        4. A wait that would end past the deadline is cut to it for one last read; a
           ``Retry-After`` past the deadline ends the wait at once (asking earlier is what
           the server asked not to do).
        """
        job_id = _job_id(job_or_id)
        deadline = self._clock() + timeout
        last: Job | None = job_or_id if isinstance(job_or_id, Job) else None
        attempt = 0
        while True:
            hinted: float | None
            try:
                response = v1_extraction_jobs_retrieve.sync_detailed(job_id, client=self.api)
                last = Job.from_detail(_parsed(response, JobDetail))
                if last.settled:
                    return last
                hinted = parse_retry_after(response.headers.get("Retry-After"))
            except ProblemError as exc:
                if exc.status not in RETRYABLE_STATUSES:
                    raise
                hinted = exc.retry_after
            except httpx.TransportError:
                hinted = None
            attempt += 1
            remaining = deadline - self._clock()
            if remaining <= 0 or (hinted is not None and hinted > remaining):
                raise WaitTimeout(job_id, timeout, last)
            delay = hinted if hinted is not None else self._backoff(attempt)
            self._sleep(min(delay, remaining))

    def submit_batch(
        self,
        paths: Iterable[str | os.PathLike[str]],
        *,
        idempotency_prefix: str = "batch-",
        schema: str = "invoice.v1",
        priority: str | None = None,
        model_policy: str | None = None,
        deadline_seconds: int | None = None,
    ) -> list[BatchItem]:
        """Submit the files in batches (``POST /api/v1/extraction-batches``); one result per
        path, in order: a :class:`SubmittedFile` or a :class:`FailedFile` (a file's failure does
        not stop the others).

        1. Read each file; one that cannot be read is a :class:`FailedFile` with its
           ``OSError`` and is not sent. Files of the same bytes are sent once and share a job.
        2. Send the files, ordered by their digest, in batches of at most ``BATCH_FILES`` files
           and ``BATCH_BYTES`` bytes. A batch's Idempotency-Key is ``idempotency_prefix`` and a
           digest of its files, so submitting the same files again (after a crash half-way,
           say) returns the batches and jobs already accepted instead of new ones, whatever
           the order of the paths; use another prefix to extract the same documents again
           with other options. (Another set of files is another batch: its jobs are new.)
        3. A connection lost on the way or a brief 502/503/504 sends the batch again with the
           same key, after the server's ``Retry-After``: the server finishes what it began.
        4. Each file's answer: its job, or the problem that refused it (a ``ProblemError``,
           ``document`` set when the file was stored). A batch refused whole (a problem of the
           request) is that ``ProblemError`` for each of its files.
        """
        items: dict[int, BatchItem] = {}
        by_digest: dict[str, list[tuple[int, Path]]] = {}
        contents: dict[str, bytes] = {}
        for index, raw_path in enumerate(paths):
            path = Path(raw_path)
            try:
                content = path.read_bytes()
            except OSError as exc:
                items[index] = FailedFile(path=path, error=exc)
                continue
            digest = hashlib.sha256(content).hexdigest()
            by_digest.setdefault(digest, []).append((index, path))
            contents[digest] = content
        options = JobOptionsRequest(
            model_policy=JobOptionsRequestModelPolicy(model_policy) if model_policy is not None else UNSET,
            priority=PriorityEnum(priority) if priority is not None else UNSET,
            deadline_seconds=deadline_seconds if deadline_seconds is not None else UNSET,
        )
        for digests in _batches(sorted(by_digest), contents):
            key = idempotency_prefix + hashlib.sha256("\n".join(digests).encode()).hexdigest()
            body = BatchCreateRequest(
                files=[
                    File(payload=io.BytesIO(contents[digest]), file_name=by_digest[digest][0][1].name)
                    for digest in digests
                ],
                schema=SchemaEnum(schema),
                options=options,
            )
            try:
                answer = self._send_batch(body, key)
            except ProblemError as exc:
                for digest in digests:
                    for index, path in by_digest[digest]:
                        items[index] = FailedFile(path=path, error=exc)
                continue
            replayed = answer.headers.get("Idempotent-Replayed") == "true"
            for item in json.loads(answer.content)["items"]:
                for index, path in by_digest[digests[item["position"]]]:
                    items[index] = _batch_item(path, item, replayed=replayed)
        return [items[index] for index in sorted(items)]

    def _send_batch(self, body: BatchCreateRequest, key: str) -> Response[Any]:
        attempt = 0
        while True:
            attempt += 1
            for part in body.files if isinstance(body.files, list) else []:
                part.payload.seek(0)  # a second try sends the bytes again
            try:
                response = v1_extraction_batches_create.sync_detailed(client=self.api, body=body, idempotency_key=key)
                _parsed(response, BatchAccepted)
                return response
            except ProblemError as exc:
                if exc.status not in RETRYABLE_STATUSES or attempt >= CREATE_ATTEMPTS:
                    raise
                self._sleep(exc.retry_after if exc.retry_after is not None else self._backoff(attempt))
            except httpx.TransportError:
                if attempt >= CREATE_ATTEMPTS:
                    raise
                self._sleep(self._backoff(attempt))

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self._poll_max, self._poll_initial * 2 ** max(attempt - 1, 0))
        return self._rng.uniform(ceiling / 2, ceiling)


def _job_id(job_or_id: Job | UUID | str) -> UUID:
    return job_or_id.id if isinstance(job_or_id, Job) else UUID(str(job_or_id))


def _parsed(response: Response[Any], kind: type[_T]) -> _T:
    parsed = response.parsed
    if not isinstance(parsed, kind):
        raise UnexpectedAnswer(
            f"{int(response.status_code)} answer is not a {kind.__name__}: {response.content[:200]!r}"
        )
    return parsed


def _batches(digests: list[str], contents: dict[str, bytes]) -> Iterator[list[str]]:
    """The digests cut into batches of at most BATCH_FILES files and BATCH_BYTES bytes (a file
    larger than that alone goes alone, and the server says what it thinks of it)."""
    batch: list[str] = []
    size = 0
    for digest in digests:
        length = len(contents[digest])
        if batch and (len(batch) >= BATCH_FILES or size + length > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(digest)
        size += length
    if batch:
        yield batch


def _batch_item(path: Path, item: dict[str, Any], *, replayed: bool) -> BatchItem:
    """A file's answer in a batch: its job, or the problem that refused it."""
    document = Document.from_dict(item["document"]) if item["document"] is not None else None
    job = item["job"]
    if job is None:
        return FailedFile(path=path, error=ProblemError.from_body(item["problem"]), document=document)
    if document is None:
        raise UnexpectedAnswer(f"the batch names job {job['job_id']} without its document")
    accepted = Job(
        id=UUID(job["job_id"]), state=JobState(job["state"]), status_url=job["status_url"], replayed=replayed
    )
    return SubmittedFile(path=path, document=document, job=accepted)


__all__ = [
    "BatchItem",
    "Client",
    "FailedFile",
    "Job",
    "JobState",
    "SubmittedFile",
]
