"""Webhook delivery benchmark: deliveries/s into the reference ERP, and the latency from a
job's completion commit to the ERP's 2xx at a steady completion rate.

    createdb -h 127.0.0.1 -U postgres benchdelivery     # once
    .venv/bin/python bench/delivery_bench.py            # about 2 minutes
    .venv/bin/python bench/delivery_bench.py --deliveries 500 --rate 10 --seconds 10   # quicker

Everything is real and on loopback: gunicorn serving the reference ERP (/erp/…: signature
check, inbox and ledger writes in PostgreSQL), a Celery worker on the ``delivery`` queue
(claim, egress vetting, Standard Webhooks signing, the HTTP POST, the outcome), the outbox
relay, and the delivery scheduler loop, with EGRESS_ALLOW_LOOPBACK=1 for the local ERP.

1. Throughput: N deliveries of a real completed-event body (each for another job id, so the
   ERP posts N ledger rows) are created at once and hinted; deliveries/s = N / time until all
   are DELIVERED.
2. Latency: jobs are completed in this process through the real lifecycle (claim, then the
   completing transaction that writes the outbox event) at a steady open-loop rate; for each,
   ``delivered_at − outbox created_at`` (both the database's clock): relay → RabbitMQ →
   fan-out → dispatch hint → dispatch → ERP commit → 2xx recorded. p50/p95/p99/max.

The script refuses a database whose name does not start with ``bench``: it empties the job
and delivery tables first. Results go to bench/results/delivery.json.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_DATABASE = "benchdelivery"
VHOST = "bench_delivery"
RESULTS = ROOT / "bench" / "results"


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DJANGO_DEVELOPMENT", "1")
    os.environ.setdefault("POSTGRES_DB", DEFAULT_DATABASE)
    os.environ["EGRESS_ALLOW_LOOPBACK"] = "1"
    os.environ["DEMO_ERP"] = "1"  # the reference ERP receives the deliveries
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    subprocess.run(["rabbitmqctl", "add_vhost", VHOST], capture_output=True, check=False)
    subprocess.run(["rabbitmqctl", "set_permissions", "-p", VHOST, "guest", ".*", ".*", ".*"],
                   capture_output=True, check=True)
    os.environ["BROKER_URL"] = f"amqp://guest:guest@127.0.0.1:5672/{VHOST}"
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    name = settings.DATABASES["default"]["NAME"]
    if not name.startswith("bench"):
        raise SystemExit(f"Refusing to run against database {name!r}: use one named bench* "
                         f"(createdb {DEFAULT_DATABASE}).")
    call_command("migrate", verbosity=0, interactive=False)


def reset_tables() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE webhook_delivery_attempts, webhook_deliveries, webhook_events, webhook_secrets, "
            "webhook_endpoints, erp_inbox, erp_ledger, erp_connections, extraction_attempts, extraction_results, "
            "execution_inbox, job_events, outbox_events, review_decisions, extraction_jobs CASCADE")
        cursor.execute("UPDATE accounts_tenantusage SET pending_jobs = 0, pending_bytes = 0, reserved_tokens = 0, "
                       "spent_today_micros = 0")
    from django.conf import settings
    from kombu import Connection

    from config.topology import ALL_QUEUES, declare_topology

    with Connection(settings.BROKER_URL) as conn:
        declare_topology(conn)
        for queue in ALL_QUEUES:
            queue(conn.default_channel).purge()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Processes:
    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.procs: list[subprocess.Popen] = []

    def start(self, name: str, argv: list[str], **env: str) -> None:
        log = open(self.log_dir / f"delivery-bench-{name}.log", "wb")
        self.procs.append(subprocess.Popen(argv, cwd=ROOT, env={**os.environ, **env}, stdout=log,
                                           stderr=subprocess.STDOUT, start_new_session=True))

    def stop(self) -> None:
        import signal

        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


def wait_healthy(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise SystemExit("the ERP (gunicorn) did not become healthy")


def prepare(port: int):
    """The bench tenant with limits admission never hits, a document, and an endpoint at the
    local ERP, verified."""
    from accounts.models import Tenant, create_tenant
    from delivery import dispatch
    from delivery.endpoints import register_endpoint
    from delivery.erp.models import ErpConnection
    from extraction.intake.documents import store_document

    tenant = Tenant.objects.filter(slug="bench-delivery").first() or create_tenant(slug="bench-delivery")
    Tenant.objects.filter(pk=tenant.pk).update(max_pending_jobs=2_000_000_000, max_pending_bytes=2**62,
                                               max_reserved_tokens=2**62, daily_spend_limit_micros=2**62,
                                               max_in_flight=1_000_000)
    tenant.refresh_from_db()
    document, _ = store_document(tenant=tenant, upload=io.BytesIO(b"%PDF-1.4\n% delivery bench invoice\n"),
                                 filename="bench.pdf")
    registration = register_endpoint(tenant=tenant, url=f"http://127.0.0.1:{port}/erp/bench/webhooks",
                                     event_types=["extraction.completed.v1"])
    ErpConnection.objects.create(slug="bench", tenant_label="bench", secrets=[
        {"key_id": registration.secret.key_id, "secret": registration.secret.secret}])
    deadline = time.monotonic() + 30
    while dispatch.deliver(registration.verification_delivery_id) != "delivered":
        if time.monotonic() > deadline:
            raise SystemExit("the endpoint could not be verified")
        time.sleep(0.5)
        dispatch.expedite(registration.verification_delivery_id)
    return tenant, document, registration.endpoint


def ready_jobs(tenant, document, count: int) -> None:
    """``count`` READY jobs through acceptance and the inbox, their requested events marked
    published (nothing consumes the ingress queue in this bench)."""
    from django.db import connection

    from extraction.execution import lifecycle
    from extraction.intake.acceptance import JobRequest, accept_job
    from extraction.models import OutboxEvent

    request = JobRequest(document=document, schema="invoice.v1", model_policy="default", options={},
                         priority_class="batch", deadline_seconds=24 * 3600)
    for _ in range(count):
        accepted = accept_job(tenant=tenant, idempotency_key=uuid.uuid4().hex, request=request)
        event = OutboxEvent.objects.get(job_id=accepted.job_id, event_type="extraction.requested.v1")
        lifecycle.take_in_requested_event(event_id=event.event_id, payload=event.payload)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE outbox_events SET published_at = now() WHERE event_type = 'extraction.requested.v1'")


OUTPUT = {
    "schema": "invoice.v1",
    "document_type": {"value": "invoice", "evidence": {"page": 1, "start": 0, "end": 7, "quote": "Invoice"}},
    "supplier": {"name": {"value": "ACME Supplies GmbH", "evidence": {"page": 1, "start": 0, "end": 18,
                                                                       "quote": "ACME Supplies GmbH"}},
                 "vat_id": {"value": "DE123456789", "evidence": None}, "iban": {"value": None, "evidence": None}},
    "invoice_number": {"value": "INV-2026-001", "evidence": {"page": 1, "start": 60, "end": 72,
                                                             "quote": "INV-2026-001"}},
    "issue_date": {"value": "2026-11-02", "evidence": None}, "due_date": {"value": "2026-12-02", "evidence": None},
    "currency": {"value": "EUR", "evidence": None},
    "lines": [{"description": {"value": f"Widget {i}", "evidence": None}, "quantity": {"value": "2", "evidence": None},
               "unit_price": {"value": "50.00", "evidence": None}, "net_amount": {"value": "100.00", "evidence": None},
               "tax_rate": {"value": "19", "evidence": None}, "tax_amount": {"value": "19.00", "evidence": None}}
              for i in range(5)],
    "totals": {k: {"value": v, "evidence": None} for k, v in
               {"net": "500.00", "tax": "95.00", "gross": "595.00", "prepaid": None, "amount_due": "595.00"}.items()},
}


def complete_next_job() -> bool:
    from extraction.execution import lifecycle
    from extraction.execution.lifecycle import AttemptReport

    claim = lifecycle.claim_next_job(worker_id="delivery-bench")
    if claim is None:
        return False
    return lifecycle.complete_job(claim, review_required=False, output=OUTPUT, validation={"blocking": []},
                                  policy_version="bench", report=AttemptReport(outcome="succeeded"))


def throughput(endpoint, count: int, timeout: float) -> dict:
    """N deliveries of a real completed body created at once, hinted, timed until all DELIVERED."""
    from django.conf import settings
    from django.db import connection
    from kombu import Connection

    from delivery import dispatch, signing
    from delivery.models import delivery_id_for

    ready_jobs(endpoint.tenant, _document(endpoint.tenant), 1)
    complete_next_job()
    with connection.cursor() as cursor:  # the real body of that completion, once fanned out
        deadline = time.monotonic() + 30
        while True:
            cursor.execute("SELECT body FROM webhook_events WHERE event_type = 'extraction.completed.v1' "
                           "ORDER BY created_at DESC LIMIT 1")
            row = cursor.fetchone()
            if row:
                break
            if time.monotonic() > deadline:
                raise SystemExit("the template completion never fanned out")
            time.sleep(0.2)
    template = json.loads(row[0])
    wait_all_delivered(timeout=30)

    ids = []
    with connection.cursor() as cursor:
        for _ in range(count):
            event_id, job_id = uuid.uuid4(), uuid.uuid4()
            body = {**template, "data": {**template["data"], "event_id": str(event_id), "job_id": str(job_id)}}
            cursor.execute(
                "INSERT INTO webhook_events (event_id, tenant_id, event_type, job_id, body, created_at) "
                "VALUES (%s, %s, 'extraction.completed.v1', %s, %s, now())",
                [event_id, endpoint.tenant_id, job_id, signing.serialize_body(body).decode()])
            delivery_id = delivery_id_for(event_id, endpoint.pk)
            cursor.execute(
                "INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, event_type, is_verification, "
                "state, attempts, max_attempts, next_attempt_at, hinted_at, last_error, response_snippet, created_at, "
                "updated_at) VALUES (%s, %s, %s, %s, 'extraction.completed.v1', false, 'pending', 0, 15, now(), "
                "now(), '', '', now(), now())",
                [delivery_id, event_id, endpoint.pk, endpoint.tenant_id])
            ids.append(delivery_id)
    started = time.monotonic()
    with Connection(settings.BROKER_URL) as broker:
        dispatch.publish_dispatch_hints(ids, broker=broker)
    wait_all_delivered(timeout=timeout)
    elapsed = time.monotonic() - started
    body_bytes = len(signing.serialize_body(template))
    return {"deliveries": count, "seconds": round(elapsed, 2), "deliveries_per_second": round(count / elapsed, 1),
            "body_bytes": body_bytes}


def _document(tenant):
    from extraction.models import Document

    return Document.objects.filter(tenant=tenant).first()


def wait_all_delivered(*, timeout: float) -> None:
    from delivery.models import Delivery

    deadline = time.monotonic() + timeout
    while Delivery.objects.exclude(state="delivered").exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"deliveries not all delivered after {timeout}s: "
                             f"{Delivery.objects.exclude(state='delivered').count()} left")
        time.sleep(0.1)


def latency(tenant, rate: float, seconds: float) -> dict:
    """Completions at a steady open-loop rate; completion commit → ERP 2xx per delivery."""
    from django.db import connection

    count = int(rate * seconds)
    ready_jobs(tenant, _document(tenant), count)
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        since = cursor.fetchone()[0]
    started = time.monotonic()
    completed = 0
    for i in range(count):
        delay = started + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        completed += complete_next_job()
    achieved = completed / (time.monotonic() - started)
    deadline = time.monotonic() + 120
    with connection.cursor() as cursor:
        # Every completion's delivery must exist AND be delivered (the last fan-outs may still run).
        while True:
            cursor.execute("SELECT count(*) FROM webhook_deliveries d JOIN outbox_events o ON o.event_id = d.event_id "
                           "WHERE o.created_at >= %s AND d.state = 'delivered'", [since])
            if cursor.fetchone()[0] >= completed or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT extract(epoch FROM d.delivered_at - o.created_at) * 1000
              FROM webhook_deliveries d JOIN outbox_events o ON o.event_id = d.event_id
             WHERE o.created_at >= %s AND NOT d.is_verification ORDER BY 1
            """,
            [since],
        )
        values = [float(r[0]) for r in cursor.fetchall()]
        cursor.execute("SELECT count(*), count(DISTINCT job_id) FROM erp_ledger")
        ledger_rows, ledger_jobs = cursor.fetchone()

    def pct(p: float) -> float:
        return round(values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))], 1)

    return {"rate_per_second": rate, "achieved_rate": round(achieved, 1), "completions": completed,
            "measured": len(values), "p50_ms": pct(50), "p95_ms": pct(95), "p99_ms": pct(99),
            "max_ms": round(values[-1], 1), "ledger_rows": ledger_rows, "ledger_distinct_jobs": ledger_jobs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deliveries", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=20.0, help="completions per second (latency phase)")
    parser.add_argument("--seconds", type=float, default=20.0, help="duration of the latency phase")
    parser.add_argument("--concurrency", type=int, default=16, help="delivery worker threads")
    parser.add_argument("--erp-workers", type=int, default=2)
    parser.add_argument("--output", type=Path, default=RESULTS / "delivery.json")
    args = parser.parse_args()

    setup_django()
    reset_tables()
    RESULTS.mkdir(parents=True, exist_ok=True)
    port = free_port()
    venv = Path(sys.executable).parent
    processes = Processes(RESULTS)
    try:
        processes.start("erp", [str(venv / "gunicorn"), "config.wsgi", "--workers", str(args.erp_workers),
                                "--worker-class", "gthread", "--threads", "4", "--bind", f"127.0.0.1:{port}"])
        wait_healthy(port)
        tenant, _, endpoint = prepare(port)
        processes.start("delivery", [str(venv / "celery"), "-A", "config", "worker", "-Q", "delivery", "--pool",
                                     "threads", "--concurrency", str(args.concurrency), "-n", "bench-delivery@%h",
                                     "--without-mingle", "--without-gossip", "--loglevel", "WARNING"],
                        POSTGRES_POOL_MAX_SIZE=str(args.concurrency))
        processes.start("relay", [sys.executable, "manage.py", "run_outbox_relay", "--poll", "0.2"])
        processes.start("scheduler", [sys.executable, "manage.py", "run_delivery_scheduler", "--interval", "0.5"])
        time.sleep(3)  # the worker connects
        result = {"throughput": throughput(endpoint, args.deliveries, timeout=600),
                  "latency": latency(tenant, args.rate, args.seconds),
                  "setup": {"delivery_worker_threads": args.concurrency, "erp_gunicorn_workers": args.erp_workers,
                            "erp_threads_per_worker": 4, "cores": os.cpu_count(),
                            # Other work on the machine skews every figure: look at this first.
                            "load_average_1min_at_end": round(os.getloadavg()[0], 2)}}
    finally:
        processes.stop()
    args.output.write_text(json.dumps(result, indent=2))
    t, lat = result["throughput"], result["latency"]
    print(f"throughput: {t['deliveries']} deliveries ({t['body_bytes']} B bodies) in {t['seconds']} s "
          f"= {t['deliveries_per_second']} deliveries/s")
    print(f"latency at {lat['achieved_rate']}/s completions ({lat['measured']} measured): p50 {lat['p50_ms']} ms, "
          f"p95 {lat['p95_ms']} ms, p99 {lat['p99_ms']} ms, max {lat['max_ms']} ms; "
          f"ledger {lat['ledger_rows']} rows for {lat['ledger_distinct_jobs']} jobs")
    print(f"machine load average (1 min) at the end: {result['setup']['load_average_1min_at_end']} "
          f"on {os.cpu_count()} cores")
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
