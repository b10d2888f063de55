"""The Procfile's real processes in a bench sandbox of their own, and what a run watches them by.

- The sandbox (:func:`sandbox_named`: a PostgreSQL database, RabbitMQ vhost and Redis database),
  emptied by :func:`reset_sandbox`, and a tenant with an API token (:func:`make_api_tenant`).
- :class:`System`: the web, relay, ingress, llm and delivery workers, the scheduler (and the
  notifier) as a :class:`ProcessPlan` says, each started from a :class:`ProcessSpec` that can
  start it again; the provider simulator as the model (:func:`simulator_config`,
  :func:`simulator_counts`).
- :class:`Sampler`: every second a :class:`Tick` of the pipeline (job states, outbox, webhook
  deliveries, queue depths) and, through a :class:`ResourceMeter`, the CPU and memory of every
  process set read from /proc.
- The jobs a run leaves: :func:`wait_for_drain`, :func:`job_rows`.

The processes of the load report (tests/acceptance/load.py) and of the fault suite
(tests/acceptance/faults.py); the benchmarks' are in bench/harness.py.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from bench import harness

PROJECT_ROOT = harness.PROJECT_ROOT
TERMINAL = harness.TERMINAL_STATES
WORK_QUEUES = ("ingress", "llm", "delivery")
DEAD_LETTER_QUEUES = ("ingress.dlq", "llm.dlq", "delivery.dlq", "extraction.dead_letters")
# Tables a run empties besides the job tables: whatever hangs off the previous run's jobs.
EXTRA_TABLES = (
    "webhook_delivery_attempts",
    "webhook_deliveries",
    "webhook_events",
    "webhook_secrets",
    "webhook_endpoints",
    "documents",
)


# --- the sandbox ---------------------------------------------------------------------------------


def sandbox_named(name: str, redis_db: int) -> harness.Sandbox:
    """A run's own database and vhost ``name`` and Redis database: a run empties the job tables
    and the queues, so the name must be a bench one, and two runs at once need two sandboxes."""
    if not name.startswith("bench") or not name.replace("_", "").isalnum():
        raise ValueError(f"{name!r}: a sandbox is named bench* (letters, digits, _)")
    if not 0 <= redis_db <= 15:
        raise ValueError("the Redis database is 0-15")
    return harness.Sandbox(database=name, vhost=name, redis_db=redis_db, app_prefix=f"{name}-")


def reset_sandbox(sandbox: harness.Sandbox, *, extra_tables: Iterable[str] = EXTRA_TABLES) -> None:
    """Empty job, delivery and document tables, the limiter's keys and the vhost's queues."""
    existing = []
    with psycopg.connect(sandbox.dsn(app="setup"), autocommit=True) as conn:
        for table in extra_tables:
            found: Any = conn.execute("SELECT to_regclass(%s)", [table]).fetchone()
            if found[0] is not None:
                existing.append(table)
        if existing:
            conn.execute(f"TRUNCATE {', '.join(existing)} CASCADE")
    sandbox.reset()


def make_api_tenant(slug: str) -> tuple[Any, str]:
    """A tenant with the default limits and an API token; returns (tenant, raw token)."""
    from accounts.models import ApiToken, Role, create_tenant

    tenant = create_tenant(slug=f"{slug}-{uuid.uuid4().hex[:6]}")
    # The load sends the same sample invoices again and again: not duplicates to hold back.
    type(tenant).objects.filter(pk=tenant.pk).update(validation_overrides={"possible_duplicate": "off"})
    _, raw = ApiToken.issue(tenant=tenant, role=Role.MEMBER, name="load")
    return tenant, raw


# --- the processes -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProcessPlan:
    """How many of each Procfile process, with the Procfile's concurrency and database pools."""

    web_workers: int = 4
    ingress: int = 1
    ingress_concurrency: int = 8
    ingress_pool: int = 8
    llm: int = 1
    llm_concurrency: int = 300
    llm_pool: int = 20
    delivery: int = 1
    delivery_concurrency: int = 16
    delivery_pool: int = 16
    notifier: bool = False

    @classmethod
    def parse(cls, text: str, **overrides: Any) -> ProcessPlan:
        """``web=4,ingress=1,worker=1,delivery=1``: processes per role (web: gunicorn workers)."""
        names = {"web": "web_workers", "ingress": "ingress", "worker": "llm", "llm": "llm", "delivery": "delivery"}
        values: dict[str, Any] = dict(overrides)
        for item in filter(None, text.split(",")):
            role, _, count = item.partition("=")
            if role.strip() not in names or not count.strip().isdigit() or int(count) < 1:
                raise argparse.ArgumentTypeError(f"{item!r}: expected ROLE=N with ROLE one of {', '.join(names)}")
            values[names[role.strip()]] = int(count)
        return cls(**values)


