"""What every cluster scenario shares: the Procfile's processes against the engines the scenario
started, an open-loop load of real sample invoices over HTTP, the invariants over every accepted
job, the stalls a fault caused and what the processes logged about it.

A scenario reads the system's database through libpq (:attr:`Pipeline.dsn`, a multi-host
conninfo where the database is a test cluster), never through the test process's Django
connection: in the PostgreSQL scenario the system's database is not the test database.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from bench.submissions import Arrivals, DocumentMix, OpenLoopAccepter, Submission
from tests.simulator import SimulatorProcess
from tests.system import ROOT, VENV_BIN, SystemProcesses, celery_args, serves_health, wait_for

# Documents the model reads: an e-invoice is answered from its XML with no model call.
MODEL_MIX = {"pdf": 0.5, "text": 0.5}
TERMINAL = ("SUCCEEDED", "REVIEW_REQUIRED", "FAILED_TERMINAL")
# Every long-running process of the Procfile but the local model server.
SERVICE_PROCESSES = ("web", "relay", "ingress", "worker", "delivery", "scheduler", "notifier")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Pipeline:
    """The system under a scenario: its processes, its database and the tenant the load is for."""

    processes: SystemProcesses
    dsn: str
    web_port: int
    tenant_id: str = ""
    tenant_slug: str = ""
    token: str = ""
    erp_slug: str | None = None
    started: dict[str, float] = field(default_factory=dict)

    def manage(self, *args: str, **extra_env: str) -> str:
        """``manage.py ARGS`` with the processes' environment; its output."""
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env={**self.processes.env, **extra_env},
            capture_output=True,
            text=True,
            timeout=120,
        )
        if result.returncode != 0:
            raise AssertionError(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result.stdout

    def create_tenant(self) -> None:
        """A tenant and its API token, made by the project's own commands."""
        self.tenant_slug = f"cluster-{uuid.uuid4().hex[:8]}"
        self.token = self.manage("create_tenant", self.tenant_slug).strip().splitlines()[-1]
        self.tenant_id = str(self.one("SELECT id FROM accounts_tenant WHERE slug = %s", [self.tenant_slug]))

    def connect_erp(self) -> None:
        """The tenant's webhooks to the reference ERP its web process serves (``setup_demo_erp``:
        registered, the secret handed over, the signed verification answered)."""
        self.manage("setup_demo_erp", self.tenant_slug, "--base-url", f"http://127.0.0.1:{self.web_port}")
        self.erp_slug = self.tenant_slug

    # -- the database ------------------------------------------------------------------------------
    def query(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.dsn, autocommit=True, connect_timeout=5) as conn:
            return conn.execute(sql, list(params)).fetchall()  # type: ignore[arg-type]

    def one(self, sql: str, params: Iterable[Any] = ()) -> Any:
        return self.query(sql, params)[0][0]

    def job_states(self) -> Counter[str]:
        return Counter(
            dict(
                self.query(
                    "SELECT state, count(*) FROM extraction_jobs WHERE tenant_id = %s GROUP BY state", [self.tenant_id]
                )
            )
        )

    def all_terminal(self, job_ids: list[str]) -> bool:
        if not job_ids:
            return True
        open_jobs = self.one(
            "SELECT count(*) FROM extraction_jobs WHERE id = ANY(%s::uuid[]) AND state <> ALL(%s)",
            [job_ids, list(TERMINAL)],
        )
        return open_jobs == 0

    # -- the processes -----------------------------------------------------------------------------
    def start_web(self, name: str = "web", **extra_env: str) -> None:
        argv = [
            str(VENV_BIN / "gunicorn"),
            "config.wsgi",
            "--workers",
            "2",
            "--threads",
            "4",
            "--bind",
            f"127.0.0.1:{self.web_port}",
            "--graceful-timeout",
            "5",
        ]
        self.processes.start(name, argv, **extra_env)
        wait_for(lambda: serves_health(self.web_port), timeout=60, message=self.processes.logs)

    def start_worker(self, name: str, queues: str, concurrency: int, *, pool: int = 8, **extra_env: str) -> None:
        argv = [str(VENV_BIN / "celery"), *celery_args(name, queues, concurrency)]
        self.processes.start(name, argv, POSTGRES_POOL_MAX_SIZE=str(pool), **extra_env)

    def start_services(self, *, llm_concurrency: int = 16, notifier: bool = True, **extra_env: str) -> None:
        """The Procfile's processes but web (start_web): relay, ingress, llm and delivery workers,
        scheduler and notifier, each once."""
        self.processes.start("relay", [sys.executable, "manage.py", "run_outbox_relay"], **extra_env)
        self.start_worker("ingress", "ingress", 8, **extra_env)
        self.start_worker("worker", "llm", llm_concurrency, pool=12, **extra_env)
        self.start_worker("delivery", "delivery", 8, **extra_env)
        self.processes.start("scheduler", [sys.executable, "manage.py", "run_scheduler"], **extra_env)
        if notifier:
            self.processes.start("notifier", [sys.executable, "manage.py", "run_notifier"], **extra_env)

    def wait_ready(self, names: Iterable[str] = ("ingress", "worker", "delivery"), timeout: float = 90) -> None:
        """Celery workers print "ready." once they consume."""
        for name in names:
            log = self.processes.log_dir / f"{name}.log"
            wait_for(
                lambda log=log: log.exists() and "ready." in log.read_text(errors="replace"),
                timeout=timeout,
                message=self.processes.logs,
            )

    def exited(self) -> dict[str, int]:
        """Processes that ended although nobody stopped them, with their exit codes."""
        return {name: proc.returncode for name, proc in self.processes.procs.items() if proc.poll() is not None}


def pipeline_env(processes_env: Mapping[str, str], *, simulator: SimulatorProcess, **overrides: str) -> dict[str, str]:
    """The processes' environment: the simulator as the model, loopback webhooks for the reference
    ERP, the tests' short clocks, and the scenario's engines."""
    return {
        **processes_env,
        "EXTRACTION_PROVIDER": "openai",
        "OPENAI_BASE_URL": simulator.base_url,
        "OPENAI_API_KEY": "test",
        "OPENAI_TOKEN_LIMIT_PARAMETER": "max_tokens",
        "EGRESS_ALLOW_LOOPBACK": "1",
        "DEMO_ERP": "1",
        **overrides,
    }


# --- the load ----------------------------------------------------------------------------------------


class Load:
    """An open-loop load of real sample invoices (bench/submissions.py) over HTTP."""

    def __init__(self, pipeline: Pipeline, *, rate: float, seconds: float, seed: int = 1) -> None:
        self.seconds = seconds
        self.accepter = OpenLoopAccepter(
            port=pipeline.web_port,
            token=pipeline.token,
            mix=DocumentMix(MODEL_MIX, seed=seed),
            offsets=Arrivals(rate, seed=seed).offsets(seconds),
            request_timeout=20.0,
            tries=5,
        )
        self.t0 = 0.0

    def start(self) -> Load:
        self.t0 = time.time()
        self.accepter.start(self.t0)
        return self

    def finish(self, grace: float = 60.0) -> None:
        self.accepter.join(grace)

    @property
    def submissions(self) -> list[Submission]:
        return self.accepter.submissions

    @property
    def accepted(self) -> list[str]:
        return [s.job_id for s in self.accepter.submissions if s.accepted and s.job_id]

    def refused(self) -> Counter[str]:
        """Submissions not accepted, by their last answer (a refusal is the client's to retry)."""
        return Counter(s.status for s in self.accepter.submissions if not s.accepted)


# --- the invariants ----------------------------------------------------------------------------------


def settle(pipeline: Pipeline, accepted: list[str], *, timeout: float = 180.0) -> None:
    """Wait until what the run started has ended: every accepted job terminal, every outbox event
    of the tenant published (a review or dead-letter event may trail its job's last move) and
    every webhook delivery delivered or failed, so the ERP ledger is final."""
    wait_for(lambda: pipeline.all_terminal(accepted), timeout=timeout, message=pipeline.processes.logs)
    wait_for(
        lambda: (
            pipeline.one(
                "SELECT (SELECT count(*) FROM outbox_events WHERE tenant_id = %s AND published_at IS NULL) "
                "     + (SELECT count(*) FROM webhook_deliveries WHERE state IN ('pending', 'sending'))",
                [pipeline.tenant_id],
            )
            == 0
        ),
        timeout=90,
        message=pipeline.processes.logs,
    )


def check_invariants(
    pipeline: Pipeline, accepted: list[str], *, calls_by_job: Mapping[str, int], erp: bool
) -> dict[str, list[Any]]:
    """The protocol's guarantees over every accepted job, as violations per invariant (each list
    empty when it holds)."""
    tenant = pipeline.tenant_id
    jobs = {
        job_id: (state, fence)
        for job_id, state, fence in pipeline.query(
            "SELECT id::text, state, fence FROM extraction_jobs WHERE tenant_id = %s", [tenant]
        )
    }
    violations: dict[str, list[Any]] = {}
    violations["every accepted job exists and is terminal"] = [
        {"job": job_id, "state": jobs.get(job_id, ("missing",))[0]}
        for job_id in accepted
        if jobs.get(job_id, ("missing",))[0] not in TERMINAL
    ]
    results = pipeline.query(
        "SELECT j.id::text, j.state, count(r.job_id), max(r.fence), j.fence, "
        "  (SELECT a.outcome FROM extraction_attempts a WHERE a.job_id = j.id AND a.fence = max(r.fence)) "
        "FROM extraction_jobs j LEFT JOIN extraction_results r ON r.job_id = j.id "
        "WHERE j.tenant_id = %s GROUP BY j.id",
        [tenant],
    )
    violations["one result per completed job, written by its completing fence"] = [
        {"job": job_id, "state": state, "results": n, "result_fence": rf, "fence": jf, "attempt": outcome}
        for job_id, state, n, rf, jf, outcome in results
        if (state in ("SUCCEEDED", "REVIEW_REQUIRED") and (n != 1 or outcome not in ("succeeded", "review_required")))
        or (state not in ("SUCCEEDED", "REVIEW_REQUIRED") and n != 0 and state != "FAILED_TERMINAL")
    ]
    attempts = dict(
        pipeline.query(
            "SELECT a.job_id::text, count(*) FROM extraction_attempts a JOIN extraction_jobs j ON j.id = a.job_id "
            "WHERE j.tenant_id = %s AND a.provider <> 'einvoice' AND a.outcome NOT IN ('capacity_deferred', 'shutdown') "
            "GROUP BY a.job_id",
            [tenant],
        )
    )
    violations["model calls <= attempts recorded"] = [
        {"job": job_id, "calls": n, "attempts": attempts.get(job_id, 0)}
        for job_id, n in calls_by_job.items()
        if job_id in jobs and n > attempts.get(job_id, 0)
    ]
    violations["no outbox event lost: every event published, every requested event taken in once"] = [
        {"event": event_id, "type": event_type, "published": published, "inbox_rows": inbox}
        for event_id, event_type, published, inbox in pipeline.query(
            "SELECT o.event_id::text, o.event_type, o.published_at IS NOT NULL, "
            "  (SELECT count(*) FROM execution_inbox i WHERE i.job_id = o.job_id) "
            "FROM outbox_events o WHERE o.tenant_id = %s",
            [tenant],
        )
        if not published or (event_type == "extraction.requested.v1" and inbox != 1)
    ]
    if erp:
        ledger = dict(
            pipeline.query(
                "SELECT job_id::text, count(*) FROM erp_ledger WHERE connection_id = %s GROUP BY job_id",
                [pipeline.erp_slug],
            )
        )
        succeeded = {job_id for job_id, (state, _) in jobs.items() if state == "SUCCEEDED"}
        violations["every SUCCEEDED job in the ERP exactly once, nothing else"] = [
            {"job": job_id, "ledger_rows": ledger.get(job_id, 0)}
            for job_id in succeeded | set(ledger)
            if ledger.get(job_id, 0) != (1 if job_id in succeeded else 0)
        ]
    return violations


def assert_invariants(violations: dict[str, list[Any]]) -> None:
    broken = {name: found[:5] for name, found in violations.items() if found}
    assert not broken, f"invariants violated: {broken}"


# --- what a fault cost -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stalls:
    """The longest time an accepted job's requested event waited to be published, and a published
    one to be taken in, among the jobs accepted in the window; and the same before the fault."""

    publish_seconds: float
    consume_seconds: float
    publish_baseline_seconds: float
    consume_baseline_seconds: float


def stalls(pipeline: Pipeline, *, fault_at: float, until: float) -> Stalls:
    rows = pipeline.query(
        "SELECT extract(epoch FROM o.created_at)::float8, extract(epoch FROM o.published_at)::float8, "
        "  extract(epoch FROM i.received_at)::float8 "
        "FROM outbox_events o JOIN execution_inbox i ON i.event_id = o.event_id "
        "WHERE o.tenant_id = %s AND o.event_type = 'extraction.requested.v1'",
        [pipeline.tenant_id],
    )

    def longest(selected: list[tuple[float, float, float]], index: int) -> float:
        return round(max((row[index] - row[index - 1] for row in selected), default=0.0), 3)

    before = [row for row in rows if row[0] < fault_at]
    during = [row for row in rows if fault_at <= row[0] <= until]
    return Stalls(longest(during, 1), longest(during, 2), longest(before, 1), longest(before, 2))


_TRACEBACK = re.compile(r"Traceback \(most recent call last\)")
_WARNING = re.compile(r'"level": "(WARNING|ERROR|CRITICAL)"')


def log_lines(log_dir: Path, names: Iterable[str]) -> dict[str, dict[str, int]]:
    """Per process: tracebacks and warning-or-worse lines in its log."""
    counts = {}
    for name in names:
        path = log_dir / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        counts[name] = {"tracebacks": len(_TRACEBACK.findall(text)), "warnings": len(_WARNING.findall(text))}
    return counts
