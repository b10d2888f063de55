"""Notification latency: from a job transition's COMMIT to the WebSocket frame a client receives.

    .venv/bin/python bench/notify_bench.py --rate 50 --duration 20 [--clients 1]

Open loop through the real path: the transition and its NOTIFY, the notifier, daphne's
``/ws/jobs/`` consumer, WebSocket clients. POSTGRES_DB (default ``bench_notify``) must name a
bench* database. Target: p99 ≤ 100 ms. Method: bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import socket
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import harness
from tests.system import SystemProcesses

DEFAULT_DATABASE = "bench_notify"


def prepare_jobs(count: int) -> tuple[str, str, list[tuple[str, uuid.UUID, dict]]]:
    """A fresh tenant, its token, and ``count`` ACCEPTED jobs with their requested events."""
    from django.db import connection

    from accounts.models import ApiToken
    from extraction.models import OutboxEvent

    bench = harness.make_tenant("bench-notify")
    _, raw = ApiToken.issue(tenant=bench.tenant)
    jobs = []
    for _ in range(count):
        job_id = harness.accept_one(bench)
        event = OutboxEvent.objects.get(job_id=job_id, event_type="extraction.requested.v1")
        jobs.append((job_id, event.event_id, event.payload))
    connection.close()
    return str(bench.tenant.pk), raw, jobs


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


async def listen(
    ws_url: str, token: str, received: dict[str, float], ready: asyncio.Event, done: asyncio.Event
) -> None:
    import aiohttp

    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(ws_url, protocols=("jobs.v1", f"token.{token}"), origin="http://127.0.0.1") as ws,
    ):
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


def start_processes(port: int) -> SystemProcesses:
    """daphne on ``port`` and one notifier; their output goes to bench/results/notify-logs/."""
    log_dir = harness.RESULTS_DIR / "notify-logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    processes = SystemProcesses(env={**os.environ, "LOG_LEVEL": "WARNING"}, log_dir=log_dir)
    processes.start(
        "daphne", [str(harness.VENV_BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"]
    )
    processes.start("notifier", [sys.executable, "manage.py", "run_notifier"])
    return processes


async def run(args: argparse.Namespace) -> dict:
    harness.setup_django()
    from django.db import connection

    from extraction.models import JobEvent

    count = int(args.rate * args.duration)
    print(f"preparing {count} jobs …", flush=True)
    tenant_id, token, jobs = await asyncio.to_thread(prepare_jobs, count)

    port = harness.free_loopback_port()
    processes = start_processes(port)
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
        return {
            "rate_per_s": args.rate,
            "duration_s": args.duration,
            "clients": args.clients,
            "transitions": count,
            "frames_expected": len(from_commit),
            "frames_missing": sum(1 for v in from_commit if v == math.inf),
            "from_commit_ms": harness.summarize(from_commit, ndigits=2),
            "from_created_at_ms": harness.summarize(from_created, ndigits=2),
        }
    finally:
        processes.stop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=50, help="transitions per second")
    parser.add_argument("--duration", type=float, default=20, help="seconds")
    parser.add_argument("--clients", type=int, default=1, help="WebSocket clients, each subscribed to the tenant")
    parser.add_argument("--threads", type=int, default=4, help="transition driver threads")
    args = parser.parse_args()
    harness.ensure_database(harness.own_database(DEFAULT_DATABASE))
    summary = asyncio.run(run(args))
    harness.publish_results("notify_bench", lambda: print_report(summary), summary)


def print_report(summary: dict) -> None:
    print(json.dumps(summary, indent=2))
    target = summary["from_commit_ms"]["p99"]
    print(f"p99 commit → frame: {target} ms (target ≤ 100 ms): {'OK' if target <= 100 else 'MISSED'}")


if __name__ == "__main__":
    main()
