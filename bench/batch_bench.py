"""Batch acceptance benchmark: N one-page PDFs accepted in one ``POST /api/v1/extraction-batches``,
set against N single accepts (upload, then create) measured in the same run.

Run from the project root::

    .venv/bin/python bench/batch_bench.py [--files 1000] [--repeat 2]

One gunicorn (``config.wsgi``, 4 sync workers with gunicorn's default 30 s timeout, as the
Procfile's web process), one database (``benchbatch``). The modes, each on PDFs of its own
(distinct bytes: every file is a new document, as in a real batch):

- ``multipart``: one request with N ``files`` parts;
- ``zip``: one request with one deflated archive of the N files;
- ``singles x1``: N times ``POST /api/v1/documents`` then ``POST /api/v1/extraction-jobs``,
  from one client, one request after another;
- ``singles xW``: the same from W clients at once (W = the gunicorn workers).

A batch call is the unit, so each is reported in seconds to its 202 and in jobs/s (N over
that time); the singles likewise from the first upload to the last 202. Open-loop load has no
meaning for one call. After each 202 the batch's jobs are counted from another connection:
every one must exist ACCEPTED with its requested outbox event, so durable before the answer.
The job tables are emptied between calls.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

import httpx  # noqa: E402

from bench import harness  # noqa: E402
from tests.extraction.intake.handmade_pdf import handmade_pdf  # noqa: E402

RESULTS_DIR = harness.RESULTS_DIR
DEFAULT_DATABASE = "benchbatch"
BATCHES_PATH = "/api/v1/extraction-batches"
DOCUMENTS_PATH = "/api/v1/documents"
JOBS_PATH = "/api/v1/extraction-jobs"
# The job tables a batch writes, emptied before each call.
TABLES = ("extraction_batch_items", "extraction_batches", *harness.JOB_TABLES)
REQUEST_TIMEOUT = 120.0


def one_page_pdf(run: str, number: int) -> bytes:
    """The bench's sample invoice as a one-page PDF of its own: its number makes the bytes."""
    lines = harness.SAMPLE_INVOICE.replace("INV-2026-001", f"INV-{run}-{number:05d}").splitlines()
    return handmade_pdf(tuple((line, 72, 740 - 16 * i) for i, line in enumerate(lines)))


class PdfSource:
    """Fresh PDFs for each call: no call reuses a document another one stored."""

    def __init__(self) -> None:
        self.run = uuid.uuid4().hex[:6].upper()
        self.calls = 0

    def next(self, count: int) -> list[bytes]:
        self.calls += 1
        return [one_page_pdf(f"{self.run}{self.calls:02d}", n) for n in range(count)]


@dataclass(frozen=True)
class Call:
    mode: str
    files: int
    seconds: float
    jobs_per_s: float
    status: int
    body_bytes: int
    # From another connection after the answer: the jobs ACCEPTED and their requested events.
    accepted_jobs: int
    requested_events: int
    busy_cores: float

    @property
    def durable(self) -> bool:
        return self.accepted_jobs == self.requested_events == self.files


def count_committed(batch_id: str | None) -> tuple[int, int]:
    """(jobs ACCEPTED, their requested outbox events) of the batch, or of every job when None."""
    from extraction.events import EventType
    from extraction.models import ExtractionJob, JobState, OutboxEvent

    jobs = ExtractionJob.objects.filter(state=JobState.ACCEPTED)
    if batch_id is not None:
        jobs = jobs.filter(batch_items__batch_id=batch_id)
    events = OutboxEvent.objects.filter(event_type=EventType.REQUESTED, job__in=jobs)
    return jobs.count(), events.count()


def reset() -> None:
    harness.reset_job_tables(harness.django_dsn(), tables=TABLES, vacuum=True)


