"""Webhook delivery benchmark: deliveries/s into the reference ERP, and the latency from a
job's completion commit to the ERP's 2xx at a steady completion rate.

    .venv/bin/python bench/delivery_bench.py            # about 2 minutes
    .venv/bin/python bench/delivery_bench.py --deliveries 500 --rate 10 --seconds 10   # quicker

Everything real and on loopback: gunicorn serving the reference ERP, a Celery worker on the
``delivery`` queue, the outbox relay and the delivery scheduler. POSTGRES_DB (default
``benchdelivery``) must name a bench* database: its job and delivery tables are emptied first.
Method and how to read the report: bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import harness
from tests.system import SystemProcesses, ensure_vhost, purge_queues

DEFAULT_DATABASE = "benchdelivery"
VHOST = "bench_delivery"
DELIVERY_TABLES = (
    "webhook_delivery_attempts",
    "webhook_deliveries",
    "webhook_events",
    "webhook_secrets",
    "webhook_endpoints",
    "erp_inbox",
    "erp_ledger",
    "erp_connections",
)
LOG_DIR = harness.RESULTS_DIR / "delivery-logs"


def setup_django() -> str:
    """Django on the bench database, the reference ERP installed (it receives the deliveries)
    and loopback allowed for its endpoint; returns the broker URL of our own vhost."""
    env = {"EGRESS_ALLOW_LOOPBACK": "1", "DEMO_ERP": "1", "BROKER_URL": ensure_vhost(VHOST)}
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    harness.ensure_database(harness.own_database(DEFAULT_DATABASE), **env)
    harness.setup_django(**env)
    return env["BROKER_URL"]


def reset_tables(broker_url: str) -> None:
    harness.reset_job_tables(harness.django_dsn(), tables=(*DELIVERY_TABLES, *harness.JOB_TABLES), vacuum=False)
    purge_queues(broker_url)


def prepare(port: int):
    """The bench tenant with limits admission never hits, a document, and an endpoint at the
    local ERP, verified."""
    from delivery import dispatch, replay
    from delivery.endpoints import register_endpoint
    from delivery.erp.models import ErpConnection

    bench = harness.make_tenant(
        "bench-delivery",
        unique=False,
        content=b"%PDF-1.4\n% delivery bench invoice\n",
        filename="bench.pdf",
        max_in_flight=1_000_000,
    )
    registration = register_endpoint(
        tenant=bench.tenant, url=f"http://127.0.0.1:{port}/erp/bench/webhooks", event_types=["extraction.completed.v1"]
    )
    ErpConnection.objects.create(
        slug="bench",
        tenant_label="bench",
        secrets=[{"key_id": registration.secret.key_id, "secret": registration.secret.secret}],
    )
    deadline = time.monotonic() + 30
    while dispatch.deliver(registration.verification_delivery_id) != "delivered":
        if time.monotonic() > deadline:
            raise SystemExit("the endpoint could not be verified")
        time.sleep(0.5)
        replay.expedite(registration.verification_delivery_id)
    return bench, registration.endpoint


def ready_jobs(bench: harness.BenchTenant, count: int) -> None:
    """``count`` READY jobs through acceptance and the inbox, their requested events marked
    published (nothing consumes the ingress queue in this bench)."""
    from django.db import connection

    from extraction.execution import lifecycle
    from extraction.models import OutboxEvent

    for _ in range(count):
        event = OutboxEvent.objects.get(job_id=harness.accept_one(bench), event_type="extraction.requested.v1")
        lifecycle.take_in_requested_event(event_id=event.event_id, payload=event.payload)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE outbox_events SET published_at = now() WHERE event_type = 'extraction.requested.v1'")


OUTPUT = {
    "schema": "invoice.v1",
    "document_type": {"value": "invoice", "evidence": {"page": 1, "start": 0, "end": 7, "quote": "Invoice"}},
    "supplier": {
        "name": {
            "value": "ACME Supplies GmbH",
            "evidence": {"page": 1, "start": 0, "end": 18, "quote": "ACME Supplies GmbH"},
        },
        "vat_id": {"value": "DE123456789", "evidence": None},
        "iban": {"value": None, "evidence": None},
    },
    "invoice_number": {
        "value": "INV-2026-001",
        "evidence": {"page": 1, "start": 60, "end": 72, "quote": "INV-2026-001"},
    },
    "issue_date": {"value": "2026-11-02", "evidence": None},
    "due_date": {"value": "2026-12-02", "evidence": None},
    "currency": {"value": "EUR", "evidence": None},
    "lines": [
        {
            "description": {"value": f"Widget {i}", "evidence": None},
            "quantity": {"value": "2", "evidence": None},
            "unit_price": {"value": "50.00", "evidence": None},
            "net_amount": {"value": "100.00", "evidence": None},
            "tax_rate": {"value": "19", "evidence": None},
            "tax_amount": {"value": "19.00", "evidence": None},
        }
        for i in range(5)
    ],
    "totals": {
        k: {"value": v, "evidence": None}
        for k, v in {
            "net": "500.00",
            "tax": "95.00",
            "gross": "595.00",
            "prepaid": None,
            "amount_due": "595.00",
        }.items()
    },
}


def complete_next_job() -> bool:
    from extraction.execution import lifecycle
    from extraction.execution.lifecycle import AttemptReport

    claim = lifecycle.claim_next_job(worker_id="delivery-bench")
    if claim is None:
        return False
    return lifecycle.complete_job(
        claim,
        review_required=False,
        output=OUTPUT,
        validation={"blocking": []},
        policy_version="bench",
        report=AttemptReport(outcome="succeeded"),
    )


def throughput(bench: harness.BenchTenant, endpoint, count: int, timeout: float) -> dict:
    """N deliveries of a real completed body created at once, hinted, timed until all DELIVERED."""
    from django.conf import settings
    from django.db import connection
    from kombu import Connection

    from delivery import scheduling, signing
    from delivery.models import delivery_id_for

    ready_jobs(bench, 1)
    complete_next_job()
    with connection.cursor() as cursor:  # the real body of that completion, once fanned out
        deadline = time.monotonic() + 30
        while True:
            cursor.execute(
                "SELECT body FROM webhook_events WHERE event_type = 'extraction.completed.v1' "
                "ORDER BY created_at DESC LIMIT 1"
            )
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
                [event_id, endpoint.tenant_id, job_id, signing.serialize_body(body).decode()],
            )
            delivery_id = delivery_id_for(event_id, endpoint.pk)
            cursor.execute(
                "INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, event_type, is_verification, "
                "state, attempts, max_attempts, next_attempt_at, hinted_at, last_error, response_snippet, created_at, "
                "updated_at) VALUES (%s, %s, %s, %s, 'extraction.completed.v1', false, 'pending', 0, 15, now(), "
                "now(), '', '', now(), now())",
                [delivery_id, event_id, endpoint.pk, endpoint.tenant_id],
            )
            ids.append(delivery_id)
    started = time.monotonic()
    with Connection(settings.BROKER_URL) as broker:
        scheduling.publish_dispatch_hints(ids, broker=broker)
    wait_all_delivered(timeout=timeout)
    elapsed = time.monotonic() - started
    body_bytes = len(signing.serialize_body(template))
    return {
        "deliveries": count,
        "seconds": round(elapsed, 2),
        "deliveries_per_second": round(count / elapsed, 1),
        "body_bytes": body_bytes,
    }


def wait_all_delivered(*, timeout: float) -> None:
    from delivery.models import Delivery

    deadline = time.monotonic() + timeout
    while Delivery.objects.exclude(state="delivered").exists():
        if time.monotonic() > deadline:
            raise SystemExit(
                f"deliveries not all delivered after {timeout}s: "
                f"{Delivery.objects.exclude(state='delivered').count()} left"
            )
        time.sleep(0.1)


def latency(bench: harness.BenchTenant, rate: float, seconds: float) -> dict:
    """Completions at a steady open-loop rate; completion commit → ERP 2xx per delivery."""
    from django.db import connection

    count = int(rate * seconds)
    ready_jobs(bench, count)
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
            cursor.execute(
                "SELECT count(*) FROM webhook_deliveries d JOIN outbox_events o ON o.event_id = d.event_id "
                "WHERE o.created_at >= %s AND d.state = 'delivered'",
                [since],
            )
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

    return {
        "rate_per_second": rate,
        "achieved_rate": round(achieved, 1),
        "completions": completed,
        "measured": len(values),
        **{f"{name}_ms": v for name, v in harness.summarize(values, ndigits=1).items()},
        "ledger_rows": ledger_rows,
        "ledger_distinct_jobs": ledger_jobs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deliveries", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=20.0, help="completions per second (latency phase)")
    parser.add_argument("--seconds", type=float, default=20.0, help="duration of the latency phase")
    parser.add_argument("--concurrency", type=int, default=16, help="delivery worker threads")
    parser.add_argument("--erp-workers", type=int, default=2)
    parser.add_argument(
        "--output", type=Path, help="the JSON's path (default: bench/results/delivery_bench-<UTC time>.json)"
    )
    args = parser.parse_args()

    broker_url = setup_django()
    reset_tables(broker_url)
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    processes = SystemProcesses(env=dict(os.environ), log_dir=LOG_DIR)
    erp = harness.Gunicorn(workers=args.erp_workers, worker_class="gthread", threads=4, log_path=LOG_DIR / "erp.log")
    with erp:
        try:
            bench, endpoint = prepare(erp.port)
            processes.start(
                "delivery",
                [
                    str(harness.VENV_BIN / "celery"),
                    *harness.celery_args("delivery", "delivery", args.concurrency, loglevel="WARNING"),
                ],
                POSTGRES_POOL_MAX_SIZE=str(args.concurrency),
            )
            processes.relay()
            processes.start("scheduler", [sys.executable, "manage.py", "run_delivery_scheduler", "--interval", "0.5"])
            time.sleep(3)  # the worker connects
            result = {
                "throughput": throughput(bench, endpoint, args.deliveries, timeout=600),
                "latency": latency(bench, args.rate, args.seconds),
                "setup": {
                    "delivery_worker_threads": args.concurrency,
                    "erp_gunicorn_workers": args.erp_workers,
                    "erp_threads_per_worker": 4,
                    "cores": os.cpu_count(),
                    # Other work on the machine skews every figure: look at this first.
                    "load_average_1min_at_end": round(os.getloadavg()[0], 2),
                },
            }
        finally:
            processes.stop_all()
    harness.publish_results("delivery_bench", lambda: print_report(result), result, json_path=args.output)


def print_report(result: dict) -> None:
    t, lat = result["throughput"], result["latency"]
    print(
        f"throughput: {t['deliveries']} deliveries ({t['body_bytes']} B bodies) in {t['seconds']} s "
        f"= {t['deliveries_per_second']} deliveries/s"
    )
    print(
        f"latency at {lat['achieved_rate']}/s completions ({lat['measured']} measured): p50 {lat['p50_ms']} ms, "
        f"p95 {lat['p95_ms']} ms, p99 {lat['p99_ms']} ms, max {lat['max_ms']} ms; "
        f"ledger {lat['ledger_rows']} rows for {lat['ledger_distinct_jobs']} jobs"
    )
    print(
        f"machine load average (1 min) at the end: {result['setup']['load_average_1min_at_end']} "
        f"on {result['setup']['cores']} cores"
    )


if __name__ == "__main__":
    main()
