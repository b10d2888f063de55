"""Machinery of the execution benchmark (bench/execution_bench.py); what every benchmark shares is
in bench/harness.py.

The Procfile's execution processes (relay, ingress and llm Celery workers, scheduler; on Kafka,
Procfile.kafka's ingress consumer and a Tansu broker of the run's own) in the benchmark's own
:data:`SANDBOX`; what is read about them while they run (/proc CPU and RSS,
PostgreSQL connections by ``application_name``, the simulator's in-flight calls, transactions
by process); an open-loop accepter calling :func:`extraction.intake.acceptance.accept_job`; and
the floor, a plain ``FOR UPDATE SKIP LOCKED`` claim/complete loop over a table of the jobs
table's shape, in processes that never set Django up.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from bench import harness
from tests.kafka_broker import KafkaBroker

PROBE_DIR = harness.PROJECT_ROOT / "bench" / "probe"
SANDBOX = harness.Sandbox(database="benchexec", vhost="benchexec", redis_db=11, app_prefix="benchexec-")
# The benchmark measures orchestration, not the admission policy: the pool's budget and the
# tenant's in-flight cap are set far above what one worker can reach.
POOL_LIMITS = {
    "POOL_MAX_IN_FLIGHT": "100000",
    "POOL_REQUESTS_PER_MINUTE": "100000000",
    "POOL_TOKENS_PER_MINUTE": "1000000000000",
}
TENANT_MAX_IN_FLIGHT = 100_000
ORCHESTRATION = ("relay", "ingress", "worker", "scheduler")
WORKER_CONCURRENCY = 300
WORKER_POOL_MAX = 20
INGRESS_CONCURRENCY = 8
TRANSPORTS = ("rabbitmq", "kafka")
# Tansu answers JoinGroup after about session.timeout.ms / 2 (tests/kafka_broker.py): a short
# session keeps the ingress consumer's start-up a few seconds, not the default's 22.
KAFKA_SESSION_TIMEOUT_MS = 6000
KAFKA_MAX_POLL_INTERVAL_MS = 10000
KAFKA_PARTITIONS = 6


# --- the processes -------------------------------------------------------------------------------


class Services(harness.Services):
    """The Procfile's execution processes and the simulator in :data:`SANDBOX`; with a
    ``probe_dir``, every process counts its transactions there (bench/probe/sitecustomize.py).

    With ``transport="kafka"`` the events ride a Tansu broker started for the run, on topics and
    groups named afresh (its storage is in memory, but a name reused within a broker's life would
    replay or skip records), and the ingress is Procfile.kafka's consumer, named ``ingress`` as
    the Celery one is so the figures line up; the llm wake-ups still ride RabbitMQ."""

    def __init__(self, *, log_dir: Path, media_root: Path, probe_dir: Path | None, transport: str = "rabbitmq") -> None:
        if transport not in TRANSPORTS:
            raise ValueError(f"transport {transport!r}: use one of {TRANSPORTS}")
        super().__init__(SANDBOX, log_dir=log_dir, media_root=media_root, **POOL_LIMITS)
        self.probe_dir = probe_dir
        self.transport = transport
        self.kafka_broker: KafkaBroker | None = None

    def start(self, name: str, argv: list[str], **extra_env: str) -> subprocess.Popen:
        if self.probe_dir is not None:
            extra_env = {
                **extra_env,
                "PYTHONPATH": str(PROBE_DIR),
                "BENCH_SQL_PROBE_FILE": str(self.probe_dir / f"{name}.json"),
            }
        return super().start(name, argv, **extra_env)

    def start_orchestration(self) -> None:
        if self.transport == "kafka":
            self.start_kafka()
        self.relay()
        if self.transport == "kafka":
            self.kafka_consumer("ingress", "ingress", threads=INGRESS_CONCURRENCY, pool_max_size=INGRESS_CONCURRENCY)
        else:
            self.celery("ingress", "ingress", concurrency=INGRESS_CONCURRENCY, pool_max_size=INGRESS_CONCURRENCY)
        self.celery("worker", "llm", concurrency=WORKER_CONCURRENCY, pool_max_size=WORKER_POOL_MAX)
        self.scheduler()
        if self.transport == "kafka":
            self.wait_until_ready(["worker"])
            self.wait_for_log_line("ingress", "partitions assigned")
        else:
            self.wait_until_ready(["ingress", "worker"])

    def start_kafka(self) -> None:
        """A Tansu broker, the three topics created before any process starts (a consumer
        subscribed to a missing topic waits for a metadata refresh), and the Kafka settings in
        every process's environment."""
        self.kafka_broker = KafkaBroker().start()
        run = uuid.uuid4().hex[:12]
        topics = {
            "KAFKA_TOPIC_REQUESTED": f"benchexec.requested.{run}",
            "KAFKA_TOPIC_OUTCOMES": f"benchexec.outcomes.{run}",
            "KAFKA_TOPIC_DEAD_LETTERS": f"benchexec.dead_letters.{run}",
        }
        for topic in topics.values():
            self.kafka_broker.create_topic(topic, partitions=KAFKA_PARTITIONS)
        self.env.update(
            EVENT_TRANSPORT="kafka",
            KAFKA_BOOTSTRAP_SERVERS=self.kafka_broker.bootstrap_servers,
            KAFKA_INGRESS_GROUP=f"benchexec-ingress-{run}",
            KAFKA_DELIVERY_GROUP=f"benchexec-delivery-{run}",
            KAFKA_PARTITIONS=str(KAFKA_PARTITIONS),
            KAFKA_SESSION_TIMEOUT_MS=str(KAFKA_SESSION_TIMEOUT_MS),
            KAFKA_MAX_POLL_INTERVAL_MS=str(KAFKA_MAX_POLL_INTERVAL_MS),
            **topics,
        )

    def kafka_consumer(
        self, name: str, consumer: str, *, threads: int, pool_max_size: int, **extra_env: str
    ) -> subprocess.Popen:
        """``manage.py run_kafka_consumer`` as Procfile.kafka runs it, with ``threads``
        dispatcher threads and a database pool of ``pool_max_size``."""
        argv = [sys.executable, "manage.py", "run_kafka_consumer", consumer, "--threads", str(threads)]
        return self.start(name, argv, POSTGRES_POOL_MAX_SIZE=str(pool_max_size), **extra_env)

    def wait_for_log_line(self, name: str, text: str, timeout: float = 120) -> None:
        """A process that prints no Celery "ready.": ready once ``text`` is in its log."""
        deadline = time.monotonic() + timeout
        path = self.log_dir / f"{name}.log"
        while time.monotonic() < deadline:
            if self.procs[name].poll() is not None:
                raise RuntimeError(f"{name} exited: see {path}")
            if path.exists() and text in path.read_text(errors="replace"):
                return
            time.sleep(0.2)
        raise RuntimeError(f"{name}: no {text!r} after {timeout} s (logs in {self.log_dir})")

    def cpu_processes(self) -> tuple[str, ...]:
        """The processes whose CPU a window counts: the broker only where the run started it."""
        return (*ORCHESTRATION, "simulator", *(("broker",) if self.kafka_broker is not None else ()))

    def pid(self, name: str) -> int:
        if name == "broker" and self.kafka_broker is not None:
            return self.kafka_broker.process.pid
        return super().pid(name)

    def stop_all(self) -> None:
        """The processes first (their clients closed, Tansu stops on SIGTERM), then the broker."""
        try:
            super().stop_all()
        finally:
            if self.kafka_broker is not None:
                self.kafka_broker.stop()


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