def batch_call(client: httpx.Client, mode: str, pdfs: list[bytes]) -> Call:
    """One batch request of ``pdfs``; timed from the first byte sent to the 202."""
    if mode == "zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for n, pdf in enumerate(pdfs):
                archive.writestr(f"invoices/{n:05d}.pdf", pdf)
        files: list[tuple[str, tuple[str, bytes, str]]] = [
            ("archive", ("invoices.zip", buffer.getvalue(), "application/zip"))
        ]
    else:
        files = [("files", (f"{n:05d}.pdf", pdf, "application/pdf")) for n, pdf in enumerate(pdfs)]
    # httpx encodes the multipart body lazily while sending: encoding it counts, as for a client.
    headers = {"Idempotency-Key": f"bench-{uuid.uuid4()}"}
    meter = harness.LoadMeter()
    began = time.perf_counter()
    response = client.post(BATCHES_PATH, files=files, data={"options": '{"priority": "batch"}'}, headers=headers)
    seconds = time.perf_counter() - began
    load = meter.read()
    if response.status_code != 202:
        raise SystemExit(f"{mode}: {response.status_code} {response.text[:500]}")
    body = response.json()
    accepted, events = count_committed(body["batch_id"])
    if body["accepted"] != len(pdfs):
        refused = [item["problem"] for item in body["items"] if item["problem"]][:3]
        raise SystemExit(f"{mode}: {body['refused']} files refused, e.g. {refused}")
    return Call(
        mode=mode,
        files=len(pdfs),
        seconds=round(seconds, 3),
        jobs_per_s=round(len(pdfs) / seconds, 1),
        status=response.status_code,
        body_bytes=len(response.content),
        accepted_jobs=accepted,
        requested_events=events,
        busy_cores=load.busy_cores,
    )


def single_accepts(base_url: str, token: str, pdfs: list[bytes], clients: int) -> Call:
    """Each PDF uploaded and its job created, as a client of the single-document API does, by
    ``clients`` clients at once (each its own connection), the PDFs dealt out among them."""
    errors: list[str] = []

    def work(share: list[bytes]) -> None:
        with httpx.Client(base_url=base_url, headers=_auth(token), timeout=REQUEST_TIMEOUT) as client:
            for pdf in share:
                upload = client.post(DOCUMENTS_PATH, files={"file": ("invoice.pdf", pdf, "application/pdf")})
                if upload.status_code != 201:
                    errors.append(f"upload {upload.status_code} {upload.text[:200]}")
                    return
                job = client.post(
                    JOBS_PATH,
                    json={"document_id": upload.json()["id"], "options": {"priority": "batch"}},
                    headers={"Idempotency-Key": f"bench-{uuid.uuid4()}"},
                )
                if job.status_code != 202:
                    errors.append(f"accept {job.status_code} {job.text[:200]}")
                    return

    shares = [pdfs[i::clients] for i in range(clients)]
    threads = [threading.Thread(target=work, args=(share,)) for share in shares]
    meter = harness.LoadMeter()
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - began
    load = meter.read()
    if errors:
        raise SystemExit(f"singles x{clients}: {errors[0]}")
    accepted, events = count_committed(None)
    return Call(
        mode=f"singles x{clients}",
        files=len(pdfs),
        seconds=round(seconds, 3),
        jobs_per_s=round(len(pdfs) / seconds, 1),
        status=202,
        body_bytes=0,
        accepted_jobs=accepted,
        requested_events=events,
        busy_cores=load.busy_cores,
    )


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Batch accept benchmark: one batch call against single accepts.")
    parser.add_argument("--files", type=int, default=1000, help="PDFs per batch and per singles run (default 1000)")
    parser.add_argument("--repeat", type=int, default=2, help="calls per batch mode (default 2)")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn sync workers (default 4)")
    parser.add_argument("--output", type=Path, help="the JSON's path (default: bench/results/batch_bench-<UTC>.json)")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    started = time.monotonic()
    # The documents of this run, in storage of its own: removed with the run.
    media = tempfile.TemporaryDirectory(prefix="batch-bench-media-")
    os.environ["MEDIA_ROOT"] = media.name
    harness.ensure_database(harness.own_database(DEFAULT_DATABASE))
    harness.setup_django()
    from django.db import connection

    from accounts.models import ApiToken, Role

    bench = harness.make_tenant("batch-bench", unique=False, content=one_page_pdf("SEED", 0), filename="seed.pdf")
    ApiToken.objects.filter(tenant=bench.tenant, name="batch-bench").delete()
    token_row, token = ApiToken.issue(tenant=bench.tenant, name="batch-bench", role=Role.MEMBER)
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        pg_version = cursor.fetchone()[0]
    source = PdfSource()
    calls: list[Call] = []
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    with harness.Gunicorn(
        workers=args.workers, worker_class="sync", threads=1, log_path=RESULTS_DIR / "batch_bench-gunicorn.log"
    ) as server:
        base_url = server.url("")
        with httpx.Client(base_url=base_url, headers=_auth(token), timeout=REQUEST_TIMEOUT) as client:
            print("warm-up (not reported)", flush=True)
            for mode in ("multipart", "zip"):
                batch_call(client, mode, source.next(8))
            single_accepts(base_url, token, source.next(8), args.workers)
            for round_ in range(args.repeat):
                for mode in ("multipart", "zip"):
                    reset()
                    server.wait_idle()
                    harness.wait_for_quiet_machine(5.0)
                    calls.append(batch_call(client, mode, source.next(args.files)))
                    _print_call(calls[-1])
                if round_ == 0:
                    for clients in (1, args.workers):
                        reset()
                        server.wait_idle()
                        harness.wait_for_quiet_machine(5.0)
                        calls.append(single_accepts(base_url, token, source.next(args.files), clients))
                        _print_call(calls[-1])
    reset()
    ApiToken.objects.filter(pk=token_row.pk).delete()
    media.cleanup()
    report = build_report(args, calls, pg_version, started)
    harness.publish_results("batch_bench", lambda: print_table(report), report, json_path=args.output)


