"""What the prescribed Celery / RabbitMQ / OpenAI-SDK stack costs per job before any of our code
runs, measured in one run.

Run from the project root::

    .venv/bin/python bench/stack_floor.py [--quick] [--consumer-threads N]

The relay's confirmed publishes, a Celery consume of a no-op task, the OpenAI SDK's client side
and RabbitMQ's own CPU, each alone, at a backlog and 33 ms apart, beside execution_bench.py's
floor; and what the two execution targets (40 % of the floor's rate; 5 ms of CPU per job at
30 jobs/s) leave for PostgreSQL and our code once that is paid. Uses execution_bench.py's
database and vhost (its own queues). Method and how to read the report: bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

from bench import execution_lib as lib  # noqa: E402
from bench import harness  # noqa: E402

SPACING_SECONDS = 1 / 30
REQUESTED = "bench.stackfloor.requested"
TERMINAL = "bench.stackfloor.terminal"


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


# --- 1 and 2: the relay's publishes, Celery's consume, the broker ------------------------------


class Publisher:
    """The relay's own publish (no database involved) of a job's two events: one like
    ``extraction.requested.v1`` to the consumed bench queue, one like its terminal event to a
    queue nobody consumes here (as in execution_bench.py, which runs no delivery worker)."""

    def __init__(self) -> None:
        from bench.stack_floor_app import QUEUE, TASK, TERMINAL_QUEUE
        from extraction.outbox import relay

        relay.ROUTES[REQUESTED] = (relay.Route(QUEUE.exchange, QUEUE.routing_key, TASK),)
        relay.ROUTES[TERMINAL] = (relay.Route(TERMINAL_QUEUE.exchange, TERMINAL_QUEUE.routing_key, TASK),)
        self._relay = relay.OutboxRelay(broker_url=lib.SANDBOX.broker_url)
        self._row = relay.OutboxRow

    def __call__(self, _: int) -> None:
        # The shape of the project's event payloads.
        payload = {"job_id": str(uuid.uuid4()), "event_version": 1, "state_version": 1}
        for event_type in (REQUESTED, TERMINAL):
            self._relay.publish(self._row(event_id=uuid.uuid4(), event_type=event_type, payload=payload))

    def close(self) -> None:
        self._relay.close()


class Broker:
    """The bench queues, and the RabbitMQ node's CPU (this machine runs it: ``beam.smp``)."""

    def __init__(self) -> None:
        from kombu import Connection

        from bench.stack_floor_app import QUEUE, TERMINAL_QUEUE

        self._queues = (QUEUE, TERMINAL_QUEUE)
        self._conn = Connection(lib.SANDBOX.broker_url)
        for queue in self._queues:
            queue(self._conn.default_channel).declare()
        found = subprocess.run(["pgrep", "-o", "beam.smp"], capture_output=True, text=True).stdout.split()
        self.pid = int(found[0]) if found else None

    def purge(self) -> None:
        for queue in self._queues:
            queue(self._conn.default_channel).purge()

    def ready(self) -> int:
        from config.topology import queue_depth

        return queue_depth(self._conn, self._queues[0].name)

    def cpu_seconds(self) -> float:
        return harness.cpu_seconds(self.pid) if self.pid else 0.0

    def close(self) -> None:
        self.purge()
        self._conn.release()


class Meter:
    """CPU seconds of some processes over a window, less what they spend idle."""

    def __init__(self, read: Callable[[], float], idle_cores: float) -> None:
        self._read, self._idle = read, idle_cores
        self._cpu, self._started = read(), time.monotonic()

    def ms_per(self, count: int) -> float:
        busy = self._read() - self._cpu - self._idle * (time.monotonic() - self._started)
        return max(0.0, busy) * 1000 / count


def idle_cores(read: Callable[[], float], seconds: float = 2.0) -> float:
    before = read()
    time.sleep(seconds)
    return (read() - before) / seconds


def wait_until_consumed(broker: Broker, timeout: float = 120.0) -> None:
    """Until the consumed queue has no ready message; then a moment for the last few in the
    consumer's threads."""
    deadline = time.monotonic() + timeout
    while broker.ready():
        if time.monotonic() > deadline:
            raise RuntimeError("the consumer did not drain the bench queue")
        time.sleep(0.1)
    time.sleep(0.5)


