"""What the stack #3 prescribes costs per job before any of our code runs, measured in one run.

Run from the project root::

    .venv/bin/python bench/stack_floor.py [--quick]

#3 fixes the parts a job passes through: the outbox relay publishes every event with publisher
confirms and ``mandatory``; the ingress is a Celery task (acks late) consumed from a quorum
queue; the model is called through the official ``openai`` SDK. This measures those three on
this machine, each alone, with the project's settings, and sets them against #3's two targets
that execution_bench.py misses:

1. **relay publish**: ``OutboxRelay.publish`` of one event (Celery's message, kombu, py-amqp,
   confirm + mandatory) to a quorum queue of the work exchange; CPU of the publishing thread.
2. **Celery consume**: a Celery worker (``bench/stack_floor_app.py``: the project's app and
   settings, threads pool, 8 threads) running a task that does nothing; the worker process's
   CPU per message (``/proc``), less its idle rate.
3. **model call, client side**: the project's ``OpenAIProvider.extract`` (the SDK's generic
   POST, httpx, building the request and reading the answer) against the project's simulator
   answering at once (its answer memoized); CPU of the calling thread.

Each at a backlog (back to back) and spaced 33 ms apart (30 per second, the spacing of
execution_bench.py's phase a), because the same code costs more per step when the process
sleeps between steps. And the floor of execution_bench.py (4 processes looping a ``SKIP
LOCKED`` claim and a completion over a table of the jobs table's shape), three times.

A job is two relay publishes (its request and its terminal event), one ingress message and one
model call: their sum is the least CPU any job can cost on this stack, with PostgreSQL, the
claim, the validation, the completion and the simulator all left out. As built, a job is also
one wake-up consumed by the llm worker. The report says what the two targets leave for
PostgreSQL and our own code once the stack is paid: 40 % of the floor on this machine's cores
(CPU per job = cores / jobs per second), and 5 ms per job at 30 jobs/s.

Prints a table and writes ``bench/results/stack_floor.json``. Uses execution_bench.py's database
``benchexec`` (for the floor table) and vhost ``benchexec`` (its own queue ``stackfloor``).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

from bench import execution_lib as lib  # noqa: E402

RESULTS_DIR = PROJECT_ROOT / "bench" / "results"
SPACING_SECONDS = 1 / 30
EVENT_TYPE = "bench.stackfloor.v1"


@dataclass(frozen=True)
class Profile:
    backlog: int
    spaced: int
    floor_rows: int


FULL = Profile(backlog=3000, spaced=600, floor_rows=3000)
QUICK = Profile(backlog=1000, spaced=300, floor_rows=1000)


def per_call_cpu_ms(call: Callable[[int], None], count: int, spacing: float) -> float:
    """CPU ms of this thread per ``call(i)``, calls ``spacing`` seconds apart (0: back to back;
    an open loop: call i is due at start + i × spacing)."""
    started = time.monotonic()
    cpu = 0.0
    for i in range(count):
        if spacing:
            delay = started + i * spacing - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        before = time.thread_time()
        call(i)
        cpu += time.thread_time() - before
    return cpu * 1000 / count


# --- 1 and 2: the relay's publish and Celery's consume ----------------------------------------

class Publisher:
    """The relay's own publish, on a route to the bench queue (no database involved)."""

    def __init__(self) -> None:
        from bench.stack_floor_app import QUEUE, TASK
        from extraction import relay

        relay.ROUTES[EVENT_TYPE] = (relay.Route(QUEUE.exchange, QUEUE.routing_key, TASK),)
        self._relay = relay.OutboxRelay(broker_url=lib.BROKER_URL)
        self._row = relay.OutboxRow
        self.published = 0

    def __call__(self, _: int) -> None:
        event_id = uuid.uuid4()
        # The shape of an extraction.requested.v1 payload.
        payload = {"job_id": str(uuid.uuid4()), "event_version": 1, "state_version": 1}
        self._relay.publish(self._row(event_id=event_id, event_type=EVENT_TYPE, payload=payload))
        self.published += 1

    def close(self) -> None:
        self._relay.close()


def queue_depth() -> int:
    from kombu import Connection

    from bench.stack_floor_app import QUEUE
    from config.topology import queue_depth as depth

    with Connection(lib.BROKER_URL) as conn:
        return depth(conn, QUEUE.name)


def purge_bench_queue() -> None:
    from kombu import Connection

    from bench.stack_floor_app import QUEUE

    with Connection(lib.BROKER_URL) as conn:
        QUEUE(conn.default_channel).declare()
        QUEUE(conn.default_channel).purge()


def idle_cores(pid: int, seconds: float = 2.0) -> float:
    before = lib.cpu_seconds(pid)
    time.sleep(seconds)
    return (lib.cpu_seconds(pid) - before) / seconds


