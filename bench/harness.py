"""What the benchmarks share, built on the test system helpers (tests/system.py).

- /proc readers: a process's CPU, RSS and threads, the machine's busy time, a quiet machine.
- Percentiles (nearest rank) and their summary.
- A :class:`Sandbox`: a benchmark's own PostgreSQL database, RabbitMQ vhost and Redis database,
  created, emptied and pointed at by Django.
- Bench tenants, with admission limits out of reach, and one accept through ``accept_job``.
- :class:`Services`: the real processes of a phase (tests.system.SystemProcesses), each
  PostgreSQL connection named by its process, and the provider simulator with the builtin
  extractor's answer memoized per document (the model is not what is measured, and on two
  cores its CPU would be taken from what is). :class:`Gunicorn`: a web server on loopback.
- :func:`publish_results`: the printed report and its figures in ``bench/results/``.

Django is set up lazily: a benchmark points the environment at its database first.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from tests.system import (
    SystemProcesses,
    celery_args,
    ensure_vhost,
    purge_queues,
    raise_if_any_exited,
    stop_process_groups,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
RESULTS_DIR = PROJECT_ROOT / "bench" / "results"
TERMINAL_STATES = ("SUCCEEDED", "FAILED_TERMINAL", "REVIEW_REQUIRED")
SAMPLE_INVOICE = (
    "ACME Supplies GmbH\nVAT ID: DE123456789\nIBAN: DE89 3704 0044 0532 0130 00\n"
    "Invoice number: INV-2026-001\nInvoice date: 2026-11-02\nDue date: 2026-12-02\nCurrency: EUR\n"
    "Widget 2 x 50.00 = 100.00\nNet total: 100.00 EUR\nVAT 19%: 19.00 EUR\nTotal: 119.00 EUR\n"
)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# Other sessions share these two cores: a trial started during their burst measures them.
QUIET_CORES = 0.3

# --- /proc ----------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU of one process (all its threads), or 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _status_value(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_bytes(pid: int) -> int:
    return _status_value(pid, "VmRSS:") * 1024


def thread_count(pid: int) -> int:
    return _status_value(pid, "Threads:")


def child_pids(parent: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == parent:
                        found.append(int(entry))
            except (OSError, IndexError):
                continue
    return found


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent busy since boot (everything but idle and iowait)."""
    with open("/proc/stat") as handle:
        values = [int(v) for v in handle.readline().split()[1:]]
    return (sum(values[:8]) - values[3] - values[4]) / CLOCK_TICKS


def wait_for_quiet_machine(max_wait: float = 5.0, *, quiet_cores: float = QUIET_CORES) -> float:
    """Wait (bounded) until the machine is at most ``quiet_cores`` busy over half a second;
    returns the last reading."""
    deadline = time.monotonic() + max_wait
    while True:
        busy = machine_busy_seconds()
        time.sleep(0.5)
        cores = (machine_busy_seconds() - busy) / 0.5
        if cores <= quiet_cores or time.monotonic() > deadline:
            return round(cores, 2)


@dataclass(frozen=True)
class MachineLoad:
    """Cores busy during a phase (of ``os.cpu_count()``) and the load average at its end:
    on a shared machine every figure is read next to these."""

    busy_cores: float
    cores: int
    loadavg_1m: float


class LoadMeter:
    def __init__(self) -> None:
        self._busy = machine_busy_seconds()
        self._at = time.monotonic()

    def read(self) -> MachineLoad:
        seconds = max(1e-6, time.monotonic() - self._at)
        busy = round((machine_busy_seconds() - self._busy) / seconds, 2)
        return MachineLoad(busy, os.cpu_count() or 1, os.getloadavg()[0])