def _accept_one(bench: harness.BenchTenant, counter: AcceptTransactions) -> str:
    counter.called()
    return harness.accept_one(bench)


def accept_jobs(
    bench: harness.BenchTenant, *, count: int, rate: float | None, counter: AcceptTransactions, threads: int = 6
) -> AcceptRun:
    """Accept ``count`` jobs through accept_job() in an open loop (:func:`open_loop`), each
    thread's statements counted by ``counter``."""
    from django.db import connection

    @contextlib.contextmanager
    def counted() -> Iterator[None]:
        with connection.execute_wrapper(counter):
            yield
        connection.close()

    return open_loop(count, rate, lambda _thread: _accept_one(bench, counter), threads=threads, thread_scope=counted)


def open_loop(
    count: int,
    rate: float | None,
    accept_one: Callable[[int], str],
    *,
    threads: int = 6,
    thread_scope: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
) -> AcceptRun:
    """``count`` accepts on ``threads`` threads, open loop at ``rate`` per second (accept i is
    due at t0 + i/rate, on thread i % threads, whatever happened before), or as fast as
    possible when rate is None. ``accept_one(thread)`` returns the job id; each thread runs
    inside ``thread_scope()``. A refused accept is counted, not fatal."""
    job_ids: list[str] = []
    lags: list[float] = []
    refused: Counter[str] = Counter()
    lock = threading.Lock()
    start = time.time() + 0.05

    def run(offset: int) -> None:
        mine, my_lags = [], []
        with thread_scope():
            for i in range(offset, count, threads):
                if rate is not None:
                    due = start + i / rate
                    delay = due - time.time()
                    if delay > 0:
                        time.sleep(delay)
                    my_lags.append(time.time() - due)
                try:
                    mine.append(accept_one(offset))
                except Exception as exc:  # noqa: BLE001 - a refused accept is reported, not fatal
                    with lock:
                        refused[type(exc).__name__] += 1
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
    return AcceptRun(
        job_ids=job_ids,
        started_at=start,
        seconds=time.time() - start,
        send_lag_p99_ms=round(p99, 1),
        refused=sum(refused.values()),
    )


