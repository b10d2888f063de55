"""Running the real processes of the system for end-to-end and fault-injection tests.

Every process is a real subprocess (relay, Celery workers, scheduler) against the test
database, an isolated RabbitMQ vhost and the provider simulator. Tests drive the system
through its API and observe PostgreSQL; faults are real signals.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.db import connection
from kombu import Connection

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent

# Short clocks so leases expire, retries come due and lost messages are recovered in seconds.
FAST_CLOCKS = {
    "LEASE_SECONDS": "4",
    "HEARTBEAT_SECONDS": "1",
    "ATTEMPT_TIMEOUT_SECONDS": "3",
    "COMMIT_MARGIN_SECONDS": "0.5",
    "RETRY_BASE_SECONDS": "0.2",
    "RETRY_CAP_SECONDS": "1",
    "INGRESS_RECOVERY_SECONDS": "2",
    "SCHEDULER_INTERVAL_SECONDS": "0.3",
    "WORKER_SLOT_SECONDS": "5",
    "OUTBOX_CLAIM_SECONDS": "3",
}


def celery_args(name: str, queues: str, concurrency: int, *, app: str = "config", loglevel: str = "INFO") -> list[str]:
    """The arguments of ``celery`` for a worker of the Procfile's shape (threads pool, no
    mingle or gossip), named ``name``."""
    return [
        "-A",
        app,
        "worker",
        "-Q",
        queues,
        "--pool",
        "threads",
        "--concurrency",
        str(concurrency),
        "-n",
        f"{name}-{os.getpid()}@%h",
        "--without-mingle",
        "--without-gossip",
        "--loglevel",
        loglevel,
    ]


def stop_process_groups(procs: dict[str, subprocess.Popen], *, grace_seconds: float) -> None:
    """SIGTERM each process group still running (SIGCONT first: one may have been SIGSTOPped on
    purpose), SIGKILL those that outlive ``grace_seconds``, and forget them all. Tests and the
    benchmarks start every process in its own group (``start_new_session``)."""
    for proc in procs.values():
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGCONT)
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
    deadline = time.monotonic() + grace_seconds
    for proc in procs.values():
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    procs.clear()


def raise_if_any_exited(procs: dict[str, subprocess.Popen], log_dir: Path) -> None:
    """A benchmark phase whose process died measures nothing: say which, and where its log is."""
    for name, proc in procs.items():
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}: see {log_dir / (name + '.log')}")


def ensure_vhost(name: str) -> str:
    """An isolated RabbitMQ vhost for this test run (created once; rabbitmqctl is local)."""
    subprocess.run(["rabbitmqctl", "add_vhost", name], capture_output=True, check=False)
    subprocess.run(
        ["rabbitmqctl", "set_permissions", "-p", name, "guest", ".*", ".*", ".*"], capture_output=True, check=True
    )
    return f"amqp://guest:guest@127.0.0.1:5672/{name}"


def purge_queues(broker_url: str) -> None:
    from config.topology import ALL_QUEUES, declare_topology

    with Connection(broker_url) as conn:
        declare_topology(conn)
        for queue in ALL_QUEUES:
            queue(conn.default_channel).purge()


def queue_depth(broker_url: str, name: str) -> int:
    from config import topology

    with Connection(broker_url) as conn:
        return topology.queue_depth(conn, name)


def wait_for(
    condition: Callable[[], object],
    *,
    timeout: float = 30.0,
    interval: float = 0.1,
    message: str | Callable[[], str] = "condition",
) -> object:
    """Poll ``condition`` until truthy; on timeout fail with ``message`` (a callable is called
    then, e.g. to attach the processes' logs)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            text = message() if callable(message) else message
            raise AssertionError(f"timed out after {timeout}s waiting for {text}")
        time.sleep(interval)


@dataclass
class SystemProcesses:
    """Starts and stops named subprocesses sharing one environment."""

    env: dict[str, str]
    log_dir: Path
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    def start(self, name: str, argv: list[str], **extra_env: str) -> subprocess.Popen:
        log = open(self.log_dir / f"{name}.log", "ab")
        proc = subprocess.Popen(
            argv, cwd=ROOT, env={**self.env, **extra_env}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.procs[name] = proc
        return proc

    def relay(self, name: str = "relay", **extra_env: str) -> subprocess.Popen:
        return self.start(name, [sys.executable, "manage.py", "run_outbox_relay", "--poll", "0.2"], **extra_env)

    def scheduler(self, name: str = "scheduler", **extra_env: str) -> subprocess.Popen:
        return self.start(name, [sys.executable, "manage.py", "run_scheduler"], **extra_env)

    def celery(self, name: str, queues: str, concurrency: int = 16, **extra_env: str) -> subprocess.Popen:
        argv = [str(VENV_BIN / "celery"), *celery_args(name, queues, concurrency)]
        return self.start(name, argv, **{"POSTGRES_POOL_MAX_SIZE": "8", **extra_env})

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs.get(name)
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=30)

    def wait_exit(self, name: str, timeout: float = 60) -> int:
        return self.procs[name].wait(timeout=timeout)

    def stop_all(self) -> None:
        stop_process_groups(self.procs, grace_seconds=15)

    def logs(self, names: Iterable[str] | None = None) -> str:
        out = []
        for path in sorted(self.log_dir.glob("*.log")):
            if names is None or path.stem in names:
                out.append(f"===== {path.stem} =====\n{path.read_text(errors='replace')[-6000:]}")
        return "\n".join(out)


def system_env(*, broker_url: str, simulator_url: str | None, media_root: Path, **overrides: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_DEVELOPMENT": "1",
        "POSTGRES_DB": connection.settings_dict["NAME"],
        "BROKER_URL": broker_url,
        "MEDIA_ROOT": str(media_root),
        "LOG_LEVEL": "INFO",
        **FAST_CLOCKS,
    }
    if simulator_url:
        env.update(
            {
                "EXTRACTION_PROVIDER": "openai",
                "OPENAI_BASE_URL": simulator_url,
                "OPENAI_API_KEY": "test",
                "OPENAI_TOKEN_LIMIT_PARAMETER": "max_tokens",
            }
        )
    env.update(overrides)
    return env


def job_states(job_ids: Iterable[str]) -> dict[str, str]:
    from extraction.models import ExtractionJob

    return {str(j.pk): j.state for j in ExtractionJob.objects.filter(pk__in=list(job_ids))}


def all_terminal(job_ids: list[str]) -> bool:
    states = job_states(job_ids)
    return len(states) == len(job_ids) and all(
        s in ("SUCCEEDED", "FAILED_TERMINAL", "REVIEW_REQUIRED") for s in states.values()
    )


def serves_health(port: int) -> bool:
    """Whether a web process of ours answers ``/healthz`` on ``port`` (loopback)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def start_web(processes: SystemProcesses, name: str, port: int, **extra_env: str) -> None:
    """A gunicorn of the project on ``port`` (the reference ERP is served by it too), up once healthy."""
    processes.start(
        name,
        [str(VENV_BIN / "gunicorn"), "config.wsgi", "--workers", "2", "--threads", "4", "--bind", f"127.0.0.1:{port}"],
        **extra_env,
    )
    wait_for(lambda: serves_health(port), timeout=30, message=processes.logs)


def connect_reference_erp(tenant, port: int, slug: str, event_types: Sequence[str] = ("extraction.completed.v1",)):
    """Register the reference ERP at ``port`` as ``tenant``'s webhook endpoint and give the ERP
    the endpoint's secret, as an ERP's administrator would: the registration."""
    from delivery.endpoints import register_endpoint
    from delivery.erp.models import ErpConnection

    registration = register_endpoint(
        tenant=tenant, url=f"http://127.0.0.1:{port}/erp/{slug}/webhooks", event_types=list(event_types)
    )
    ErpConnection.objects.create(
        slug=slug,
        tenant_label=slug,
        secrets=[{"key_id": registration.secret.key_id, "secret": registration.secret.secret}],
    )
    return registration