def publish_and_consume(services: harness.Services, profile: Profile, threads: int) -> dict[str, Any]:
    broker = Broker()
    broker.purge()
    services.celery("consumer", "stackfloor", concurrency=threads, app="bench.stack_floor_app")
    services.wait_until_ready(["consumer"])
    pid = services.pid("consumer")

    def consumer_cpu() -> float:
        return harness.cpu_seconds(pid)

    publisher = Publisher()
    try:
        per_call_cpu_ms(publisher, 50, 0)  # connection, declarations, first-call imports
        wait_until_consumed(broker)
        consumer_idle, broker_idle = idle_cores(consumer_cpu), idle_cores(broker.cpu_seconds)

        # Backlog: published while the consumer is stopped, consumed at once.
        harness.wait_for_quiet_machine()
        os.kill(pid, signal.SIGSTOP)
        try:
            broker_meter = Meter(broker.cpu_seconds, broker_idle)
            publish_backlog = per_call_cpu_ms(publisher, profile.backlog, 0)
            broker_publish_backlog = broker_meter.ms_per(profile.backlog)
        finally:
            os.kill(pid, signal.SIGCONT)
            consumer_meter, broker_meter = Meter(consumer_cpu, consumer_idle), Meter(broker.cpu_seconds, broker_idle)
        wait_until_consumed(broker)
        consume_backlog = consumer_meter.ms_per(profile.backlog)
        broker_backlog = broker_publish_backlog + broker_meter.ms_per(profile.backlog)

        # Spaced: a job's events 30 times per second, each consumed before the next arrives.
        harness.wait_for_quiet_machine()
        consumer_meter, broker_meter = Meter(consumer_cpu, consumer_idle), Meter(broker.cpu_seconds, broker_idle)
        publish_spaced = per_call_cpu_ms(publisher, profile.spaced, SPACING_SECONDS)
        wait_until_consumed(broker)
        consume_spaced = consumer_meter.ms_per(profile.spaced)
        broker_spaced = broker_meter.ms_per(profile.spaced)
    finally:
        publisher.close()
        broker.close()
        services.check_alive()
    return {
        "relay_publish_ms": {"backlog": round(publish_backlog, 3), "spaced": round(publish_spaced, 3)},
        "celery_consume_ms": {"backlog": round(consume_backlog, 3), "spaced": round(consume_spaced, 3)},
        "broker_ms": {"backlog": round(broker_backlog, 3), "spaced": round(broker_spaced, 3)},
        "idle_cores": {"consumer": round(consumer_idle, 4), "broker": round(broker_idle, 4)},
    }


# --- 3: the model call's client side ------------------------------------------------------------


def model_call(services: harness.Services, profile: Profile) -> dict[str, Any]:
    from extraction.intake.text import DocumentText
    from extraction.providers.base import ProviderRequest
    from extraction.providers.openai_compat import OpenAIProvider

    services.start_simulator({"latency_mean_seconds": 0.0})
    provider = OpenAIProvider(base_url=f"{services.simulator_url}/v1", api_key="bench")
    document = DocumentText(pages=(harness.SAMPLE_INVOICE,))

    def call(i: int) -> None:
        provider.extract(
            ProviderRequest(
                job_id=str(uuid.uuid4()),
                attempt=1,
                document=document,
                schema="invoice.v1",
                model="bench",
                max_output_tokens=2000,
                timeout_seconds=30.0,
            )
        )

    try:
        per_call_cpu_ms(call, 50, 0)
        harness.wait_for_quiet_machine()
        backlog = per_call_cpu_ms(call, profile.backlog, 0)
        harness.wait_for_quiet_machine()
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
    return {
        "jobs_per_s": statistics.median(r.jobs_per_s for r in runs),
        "cpu_ms_per_job": statistics.median(r.cpu_ms_per_job for r in runs),
        "trials": [r.__dict__ for r in runs],
    }


# --- report -------------------------------------------------------------------------------------

CPU_TARGET_MS = 5.0
FLOOR_RATIO_TARGET = 0.40


def conclude(parts: dict[str, Any], floor_run: dict[str, Any]) -> dict[str, Any]:
    cores = os.cpu_count() or 1
    out: dict[str, Any] = {"cores": cores}
    for regime in ("backlog", "spaced"):
        processes = (
            parts["relay_publish_ms"][regime]
            + parts["celery_consume_ms"][regime]
            + parts["model_call_client_ms"][regime]
        )
        out[f"processes_ms_{regime}"] = round(processes, 3)
        out[f"with_broker_ms_{regime}"] = round(processes + parts["broker_ms"][regime], 3)
        # As built, a job is also a wake-up: one more Celery message consumed by the llm worker
        # (its publish without confirm, and the broker's share of it, are not counted).
        out[f"with_wake_up_ms_{regime}"] = round(processes + parts["celery_consume_ms"][regime], 3)
    # What 40 % of the floor allows per job on these cores, for everything: the stack, the
    # broker, PostgreSQL and our code.
    budget = cores * 1000 / (FLOOR_RATIO_TARGET * floor_run["jobs_per_s"])
    out["floor_target_cpu_budget_ms"] = round(budget, 3)
    out["floor_target_left_ms"] = round(budget - out["with_broker_ms_backlog"], 3)
    out["stack_ceiling_floor_ratio"] = round(cores * 1000 / out["with_broker_ms_backlog"] / floor_run["jobs_per_s"], 3)
    # What 5 ms at 30 jobs/s leaves for our code in the processes (PostgreSQL and the broker
    # are not counted there).
    out["cpu_target_left_ms"] = round(CPU_TARGET_MS - out["processes_ms_spaced"], 3)
    out["cpu_target_left_with_wake_up_ms"] = round(CPU_TARGET_MS - out["with_wake_up_ms_spaced"], 3)
    return out