# --- reading PostgreSQL ------------------------------------------------------------------------


def database_transactions(conn: psycopg.Connection) -> int:
    row = conn.execute(
        "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s", [SANDBOX.database]
    ).fetchone()
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
        [tenant_id, list(harness.TERMINAL_STATES)],
    ).fetchone()[0]
    unpublished = conn.execute(
        "SELECT count(*) FROM outbox_events WHERE tenant_id = %s AND published_at IS NULL", [tenant_id]
    ).fetchone()[0]
    return int(terminal), int(unpublished)


def wait_until_done(
    conn: psycopg.Connection, tenant_id: uuid.UUID, count: int, *, timeout: float, services: Services
) -> bool:
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
        "FROM extraction_jobs WHERE tenant_id = %s",
        [tenant_id],
    ).fetchall()
    states = Counter(r[0] for r in rows)
    done = [r for r in rows if r[0] in harness.TERMINAL_STATES]
    return JobTimes(states=dict(states), accepted_at=[r[1] for r in done], terminal_at=[r[2] for r in done])


# Where a job's time goes between acceptance and its end, median ms per stage: accepted → READY
# (the relay's publish and the ingress's take-in), READY → claimed (the dispatcher), and claimed
# → terminal less the model call the attempt ledger recorded (capacity, validation, completion).
# Each time is its transaction's start (now()), so a stage includes the next commit's wait.
STAGE_MEDIANS = """
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ready - accepted) * 1000,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY claimed - ready) * 1000,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY terminal - claimed - model) * 1000
  FROM (SELECT extract(epoch FROM j.created_at) AS accepted,
               (SELECT extract(epoch FROM min(e.created_at)) FROM job_events AS e
                 WHERE e.job_id = j.id AND e.to_state = 'READY') AS ready,
               (SELECT extract(epoch FROM max(e.created_at)) FROM job_events AS e
                 WHERE e.job_id = j.id AND e.to_state = 'RUNNING') AS claimed,
               extract(epoch FROM j.updated_at) AS terminal,
               (SELECT a.latency_ms / 1000.0 FROM extraction_attempts AS a
                 WHERE a.job_id = j.id ORDER BY a.number DESC LIMIT 1) AS model
          FROM extraction_jobs AS j
         WHERE j.tenant_id = %s AND j.state IN ('SUCCEEDED', 'REVIEW_REQUIRED')) AS stages
"""


