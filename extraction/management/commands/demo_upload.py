"""Upload sample invoices through the HTTP API and watch their jobs finish (the run command's demo)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from invoice_extraction_client import Client, FailedFile, Job, SubmittedFile, WaitTimeout

# Three that pass every check of the validation policy (they travel on to the demo ERP) and
# two that a reviewer must look at (a German VAT id failing its check digit; a missing field).
DEMO_FILES = [
    "testdata/invoices/zugferd-corpus/XML-Rechnung/FX/EN16931_Elektron.pdf",
    "testdata/invoices/zugferd-corpus/XML-Rechnung/FX/EN16931_Miete.pdf",
    "testdata/invoices/invoice2data/compare/NetpresseInvoice.pdf",
    "testdata/invoices/zugferd-corpus/XML-Rechnung/FX/EN16931_Einfach.pdf",
    "testdata/invoices/invoice2data/compare/AmazonWebServices.pdf",
]


class Command(BaseCommand):
    help = "Upload the demo invoices with an API token and print their jobs' states until they finish."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")
        parser.add_argument("--token", required=True)
        parser.add_argument("--timeout", type=float, default=180)

    def handle(self, *args: Any, base_url: str, token: str, timeout: float, **options: Any) -> None:
        # Through the Python client a tenant's integration would use (clients/python).
        with Client(base_url, token) as client:
            # One batch whose key is a digest of these files: running the demo again replays
            # the batch and its jobs, so the demo ERP never gets an invoice twice however often
            # the run command is started.
            items = client.submit_batch(
                [Path(settings.BASE_DIR) / relative for relative in DEMO_FILES],
                idempotency_prefix="demo-",
                schema="invoice.v2",
            )
            submitted: list[SubmittedFile] = []
            for item in items:
                if isinstance(item, FailedFile):
                    raise CommandError(f"submit of {item.path.name} failed: {item.error}")
                submitted.append(item)
                replayed = " (submitted by an earlier run)" if item.job.replayed else ""
                self.stdout.write(f"accepted {item.path.name}: {item.job.status_url}{replayed}")
            deadline = time.monotonic() + timeout  # for all the jobs together
            self.stdout.write("")
            for item in submitted:
                try:
                    job = client.wait(item.job, timeout=max(0.0, deadline - time.monotonic()))
                except WaitTimeout as exc:
                    job = exc.job or item.job
                self.stdout.write(f"{job.state.value:<16} {item.path.name:<36} {_summary(job)}")


def _summary(job: Job) -> str:
    """The job's gross total, what the model call cost and why it is in review, if it is."""
    body = job.detail.to_dict() if job.detail is not None else {}
    result = body.get("result") or {}
    gross = (((result.get("output") or {}).get("totals") or {}).get("gross") or {}).get("value")
    reasons = ",".join((result.get("validation") or {}).get("reasons") or [])
    usage = result.get("usage") or {}
    cost = ""
    if usage.get("latency_ms") is not None:
        cost = (
            f" [{result.get('model')}: {usage['latency_ms'] / 1000:.1f} s,"
            f" {usage.get('input_tokens')} in / {usage.get('output_tokens')} out]"
        )
    return f"gross={gross}{cost} {reasons}"