@dataclass
class ProcessSpec:
    role: str
    argv: list[str]
    env: dict[str, str]
    ready_marker: str | None = None  # a line its log prints once it serves (Celery: "ready.")
    health_port: int | None = None  # or a loopback port whose /healthz answers 200 once it serves


class System(harness.Services):
    """The Procfile's processes in a sandbox, each started from a spec that can start it again;
    every start of a process (a generation) logs to ``<name>.<generation>.log``."""

    def __init__(self, sandbox: harness.Sandbox, *, log_dir: Path, media_root: Path, **env: str) -> None:
        super().__init__(sandbox, log_dir=log_dir, media_root=media_root, **env)
        # The Procfile gives the web, ingress, llm, delivery and scheduler processes one
        # prometheus_client multiprocess directory; a run starts it empty.
        self.env.pop("PROMETHEUS_MULTIPROC_DIR", None)  # the caller's, e.g. bin/run's: not this run's
        self.metrics_dir = log_dir.parent / "prometheus"
        shutil.rmtree(self.metrics_dir, ignore_errors=True)
        self.metrics_dir.mkdir(parents=True)
        self.specs: dict[str, ProcessSpec] = {}
        self.generation: Counter[str] = Counter()
        self.web_port = 0

    def launch(self, name: str, spec: ProcessSpec, **extra_env: str) -> subprocess.Popen[bytes]:
        self.specs[name] = spec
        self.generation[name] += 1
        log = open(self.log_path(name), "ab")
        env = {**self.env, **spec.env, "PGAPPNAME": f"{self.sandbox.app_prefix}{name}", **extra_env}
        proc = subprocess.Popen(
            spec.argv, cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        self.procs[name] = proc
        return proc

    def log_path(self, name: str, generation: int | None = None) -> Path:
        return self.log_dir / f"{name}.{generation or self.generation[name]}.log"

    def relaunch(self, name: str, **extra_env: str) -> subprocess.Popen[bytes]:
        return self.launch(name, self.specs[name], **extra_env)

    def log_tail(self, name: str, lines: int = 30, generation: int | None = None) -> str:
        try:
            text = self.log_path(name, generation).read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def is_ready(self, name: str) -> bool:
        spec = self.specs[name]
        proc = self.procs.get(name)
        if proc is None or proc.poll() is not None:
            return False
        if spec.health_port is not None:
            return _healthy(spec.health_port)
        if spec.ready_marker is None:
            return True
        return spec.ready_marker in self.log_path(name).read_text(errors="replace")

    def wait_ready(self, names: Iterable[str], timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        pending = set(names)
        while pending and time.monotonic() < deadline:
            for name in list(pending):
                proc = self.procs.get(name)
                if proc is not None and proc.poll() is not None:
                    raise RuntimeError(f"{name} exited at start-up:\n{self.log_tail(name)}")
                if self.is_ready(name):
                    pending.discard(name)
            time.sleep(0.2)
        if pending:
            raise RuntimeError(f"not ready after {timeout} s: {sorted(pending)} (logs in {self.log_dir})")

    # -- the Procfile's processes -----------------------------------------------------------------
    def celery_spec(self, role: str, name: str, queue: str, concurrency: int, pool: int) -> ProcessSpec:
        argv = [str(harness.VENV_BIN / "celery"), *harness.celery_args(name, queue, concurrency)]
        return ProcessSpec(role, argv, {"POSTGRES_POOL_MAX_SIZE": str(pool), **self.metrics_env}, "ready.")

    @property
    def metrics_env(self) -> dict[str, str]:
        return {"PROMETHEUS_MULTIPROC_DIR": str(self.metrics_dir)}

    def start_web(self, workers: int) -> None:
        self.web_port = harness.free_loopback_port()
        argv = [
            str(harness.VENV_BIN / "gunicorn"),
            "config.wsgi",
            "--config",
            "config/gunicorn_hooks.py",
            "--workers",
            str(workers),
            "--bind",
            f"127.0.0.1:{self.web_port}",
            "--access-logfile",
            "-",
            "--forwarded-allow-ips",
            "127.0.0.1",
        ]
        self.launch("web", ProcessSpec("web", argv, self.metrics_env, health_port=self.web_port))

    def start_pipeline(self, plan: ProcessPlan) -> list[str]:
        """relay, ingress, llm and delivery workers, scheduler (and the notifier); returns their names."""
        python = sys.executable
        self.launch("relay", ProcessSpec("relay", [python, "manage.py", "run_outbox_relay"], {}))
        names = ["relay"]
        for role, count, queue, concurrency, pool in (
            ("ingress", plan.ingress, "ingress", plan.ingress_concurrency, plan.ingress_pool),
            ("worker", plan.llm, "llm", plan.llm_concurrency, plan.llm_pool),
            ("delivery", plan.delivery, "delivery", plan.delivery_concurrency, plan.delivery_pool),
        ):
            for k in range(1, count + 1):
                name = role if k == 1 else f"{role}-{k}"
                self.launch(name, self.celery_spec(role, name, queue, concurrency, pool))
                names.append(name)
        self.launch("scheduler", ProcessSpec("scheduler", [python, "manage.py", "run_scheduler"], self.metrics_env))
        names.append("scheduler")
        if plan.notifier:
            self.launch("notifier", ProcessSpec("notifier", [python, "manage.py", "run_notifier"], {}))
            names.append("notifier")
        return names

    def stop(self, name: str, *, grace_seconds: float = 20) -> None:
        proc = self.procs.pop(name, None)
        if proc is not None:
            harness.stop_process_groups({name: proc}, grace_seconds=grace_seconds)


def _healthy(port: int) -> bool:
    import urllib.request

    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
            f"http://127.0.0.1:{port}/healthz", timeout=2
        ) as response:
            return response.status == 200
    except OSError:
        return False


def simulator_counts(system: System) -> dict[str, int]:
    stats = system.simulator_stats()
    return {
        "calls": stats["calls"],
        "prompt_tokens": stats["tokens"]["prompt"],
        "completion_tokens": stats["tokens"]["completion"],
    }


def simulator_config(latency_mean: float, latency_p95: float, seed: int, **faults: Any) -> dict[str, Any]:
    return {"latency_mean_seconds": latency_mean, "latency_p95_seconds": latency_p95, "seed": seed, **faults}


# --- sampling ------------------------------------------------------------------------------------


@dataclass
class Tick:
    """The pipeline at one instant (epoch seconds ``t``)."""

    t: float
    runnable: int  # READY + RETRY_SCHEDULED
    eligible: int  # ... whose available_at has come
    oldest_eligible_age: float
    running: int
    expired_leases: int  # RUNNING with a lease past its end (the reaper's next work)
    accepted_state: int  # ACCEPTED: not yet taken in by ingress
    terminal: int
    jobs: int
    outbox_unpublished: int
    outbox_oldest_age: float
    deliveries_pending: int
    deliveries_due: int
    delivery_oldest_due_age: float
    queues: dict[str, int | None] = field(default_factory=dict)


TICK_SQL = """
SELECT count(*) FILTER (WHERE state IN ('READY', 'RETRY_SCHEDULED')),
       count(*) FILTER (WHERE state IN ('READY', 'RETRY_SCHEDULED') AND available_at <= now()),
       coalesce(extract(epoch FROM now() - min(available_at)
                FILTER (WHERE state IN ('READY', 'RETRY_SCHEDULED') AND available_at <= now())), 0)::float8,
       count(*) FILTER (WHERE state = 'RUNNING'),
       count(*) FILTER (WHERE state = 'RUNNING' AND lease_until < now()),
       count(*) FILTER (WHERE state = 'ACCEPTED'),
       count(*) FILTER (WHERE state IN ('SUCCEEDED', 'FAILED_TERMINAL', 'REVIEW_REQUIRED')),
       count(*),
       (SELECT count(*) FROM outbox_events WHERE published_at IS NULL),
       coalesce((SELECT extract(epoch FROM now() - min(created_at)) FROM outbox_events WHERE published_at IS NULL), 0)::float8,
       (SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'),
       (SELECT count(*) FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= now()),
       coalesce((SELECT extract(epoch FROM now() - min(next_attempt_at)) FROM webhook_deliveries
                  WHERE state = 'pending' AND next_attempt_at <= now()), 0)::float8
  FROM extraction_jobs
"""


class ResourceMeter:
    """CPU seconds and memory of process sets over a window, read from /proc each sample: a
    set is a list of PIDs (a process group, the sandbox's PostgreSQL backends, a server's
    processes). A PID already there at the first sample counts from then, one born later from
    its birth; a process that ends between samples loses at most its last second."""

    def __init__(self) -> None:
        self.first: dict[tuple[str, int], float] = {}
        self.last: dict[tuple[str, int], float] = {}
        self.peak_rss: Counter[str] = Counter()
        self.peak_anon: Counter[str] = Counter()
        self.started = False

    def sample(self, sets: dict[str, list[int]]) -> None:
        for name, pids in sets.items():
            rss = anon = 0
            for pid in pids:
                cpu = harness.cpu_seconds(pid)
                if cpu == 0.0 and not os.path.exists(f"/proc/{pid}"):
                    continue
                key = (name, pid)
                if key not in self.first:
                    self.first[key] = cpu if not self.started else 0.0
                self.last[key] = cpu
                memory = _memory(pid)
                rss += memory[0]
                anon += memory[1]
            self.peak_rss[name] = max(self.peak_rss[name], rss)
            self.peak_anon[name] = max(self.peak_anon[name], anon)
        self.started = True

    def report(self, seconds: float) -> dict[str, dict[str, float]]:
        cpu: dict[str, float] = {}
        for key, last in self.last.items():
            cpu[key[0]] = cpu.get(key[0], 0.0) + max(0.0, last - self.first.get(key, 0.0))
        names = sorted(set(cpu) | set(self.peak_rss))
        return {
            name: {
                "cpu_seconds": round(cpu.get(name, 0.0), 2),
                "cores": round(cpu.get(name, 0.0) / seconds, 3) if seconds > 0 else 0.0,
                "peak_rss_mib": round(self.peak_rss[name] / 2**20, 1),
                "peak_private_mib": round(self.peak_anon[name] / 2**20, 1),
            }
            for name in names
        }


def _memory(pid: int) -> tuple[int, int]:
    """(VmRSS, RssAnon) in bytes: the resident set, and the part that is the process's own."""
    rss = anon = 0
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("RssAnon:"):
                    anon = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, anon


def process_table() -> tuple[dict[int, list[int]], dict[str, list[int]]]:
    """(PIDs by process group, PIDs by command name) of every process on the machine."""
    groups: dict[int, list[int]] = {}
    commands: dict[str, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                text = handle.read()
        except OSError:
            continue
        command = text[text.find("(") + 1 : text.rfind(")")]
        fields = text.rsplit(")", 1)[1].split()
        groups.setdefault(int(fields[2]), []).append(int(entry))
        commands.setdefault(command, []).append(int(entry))
    return groups, commands


# The shared servers, by command name; their CPU is everyone's on this machine, not only ours.
SERVERS = {
    "postgresql (all server processes)": "postgres",
    "rabbitmq (beam.smp)": "beam.smp",
    "redis-server": "redis-server",
}


class Sampler:
    """Every second, in a thread: a :class:`Tick` of the pipeline (PostgreSQL and RabbitMQ read
    directly, never through a fault's proxy) and the resources of every process set."""

    def __init__(self, system: System, *, interval: float = 1.0, bench_pids: Iterable[int] = ()) -> None:
        self.system = system
        self.sandbox = system.sandbox
        self.interval = interval
        self.ticks: list[Tick] = []
        self.meter = ResourceMeter()
        self.bench_pids = [os.getpid(), *bench_pids]
        self.errors: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._db: psycopg.Connection[Any] | None = None
        self._broker: Any = None
        self.started_at = 0.0
        self.stopped_at = 0.0

    def start(self) -> None:
        self.started_at = time.time()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            try:
                self.sample()  # the state the run ended in, after the drain
            except Exception as exc:  # noqa: BLE001 - a missed sample is a gap, not a failure
                self.errors[type(exc).__name__] += 1
        self.stopped_at = time.time()
        if self._db is not None:
            self._db.close()
        if self._broker is not None:
            self._broker.release()

    def latest(self) -> Tick | None:
        return self.ticks[-1] if self.ticks else None

    def _run(self) -> None:
        while True:
            began = time.monotonic()
            try:
                self.sample()
            except Exception as exc:  # noqa: BLE001 - a missed sample is a gap in the plot, not a failure
                self.errors[type(exc).__name__] += 1
            if self._stop.wait(max(0.0, self.interval - (time.monotonic() - began))):
                return

    def _connection(self) -> psycopg.Connection[Any]:
        if self._db is None or self._db.closed or self._db.broken:
            self._db = psycopg.connect(self.sandbox.dsn(app="sampler"), autocommit=True, connect_timeout=5)
        return self._db

    def _queue_depths(self) -> dict[str, int | None]:
        from kombu import Connection

        from config.topology import queue_depth

        depths: dict[str, int | None] = {}
        try:
            if self._broker is None:
                self._broker = Connection(self.sandbox.broker_url, connect_timeout=3)
                self._broker.ensure_connection(max_retries=1)
            for name in WORK_QUEUES + DEAD_LETTER_QUEUES:
                depths[name] = queue_depth(self._broker, name)
        except Exception:  # noqa: BLE001 - the broker is down or the queue not declared yet: a gap
            self.errors["rabbitmq"] += 1
            if self._broker is not None:
                self._broker.release()
            self._broker = None
            depths = {name: depths.get(name) for name in WORK_QUEUES + DEAD_LETTER_QUEUES}
        return depths

    def sample(self) -> None:
        conn = self._connection()
        try:
            row = conn.execute(TICK_SQL).fetchone()
            backends = [
                pid
                for (pid,) in conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = %s AND application_name LIKE %s",
                    [self.sandbox.database, f"{self.sandbox.app_prefix}%"],
                ).fetchall()
            ]
        except psycopg.Error:
            self._db = None
            raise
        assert row is not None
        tick = Tick(time.time(), *row)
        tick.queues = self._queue_depths()
        self.ticks.append(tick)
        groups, commands = process_table()
        sets: dict[str, list[int]] = {}
        for name, proc in list(self.system.procs.items()):
            role = self.system.specs[name].role if name in self.system.specs else name
            sets.setdefault(f"python: {role}", []).extend(groups.get(proc.pid, [proc.pid]))
        sets["python: this bench (accepter, sampler)"] = self.bench_pids
        sets["postgresql backends of the sandbox"] = backends
        for label, command in SERVERS.items():
            sets[label] = commands.get(command, [])
        self.meter.sample(sets)


# --- the jobs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobRow:
    job_id: str
    state: str
    error_class: str
    created_at: float
    terminal_at: float | None
    input_tokens: int
    output_tokens: int
    model_answers: int  # attempts whose model call answered with usage
    attempts: int


JOB_ROWS_SQL = """
SELECT j.id::text, j.state, j.error_class, extract(epoch FROM j.created_at)::float8, t.terminal_at,
       coalesce(a.input_tokens, 0), coalesce(a.output_tokens, 0), coalesce(a.model_answers, 0),
       coalesce(a.attempts, 0)
  FROM extraction_jobs j
  LEFT JOIN LATERAL (
        SELECT extract(epoch FROM min(e.created_at))::float8 AS terminal_at
          FROM job_events e
         WHERE e.job_id = j.id AND e.to_state IN ('SUCCEEDED', 'FAILED_TERMINAL', 'REVIEW_REQUIRED')) t ON true
  LEFT JOIN LATERAL (
        SELECT sum(x.input_tokens) AS input_tokens, sum(x.output_tokens) AS output_tokens,
               count(*) FILTER (WHERE x.input_tokens IS NOT NULL AND x.provider <> 'einvoice') AS model_answers,
               count(*) AS attempts
          FROM extraction_attempts x WHERE x.job_id = j.id) a ON true
 WHERE j.tenant_id = %s
"""


def job_rows(conn: psycopg.Connection[Any], tenant_id: uuid.UUID) -> list[JobRow]:
    return [JobRow(*row) for row in conn.execute(JOB_ROWS_SQL, [tenant_id]).fetchall()]


def wait_for_drain(conn: psycopg.Connection[Any], tenant_id: uuid.UUID, *, timeout: float, also: Any = None) -> bool:
    """Until every job of the tenant is terminal and the outbox is empty (and ``also()`` holds),
    at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        row: Any = conn.execute(
            "SELECT count(*) FILTER (WHERE state NOT IN ('SUCCEEDED', 'FAILED_TERMINAL', 'REVIEW_REQUIRED')), "
            "(SELECT count(*) FROM outbox_events WHERE published_at IS NULL) FROM extraction_jobs WHERE tenant_id = %s",
            [tenant_id],
        ).fetchone()
        if row[0] == 0 and row[1] == 0 and (also is None or also()):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(1.0)