def stage_medians(conn: psycopg.Connection, tenant_id: uuid.UUID) -> dict[str, float]:
    """Median ms of each stage of a tenant's terminal jobs (STAGE_MEDIANS)."""
    row = conn.execute(STAGE_MEDIANS, [tenant_id]).fetchone()
    names = ("accepted_to_ready", "ready_to_claimed", "claimed_to_terminal_less_model")
    return {name: round(float(value), 1) for name, value in zip(names, row or (), strict=True) if value is not None}


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
        # What active backends were waiting on at each sample (wait_event_type: wait_event),
        # and how many active backends were seen in all: lock waits show up here.
        self.waits: Counter[str] = Counter()
        self.active_seen = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._conn = psycopg.connect(SANDBOX.dsn("postgres"), autocommit=True)

    def start(self) -> None:
        self.samples.clear()
        self.waits.clear()
        self.active_seen = 0
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
            "SELECT pid, application_name, state, wait_event_type, wait_event FROM pg_stat_activity"
            " WHERE datname = %s AND application_name LIKE %s",
            [SANDBOX.database, f"{SANDBOX.app_prefix}%"],
        ).fetchall()
        open_, busy = 0, 0
        for pid, app, state, wait_type, wait in rows:
            if state == "active" and not first:
                self.active_seen += 1
                self.waits[f"{wait_type}: {wait}" if wait_type else "on CPU"] += 1
            cpu = harness.cpu_seconds(pid)
            if pid not in self.backend_cpu_first:
                # A backend already there at the start is measured from now; one born during
                # the phase from its birth (its connection set-up is the phase's cost).
                self.backend_cpu_first[pid] = cpu if first else 0.0
            self.backend_cpu_last[pid] = cpu
            self.backend_app[pid] = app.removeprefix(SANDBOX.app_prefix)
            if app == f"{SANDBOX.app_prefix}worker":
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
                self.samples.append(
                    Sample(time.time(), open_, busy, harness.rss_bytes(self.services.pid("worker")), in_flight)
                )
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
    statements: dict[str, dict[str, tuple[int, float]]]  # process → statement → (count, seconds) (probe)
    wal_bytes: int  # the cluster's WAL position, as a byte count