def _print_call(call: Call) -> None:
    print(
        f"  {call.mode:<12} {call.files} files  {call.seconds:7.2f} s  {call.jobs_per_s:7.1f} jobs/s  "
        f"committed ACCEPTED {call.accepted_jobs} with {call.requested_events} events  "
        f"busy {call.busy_cores:.2f} cores",
        flush=True,
    )


def build_report(args: argparse.Namespace, calls: list[Call], pg_version: str, started: float) -> dict[str, Any]:
    modes: dict[str, dict[str, Any]] = {}
    for call in calls:
        mode = modes.setdefault(call.mode, {"calls": []})
        mode["calls"].append(asdict(call))
    for mode in modes.values():
        seconds = sorted(call["seconds"] for call in mode["calls"])
        mode["best_seconds"] = seconds[0]
        mode["median_seconds"] = seconds[len(seconds) // 2]
        mode["jobs_per_s_at_best"] = round(args.files / seconds[0], 1)
        mode["all_durable_at_202"] = all(
            call["accepted_jobs"] == call["requested_events"] == call["files"] for call in mode["calls"]
        )
    singles = modes.get("singles x1", {}).get("best_seconds")
    for mode in modes.values():
        mode["speedup_over_singles_x1"] = round(singles / mode["best_seconds"], 2) if singles else None
    return {
        "machine": {**harness.machine(), "postgresql": pg_version},
        "server": {"wsgi": "config.wsgi", "workers": args.workers, "worker_class": "sync", "timeout_s": 30},
        "files": args.files,
        "pdf_bytes": len(one_page_pdf("SIZE00", 0)),
        "modes": modes,
        "elapsed_s": round(time.monotonic() - started, 1),
    }


def print_table(report: dict[str, Any]) -> None:
    print()
    print(
        f"Batch accept benchmark: {report['files']} one-page PDFs of ~{report['pdf_bytes']} bytes, "
        f"{report['machine']['cores']} CPUs, PostgreSQL {report['machine']['postgresql'].split()[0]}, "
        f"gunicorn {report['server']['workers']} sync workers ({report['elapsed_s']} s)"
    )
    print(f"{'mode':<14} {'calls':>5} {'best s':>8} {'median s':>9} {'jobs/s':>8} {'vs singles x1':>14} durable at 202")
    for name, mode in report["modes"].items():
        speedup = mode["speedup_over_singles_x1"]
        print(
            f"{name:<14} {len(mode['calls']):>5} {mode['best_seconds']:>8.2f} {mode['median_seconds']:>9.2f} "
            f"{mode['jobs_per_s_at_best']:>8.1f} {(f'{speedup:.2f}x' if speedup else 'n/a'):>14} "
            f"{'yes' if mode['all_durable_at_202'] else 'NO'}"
        )


if __name__ == "__main__":
    main()