def print_report(result: dict[str, Any]) -> None:
    parts, floor_run, c = result["parts"], result["floor"], result["conclusion"]
    print(f"\nstack floor ({result['profile']}, {c['cores']} cores, {result['python']})")
    print(f"{'CPU ms per job':<58}{'backlog':>10}{'30/s':>10}")
    rows = (
        ("1. relay: publish its 2 events (confirm + mandatory)", "relay_publish_ms"),
        ("2. ingress: Celery consume of a no-op task (acks late)", "celery_consume_ms"),
        ("3. worker: model call, client side (openai SDK)", "model_call_client_ms"),
    )
    for label, key in rows:
        print(f"{label:<58}{parts[key]['backlog']:>10.3f}{parts[key]['spaced']:>10.3f}")
    print(
        f"{'   processes: the least any job costs on this stack':<58}{c['processes_ms_backlog']:>10.3f}"
        f"{c['processes_ms_spaced']:>10.3f}"
    )
    print(
        f"{'   + a wake-up consumed by the worker (as built)':<58}{c['with_wake_up_ms_backlog']:>10.3f}"
        f"{c['with_wake_up_ms_spaced']:>10.3f}"
    )
    print(
        f"{'4. RabbitMQ: the 2 events in, the first one out':<58}{parts['broker_ms']['backlog']:>10.3f}"
        f"{parts['broker_ms']['spaced']:>10.3f}"
    )
    print(f"{'   processes + broker':<58}{c['with_broker_ms_backlog']:>10.3f}{c['with_broker_ms_spaced']:>10.3f}")
    print(
        f"floor: {floor_run['jobs_per_s']:.0f} jobs/s, {floor_run['cpu_ms_per_job']:.3f} ms CPU per job "
        f"(processes and backends; median of {len(floor_run['trials'])})"
    )
    print(
        f"{FLOOR_RATIO_TARGET:.0%} of the floor: {c['floor_target_cpu_budget_ms']:.2f} ms of CPU per job on "
        f"{c['cores']} cores for everything; the stack and broker take {c['with_broker_ms_backlog']:.2f} "
        f"(alone they allow {c['stack_ceiling_floor_ratio']:.2f} x floor), leaving "
        f"{c['floor_target_left_ms']:.2f} ms for PostgreSQL and our code"
    )
    print(
        f"{CPU_TARGET_MS:.0f} ms per job at 30/s: the stack takes {c['processes_ms_spaced']:.2f} ms, leaving "
        f"{c['cpu_target_left_ms']:.2f} ms for our code ({c['cpu_target_left_with_wake_up_ms']:.2f} with a wake-up "
        f"message per job)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer messages and calls (about a minute)")
    parser.add_argument(
        "--consumer-threads",
        type=int,
        default=8,
        help="the Celery consumer's thread pool (8, as the ingress; the llm worker runs 300)",
    )
    args = parser.parse_args()
    profile = QUICK if args.quick else FULL

    work = Path(tempfile.mkdtemp(prefix="stackfloor-"))
    log_dir = harness.RESULTS_DIR / "stack-floor-logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    lib.SANDBOX.set_up(work)
    services = harness.Services(lib.SANDBOX, log_dir=log_dir, media_root=work)
    try:
        floor_run = floor(profile)
        parts = {**publish_and_consume(services, profile, args.consumer_threads), **model_call(services, profile)}
    finally:
        services.stop_all()
    result = {
        "profile": "quick" if args.quick else "full",
        "python": platform.python_version(),
        "consumer_threads": args.consumer_threads,
        "parts": parts,
        "floor": floor_run,
        "conclusion": conclude(parts, floor_run),
    }
    harness.publish_results("stack_floor", lambda: print_report(result), result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