def machine() -> dict[str, Any]:
    import platform

    return {
        "host": platform.node(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "loadavg_at_start": [round(v, 2) for v in os.getloadavg()],
    }


# --- percentiles ----------------------------------------------------------------------------------


def percentile(values: Iterable[float], q: float) -> float:
    """Nearest rank (no interpolation: a reported p99 is a value some sample really had);
    ``q`` is a fraction. NaN when there are no values."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def summarize(values: Iterable[float], *, ndigits: int = 4) -> dict[str, float]:
    values = list(values)
    return {
        name: round(percentile(values, q), ndigits)
        for name, q in (("p50", 0.50), ("p95", 0.95), ("p99", 0.99), ("max", 1.0))
    }


# --- a benchmark's own database, vhost and Redis database -----------------------------------------


def setup_django(**env: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DJANGO_DEVELOPMENT", "1")
    os.environ.update(env)
    import django

    django.setup()


def own_database(default: str) -> str:
    """``POSTGRES_DB``, or ``default``: a benchmark empties the job tables of its database, so
    it must be one of its own (named ``bench*``)."""
    name = os.environ.setdefault("POSTGRES_DB", default)
    if not name.startswith("bench"):
        raise SystemExit(f"Refusing to run against database {name!r}: use one named bench* (POSTGRES_DB={default}).")
    return name


def admin_dsn(dbname: str = "postgres", *, app: str = "bench-monitor") -> str:
    # BENCH_POSTGRES_PORT: a bench-owned server (bench/statement_stats.py), never the machine's reconfigured.
    port = os.environ.get("BENCH_POSTGRES_PORT", "5432")
    return f"host=127.0.0.1 port={port} user=postgres dbname={dbname} application_name={app}"


def create_database(name: str) -> None:
    """Create ``name`` unless it exists."""
    with psycopg.connect(admin_dsn(), autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{name}"')


def ensure_database(name: str, **env: str) -> None:
    """Create ``name`` if missing and migrate it; ``migrate`` (seconds of start-up on a busy
    machine) only when a migration file of an installed app is not applied yet (the reference
    ERP's app is installed with ``DEMO_ERP=1``)."""
    create_database(name)
    patterns = [
        "*/migrations/[0-9]*.py",
        *(["delivery/erp/migrations/[0-9]*.py"] if env.get("DEMO_ERP") == "1" else []),
    ]
    on_disk = {(path.parent.parent.name, path.stem) for pattern in patterns for path in PROJECT_ROOT.glob(pattern)}
    with psycopg.connect(admin_dsn(name), autocommit=True) as conn:
        try:
            applied = set(conn.execute("SELECT app, name FROM django_migrations").fetchall())
        except psycopg.errors.UndefinedTable:
            applied = set()
    if not on_disk <= applied:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--verbosity", "0"],
            cwd=PROJECT_ROOT,
            check=True,
            env={**os.environ, "DJANGO_DEVELOPMENT": "1", "POSTGRES_DB": name, **env},
        )


def django_dsn() -> str:
    """Django's default database, for a psycopg connection of our own."""
    from django.conf import settings
    from psycopg.conninfo import make_conninfo

    db = settings.DATABASES["default"]
    return make_conninfo(
        host=db["HOST"],
        port=db["PORT"],
        user=db["USER"],
        password=db["PASSWORD"] or None,
        dbname=db["NAME"],
        options=db["OPTIONS"].get("options"),
    )


# Every table a job's life writes.
JOB_TABLES = (
    "review_decisions",
    "extraction_results",
    "extraction_attempts",
    "execution_inbox",
    "quarantined_messages",
    "job_events",
    "outbox_events",
    "document_texts",
    "extraction_jobs",
)


def reset_job_tables(dsn: str, *, tables: Iterable[str] = JOB_TABLES, vacuum: bool = True) -> None:
    """Empty ``tables`` (CASCADE: whatever hangs off a job goes with it), zero every tenant's
    usage and drop admin-edited pool rows (the limits then come from the environment): a table
    grown by earlier runs would be measured, not the code. ``vacuum`` also drops the dead pages
    of the usage rows, which every accept and completion updates and every claim reads."""
    tables = ", ".join(tables)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for attempt in range(5):
            try:
                with conn.transaction():
                    # A straggler of an overloaded trial may still be inserting: wait for it
                    # briefly, and if it deadlocks against the TRUNCATE, try again.
                    conn.execute("SET LOCAL lock_timeout = '5s'")
                    conn.execute(f"TRUNCATE {tables} CASCADE")
                    conn.execute(
                        "UPDATE accounts_tenantusage SET pending_jobs = 0, pending_bytes = 0, "
                        "reserved_tokens = 0, spent_today_micros = 0"
                    )
                    conn.execute("DELETE FROM provider_pools")
                break
            except psycopg.OperationalError:
                if attempt == 4:
                    raise
                time.sleep(1)
        if vacuum:
            conn.execute(f"VACUUM ANALYZE {tables}")
            conn.execute("VACUUM FULL ANALYZE accounts_tenantusage")


@dataclass(frozen=True)
class Sandbox:
    """A benchmark's own database, RabbitMQ vhost and Redis database (the capacity limiter keeps
    a pool's budget under keys named by the pool: other runs' permits stay out of ours). Every
    PostgreSQL connection of its processes is named ``<app_prefix><process>`` (libpq's
    PGAPPNAME), so pg_stat_activity tells whose it is without touching the settings."""

    database: str
    vhost: str
    redis_db: int
    app_prefix: str

    @property
    def broker_url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:5672/{self.vhost}"

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:6379/{self.redis_db}"

    def dsn(self, dbname: str | None = None, app: str = "monitor") -> str:
        """The benchmark's database (or ``dbname``: "postgres" keeps monitoring reads out of its counters)."""
        return admin_dsn(dbname or self.database, app=f"{self.app_prefix}{app}")

    def ensure_vhost(self) -> None:
        ensure_vhost(self.vhost)

    def set_up(self, media_root: Path, *, app: str = "bench", **env: str) -> None:
        """Create (and migrate) the database and the vhost, and point this process's Django at
        them, its connections named ``<app_prefix><app>``."""
        ensure_database(self.database)
        self.ensure_vhost()
        setup_django(
            DJANGO_DEVELOPMENT="1",
            POSTGRES_DB=self.database,
            BROKER_URL=self.broker_url,
            REDIS_URL=self.redis_url,
            MEDIA_ROOT=str(media_root),
            PGAPPNAME=f"{self.app_prefix}{app}",
            **env,
        )

    def process_env(self, media_root: Path, **overrides: str) -> dict[str, str]:
        env = {
            **os.environ,
            "DJANGO_DEVELOPMENT": "1",
            "POSTGRES_DB": self.database,
            "BROKER_URL": self.broker_url,
            "REDIS_URL": self.redis_url,
            "MEDIA_ROOT": str(media_root),
            "EXTRACTION_PROVIDER": "openai",
            "OPENAI_API_KEY": "bench",
            "LOG_LEVEL": "INFO",  # the deployed level: log lines per job are orchestration cost too
            **overrides,
        }
        env.pop("PYTHONPATH", None)
        return env

    def purge_queues(self, *, wait_seconds: float = 120.0) -> None:
        """Empty the vhost's queues (wake-ups left by an earlier phase would be hints for jobs
        that are gone). Waits for the broker: on a shared machine other suites restart it."""
        import amqp.exceptions
        from kombu.exceptions import OperationalError

        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                purge_queues(self.broker_url)
                return
            except (OperationalError, OSError, amqp.exceptions.AMQPError) as exc:
                if time.monotonic() > deadline:
                    raise
                print(f"    waiting for RabbitMQ at 127.0.0.1:5672 ({exc!r:.80}) ...", flush=True)
                time.sleep(2)
                self.ensure_vhost()  # a broker reset by another suite forgets our vhost

    def reset_capacity_limiter(self, *, wait_seconds: float = 120.0) -> None:
        """No permits, windows or cooldowns left from an earlier phase. Waits for Redis first:
        on a shared machine other suites stop and restart it."""
        import redis

        client = redis.Redis.from_url(self.redis_url)
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                print("    waiting for Redis at 127.0.0.1:6379 ...", flush=True)
                time.sleep(2)
        keys = list(client.scan_iter("cap:*"))
        if keys:
            client.delete(*keys)
        client.close()

    def reset(self) -> None:
        """A phase starts from empty job tables, no limiter state and empty queues."""
        reset_job_tables(self.dsn(app="setup"))
        self.reset_capacity_limiter()
        self.purge_queues()


# --- tenants and accepts --------------------------------------------------------------------------


# The policy override of a tenant whose load repeats its invoices (VAL-5's check off).
NOT_DUPLICATES = {"possible_duplicate": "off"}


@dataclass(frozen=True)
class BenchTenant:
    tenant: Any  # accounts.models.Tenant
    document: Any  # extraction.models.Document


def make_tenant(
    slug: str,
    *,
    unique: bool = True,
    content: bytes = SAMPLE_INVOICE.encode(),
    filename: str = "invoice.txt",
    max_in_flight: int = 100_000,
) -> BenchTenant:
    """A tenant (``slug`` plus a random suffix, or the one of that slug reused when not
    ``unique``) with one stored document. Admission still runs its guarded UPDATE on every
    accept, but its limits are out of reach, and so is the in-flight cap unless given: a
    benchmark measures the path, the pool's limits or the claim order, not the tenant's caps."""
    from accounts.models import Tenant, create_tenant
    from extraction.intake.documents import store_document

    if unique:
        slug = f"{slug}-{uuid.uuid4().hex[:6]}"
    tenant = Tenant.objects.filter(slug=slug).first() or create_tenant(slug=slug)
    Tenant.objects.filter(pk=tenant.pk).update(
        max_pending_jobs=2_000_000_000,
        max_pending_bytes=2**62,
        max_reserved_tokens=2**62,
        daily_spend_limit_micros=2**62,
        max_in_flight=max_in_flight,
        # Every job reads the same stored document on purpose: not the duplicates a tenant
        # must be warned of (eval/duplicates.py measures that check).
        validation_overrides=NOT_DUPLICATES,
    )
    tenant.refresh_from_db()
    document, _ = store_document(tenant=tenant, upload=io.BytesIO(content), filename=filename)
    return BenchTenant(tenant=tenant, document=document)


def accept_one(bench: BenchTenant) -> str:
    """One job through acceptance (the API's write path): ACCEPTED + its outbox event."""
    from extraction.intake.acceptance import JobRequest, accept_job

    request = JobRequest(
        document=bench.document,
        schema="invoice.v1",
        model_policy="default",
        options={},
        priority_class="batch",
        deadline_seconds=24 * 3600,
    )
    return str(accept_job(tenant=bench.tenant, idempotency_key=uuid.uuid4().hex, request=request).job_id)


# --- the processes --------------------------------------------------------------------------------

_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _post(url: str, payload: dict[str, Any]) -> None:
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with _DIRECT.open(request, timeout=10) as response:
        response.read()


class Services(SystemProcesses):
    """The subprocesses of one phase in a :class:`Sandbox`, started in their own process
    groups with their output in ``log_dir/<name>.log``."""

    def __init__(self, sandbox: Sandbox, *, log_dir: Path, media_root: Path, **env: str) -> None:
        super().__init__(env=sandbox.process_env(media_root, **env), log_dir=log_dir)
        self.sandbox = sandbox
        self.simulator_url = ""

    def start(self, name: str, argv: list[str], **extra_env: str) -> subprocess.Popen:
        return super().start(name, argv, **{"PGAPPNAME": f"{self.sandbox.app_prefix}{name}", **extra_env})

    def relay(self, name: str = "relay", **extra_env: str) -> subprocess.Popen:
        """The Procfile's relay, at its own poll interval (the tests' relay polls faster)."""
        return self.start(name, [sys.executable, "manage.py", "run_outbox_relay"], **extra_env)

    def celery(
        self,
        name: str,
        queues: str,
        concurrency: int = 16,
        *,
        pool_max_size: int = 8,
        app: str = "config",
        **extra_env: str,
    ) -> subprocess.Popen:
        """A Celery worker as the Procfile runs one, with a database pool of ``pool_max_size``."""
        argv = [str(VENV_BIN / "celery"), *celery_args(name, queues, concurrency, app=app)]
        return self.start(name, argv, POSTGRES_POOL_MAX_SIZE=str(pool_max_size), **extra_env)

    def start_simulator(self, config: dict[str, Any]) -> None:
        """The provider simulator (``config``: tests.simulator.SimulatorConfig's fields); the
        processes started after it call it."""
        argv = [sys.executable, "-m", "bench.harness", "simulator", "--config", json.dumps(config)]
        proc = subprocess.Popen(
            argv,
            cwd=PROJECT_ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.procs["simulator"] = proc
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("simulator exited before listening")
            if "listening on" in line:
                self.simulator_url = line.strip().rsplit(" ", 1)[-1]
                self.env["OPENAI_BASE_URL"] = f"{self.simulator_url}/v1"
                # Drain whatever else it prints so its pipe never fills.
                threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
                return
        raise RuntimeError("simulator not listening after 60 s")

    def wait_until_ready(self, names: Iterable[str], timeout: float = 120) -> None:
        """Celery prints "ready." once it consumes."""
        deadline = time.monotonic() + timeout
        pending = set(names)
        while pending and time.monotonic() < deadline:
            for name in list(pending):
                if self.procs[name].poll() is not None:
                    raise RuntimeError(f"{name} exited: see {self.log_dir / (name + '.log')}")
                if "ready." in (self.log_dir / f"{name}.log").read_text(errors="replace"):
                    pending.discard(name)
            time.sleep(0.2)
        if pending:
            raise RuntimeError(f"not ready after {timeout} s: {sorted(pending)} (logs in {self.log_dir})")

    def pid(self, name: str) -> int:
        return self.procs[name].pid

    def check_alive(self) -> None:
        raise_if_any_exited(self.procs, self.log_dir)

    def stop_all(self) -> None:
        """SIGTERM everything (Celery finishes the attempts in hand), SIGKILL what lingers."""
        stop_process_groups(self.procs, grace_seconds=20)

    def logged_errors(self) -> dict[str, int]:
        """ERROR lines per process log: a phase whose attempts crash measures a bug, not capacity."""
        counts = {}
        for path in sorted(self.log_dir.glob("*.log")):
            n = sum(1 for line in path.read_text(errors="replace").splitlines() if '"level": "ERROR"' in line)
            if n:
                counts[path.stem] = n
        return counts

    def simulator_stats(self) -> dict[str, Any]:
        with _DIRECT.open(f"{self.simulator_url}/_stats", timeout=10) as response:
            stats = json.load(response)
        stats.pop("calls_by_job", None)  # one entry per job: not worth keeping
        stats.pop("recent_requests", None)
        return stats

    def simulator_control(self, **changes: Any) -> None:
        _post(f"{self.simulator_url}/_control", changes)

    def simulator_reset(self) -> None:
        _post(f"{self.simulator_url}/_reset", {})


def run_memoized_simulator(config: dict[str, Any]) -> None:
    """``python -m bench.harness simulator --config JSON``: the project's simulator server with
    the builtin extractor run once per distinct document."""
    setup_django()
    from tests.simulator import SimulatorConfig, builtin_extractor, run_simulator

    extract = builtin_extractor()
    answers: dict[tuple[str, ...], dict] = {}

    def memoized(document) -> dict:
        key = tuple(document.pages)
        if key not in answers:
            answers[key] = extract(document)
        return answers[key]

    run_simulator(SimulatorConfig().updated(config), extractor=memoized, announce=lambda line: print(line, flush=True))


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Gunicorn:
    """A gunicorn serving ``config.wsgi`` on a free loopback port, for a ``with`` block."""

    def __init__(
        self,
        *,
        workers: int,
        worker_class: str,
        threads: int,
        log_path: Path,
        access_log_path: Path | None = None,
        extra_args: Iterable[str] = (),
        **env: str,
    ) -> None:
        self.port = free_loopback_port()
        self.argv = [
            str(VENV_BIN / "gunicorn"),
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(workers),
            "--worker-class",
            worker_class,
            "--threads",
            str(threads),
            "--log-level",
            "warning",
            "--error-logfile",
            str(log_path),
        ]
        if access_log_path is not None:
            # The Procfile's web process logs every request; so does the benchmarked one.
            access_log_path.write_text("")
            self.argv += ["--access-logfile", str(access_log_path)]
        self.argv += list(extra_args)
        self.env = {**os.environ, **env}
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Gunicorn:
        self.process = subprocess.Popen(
            self.argv, cwd=PROJECT_ROOT, env=self.env, stdin=subprocess.DEVNULL, start_new_session=True
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.process.returncode}; see {self.log_path}")
            if self.probe_ms() is not None:
                return self
            time.sleep(0.2)
        self.__exit__(None, None, None)
        raise RuntimeError(f"gunicorn did not answer within 30 s; see {self.log_path}")

    def __exit__(self, *exc_info: object) -> None:
        if self.process is not None:
            stop_process_groups({"gunicorn": self.process}, grace_seconds=20)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def probe_ms(self) -> float | None:
        began = time.perf_counter()
        try:
            with _DIRECT.open(self.url("/healthz"), timeout=2) as response:
                response.read()
        except OSError:
            return None
        return (time.perf_counter() - began) * 1000

    def wait_idle(self, timeout: float = 30.0) -> None:
        """Until /healthz answers fast twice in a row: the listen queue of an overloaded trial
        has drained and the next trial starts on an idle server."""
        deadline = time.monotonic() + timeout
        fast = 0
        while time.monotonic() < deadline and fast < 2:
            took = self.probe_ms()
            fast = fast + 1 if took is not None and took < 25 else 0
            time.sleep(0.1)


# --- results --------------------------------------------------------------------------------------


def publish_results(
    script: str, report: Callable[[], None], data: dict[str, Any] | None = None, *, json_path: Path | None = None
) -> None:
    """Print what ``report()`` prints and write it to ``bench/results/<script>-<UTC time>.txt``;
    ``data``, the figures, to the ``.json`` beside it (or to ``json_path``)."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        report()
    text = buffer.getvalue()
    sys.stdout.write(text)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stem = RESULTS_DIR / f"{script}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"
    written = [stem.with_suffix(".txt")]
    written[0].write_text(text)
    if data is not None:
        written.append(json_path or stem.with_suffix(".json"))
        written[-1].parent.mkdir(parents=True, exist_ok=True)
        written[-1].write_text(json.dumps(data, indent=2, default=str) + "\n")
    print("results: " + ", ".join(_shown(path) for path in written), flush=True)


def _shown(path: Path) -> str:
    path = path.resolve()
    return str(path.relative_to(PROJECT_ROOT)) if path.is_relative_to(PROJECT_ROOT) else str(path)


if __name__ == "__main__":
    if sys.argv[1:2] != ["simulator"] or "--config" not in sys.argv:
        raise SystemExit("usage: python -m bench.harness simulator --config JSON")
    run_memoized_simulator(json.loads(sys.argv[sys.argv.index("--config") + 1]))
