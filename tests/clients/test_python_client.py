"""The Python client against the real server (``live_server`` on the test database, a tenant's
real token): upload, idempotent jobs, waiting until a job settles through the real processes,
the server's problems as ``ProblemError``, ``Retry-After`` honoured, batches, the CLI."""

from __future__ import annotations

import hashlib
import io
import json
import time
from contextlib import redirect_stdout
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from invoice_extraction_client import (
    Client,
    Document,
    FailedFile,
    JobResult,
    JobState,
    ProblemError,
    SubmittedFile,
    WaitTimeout,
)
from invoice_extraction_client import client as client_module
from invoice_extraction_client.__main__ import main as cli_main
from invoice_extraction_client.generated.models import InvoiceV2

from config.problems import PROBLEM_CONTENT_TYPE, problem_body
from extraction.models import ExtractionBatch, ExtractionJob
from tests.factories import INVOICES, make_tenant_context, unique_invoice

pytestmark = pytest.mark.django_db(transaction=True)

# Passes every check of the validation policy (the run command's demo sends it to the ERP).
PASSING_INVOICE = INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_Elektron.pdf"


class FakeTime:
    """The client's clock and sleep: a sleep advances the clock at once and is recorded."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class FirstAnswers(httpx.BaseTransport):
    """Answers the first requests with the responses given, then sends every request on to the
    real server: a brief unavailability in front of the real API."""

    def __init__(self, *answers: httpx.Response) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []
        self.real = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.answers:
            return self.answers.pop(0)
        return self.real.handle_request(request)


def _unavailable(retry_after: str, slug: str = "service-unavailable") -> httpx.Response:
    """The server's own 503 (config/availability.py's body and header)."""
    body = problem_body(slug=slug, title="Service unavailable", status_code=503, detail="Try again shortly.")
    headers = {"Content-Type": PROBLEM_CONTENT_TYPE, "Retry-After": retry_after}
    return httpx.Response(503, headers=headers, content=json.dumps(body).encode())


def _text_invoice(tmp_path: Path, name: str = "invoice.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(unique_invoice())
    return path


@pytest.fixture
def tenant_ctx():
    return make_tenant_context()


@pytest.fixture
def client(live_server, tenant_ctx):
    with Client(live_server.url, tenant_ctx.token) as api:
        yield api


# --- upload, idempotent accept, wait --------------------------------------------------------


def test_an_invoice_uploaded_and_submitted_twice_with_one_key_is_one_job_that_settles(
    processes, live_server, tenant_ctx
):
    processes.relay()
    processes.celery("workers", "ingress,llm")
    processes.scheduler()
    with Client(live_server.url, tenant_ctx.token) as client:
        document = client.upload(PASSING_INVOICE)
        assert isinstance(document, Document)
        assert document.sha256 == hashlib.sha256(PASSING_INVOICE.read_bytes()).hexdigest()
        assert (document.content_type, document.page_count) == ("application/pdf", 3)

        first = client.create_job(document.id, idempotency_key="order-4711", schema="invoice.v2")
        again = client.create_job(document.id, idempotency_key="order-4711", schema="invoice.v2")
        assert (again.id, again.replayed, first.replayed) == (first.id, True, False)
        assert first.state == JobState.ACCEPTED and first.status_url == f"/api/v1/extraction-jobs/{first.id}"

        job = client.wait(first, timeout=90)

    assert ExtractionJob.objects.filter(tenant=tenant_ctx.tenant).count() == 1
    assert job.id == first.id and job.state == JobState.SUCCEEDED, processes.logs()
    assert isinstance(job.result, JobResult)
    assert isinstance(job.result.output, InvoiceV2)
    assert (
        job.result.output.totals.gross.value
        == ExtractionJob.objects.get(pk=job.id).result.output["totals"]["gross"]["value"]
    )


def test_a_job_without_a_key_gets_one_that_replays_it(client, tmp_path):
    document = client.upload(_text_invoice(tmp_path))
    job = client.create_job(document.id)
    assert job.idempotency_key
    assert client.create_job(document.id, idempotency_key=job.idempotency_key).id == job.id


def test_a_key_reused_for_another_document_is_a_conflict_naming_the_first_job(client, tmp_path):
    first = client.create_job(client.upload(_text_invoice(tmp_path, "a.txt")).id, idempotency_key="k-1")
    other = client.upload(_text_invoice(tmp_path, "b.txt"))
    with pytest.raises(ProblemError) as refused:
        client.create_job(other.id, idempotency_key="k-1")
    assert (refused.value.status, refused.value.type) == (409, "/problems/idempotency-key-conflict")
    assert refused.value.job_id == first.id


def test_wait_gives_up_at_its_timeout_with_the_state_last_read(client, tmp_path):
    job = client.create_job(client.upload(_text_invoice(tmp_path)).id)  # no process runs it
    started = time.monotonic()
    with pytest.raises(WaitTimeout) as waited:
        client.wait(job, timeout=0.8)
    assert 0.8 <= time.monotonic() - started < 5
    assert waited.value.job is not None and waited.value.job.state == JobState.ACCEPTED
    assert waited.value.job_id == job.id


# --- problems and Retry-After ---------------------------------------------------------------


def test_an_upload_the_server_cannot_read_is_a_problem_error(client, tmp_path):
    garbage = tmp_path / "photo.bin"
    garbage.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ProblemError) as refused:
        client.upload(garbage)
    assert (refused.value.status, refused.value.type) == (415, "/problems/unsupported-document-type")
    assert refused.value.title == "Unsupported document type" and refused.value.detail

    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    with pytest.raises(ProblemError) as refused:
        client.upload(empty)
    assert (refused.value.status, refused.value.type) == (400, "/problems/validation-error")
    assert set(refused.value.extensions["errors"]) == {"file"}


def test_a_job_for_an_unknown_document_is_a_problem_error(client):
    with pytest.raises(ProblemError) as refused:
        client.create_job("00000000-0000-4000-8000-000000000000")
    assert (refused.value.status, refused.value.type) == (422, "/problems/unknown-document")


def test_a_tenant_at_its_limit_gets_the_servers_retry_after_and_no_retry(live_server, tmp_path):
    tenant = make_tenant_context(max_pending_jobs=1)
    fake = FakeTime()
    with Client(live_server.url, tenant.token, sleep=fake.sleep, clock=fake.clock) as client:
        client.create_job(client.upload(_text_invoice(tmp_path, "a.txt")).id)
        with pytest.raises(ProblemError) as refused:
            client.create_job(client.upload(_text_invoice(tmp_path, "b.txt")).id)
    assert (refused.value.status, refused.value.type) == (429, "/problems/tenant-limit-exceeded")
    assert refused.value.extensions["limit"] == "pending_jobs"
    assert refused.value.retry_after == settings.ADMISSION_RETRY_AFTER_SECONDS
    assert fake.sleeps == []  # the tenant's own limit: waiting 30 s inside the call helps no one


def test_wait_sleeps_as_long_as_retry_after_says_then_reads_the_job(live_server, tenant_ctx, tmp_path):
    with Client(live_server.url, tenant_ctx.token) as plain:
        job = plain.create_job(plain.upload(_text_invoice(tmp_path)).id)  # no process runs it
    transport = FirstAnswers(_unavailable("7"), _unavailable("Thu, 01 Jan 1970 00:00:00 GMT"))
    fake = FakeTime()
    with Client(live_server.url, tenant_ctx.token, sleep=fake.sleep, clock=fake.clock, transport=transport) as client:
        with pytest.raises(WaitTimeout) as waited:
            client.wait(job.id, timeout=10)
    assert fake.sleeps[:2] == [7.0, 0.0]  # as told; a date already past: at once
    assert len(transport.requests) > 2  # then the real server's answers, read through to the deadline
    assert waited.value.job is not None and waited.value.job.state == JobState.ACCEPTED


def test_a_retry_after_beyond_the_timeout_ends_the_wait_at_once(live_server, tenant_ctx, tmp_path):
    with Client(live_server.url, tenant_ctx.token) as plain:
        job = plain.create_job(plain.upload(_text_invoice(tmp_path)).id)
    fake = FakeTime()
    transport = FirstAnswers(_unavailable("120"))
    with Client(live_server.url, tenant_ctx.token, sleep=fake.sleep, clock=fake.clock, transport=transport) as client:
        with pytest.raises(WaitTimeout):
            client.wait(job, timeout=60)
    assert fake.sleeps == [] and len(transport.requests) == 1


def test_wait_backs_off_exponentially_with_jitter_while_the_job_runs(live_server, tenant_ctx, tmp_path):
    with Client(live_server.url, tenant_ctx.token) as plain:
        job = plain.create_job(plain.upload(_text_invoice(tmp_path)).id)
    fake = FakeTime()
    with Client(
        live_server.url,
        tenant_ctx.token,
        sleep=fake.sleep,
        clock=fake.clock,
        poll_initial_seconds=1,
        poll_max_seconds=8,
    ) as client:
        with pytest.raises(WaitTimeout):
            client.wait(job, timeout=40)
    *backoff, cut = fake.sleeps
    ceilings = [1, 2, 4, 8, 8, 8, 8, 8, 8, 8, 8]
    assert len(backoff) >= 5
    for slept, ceiling in zip(backoff, ceilings, strict=False):
        assert ceiling / 2 <= slept <= ceiling
    assert 0 < cut <= 8
    assert len(set(fake.sleeps)) == len(fake.sleeps)  # jittered: no two alike
    assert sum(fake.sleeps) == pytest.approx(40)  # the last wait is cut to the deadline


def test_an_accept_met_by_a_brief_503_is_sent_again_with_the_same_key(live_server, tenant_ctx, tmp_path):
    with Client(live_server.url, tenant_ctx.token) as plain:
        document = plain.upload(_text_invoice(tmp_path))
    fake = FakeTime()
    transport = FirstAnswers(_unavailable("3", slug="accept-capacity-exhausted"))
    with Client(live_server.url, tenant_ctx.token, sleep=fake.sleep, clock=fake.clock, transport=transport) as client:
        job = client.create_job(document.id)
    first, second = transport.requests
    assert first.headers["Idempotency-Key"] == second.headers["Idempotency-Key"] == job.idempotency_key
    assert fake.sleeps == [3.0]
    assert ExtractionJob.objects.filter(tenant=tenant_ctx.tenant).count() == 1


# --- batches and the command line ------------------------------------------------------------


def test_a_batch_answers_per_file_in_one_request_and_submitting_it_again_replays_its_jobs(client, tenant_ctx, tmp_path):
    good = [_text_invoice(tmp_path, "a.txt"), _text_invoice(tmp_path, "b.txt")]
    unreadable = tmp_path / "c.bin"
    unreadable.write_bytes(bytes(range(256)))
    paths = [good[0], tmp_path / "missing.pdf", unreadable, good[1]]

    items = client.submit_batch(paths)

    assert [type(item) for item in items] == [SubmittedFile, FailedFile, FailedFile, SubmittedFile]
    assert [item.path for item in items] == paths
    assert isinstance(items[1].error, FileNotFoundError)
    assert isinstance(items[2].error, ProblemError)
    assert (items[2].error.status, items[2].error.type) == (415, "/problems/unsupported-document-type")
    submitted = [item for item in items if isinstance(item, SubmittedFile)]
    assert [item.document.sha256 for item in submitted] == [hashlib.sha256(p.read_bytes()).hexdigest() for p in good]
    assert [item.job.state for item in submitted] == [JobState.ACCEPTED] * 2
    assert not any(item.job.replayed for item in submitted)
    assert ExtractionBatch.objects.filter(tenant=tenant_ctx.tenant).count() == 1

    again = client.submit_batch(paths[::-1])
    assert [item.job.id for item in again if isinstance(item, SubmittedFile)] == [
        item.job.id for item in reversed(submitted)
    ]
    assert all(item.job.replayed for item in again if isinstance(item, SubmittedFile))
    assert ExtractionBatch.objects.filter(tenant=tenant_ctx.tenant).count() == 1
    assert ExtractionJob.objects.filter(tenant=tenant_ctx.tenant).count() == 2


def test_files_of_the_same_bytes_share_one_job(client, tenant_ctx, tmp_path):
    original = _text_invoice(tmp_path, "a.txt")
    copy = tmp_path / "copy-of-a.txt"
    copy.write_bytes(original.read_bytes())

    first, second = client.submit_batch([original, copy])

    assert isinstance(first, SubmittedFile) and isinstance(second, SubmittedFile)
    assert (first.job.id, first.document.id) == (second.job.id, second.document.id)
    assert ExtractionJob.objects.filter(tenant=tenant_ctx.tenant).count() == 1


def test_more_files_than_one_batch_takes_go_in_several_batches(client, tenant_ctx, tmp_path, monkeypatch):
    monkeypatch.setattr(client_module, "BATCH_FILES", 2)
    paths = [_text_invoice(tmp_path, f"{n}.txt") for n in range(5)]

    items = client.submit_batch(paths)

    assert [type(item) for item in items] == [SubmittedFile] * 5
    assert ExtractionBatch.objects.filter(tenant=tenant_ctx.tenant).count() == 3
    assert len({item.job.id for item in items if isinstance(item, SubmittedFile)}) == 5


def test_a_batch_refused_whole_is_that_problem_for_each_of_its_files(client, tmp_path, settings):
    settings.BATCH_MAX_FILES = 1
    paths = [_text_invoice(tmp_path, "a.txt"), _text_invoice(tmp_path, "b.txt")]

    items = client.submit_batch(paths)

    assert [type(item) for item in items] == [FailedFile, FailedFile]
    errors = [item.error for item in items if isinstance(item, FailedFile)]
    assert [(error.status, error.type) for error in errors if isinstance(error, ProblemError)] == [
        (413, "/problems/batch-too-many-files")
    ] * 2


def test_the_command_line_submits_once_and_prints_the_earlier_jobs_when_run_again(live_server, tenant_ctx, tmp_path):
    files = [str(_text_invoice(tmp_path, "a.txt")), str(_text_invoice(tmp_path, "b.txt"))]
    argv = ["submit", "--base-url", live_server.url, "--token", tenant_ctx.token, "--timeout", "0", *files]
    first, second = io.StringIO(), io.StringIO()
    with redirect_stdout(first):
        assert cli_main(argv) == 1  # nothing runs the jobs: not settled
    with redirect_stdout(second):
        cli_main(argv)
    assert first.getvalue().count("accepted ") == 2 and "earlier run" not in first.getvalue()
    assert second.getvalue().count("(submitted by an earlier run)") == 2
    assert second.getvalue().count("ACCEPTED ") == 2
    assert ExtractionJob.objects.filter(tenant=tenant_ctx.tenant).count() == 2