def read_probe_files(probe_dir: Path | None) -> dict[str, dict[str, Any]]:
    """Each orchestration process's probe snapshot (bench/probe/sitecustomize.py), read once
    per counter reading; a missing or half-written file reads as empty."""
    if probe_dir is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for name in ORCHESTRATION:
        try:
            out[name] = json.loads((probe_dir / f"{name}.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            out[name] = {}
    return out


def probe_statements(snapshot: dict[str, Any]) -> dict[str, tuple[int, float]]:
    """statement → (executions, wall seconds in execute)."""
    seconds = snapshot.get("statement_seconds", {})
    return {label: (n, seconds.get(label, 0.0)) for label, n in snapshot.get("statements", {}).items()}


def wal_bytes(conn: psycopg.Connection) -> int:
    """The cluster's WAL insert position in bytes (every database's writes: read it on a quiet machine)."""
    row = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint").fetchone()
    return int(row[0]) if row else 0


def statement_costs(
    before: dict[str, dict[str, tuple[int, float]]], after: dict[str, dict[str, tuple[int, float]]], jobs: int
) -> list[dict[str, Any]]:
    """Per process and statement over a window: executions per job, mean wall ms, wall ms per
    job; the costliest first."""
    rows = []
    for process, statements in after.items():
        base = before.get(process, {})
        for label, (n, seconds) in statements.items():
            n0, s0 = base.get(label, (0, 0.0))
            if n - n0 > 0:
                rows.append(
                    {
                        "process": process,
                        "statement": label,
                        "per_job": round((n - n0) / jobs, 3),
                        "mean_ms": round((seconds - s0) * 1000 / (n - n0), 3),
                        "ms_per_job": round((seconds - s0) * 1000 / jobs, 3),
                    }
                )
    return sorted(rows, key=lambda r: -r["ms_per_job"])


def read_counters(services: Services, conn: psycopg.Connection, probe_dir: Path | None) -> Counters:
    # The probe files are rewritten every 0.5 s: let the last one land.
    time.sleep(0.6 if probe_dir is not None else 0.0)
    snapshots = read_probe_files(probe_dir)
    return Counters(
        at=time.time(),
        process_cpu={name: harness.cpu_seconds(services.pid(name)) for name in services.cpu_processes()},
        machine_busy=harness.machine_busy_seconds(),
        own_cpu=harness.cpu_seconds(os.getpid()),
        db_transactions=database_transactions(conn),
        bench_statements=bench_statements,
        probe={name: snapshot.get("transactions", {}) for name, snapshot in snapshots.items()},
        model_call_cpu=sum(snapshot.get("model_call", {}).get("cpu_seconds", 0.0) for snapshot in snapshots.values()),
        statements={name: probe_statements(snapshot) for name, snapshot in snapshots.items()},
        wal_bytes=wal_bytes(conn),
    )


def probe_delta(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    out = {}
    for name, counts in after.items():
        base = before.get(name, {})
        delta = {label: n - base.get(label, 0) for label, n in counts.items() if n - base.get(label, 0)}
        out[name] = dict(sorted(delta.items(), key=lambda kv: -kv[1]))
    return out


# --- the floor -----------------------------------------------------------------------------------

FLOOR_TABLE = "floor_jobs"
# The same claim as bench/baseline_claim.sql's claim_fifo, on the floor table, without the event and
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


def fill_floor_table(
    count: int, tenant_id: uuid.UUID, document_id: uuid.UUID, *, sandbox: harness.Sandbox = SANDBOX
) -> None:
    """``floor_jobs``: the jobs table's columns, defaults, constraints and (partial) indexes,
    filled with ``count`` READY rows (in this benchmark's sandbox unless another names its own)."""
    with psycopg.connect(sandbox.dsn(app="setup"), autocommit=True) as conn:
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
    with psycopg.connect(SANDBOX.dsn(app="floor")) as conn:
        conn.execute("SELECT 1")
        conn.commit()
        backend = conn.info.backend_pid
        cpu_at_start = harness.cpu_seconds(os.getpid()) + harness.cpu_seconds(backend)
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
        cpu = harness.cpu_seconds(os.getpid()) + harness.cpu_seconds(backend) - cpu_at_start
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
    harness.wait_for_quiet_machine()
    busy_at_start = harness.machine_busy_seconds()
    started = time.time()
    go.set()
    outcomes = [results.get(timeout=120) for _ in procs]
    busy = harness.machine_busy_seconds() - busy_at_start
    for p in procs:
        p.join()
    jobs = sum(done for done, _, _ in outcomes)
    seconds = max(end for _, end, _ in outcomes) - started
    cpu = sum(c for _, _, c in outcomes)
    return FloorRun(
        processes=processes,
        jobs=jobs,
        seconds=round(seconds, 3),
        jobs_per_s=round(jobs / seconds, 1),
        cpu_ms_per_job=round(cpu * 1000 / max(jobs, 1), 3),
        other_processes_cores=round(max(0.0, busy - cpu) / seconds, 2),
    )


# --- relay gate for the backlog ------------------------------------------------------------------


def pause_relay(services: Services, conn: psycopg.Connection) -> None:
    """SIGSTOP the relay between its transactions (a relay stopped inside one would be cut off
    by idle_in_transaction_session_timeout), so accepted jobs wait in the outbox."""
    pid = services.pid("relay")
    for _ in range(100):
        os.kill(pid, signal.SIGSTOP)
        in_tx = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND state <> 'idle'",
            [f"{SANDBOX.app_prefix}relay"],
        ).fetchone()[0]
        if not in_tx:
            return
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.01)
    raise RuntimeError("could not pause the relay outside a transaction")


def resume_relay(services: Services) -> None:
    os.kill(services.pid("relay"), signal.SIGCONT)


# --- profiling the llm worker ---------------------------------------------------------------------

FIRST_PARTY = ("extraction/", "delivery/", "config/", "accounts/")


def start_worker_profile(services: Services, path: Path, *, gil: bool) -> subprocess.Popen:
    """py-spy sampling the llm worker (every thread, or with ``gil`` only the one holding the
    GIL) without pausing it, until :func:`stop_worker_profile`."""
    argv = [
        str(Path(sys.executable).parent / "py-spy"),
        "record",
        "--pid",
        str(services.pid("worker")),
        "--rate",
        "200",
        "--format",
        "raw",
        "--output",
        str(path),
        "--nonblocking",
        *(["--gil"] if gil else []),
    ]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def stop_worker_profile(profiler: subprocess.Popen, path: Path, *, top: int = 15) -> dict[str, Any]:
    """Stop py-spy (SIGINT: it writes its file) and summarize the collapsed stacks: the share of
    samples per innermost frame, and per first-party frame anywhere on the stack."""
    profiler.send_signal(signal.SIGINT)
    try:
        profiler.wait(timeout=30)
    except subprocess.TimeoutExpired:
        profiler.kill()
        return {"error": "py-spy did not stop"}
    innermost: Counter[str] = Counter()
    ours: Counter[str] = Counter()
    samples = 0
    for line in path.read_text(errors="replace").splitlines() if path.exists() else []:
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        samples += n
        frames = stack.split(";")
        innermost[frames[-1]] += n
        for frame in set(frames):
            if any(part in frame for part in FIRST_PARTY):
                ours[frame] += n
    if not samples:
        return {"samples": 0}

    def shares(counter: Counter[str]) -> list[tuple[str, float]]:
        return [(frame, round(n / samples, 3)) for frame, n in counter.most_common(top)]

    return {"samples": samples, "innermost": shares(innermost), "first_party_inclusive": shares(ours)}