def wait_until_consumed(timeout: float = 120.0) -> None:
    """Until the queue has no ready message; then a moment for the last few in the threads."""
    deadline = time.monotonic() + timeout
    while queue_depth():
        if time.monotonic() > deadline:
            raise RuntimeError("the consumer did not drain the bench queue")
        time.sleep(0.1)
    time.sleep(0.5)


def publish_and_consume(services: lib.Services, profile: Profile) -> dict[str, Any]:
    celery = str(lib.VENV_BIN / "celery")
    purge_bench_queue()
    services._start("consumer", [celery, "-A", "bench.stack_floor_app", "worker", "-Q", "stackfloor",
                                 "--pool", "threads", "--concurrency", "8", "-n", "stackfloor@%h",
                                 "--without-mingle", "--without-gossip", "--loglevel", "INFO"],
                    POSTGRES_POOL_MAX_SIZE="8")
    services._wait_for_log("consumer", "ready.")
    pid = services.pid("consumer")
    publisher = Publisher()
    try:
        per_call_cpu_ms(publisher, 50, 0)  # connection, declarations, first-call imports
        wait_until_consumed()
        idle = idle_cores(pid)

        # Backlog: published while the consumer is stopped, consumed at once.
        lib.wait_for_quiet_machine()
        os.kill(pid, signal.SIGSTOP)
        try:
            publish_backlog = per_call_cpu_ms(publisher, profile.backlog, 0)
        finally:
            os.kill(pid, signal.SIGCONT)
            cpu_before, started = lib.cpu_seconds(pid), time.monotonic()
        wait_until_consumed()
        elapsed = time.monotonic() - started
        consume_backlog = (lib.cpu_seconds(pid) - cpu_before - idle * elapsed) * 1000 / profile.backlog

        # Spaced: 30 per second, each consumed before the next arrives.
        lib.wait_for_quiet_machine()
        cpu_before, started = lib.cpu_seconds(pid), time.monotonic()
        publish_spaced = per_call_cpu_ms(publisher, profile.spaced, SPACING_SECONDS)
        wait_until_consumed()
        elapsed = time.monotonic() - started
        consume_spaced = (lib.cpu_seconds(pid) - cpu_before - idle * elapsed) * 1000 / profile.spaced
    finally:
        publisher.close()
        services.check_alive()
    return {"relay_publish_ms": {"backlog": round(publish_backlog, 3), "spaced": round(publish_spaced, 3)},
            "celery_consume_ms": {"backlog": round(consume_backlog, 3), "spaced": round(consume_spaced, 3)},
            "consumer_idle_cores": round(idle, 4)}


# --- 3: the model call's client side ------------------------------------------------------------

def model_call(services: lib.Services, profile: Profile) -> dict[str, Any]:
    from extraction.providers.base import ProviderRequest
    from extraction.providers.openai_compat import OpenAIProvider
    from extraction.text import DocumentText

    services.start_simulator(latency_seconds=0.0)
    provider = OpenAIProvider(base_url=f"{services.simulator_url}/v1", api_key="bench")
    document = DocumentText(pages=(lib.SAMPLE_INVOICE,))

    def call(i: int) -> None:
        provider.extract(ProviderRequest(job_id=str(uuid.uuid4()), attempt=1, document=document,
                                         schema="invoice.v1", model="bench", max_output_tokens=2000,
                                         timeout_seconds=30.0))

    try:
        per_call_cpu_ms(call, 50, 0)
        lib.wait_for_quiet_machine()
        backlog = per_call_cpu_ms(call, profile.backlog, 0)
        lib.wait_for_quiet_machine()
        spaced = per_call_cpu_ms(call, profile.spaced, SPACING_SECONDS)
    finally:
        provider.close()
    return {"model_call_client_ms": {"backlog": round(backlog, 3), "spaced": round(spaced, 3)}}


# --- the floor ----------------------------------------------------------------------------------

def floor(profile: Profile, trials: int = 3) -> dict[str, Any]:
    runs = []
    for _ in range(trials):
        lib.fill_floor_table(profile.floor_rows, uuid.uuid4(), uuid.uuid4())
        runs.append(lib.run_floor(4, profile.floor_rows))
    return {"jobs_per_s": statistics.median(r.jobs_per_s for r in runs),
            "cpu_ms_per_job": statistics.median(r.cpu_ms_per_job for r in runs),
            "trials": [r.__dict__ for r in runs]}


# --- report -------------------------------------------------------------------------------------

CPU_TARGET_MS = 5.0
FLOOR_RATIO_TARGET = 0.40
# A job's outbox events: extraction.requested.v1 and its terminal event (completed, review
# required or dead-lettered), each published by the relay.
EVENTS_PER_JOB = 2


