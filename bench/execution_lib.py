"""Machinery of the execution benchmark (bench/execution_bench.py).

The real processes of the Procfile (relay, ingress and llm Celery workers, scheduler) and the
provider simulator, started as subprocesses on the benchmark's own database and RabbitMQ vhost;
what is read about them while they run (/proc CPU and RSS, PostgreSQL connections by
``application_name``, the simulator's in-flight calls, transactions by process); an open-loop
accepter calling :func:`extraction.intake.acceptance.accept_job`; and the floor, a plain ``FOR UPDATE
SKIP LOCKED`` claim/complete loop over a table of the jobs table's shape.

Django is imported lazily, after :func:`configure_django` has pointed it at the benchmark's
database, so the floor's processes (spawned) never load it.
"""
from __future__ import annotations

import io
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import psycopg

PROJECT_ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
PROBE_DIR = PROJECT_ROOT / "bench" / "probe"

DATABASE = "benchexec"
VHOST = "benchexec"
BROKER_URL = f"amqp://guest:guest@127.0.0.1:5672/{VHOST}"
# The capacity limiter keeps a provider pool's budget in Redis under keys named by the pool;
# a Redis database of our own keeps other runs' permits out of ours.
REDIS_URL = "redis://127.0.0.1:6379/11"
# The benchmark measures orchestration, not the admission policy: the pool's budget and the
# tenant's in-flight cap are set far above what one worker can reach.
POOL_LIMITS = {"POOL_MAX_IN_FLIGHT": "100000", "POOL_REQUESTS_PER_MINUTE": "100000000",
               "POOL_TOKENS_PER_MINUTE": "1000000000000"}
TENANT_MAX_IN_FLIGHT = 100_000
# Every connection of a benchmark process carries ``benchexec-<process>`` (libpq's PGAPPNAME),
# so pg_stat_activity tells whose connection it is without touching the settings.
APP_PREFIX = "benchexec-"
ORCHESTRATION = ("relay", "ingress", "worker", "scheduler")
TERMINAL_STATES = ("SUCCEEDED", "FAILED_TERMINAL", "REVIEW_REQUIRED")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

SAMPLE_INVOICE = (
    "ACME Supplies GmbH\nVAT ID: DE123456789\nIBAN: DE89 3704 0044 0532 0130 00\n"
    "Invoice number: INV-2026-001\nInvoice date: 2026-11-02\nDue date: 2026-12-02\nCurrency: EUR\n"
    "Widget 2 x 50.00 = 100.00\nNet total: 100.00 EUR\nVAT 19%: 19.00 EUR\nTotal: 119.00 EUR\n"
)


def admin_dsn(dbname: str = "postgres") -> str:
    return f"host=127.0.0.1 port=5432 user=postgres dbname={dbname} application_name={APP_PREFIX}monitor"


# --- /proc ---------------------------------------------------------------------------------------

def cpu_seconds(pid: int) -> float:
    """User + system CPU of one process (all its threads), or 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except FileNotFoundError:
        pass
    return 0


def thread_count(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent busy since boot (everything but idle and iowait)."""
    with open("/proc/stat") as handle:
        values = [int(v) for v in handle.readline().split()[1:]]
    return (sum(values[:8]) - values[3] - values[4]) / CLOCK_TICKS


# --- the processes -------------------------------------------------------------------------------

