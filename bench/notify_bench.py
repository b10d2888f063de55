"""Notification latency: from a job transition's COMMIT to the WebSocket frame a client receives.

Runs the real path: the transition (``take_in_requested_event``: ACCEPTED → READY, a job_events
row and its NOTIFY in one transaction) → the notifier process (LISTEN, read, group_send on
channels-redis) → daphne's ``/ws/jobs/`` consumer → a WebSocket client (aiohttp) subscribed to
all of the tenant's jobs.

Method: open loop. Transition *i* is due at ``t0 + i/R``; a few driver threads commit them on
time whatever the pipeline does. Latency = frame received (client clock) − transition COMMIT
returned (driver clock, same host, same ``time.time()``). A frame that never arrives within
5 s counts as infinitely slow. Also reported: the same measured from ``job_events.created_at``
(the database's transaction start, so an upper bound that includes the transaction itself).

    createdb -h 127.0.0.1 -U postgres bench_notify          # once
    DJANGO_DEVELOPMENT=1 POSTGRES_DB=bench_notify .venv/bin/python manage.py migrate
    .venv/bin/python bench/notify_bench.py --rate 50 --duration 20 [--clients 1]

Target (issue 6, point 10): p99 ≤ 100 ms.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_DEVELOPMENT", "1")
os.environ.setdefault("POSTGRES_DB", "bench_notify")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def percentile(values: list[float], fraction: float) -> float:
    """Nearest rank; missing frames are +inf, so a p99 is finite only if 99 % arrived."""
    ordered = sorted(values)
    if not ordered:
        return math.inf
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def prepare_jobs(count: int) -> tuple[str, str, list[tuple[str, uuid.UUID, dict]]]:
    """A fresh tenant, its token, and ``count`` ACCEPTED jobs with their requested events."""
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.db import connection

    from accounts.models import ApiToken, Tenant, create_tenant
    from extraction.intake.acceptance import JobRequest, accept_job
    from extraction.intake.documents import store_document
    from extraction.models import OutboxEvent

    tenant = create_tenant(slug=f"bench-notify-{uuid.uuid4().hex[:8]}")
    Tenant.objects.filter(pk=tenant.pk).update(max_pending_jobs=10**9, max_pending_bytes=10**15,
                                               max_reserved_tokens=10**15, daily_spend_limit_micros=10**15)
    tenant.refresh_from_db()
    _, raw = ApiToken.issue(tenant=tenant)
    document, _ = store_document(tenant=tenant, upload=SimpleUploadedFile("i.txt", b"Invoice 1\nTotal 1.00 EUR\n"),
                                 filename="i.txt")
    jobs = []
    for _ in range(count):
        accepted = accept_job(tenant=tenant, idempotency_key=uuid.uuid4().hex, request=JobRequest(
            document=document, schema="invoice.v1", model_policy="default", options={},
            priority_class="batch", deadline_seconds=3600))
        event = OutboxEvent.objects.get(job_id=accepted.job_id, event_type="extraction.requested.v1")
        jobs.append((str(accepted.job_id), event.event_id, event.payload))
    connection.close()
    return str(tenant.pk), raw, jobs


def drive_transitions(jobs: list, rate: float, t0: float, committed: dict[str, float], threads: int) -> None:
    from django.db import connection

    from extraction.execution.lifecycle import take_in_requested_event

    def worker(offset: int) -> None:
        try:
            for i in range(offset, len(jobs), threads):
                delay = t0 + i / rate - time.time()
                if delay > 0:
                    time.sleep(delay)
                job_id, event_id, payload = jobs[i]
                take_in_requested_event(event_id=event_id, payload=payload)
                committed[job_id] = time.time()
        finally:
            connection.close()

    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()


async def listen(ws_url: str, token: str, received: dict[str, float], ready: asyncio.Event,
                 done: asyncio.Event) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as session, session.ws_connect(
            ws_url, protocols=("jobs.v1", f"token.{token}"), origin="http://127.0.0.1") as ws:
        await ws.send_json({"type": "subscribe", "job_id": None, "cursor": None})
        while not done.is_set():
            try:
                message = await asyncio.wait_for(ws.receive(), timeout=0.5)
            except TimeoutError:
                continue
            if message.type != aiohttp.WSMsgType.TEXT:
                raise RuntimeError(f"socket ended: {message.type} {message.data}")
            now = time.time()
            frame = json.loads(message.data)
            if frame["type"] == "subscribed":
                ready.set()
            elif frame["type"] == "job.changed" and frame["state_version"] == 2:
                received.setdefault(frame["job_id"], now)


def start_processes(port: int) -> list[subprocess.Popen]:
    """daphne on ``port`` and one notifier; their output goes to bench/results/notify_processes.log."""
    env = {**os.environ, "LOG_LEVEL": "WARNING"}
    results_dir = ROOT / "bench" / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    with (results_dir / "notify_processes.log").open("ab") as log:
        return [
            subprocess.Popen([str(Path(sys.executable).parent / "daphne"), "-b", "127.0.0.1", "-p", str(port),
                              "config.asgi:application"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True),
            subprocess.Popen([sys.executable, "manage.py", "run_notifier"], cwd=ROOT, env=env, stdout=log,
                             stderr=subprocess.STDOUT, start_new_session=True),
        ]


async def run(args: argparse.Namespace) -> dict:
    import django

    django.setup()
    from django.db import connection

    from extraction.models import JobEvent

    count = int(args.rate * args.duration)
    print(f"preparing {count} jobs …", flush=True)
    tenant_id, token, jobs = await asyncio.to_thread(prepare_jobs, count)

    port = free_port()
    procs = start_processes(port)
    try:
        deadline = time.monotonic() + 30
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            if time.monotonic() > deadline:
                raise RuntimeError("daphne did not start")
            await asyncio.sleep(0.1)
        await asyncio.sleep(2)  # the notifier LISTENs
        receivers: list[dict[str, float]] = [{} for _ in range(args.clients)]
        ready = [asyncio.Event() for _ in range(args.clients)]
        done = asyncio.Event()
        url = f"ws://127.0.0.1:{port}/ws/jobs/"
        listeners = [asyncio.create_task(listen(url, token, receivers[k], ready[k], done)) for k in range(args.clients)]
        await asyncio.wait_for(asyncio.gather(*(r.wait() for r in ready)), timeout=30)

        committed: dict[str, float] = {}
        t0 = time.time() + 0.5
        print(f"driving {count} transitions at {args.rate}/s to {args.clients} client(s) …", flush=True)
        await asyncio.to_thread(drive_transitions, jobs, args.rate, t0, committed, args.threads)
        await asyncio.sleep(5)
        done.set()
        await asyncio.gather(*listeners, return_exceptions=True)

        def created_at() -> dict[str, float]:
            rows = JobEvent.objects.filter(tenant_id=tenant_id, state_version=2).values_list("job_id", "created_at")
            values = {str(job): at.timestamp() for job, at in rows}
            connection.close()
            return values

        started = await asyncio.to_thread(created_at)
        from_commit, from_created = [], []
        for received in receivers:
            for job_id, _, _ in jobs:
                got = received.get(job_id)
                from_commit.append((got - committed[job_id]) * 1000 if got and job_id in committed else math.inf)
                from_created.append((got - started[job_id]) * 1000 if got and job_id in started else math.inf)
        summary = {
            "rate_per_s": args.rate, "duration_s": args.duration, "clients": args.clients,
            "transitions": count, "frames_expected": len(from_commit),
            "frames_missing": sum(1 for v in from_commit if v == math.inf),
            "from_commit_ms": {p: round(percentile(from_commit, q), 2) for p, q in
                               (("p50", .5), ("p95", .95), ("p99", .99), ("max", 1.0))},
            "from_created_at_ms": {p: round(percentile(from_created, q), 2) for p, q in
                                   (("p50", .5), ("p95", .95), ("p99", .99), ("max", 1.0))},
        }
        return summary
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=50, help="transitions per second")
    parser.add_argument("--duration", type=float, default=20, help="seconds")
    parser.add_argument("--clients", type=int, default=1, help="WebSocket clients, each subscribed to the tenant")
    parser.add_argument("--threads", type=int, default=4, help="transition driver threads")
    args = parser.parse_args()
    if not os.environ["POSTGRES_DB"].startswith("bench"):
        raise SystemExit("POSTGRES_DB must name a bench database (it gets a tenant and jobs added)")
    summary = asyncio.run(run(args))
    print(json.dumps(summary, indent=2))
    out = ROOT / "bench" / "results" / "notify.json"
    out.write_text(json.dumps(summary, indent=2))
    target = summary["from_commit_ms"]["p99"]
    print(f"p99 commit → frame: {target} ms (target ≤ 100 ms): {'OK' if target <= 100 else 'MISSED'}")


if __name__ == "__main__":
    main()