def conclude(parts: dict[str, Any], floor_run: dict[str, Any]) -> dict[str, Any]:
    cores = os.cpu_count() or 1
    out: dict[str, Any] = {"cores": cores}
    for regime in ("backlog", "spaced"):
        mandated = (EVENTS_PER_JOB * parts["relay_publish_ms"][regime] + parts["celery_consume_ms"][regime]
                    + parts["model_call_client_ms"][regime])
        out[f"mandated_ms_{regime}"] = round(mandated, 3)
        # As built, a job is also a wake-up: one more Celery message consumed by the llm worker.
        out[f"with_wake_up_ms_{regime}"] = round(mandated + parts["celery_consume_ms"][regime], 3)
    ceiling = cores * 1000 / out["mandated_ms_backlog"]
    out["ceiling_jobs_per_s"] = round(ceiling, 1)
    out["ceiling_floor_ratio"] = round(ceiling / floor_run["jobs_per_s"], 3)
    out["ceiling_with_wake_up_floor_ratio"] = round(
        cores * 1000 / out["with_wake_up_ms_backlog"] / floor_run["jobs_per_s"], 3)
    # What 40 % of the floor leaves per job, on these cores, for PostgreSQL and all of our code.
    budget = cores * 1000 / (FLOOR_RATIO_TARGET * floor_run["jobs_per_s"])
    out["floor_target_cpu_budget_ms"] = round(budget, 3)
    out["floor_target_left_ms"] = round(budget - out["with_wake_up_ms_backlog"], 3)
    # What 5 ms leaves at 30 jobs/s for our code in the processes (PostgreSQL is not counted there).
    out["cpu_target_left_ms"] = round(CPU_TARGET_MS - out["with_wake_up_ms_spaced"], 3)
    return out


def print_report(result: dict[str, Any]) -> None:
    parts, floor_run, c = result["parts"], result["floor"], result["conclusion"]
    print(f"\nstack floor ({result['profile']}, {c['cores']} cores, {result['python']})")
    print(f"{'CPU ms per job':<52}{'backlog':>10}{'30/s':>10}")
    rows = ((f"1. relay publish (confirm + mandatory) x {EVENTS_PER_JOB} events", "relay_publish_ms", EVENTS_PER_JOB),
            ("2. Celery consume of a no-op task (acks late)", "celery_consume_ms", 1),
            ("3. model call, client side (openai SDK)", "model_call_client_ms", 1))
    for label, key, times in rows:
        print(f"{label:<52}{times * parts[key]['backlog']:>10.3f}{times * parts[key]['spaced']:>10.3f}")
    print(f"{'   sum: the least any job costs on this stack':<52}{c['mandated_ms_backlog']:>10.3f}"
          f"{c['mandated_ms_spaced']:>10.3f}")
    print(f"{'   + a wake-up consumed (as built)':<52}{c['with_wake_up_ms_backlog']:>10.3f}"
          f"{c['with_wake_up_ms_spaced']:>10.3f}")
    print(f"floor: {floor_run['jobs_per_s']:.0f} jobs/s, {floor_run['cpu_ms_per_job']:.3f} ms CPU per job "
          f"(processes and backends; median of {len(floor_run['trials'])})")
    print(f"the sum alone allows {c['ceiling_jobs_per_s']:.0f} jobs/s on {c['cores']} cores = "
          f"{c['ceiling_floor_ratio']:.2f} x floor ({c['ceiling_with_wake_up_floor_ratio']:.2f} with the wake-up)")
    print(f"{FLOOR_RATIO_TARGET:.0%} of the floor leaves {c['floor_target_cpu_budget_ms']:.2f} ms CPU per job in all; "
          f"after the stack (with the wake-up) {c['floor_target_left_ms']:.2f} ms for PostgreSQL and our code")
    print(f"{CPU_TARGET_MS:.0f} ms per job at 30/s leaves {c['cpu_target_left_ms']:.2f} ms for our code "
          f"after the stack (with the wake-up)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer messages and calls (about a minute)")
    args = parser.parse_args()
    profile = QUICK if args.quick else FULL

    work = Path(tempfile.mkdtemp(prefix="stackfloor-"))
    log_dir = RESULTS_DIR / "stack-floor-logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    lib.ensure_vhost()
    lib.ensure_database()
    lib.configure_django(work)
    services = lib.Services(log_dir=log_dir, media_root=work, probe_dir=None)
    try:
        floor_run = floor(profile)
        parts = {**publish_and_consume(services, profile), **model_call(services, profile)}
    finally:
        services.stop_all()
    result = {"profile": "quick" if args.quick else "full", "python": platform.python_version(),
              "parts": parts, "floor": floor_run, "conclusion": conclude(parts, floor_run)}
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "stack_floor.json").write_text(json.dumps(result, indent=2))
    print_report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