@dataclass
class Services:
    """The Procfile's execution processes and the simulator, on the benchmark's database and vhost."""

    log_dir: Path
    media_root: Path
    probe_dir: Path | None
    worker_concurrency: int = 300
    worker_pool_max: int = 20
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    simulator_url: str = ""

    def base_env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "DJANGO_DEVELOPMENT": "1",
            "POSTGRES_DB": DATABASE,
            "BROKER_URL": BROKER_URL,
            "REDIS_URL": REDIS_URL,
            **POOL_LIMITS,
            "MEDIA_ROOT": str(self.media_root),
            "EXTRACTION_PROVIDER": "openai",
            "OPENAI_BASE_URL": f"{self.simulator_url}/v1",
            "OPENAI_API_KEY": "bench",
            "LOG_LEVEL": "INFO",  # the deployed level: log lines per job are orchestration cost too
        }
        env.pop("PYTHONPATH", None)
        return env

    def _start(self, name: str, argv: list[str], **extra_env: str) -> subprocess.Popen:
        env = {**self.base_env(), "PGAPPNAME": f"{APP_PREFIX}{name}", **extra_env}
        if self.probe_dir is not None:
            env["PYTHONPATH"] = str(PROBE_DIR)
            env["BENCH_SQL_PROBE_FILE"] = str(self.probe_dir / f"{name}.json")
        log = open(self.log_dir / f"{name}.log", "ab")
        proc = subprocess.Popen(argv, cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        log.close()
        self.procs[name] = proc
        return proc

    def start_simulator(self, *, latency_seconds: float) -> None:
        """The simulator, with the builtin extractor's answer memoized per document: the model
        is not what is measured, and on two cores its CPU would be taken from orchestration."""
        argv = [sys.executable, str(Path(__file__).resolve()), "simulator", "--latency", str(latency_seconds)]
        env = {**self.base_env(), "PYTHONPATH": str(PROJECT_ROOT)}
        proc = subprocess.Popen(argv, cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        self.procs["simulator"] = proc
        deadline = time.monotonic() + 60
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("simulator exited before listening")
            if "listening on" in line:
                self.simulator_url = line.strip().rsplit(" ", 1)[-1]
                # Drain whatever else it prints so its pipe never fills.
                threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
                return
        raise RuntimeError("simulator not listening after 60 s")

    def start_orchestration(self) -> None:
        py = sys.executable
        celery = str(VENV_BIN / "celery")
        common = ["--pool", "threads", "--without-mingle", "--without-gossip", "--loglevel", "INFO"]
        self._start("relay", [py, "manage.py", "run_outbox_relay"])
        self._start("ingress", [celery, "-A", "config", "worker", "-Q", "ingress", "--concurrency", "8",
                                "-n", "ingress-bench@%h", *common], POSTGRES_POOL_MAX_SIZE="8")
        self._start("worker", [celery, "-A", "config", "worker", "-Q", "llm",
                               "--concurrency", str(self.worker_concurrency), "-n", "llm-bench@%h", *common],
                    POSTGRES_POOL_MAX_SIZE=str(self.worker_pool_max))
        self._start("scheduler", [py, "manage.py", "run_scheduler"])
        for name in ("ingress", "worker"):
            self._wait_for_log(name, "ready.")

    def _wait_for_log(self, name: str, text: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        path = self.log_dir / f"{name}.log"
        while time.monotonic() < deadline:
            if self.procs[name].poll() is not None:
                raise RuntimeError(f"{name} exited: see {path}")
            if text in path.read_text(errors="replace"):
                return
            time.sleep(0.2)
        raise RuntimeError(f"{name} not ready after {timeout} s: see {path}")

    def pid(self, name: str) -> int:
        return self.procs[name].pid

    def check_alive(self) -> None:
        from tests.system import raise_if_any_exited

        raise_if_any_exited(self.procs, self.log_dir)

    def stop_all(self) -> None:
        from tests.system import stop_process_groups

        stop_process_groups(self.procs, grace_seconds=20)

    # -- the simulator's HTTP control --------------------------------------------------------
    def simulator_stats(self) -> dict[str, Any]:
        with _DIRECT.open(f"{self.simulator_url}/_stats", timeout=10) as response:
            return json.load(response)

    def simulator_control(self, **changes: Any) -> None:
        _post(f"{self.simulator_url}/_control", changes)

    def simulator_reset(self) -> None:
        _post(f"{self.simulator_url}/_reset", {})


_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _post(url: str, payload: dict[str, Any]) -> None:
    request = urllib.request.Request(url, data=json.dumps(payload).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with _DIRECT.open(request, timeout=10) as response:
        response.read()


def run_memoized_simulator(latency_seconds: float) -> None:
    """``python bench/execution_lib.py simulator --latency S``: the project's simulator server
    (constant latency, no faults) whose extractor runs once per distinct document."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from tests.simulator import SimulatorConfig, builtin_extractor, run_simulator

    extract = builtin_extractor()
    answers: dict[tuple[str, ...], dict] = {}

    def memoized(document) -> dict:
        key = tuple(document.pages)
        answer = answers.get(key)
        if answer is None:
            answer = answers[key] = extract(document)
        return answer

    def announce(line: str) -> None:
        print(line, flush=True)

    run_simulator(SimulatorConfig(latency_mean_seconds=latency_seconds), extractor=memoized, announce=announce)


# --- broker and database set-up ------------------------------------------------------------------

def ensure_vhost() -> None:
    subprocess.run(["rabbitmqctl", "add_vhost", VHOST], capture_output=True, check=False)
    subprocess.run(["rabbitmqctl", "set_permissions", "-p", VHOST, "guest", ".*", ".*", ".*"],
                   capture_output=True, check=True)


def purge_queues() -> None:
    from kombu import Connection

    from config.topology import ALL_QUEUES, declare_topology

    with Connection(BROKER_URL) as conn:
        declare_topology(conn)
        for queue in ALL_QUEUES:
            queue(conn.default_channel).purge()


def configure_django(media_root: Path) -> None:
    os.environ.update({"DJANGO_DEVELOPMENT": "1", "POSTGRES_DB": DATABASE, "BROKER_URL": BROKER_URL,
                       "REDIS_URL": REDIS_URL, **POOL_LIMITS,
                       "MEDIA_ROOT": str(media_root), "DJANGO_SETTINGS_MODULE": "config.settings",
                       "PGAPPNAME": f"{APP_PREFIX}accepter"})
    sys.path.insert(0, str(PROJECT_ROOT))
    import django

    django.setup()


def ensure_database() -> None:
    """Create and migrate the benchmark's database; ``migrate`` (seconds of start-up on a busy
    machine) only when a migration file on disk is not applied yet."""
    with psycopg.connect(admin_dsn(), autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')
    on_disk = {(path.parent.parent.name, path.stem) for path in PROJECT_ROOT.glob("*/migrations/[0-9]*.py")}
    with psycopg.connect(admin_dsn(DATABASE), autocommit=True) as conn:
        try:
            applied = set(conn.execute("SELECT app, name FROM django_migrations").fetchall())
        except psycopg.errors.UndefinedTable:
            applied = set()
    if on_disk <= applied:
        return
    subprocess.run([sys.executable, "manage.py", "migrate", "--verbosity", "0"], cwd=PROJECT_ROOT, check=True,
                   env={**os.environ, "DJANGO_DEVELOPMENT": "1", "POSTGRES_DB": DATABASE})


EXECUTION_TABLES = ("review_decisions", "extraction_results", "extraction_attempts", "execution_inbox",
                    "quarantined_messages", "job_events", "outbox_events", "document_texts", "extraction_jobs")


def reset_capacity_limiter() -> None:
    """No permits or windows left over from an earlier run (our own Redis database)."""
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter("cap:*"))
    if keys:
        client.delete(*keys)
    client.close()


def reset_execution_tables() -> None:
    """Every run starts from empty queue tables: a table grown by earlier runs would be
    measured, not the code."""
    with psycopg.connect(admin_dsn(DATABASE), autocommit=True) as conn:
        conn.execute(f"TRUNCATE {', '.join(EXECUTION_TABLES)} CASCADE")
        conn.execute("UPDATE accounts_tenantusage SET pending_jobs = 0, pending_bytes = 0, reserved_tokens = 0")
        conn.execute(f"VACUUM ANALYZE {', '.join(EXECUTION_TABLES)}")
        # The tenants' usage rows are updated by every accept and completion and read by every
        # claim: the pages earlier runs left behind would be measured too (nothing else runs yet).
        conn.execute("VACUUM FULL ANALYZE accounts_tenantusage")


@dataclass(frozen=True)
class BenchTenant:
    tenant: Any
    document: Any


def make_tenant(label: str) -> BenchTenant:
    """A tenant with one stored text invoice; every job of a phase extracts that document."""
    from accounts.models import create_tenant
    from extraction.intake.documents import store_document

    from accounts.models import Tenant

    tenant = create_tenant(slug=f"bench-{label}-{uuid.uuid4().hex[:6]}")
    Tenant.objects.filter(pk=tenant.pk).update(max_in_flight=TENANT_MAX_IN_FLIGHT)
    tenant.refresh_from_db()
    document, _ = store_document(tenant=tenant, upload=io.BytesIO(SAMPLE_INVOICE.encode()), filename="invoice.txt")
    return BenchTenant(tenant=tenant, document=document)


# --- accepting jobs ------------------------------------------------------------------------------

class AcceptTransactions:
    """Counts the accepter's own transactions (Django execute wrapper): they are not
    orchestration, but pg_stat_database counts them with everything else."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.autocommit_statements = 0
        self.accept_calls = 0

    def __call__(self, execute, sql, params, many, context):
        if not context["connection"].in_atomic_block:
            with self._lock:
                self.autocommit_statements += 1
        return execute(sql, params, many, context)

    def called(self) -> None:
        with self._lock:
            self.accept_calls += 1

    @property
    def transactions(self) -> int:
        # accept_job runs one atomic block per call, plus the autocommit reads around it.
        return self.accept_calls + self.autocommit_statements


@dataclass(frozen=True)
class AcceptRun:
    job_ids: list[str]
    started_at: float  # wall clock of the first due time
    seconds: float
    send_lag_p99_ms: float
    refused: int


def _accept_one(bench: BenchTenant, counter: AcceptTransactions) -> str:
    from extraction.intake.acceptance import JobRequest, accept_job

    request = JobRequest(document=bench.document, schema="invoice.v1", model_policy="default", options={},
                         priority_class="batch", deadline_seconds=24 * 3600)
    counter.called()
    return str(accept_job(tenant=bench.tenant, idempotency_key=uuid.uuid4().hex, request=request).job_id)


def accept_jobs(bench: BenchTenant, *, count: int, rate: float | None, counter: AcceptTransactions,
                threads: int = 6) -> AcceptRun:
    """Accept ``count`` jobs through accept_job(): open loop at ``rate`` per second (job i is
    due at t0 + i/rate whatever happened before), or as fast as possible when rate is None."""
    from django.db import connection

    job_ids: list[str] = []
    lags: list[float] = []
    refused = Counter()
    lock = threading.Lock()
    start = time.time() + 0.05

    def run(offset: int) -> None:
        mine, my_lags = [], []
        with connection.execute_wrapper(counter):
            for i in range(offset, count, threads):
                if rate is not None:
                    due = start + i / rate
                    delay = due - time.time()
                    if delay > 0:
                        time.sleep(delay)
                    my_lags.append(time.time() - due)
                try:
                    mine.append(_accept_one(bench, counter))
                except Exception as exc:  # noqa: BLE001 - a refused accept is reported, not fatal
                    with lock:
                        refused[type(exc).__name__] += 1
        connection.close()
        with lock:
            job_ids.extend(mine)
            lags.extend(my_lags)

    workers = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    lags.sort()
    p99 = lags[min(len(lags) - 1, int(0.99 * len(lags)))] * 1000 if lags else 0.0
    return AcceptRun(job_ids=job_ids, started_at=start, seconds=time.time() - start, send_lag_p99_ms=round(p99, 1),
                     refused=sum(refused.values()))


# --- reading PostgreSQL ------------------------------------------------------------------------

def database_transactions(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
                       [DATABASE]).fetchone()
    return int(row[0])


# Autocommit statements the benchmark itself ran on its database (progress polls), which
# pg_stat_database counts with the processes' transactions.
bench_statements = 0


def job_progress(conn: psycopg.Connection, tenant_id: uuid.UUID) -> tuple[int, int]:
    """(terminal jobs, unpublished outbox rows) of a tenant."""
    global bench_statements
    bench_statements += 2
    terminal = conn.execute(
        "SELECT count(*) FROM extraction_jobs WHERE tenant_id = %s AND state = ANY(%s)",
        [tenant_id, list(TERMINAL_STATES)]).fetchone()[0]
    unpublished = conn.execute(
        "SELECT count(*) FROM outbox_events WHERE tenant_id = %s AND published_at IS NULL", [tenant_id]).fetchone()[0]
    return int(terminal), int(unpublished)


def wait_until_done(conn: psycopg.Connection, tenant_id: uuid.UUID, count: int, *, timeout: float,
                    services: Services) -> bool:
    """All ``count`` jobs terminal and every outbox row of the tenant published (the completed
    events are orchestration work too)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        terminal, unpublished = job_progress(conn, tenant_id)
        if terminal >= count and unpublished == 0:
            return True
        services.check_alive()
        time.sleep(0.1)
    return False


@dataclass(frozen=True)
class JobTimes:
    states: dict[str, int]
    accepted_at: list[float]  # epoch seconds, DB clock
    terminal_at: list[float]


def job_times(conn: psycopg.Connection, tenant_id: uuid.UUID) -> JobTimes:
    rows = conn.execute(
        "SELECT state, extract(epoch FROM created_at)::float8, extract(epoch FROM updated_at)::float8 "
        "FROM extraction_jobs WHERE tenant_id = %s", [tenant_id]).fetchall()
    states = Counter(r[0] for r in rows)
    done = [r for r in rows if r[0] in TERMINAL_STATES]
    return JobTimes(states=dict(states), accepted_at=[r[1] for r in done], terminal_at=[r[2] for r in done])


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]


# --- sampling while a phase runs -----------------------------------------------------------------

@dataclass
class Sample:
    t: float
    worker_connections: int
    worker_busy: int
    worker_rss: int
    in_flight: int | None


class Sampler:
    """Every ``interval``: the worker's PostgreSQL connections (open and not idle), its RSS, and
    the CPU of every benchmark backend (by PID, from /proc); every second the simulator's
    in-flight calls. Runs in a thread of the benchmark process."""

    def __init__(self, services: Services, interval: float = 0.1) -> None:
        self.services = services
        self.interval = interval
        self.samples: list[Sample] = []
        self.backend_cpu_first: dict[int, float] = {}
        self.backend_cpu_last: dict[int, float] = {}
        self.backend_app: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._conn = psycopg.connect(admin_dsn(), autocommit=True)

    def start(self) -> None:
        self.samples.clear()
        self.backend_cpu_first.clear()
        self.backend_cpu_last.clear()
        self._stop.clear()
        self._sample_backends(first=True)
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample_backends(first=False)

    def _sample_backends(self, *, first: bool) -> tuple[int, int]:
        rows = self._conn.execute(
            "SELECT pid, application_name, state FROM pg_stat_activity WHERE datname = %s "
            "AND application_name LIKE %s", [DATABASE, f"{APP_PREFIX}%"]).fetchall()
        open_, busy = 0, 0
        for pid, app, state in rows:
            cpu = cpu_seconds(pid)
            if pid not in self.backend_cpu_first:
                # A backend already there at the start is measured from now; one born during
                # the phase from its birth (its connection set-up is the phase's cost).
                self.backend_cpu_first[pid] = cpu if first else 0.0
            self.backend_cpu_last[pid] = cpu
            self.backend_app[pid] = app.removeprefix(APP_PREFIX)
            if app == f"{APP_PREFIX}worker":
                open_ += 1
                busy += state != "idle"
        return open_, busy

    def _run(self) -> None:
        last_sim = 0.0
        while not self._stop.wait(self.interval):
            try:
                open_, busy = self._sample_backends(first=False)
                in_flight = None
                if time.monotonic() - last_sim >= 1.0:
                    last_sim = time.monotonic()
                    in_flight = self.services.simulator_stats()["concurrency"]["current"]
                self.samples.append(Sample(time.time(), open_, busy, rss_bytes(self.services.pid("worker")), in_flight))
            except Exception:  # noqa: BLE001 - a missed sample is a gap, not a failure
                continue

    def backend_cpu_by_process(self) -> dict[str, float]:
        out: Counter[str] = Counter()
        for pid, last in self.backend_cpu_last.items():
            out[self.backend_app.get(pid, "?")] += max(0.0, last - self.backend_cpu_first.get(pid, 0.0))
        return dict(out)

    def close(self) -> None:
        self._conn.close()


# --- counters over a window -----------------------------------------------------------------------

@dataclass(frozen=True)
class Counters:
    at: float
    process_cpu: dict[str, float]
    machine_busy: float
    own_cpu: float  # this benchmark process (the accepter and the sampler)
    db_transactions: int
    bench_statements: int
    probe: dict[str, dict[str, int]]
    model_call_cpu: float  # seconds the processes' threads spent inside the provider's extract (probe)


def read_probe(probe_dir: Path | None) -> dict[str, dict[str, int]]:
    if probe_dir is None:
        return {}
    out = {}
    for name in ORCHESTRATION:
        path = probe_dir / f"{name}.json"
        try:
            out[name] = json.loads(path.read_text())["transactions"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            out[name] = {}
    return out


def read_counters(services: Services, conn: psycopg.Connection, probe_dir: Path | None) -> Counters:
    # The probe files are rewritten every 0.5 s: let the last one land.
    time.sleep(0.6 if probe_dir is not None else 0.0)
    return Counters(
        at=time.time(),
        process_cpu={name: cpu_seconds(services.pid(name)) for name in (*ORCHESTRATION, "simulator")},
        machine_busy=machine_busy_seconds(),
        own_cpu=cpu_seconds(os.getpid()),
        db_transactions=database_transactions(conn),
        bench_statements=bench_statements,
        probe=read_probe(probe_dir),
        model_call_cpu=read_model_call_cpu(probe_dir),
    )


def read_model_call_cpu(probe_dir: Path | None) -> float:
    total = 0.0
    for name in ORCHESTRATION if probe_dir is not None else ():
        try:
            total += json.loads((probe_dir / f"{name}.json").read_text())["model_call"]["cpu_seconds"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            pass
    return total


def probe_delta(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    out = {}
    for name, counts in after.items():
        base = before.get(name, {})
        delta = {label: n - base.get(label, 0) for label, n in counts.items() if n - base.get(label, 0)}
        out[name] = dict(sorted(delta.items(), key=lambda kv: -kv[1]))
    return out


# --- the floor -----------------------------------------------------------------------------------

FLOOR_TABLE = "floor_jobs"
# The same claim as extraction.execution.lifecycle._CLAIM_SQL, on the floor table, without the event and
# attempt rows: what any SKIP LOCKED queue must do at least.
FLOOR_CLAIM_SQL = f"""
WITH next AS (
    SELECT id FROM {FLOOR_TABLE}
     WHERE state IN ('READY', 'RETRY_SCHEDULED') AND available_at <= now() AND deadline_at > now()
     ORDER BY available_at, id
     FOR UPDATE SKIP LOCKED
     LIMIT 1
)
UPDATE {FLOOR_TABLE} AS j
   SET state = 'RUNNING', attempt = j.attempt + 1, fence = j.fence + 1, lease_owner = %(worker)s,
       lease_until = now() + interval '90 seconds', state_version = j.state_version + 1, updated_at = now()
  FROM next
 WHERE j.id = next.id
RETURNING j.id, j.fence
"""
FLOOR_COMPLETE_SQL = f"""
UPDATE {FLOOR_TABLE}
   SET state = 'SUCCEEDED', state_version = state_version + 1, lease_owner = '', lease_until = NULL,
       updated_at = now()
 WHERE id = %(id)s AND state = 'RUNNING' AND fence = %(fence)s
"""


def fill_floor_table(count: int, tenant_id: uuid.UUID, document_id: uuid.UUID) -> None:
    """``floor_jobs``: the jobs table's columns, defaults, constraints and (partial) indexes,
    filled with ``count`` READY rows."""
    with psycopg.connect(admin_dsn(DATABASE), autocommit=True) as conn:
        conn.execute(f"CREATE TABLE IF NOT EXISTS {FLOOR_TABLE} (LIKE extraction_jobs INCLUDING ALL)")
        conn.execute(f"TRUNCATE {FLOOR_TABLE}")
        conn.execute(
            f"""
            INSERT INTO {FLOOR_TABLE} (
                id, tenant_id, document_id, document_version, idempotency_key, request_hash, schema,
                model_policy, options, priority_class, state, state_version, attempt, max_attempts, fence,
                lease_owner, available_at, deadline_at, estimated_tokens, byte_size, error_class,
                error_detail, created_at, updated_at)
            SELECT gen_random_uuid(), %(tenant)s, %(document)s, gen_random_uuid(), md5(i::text),
                   md5(i::text) || md5(i::text), 'invoice.v1', 'default', '{{}}', 'batch', 'READY', 2, 0, 5, 0,
                   '', now(), now() + interval '1 day', 6000, 300, '', '', now(), now()
              FROM generate_series(1, %(count)s) AS i
            """,
            {"tenant": tenant_id, "document": document_id, "count": count},
        )
        conn.execute(f"VACUUM ANALYZE {FLOOR_TABLE}")


def _floor_process(index: int, ready, go, results) -> None:
    worker = f"floor-{index}"
    done = 0
    with psycopg.connect(admin_dsn(DATABASE).replace("monitor", "floor")) as conn:
        conn.execute("SELECT 1")
        conn.commit()
        backend = conn.info.backend_pid
        cpu_at_start = cpu_seconds(os.getpid()) + cpu_seconds(backend)
        ready.release()
        go.wait()
        while True:
            row = conn.execute(FLOOR_CLAIM_SQL, {"worker": worker}).fetchone()
            conn.commit()
            if row is None:
                break
            conn.execute(FLOOR_COMPLETE_SQL, {"id": row[0], "fence": row[1]})
            conn.commit()
            done += 1
        ended = time.time()
        cpu = cpu_seconds(os.getpid()) + cpu_seconds(backend) - cpu_at_start
    results.put((done, ended, cpu))


@dataclass(frozen=True)
class FloorRun:
    processes: int
    jobs: int
    seconds: float
    jobs_per_s: float
    cpu_ms_per_job: float  # the floor's processes and their PostgreSQL backends
    other_processes_cores: float  # everything else on the machine meanwhile


def run_floor(processes: int, count: int) -> FloorRun:
    """``processes`` plain processes loop claim → commit → complete → commit until the table
    has no READY row; throughput from the common start to the last commit."""
    ctx = multiprocessing.get_context("spawn")
    ready, go, results = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_floor_process, args=(i, ready, go, results)) for i in range(processes)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.acquire(timeout=60)
    wait_for_quiet_machine()
    busy_at_start = machine_busy_seconds()
    started = time.time()
    go.set()
    outcomes = [results.get(timeout=120) for _ in procs]
    busy = machine_busy_seconds() - busy_at_start
    for p in procs:
        p.join()
    jobs = sum(done for done, _, _ in outcomes)
    seconds = max(end for _, end, _ in outcomes) - started
    cpu = sum(c for _, _, c in outcomes)
    return FloorRun(processes=processes, jobs=jobs, seconds=round(seconds, 3), jobs_per_s=round(jobs / seconds, 1),
                    cpu_ms_per_job=round(cpu * 1000 / max(jobs, 1), 3),
                    other_processes_cores=round(max(0.0, busy - cpu) / seconds, 2))


QUIET_CORES = 0.3


def wait_for_quiet_machine(max_wait: float = 5.0) -> float:
    """Wait (bounded) until the machine is at most QUIET_CORES busy over half a second; returns
    the last reading. Other sessions share these two cores: a trial started during their burst
    measures them."""
    deadline = time.monotonic() + max_wait
    while True:
        busy = machine_busy_seconds()
        time.sleep(0.5)
        cores = (machine_busy_seconds() - busy) / 0.5
        if cores <= QUIET_CORES or time.monotonic() > deadline:
            return round(cores, 2)


# --- relay gate for the backlog ------------------------------------------------------------------

def pause_relay(services: Services, conn: psycopg.Connection) -> None:
    """SIGSTOP the relay between its transactions (a relay stopped inside one would be cut off
    by idle_in_transaction_session_timeout), so accepted jobs wait in the outbox."""
    pid = services.pid("relay")
    for _ in range(100):
        os.kill(pid, signal.SIGSTOP)
        in_tx = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND state <> 'idle'",
            [f"{APP_PREFIX}relay"]).fetchone()[0]
        if not in_tx:
            return
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.01)
    raise RuntimeError("could not pause the relay outside a transaction")


def resume_relay(services: Services) -> None:
    os.kill(services.pid("relay"), signal.SIGCONT)


def summarize(values: Iterable[float]) -> dict[str, float]:
    values = list(values)
    return {"p50": round(percentile(values, 0.50), 4), "p95": round(percentile(values, 0.95), 4),
            "p99": round(percentile(values, 0.99), 4), "max": round(max(values), 4) if values else float("nan")}


if __name__ == "__main__" and len(sys.argv) >= 2 and sys.argv[1] == "simulator":
    sys.path.insert(0, str(PROJECT_ROOT))
    latency = float(sys.argv[sys.argv.index("--latency") + 1]) if "--latency" in sys.argv else 0.0
    run_memoized_simulator(latency)
