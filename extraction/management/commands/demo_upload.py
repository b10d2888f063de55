"""Upload sample invoices through the HTTP API and watch their jobs finish (the run command's demo)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import requests
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

# Three that pass every check of the validation policy (they travel on to the demo ERP) and
# two that a reviewer must look at (a German VAT id failing its check digit; a missing field).
DEMO_FILES = [
    "testdata/invoices/zugferd-corpus/XML-Rechnung/FX/EN16931_Elektron.pdf",
    "testdata/invoices/zugferd-corpus/XML-Rechnung/FX/EN16931_Miete.pdf",
    "testdata/invoices/invoice2data/compare/NetpresseInvoice.pdf",
    "testdata/invoices/zugferd-corpus/XML-Rechnung/FX/EN16931_Einfach.pdf",
    "testdata/invoices/invoice2data/compare/AmazonWebServices.pdf",
]
TERMINAL = {"SUCCEEDED", "FAILED_TERMINAL", "REVIEW_REQUIRED"}


class Command(BaseCommand):
    help = "Upload the demo invoices with an API token and print their jobs' states until they finish."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")
        parser.add_argument("--token", required=True)
        parser.add_argument("--timeout", type=float, default=180)

    def handle(self, *args: Any, base_url: str, token: str, timeout: float, **options: Any) -> None:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {token}"
        jobs: dict[str, str] = {}
        for relative in DEMO_FILES:
            path = Path(settings.BASE_DIR) / relative
            with path.open("rb") as handle:
                doc = session.post(f"{base_url}/api/v1/documents", files={"file": (path.name, handle)}, timeout=30)
            if doc.status_code != 201:
                raise CommandError(f"upload of {path.name} failed: {doc.status_code} {doc.text[:200]}")
            # The key is the document's: running the demo again replays the jobs it already
            # submitted (the same document is stored once), so the demo ERP never gets an
            # invoice twice however often the run command is started.
            document_id = doc.json()["id"]
            job = session.post(
                f"{base_url}/api/v1/extraction-jobs",
                json={"document_id": document_id, "schema": "invoice.v2"},
                headers={"Idempotency-Key": f"demo-{document_id}"},
                timeout=30,
            )
            if job.status_code != 202:
                raise CommandError(f"submit of {path.name} failed: {job.status_code} {job.text[:200]}")
            jobs[path.name] = job.headers["Location"]
            replayed = " (submitted by an earlier run)" if job.headers.get("Idempotent-Replayed") == "true" else ""
            self.stdout.write(f"accepted {path.name}: {job.headers['Location']}{replayed}")
        deadline = time.monotonic() + timeout
        states: dict[str, dict] = {}
        while time.monotonic() < deadline:
            states = {name: session.get(f"{base_url}{url}", timeout=10).json() for name, url in jobs.items()}
            if all(s["state"] in TERMINAL for s in states.values()):
                break
            time.sleep(1)
        self.stdout.write("")
        for name, status in states.items():
            result = status.get("result") or {}
            totals = (result.get("output") or {}).get("totals") or {}
            gross = (totals.get("gross") or {}).get("value")
            reasons = ",".join((result.get("validation") or {}).get("reasons") or [])
            usage = result.get("usage") or {}
            cost = ""
            if usage.get("latency_ms") is not None:
                cost = (
                    f" [{result.get('model')}: {usage['latency_ms'] / 1000:.1f} s,"
                    f" {usage.get('input_tokens')} in / {usage.get('output_tokens')} out]"
                )
            self.stdout.write(f"{status['state']:<16} {name:<36} gross={gross}{cost} {reasons}")
