"""Fault-injection acceptance suite (OPS-5): the real processes under load, every fault, and
the invariants over every accepted job.

Run from the project root::

    .venv/bin/python -m tests.acceptance.faults --duration 1200 [--rate 2] [--time-scale 1/60] [--out DIR]

It starts the Procfile's processes (web, relay, ingress, llm worker, delivery worker,
scheduler, notifier) in its own sandbox (``bench_faults``: database, vhost, Redis database 14)
with the reference ERP in a gunicorn of its own and the provider simulator as the model (429s,
5xx, hangs, malformed JSON and invented IBANs at set rates), reaching RabbitMQ and Redis
through TCP proxies of its own (bench/tcp_proxy.py). Under an open-loop load of real sample
invoices (bench/submissions.py) it injects each fault of :data:`FAULTS` in turn, once per round,
acting as the process manager that restarts whatever died; after the load it waits a bounded
drain and checks the invariants over every accepted job. It prints a verdict table, writes it
as JSON and Markdown with a plot into ``--out``, and exits 1 on any violation (2 when the run
could not be set up). What is real and what is scaled: tests/acceptance/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import traceback
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import psycopg

from bench import harness, live_system, submissions
from bench.tcp_proxy import ProxyThread
from tests.acceptance import load
from tests.system import FAST_CLOCKS

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent

DEFAULT_SANDBOX = ("bench_faults", 14)
# This script's own connections, which a PostgreSQL fault leaves alone: the suite watches the
# system through them.
OWN_APPS = ("bench", "sampler", "checker", "setup", "monitor")

# The model's faults at set rates (tests/simulator SimulatorConfig), besides the bursts below.
MODEL_FAULTS = {
    "rate_limit_rate": 0.03,
    "rate_limit_retry_after_seconds": 1.0,
    "error_rate": 0.03,
    "hang_rate": 0.02,  # until the client gives up: the attempt timeout
    "malformed_rate": 0.03,
    "hallucination_rate": 0.05,  # an invented, checksum-valid IBAN with evidence pointing elsewhere
}
MODEL_LATENCY = (0.4, 1.2)  # mean, p95 seconds: well inside the shortened attempt timeout
# An outbox row unpublished for longer than this is a violation (sampled every second and at the end).
OUTBOX_LAG_BOUND_SECONDS = 30.0
FAULT_LINE = "fault injection: SIGKILL at "


@dataclass(frozen=True)
class Fault:
    name: str
    description: str


FAULTS = (
    Fault("provider_429_storm", "the model answers the next 30 calls with 429 + Retry-After"),
    Fault("provider_5xx_burst", "the model answers the next 20 calls with 500"),
    Fault("llm_worker_killed_after_provider_response", "the LLM worker SIGKILLs itself right after a provider answer"),
    Fault(
        "llm_worker_killed_with_completions_batched",
        "the LLM worker SIGKILLs itself as a slot is about to write its process's batch of completions",
    ),
    Fault(
        "ingress_killed_after_commit_before_ack", "the ingress worker SIGKILLs itself after its commit, before the ack"
    ),
    Fault(
        "ingress_killed_with_a_take_in_batch_open",
        "the ingress worker SIGKILLs itself as it is about to write the messages it holds (none written or acked)",
    ),
    Fault(
        "relay_killed_between_confirm_and_update",
        "the relay SIGKILLs itself after the broker's confirm, before marking the rows",
    ),
    Fault("broker_connections_dropped", "every connection to RabbitMQ reset (RST) at once"),
    Fault("broker_stalled", "RabbitMQ connections stall: no byte forwarded for the hold"),
    Fault("broker_down", "RabbitMQ unreachable for the hold: open connections reset, new ones refused"),
    Fault("redis_down", "Redis unreachable for the hold: open connections reset, new ones refused"),
    Fault("postgres_backends_terminated", "pg_terminate_backend on every backend of the sandbox's processes"),
    Fault("erp_down_for_an_hour", "the ERP receiver's gunicorn stopped for one hour × the time scale"),
    Fault(
        "webhooks_redelivered", "manage.py redeliver_webhooks: recent delivered webhooks sent again, same webhook-ids"
    ),
    Fault("events_republished", "recent completed events published to the broker again (a duplicate fan-out message)"),
)
KILLS = {
    "llm_worker_killed_after_provider_response": ("worker", "after_provider_response"),
    "llm_worker_killed_with_completions_batched": ("worker", "completions_before_write"),
    "ingress_killed_after_commit_before_ack": ("ingress", "ingress_after_commit"),
    "ingress_killed_with_a_take_in_batch_open": ("ingress", "take_ins_before_write"),
    "relay_killed_between_confirm_and_update": ("relay", "relay_after_confirm"),
}


def parse_scale(text: str) -> float:
    try:
        value = float(Fraction(text))
    except (ValueError, ZeroDivisionError) as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or a fraction such as 1/60") from exc
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError("the time scale is in (0, 1]")
    return value


def delivery_clocks(scale: float) -> dict[str, str]:
    """The webhook schedule (seconds to hours) on the suite's time scale, so that an hour's
    outage meets the retries, backoff and circuit breaker an hour would meet."""
    return {
        "EGRESS_ALLOW_LOOPBACK": "1",
        "WEBHOOK_TIMEOUT_SECONDS": "3",
        "WEBHOOK_RETRY_BASE_SECONDS": f"{max(0.1, 5 * scale):.3f}",
        "WEBHOOK_RETRY_CAP_SECONDS": f"{max(1.0, 3600 * scale):.3f}",
        "WEBHOOK_CIRCUIT_OPEN_SECONDS": f"{max(0.5, 60 * scale):.3f}",
    }


# --- the record of a run -------------------------------------------------------------------------


@dataclass
class Injection:
    """One injection of a fault: when it began, when its cause was gone (``cleared``: the hold
    ended, or the killed process died) and when the system had recovered."""

    fault: str
    round: int
    started_at: float
    cleared_at: float | None = None
    recovered_at: float | None = None
    observed: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    # What "recovered" means for this injection, kept to look again after the drain when it did
    # not hold within the settle bound.
    condition: Callable[[], float | None] | None = field(default=None, repr=False)
    bound: float = 0.0

    @property
    def injected(self) -> bool:
        return self.cleared_at is not None

    @property
    def time_to_recover(self) -> float | None:
        if self.recovered_at is None or self.cleared_at is None:
            return None
        return round(max(0.0, self.recovered_at - self.cleared_at), 2)


@dataclass
class Death:
    name: str
    pid: int
    generation: int
    at: float
    returncode: int | None
    fault_point: str | None
    log_tail: str


class Supervisor:
    """The process manager: every 0.2 s, a process found dead is recorded and started again
    (without FAULT_INJECTION). A death at an armed fault point is the fault; any other exit of
    a process the suite did not stop is a violation, kept with its log tail."""

    def __init__(self, system: live_system.System, names: list[str]) -> None:
        self.system = system
        self.names = list(names)
        self.deaths: list[Death] = []
        self.unexpected: list[Death] = []
        self.restarts: Counter[str] = Counter()
        self.planned: set[str] = set()
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="supervisor", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            with self.lock:
                for name in self.names:
                    if name in self.planned:
                        continue
                    proc = self.system.procs.get(name)
                    if proc is None or proc.poll() is None:
                        continue
                    self._died(name, proc)

    def _died(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        generation = self.system.generation[name]
        log = self.system.log_tail(name, 100_000, generation) if name in self.system.specs else ""
        tail = "\n".join(log.splitlines()[-40:])
        point = next(
            (line.split(FAULT_LINE, 1)[1].split('"')[0] for line in log.splitlines() if FAULT_LINE in line), None
        )
        death = Death(
            name, proc.pid, generation, time.time(), proc.returncode, point if proc.returncode == -9 else None, tail
        )
        self.deaths.append(death)
        if death.fault_point is None:
            self.unexpected.append(death)
        if name in self.system.specs:
            self.system.relaunch(name)
            self.restarts[name] += 1
        else:
            self.system.procs.pop(name, None)  # the simulator: not restartable, recorded

    def death_of(self, name: str, generation: int) -> Death | None:
        return next((d for d in self.deaths if d.name == name and d.generation == generation), None)


@dataclass
class Run:
    sandbox: harness.Sandbox
    system: live_system.System
    supervisor: Supervisor
    sampler: live_system.Sampler
    broker_proxy: ProxyThread
    redis_proxy: ProxyThread
    conn: psycopg.Connection[Any]
    tenant_id: uuid.UUID
    tenant_slug: str
    endpoint_id: uuid.UUID
    erp_slug: str
    scale: float
    hold: float
    settle: float
    env: dict[str, str]
    injections: list[Injection] = field(default_factory=list)

    def query(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        for attempt in range(3):
            try:
                return self.conn.execute(sql, params).fetchall()
            except psycopg.OperationalError:
                if attempt == 2:
                    raise
                self.conn = psycopg.connect(self.sandbox.dsn(app="checker"), autocommit=True)
        return []

    def one(self, sql: str, params: Any = None) -> Any:
        rows = self.query(sql, params)
        return rows[0][0] if rows else None

    def simulator_stats(self) -> dict[str, Any]:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
            f"{self.system.simulator_url}/_stats", timeout=10
        ) as response:
            return dict(json.load(response))


# --- what "recovered" means ----------------------------------------------------------------------

# The first job accepted at or after a moment that went the whole way: taken in through the
# ingress (an inbox row), answered by the model, terminal, and its terminal event delivered to
# the ERP. Its last milestone is when the flow is known to be back.
FLOW_SQL = """
SELECT extract(epoch FROM greatest(i.received_at, t.at, d.at))::float8 AS back_at
  FROM extraction_jobs j
  JOIN execution_inbox i ON i.job_id = j.id
  JOIN LATERAL (SELECT min(e.created_at) AS at FROM job_events e
                 WHERE e.job_id = j.id AND e.to_state IN ('SUCCEEDED', 'FAILED_TERMINAL', 'REVIEW_REQUIRED')) t ON true
  JOIN LATERAL (SELECT min(d.delivered_at) AS at FROM webhook_events w
                  JOIN webhook_deliveries d ON d.event_id = w.event_id
                 WHERE w.job_id = j.id AND d.state = 'delivered') d ON true
 WHERE j.tenant_id = %(tenant)s AND j.created_at >= to_timestamp(%(since)s)
   AND t.at IS NOT NULL AND d.at IS NOT NULL
   AND EXISTS (SELECT FROM extraction_attempts a
                WHERE a.job_id = j.id AND a.provider <> 'einvoice' AND a.input_tokens IS NOT NULL)
 ORDER BY back_at
 LIMIT 1
"""


def flow_back_at(run: Run, since: float) -> float | None:
    return run.one(FLOW_SQL, {"tenant": run.tenant_id, "since": since})


def all_alive(run: Run) -> bool:
    return all(
        name in run.supervisor.planned
        or (run.system.procs.get(name) is not None and run.system.procs[name].poll() is None)
        for name in run.supervisor.names
    )


def wait_until(run: Run, condition: Callable[[], float | None], *, timeout: float) -> float | None:
    """Poll ``condition`` (a time, or None while not yet) every 0.5 s for at most ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            return None
        time.sleep(0.5)


def recover_flow(
    run: Run, inj: Injection, *, extra: Callable[[], float | None] | None = None, timeout: float | None = None
) -> None:
    """Recovered once every process is up, a job accepted after the clear has gone the whole way,
    and ``extra`` (a fault's own evidence) holds; the latest of those times is the recovery."""
    assert inj.cleared_at is not None
    since = inj.cleared_at

    def condition() -> float | None:
        if not all_alive(run):
            return None
        back = flow_back_at(run, since)
        if back is None:
            return None
        own = extra() if extra is not None else back
        return None if own is None else max(back, own)

    inj.condition, inj.bound = condition, timeout or run.settle
    inj.recovered_at = wait_until(run, condition, timeout=inj.bound)
    if inj.recovered_at is not None:
        inj.observed["flow_back_after_s"] = round(inj.recovered_at - since, 2)


# --- the faults ----------------------------------------------------------------------------------


def _sim_delta(run: Run, before: dict[str, Any], *keys: str) -> dict[str, int]:
    after = run.simulator_stats()["outcomes"]
    return {key: after.get(key, 0) - before.get(key, 0) for key in keys}


def _attempt_outcomes_since(run: Run, since: float) -> dict[str, int]:
    rows = run.query(
        "SELECT outcome, count(*) FROM extraction_attempts a JOIN extraction_jobs j ON j.id = a.job_id "
        "WHERE j.tenant_id = %s AND a.ended_at >= to_timestamp(%s) GROUP BY outcome",
        [run.tenant_id, since],
    )
    return {outcome: n for outcome, n in rows}


def model_burst(run: Run, inj: Injection, *, forced: str, count: int, outcome_key: str) -> None:
    before = run.simulator_stats()["outcomes"]
    run.system.simulator_control(**{f"{forced}_next": count})
    # The burst lasts until the model has answered that many calls so.
    inj.cleared_at = wait_until(
        run,
        lambda: time.time() if run.simulator_stats()["pending_faults"].get(forced, 0) == 0 else None,
        timeout=run.settle,
    )
    if inj.cleared_at is None:
        inj.cleared_at = time.time()
        inj.note = f"only part of the {count} forced answers were drawn"
    inj.observed["simulator_answers"] = _sim_delta(run, before, outcome_key)
    recover_flow(run, inj)
    inj.observed["attempt_outcomes_meanwhile"] = _attempt_outcomes_since(run, inj.started_at)


def kill_at_fault_point(run: Run, inj: Injection, *, name: str, point: str) -> None:
    """Restart ``name`` with FAULT_INJECTION=point (the old one stopped gracefully first, as a
    deploy would), wait for it to kill itself there; the supervisor starts it again without."""
    system, supervisor = run.system, run.supervisor
    with supervisor.lock:
        supervisor.planned.add(name)
    try:
        system.stop(name)
        armed_at = time.time()
        system.relaunch(name, FAULT_INJECTION=point)
        armed_generation = system.generation[name]
        pid = system.procs[name].pid
    finally:
        with supervisor.lock:
            supervisor.planned.discard(name)
    inj.observed["armed_pid"] = pid
    death = None
    deadline = time.monotonic() + run.settle
    while time.monotonic() < deadline and (death := supervisor.death_of(name, armed_generation)) is None:
        time.sleep(0.2)
    if death is None or death.fault_point != point:
        inj.note = (
            "the armed process did not die at its point" if death is None else f"it died otherwise: {death.returncode}"
        )
        with supervisor.lock:  # disarm: a clean process for the rest of the run
            supervisor.planned.add(name)
        system.stop(name)
        system.relaunch(name)
        with supervisor.lock:
            supervisor.planned.discard(name)
        return
    inj.cleared_at = death.at
    inj.observed["died_after_armed_s"] = round(death.at - armed_at, 2)
    affected: Callable[[], float | None]
    if point in ("after_provider_response", "completions_before_write"):
        in_hand = [
            row[0]
            for row in run.query(
                "SELECT job_id FROM extraction_attempts WHERE worker_id LIKE %s AND ended_at IS NULL", [f"%:{pid}:%"]
            )
        ]
        inj.observed["jobs_in_hand_at_death"] = len(in_hand)
        inj.observed["pool_permits_in_flight_at_death"] = _pool_in_flight()
        affected = lambda: _all_terminal_at(run, in_hand)  # noqa: E731
    elif point == "ingress_after_commit":
        taken = [
            row[0]
            for row in run.query(
                "SELECT i.job_id FROM execution_inbox i JOIN extraction_jobs j ON j.id = i.job_id "
                "WHERE j.tenant_id = %s AND i.received_at BETWEEN to_timestamp(%s) AND to_timestamp(%s)",
                [run.tenant_id, armed_at, death.at + 0.5],
            )
        ]
        inj.observed["jobs_committed_unacked"] = len(taken)
        quarantined_before = run.one("SELECT count(*) FROM quarantined_messages")
        affected = lambda: _all_terminal_at(run, taken)  # noqa: E731
    elif point == "take_ins_before_write":
        untaken = [
            row[0]
            for row in run.query(
                "SELECT id FROM extraction_jobs WHERE tenant_id = %s AND state = 'ACCEPTED'", [run.tenant_id]
            )
        ]
        inj.observed["jobs_accepted_not_taken_in_at_death"] = len(untaken)
        affected = lambda: _all_terminal_at(run, untaken)  # noqa: E731
    else:
        claimed = [
            row[0]
            for row in run.query(
                "SELECT event_id FROM outbox_events WHERE published_at IS NULL AND claimed_until > now()"
            )
        ]
        inj.observed["rows_confirmed_unmarked"] = len(claimed)
        affected = lambda: _all_published_at(run, claimed)  # noqa: E731

    def ready() -> float | None:
        return time.time() if system.generation[name] > armed_generation and system.is_ready(name) else None

    def evidence() -> float | None:
        at_ready, at_done = ready(), affected()
        return None if at_ready is None or at_done is None else max(at_ready, at_done)

    # A killed worker's in-flight permits come back only when their TTL runs out: until then the
    # pool has less room than its limit.
    permit_ttl = float(run.env["CAPACITY_PERMIT_TTL_SECONDS"]) if point == "after_provider_response" else 0.0
    recover_flow(run, inj, extra=evidence, timeout=run.settle + permit_ttl)
    inj.observed["restarted"] = system.generation[name] > armed_generation
    if point == "after_provider_response":
        inj.observed["permits_leaked_reclaimed"] = _permit_counts()
    elif point == "ingress_after_commit":
        inj.observed["redelivered_quarantined"] = (
            run.one("SELECT count(*) FROM quarantined_messages") - quarantined_before
        )


def _pool_in_flight() -> int | None:
    from extraction.capacity import limiter

    snap = limiter.snapshot(limiter.pool_limits("default"))
    return None if snap is None else snap.in_flight


def _permit_counts() -> dict[str, int] | None:
    from extraction.capacity import limiter

    counts = limiter.permit_counts(limiter.pool_limits("default"))
    return None if counts is None else counts._asdict()


def _all_terminal_at(run: Run, job_ids: list[Any]) -> float | None:
    if not job_ids:
        return time.time()
    row = run.query(
        "SELECT count(*) FILTER (WHERE state NOT IN ('SUCCEEDED', 'FAILED_TERMINAL', 'REVIEW_REQUIRED')), "
        "extract(epoch FROM max(updated_at))::float8 FROM extraction_jobs WHERE id = ANY(%s)",
        [job_ids],
    )[0]
    return row[1] if row[0] == 0 else None


def _all_published_at(run: Run, event_ids: list[Any]) -> float | None:
    if not event_ids:
        return time.time()
    row = run.query(
        "SELECT count(*) FILTER (WHERE published_at IS NULL), extract(epoch FROM max(published_at))::float8, "
        "sum(publish_attempts) FROM outbox_events WHERE event_id = ANY(%s)",
        [event_ids],
    )[0]
    return row[1] if row[0] == 0 else None


def broker_fault(run: Run, inj: Injection, *, kind: str) -> None:
    proxy = run.broker_proxy
    before = proxy.stats()
    if kind == "drop":
        inj.observed["connections_reset"] = proxy.drop()
        inj.cleared_at = time.time()
    elif kind == "stall":
        inj.observed["connections_stalled"] = before["active"]
        proxy.stall(run.hold)
        time.sleep(run.hold)
        inj.cleared_at = time.time()
    else:
        inj.observed["connections_reset"] = proxy.outage(run.hold)
        time.sleep(run.hold)
        inj.cleared_at = time.time()
    inj.observed["hold_s"] = 0 if kind == "drop" else run.hold
    recover_flow(run, inj)
    inj.observed["reconnections"] = proxy.stats()["accepted"] - before["accepted"]


def redis_down(run: Run, inj: Injection) -> None:
    proxy = run.redis_proxy
    before = proxy.stats()
    calls_before = run.simulator_stats()["calls"]
    inj.observed["connections_reset"] = proxy.outage(run.hold)
    time.sleep(run.hold)
    # CAPACITY_FAIL_MODE=closed: no model call while the limiter cannot count it (one admitted
    # just before may still go out).
    inj.observed["model_calls_during_outage"] = run.simulator_stats()["calls"] - calls_before
    inj.cleared_at = time.time()
    inj.observed["hold_s"] = run.hold
    recover_flow(run, inj)
    inj.observed["reconnections"] = proxy.stats()["accepted"] - before["accepted"]


def postgres_terminated(run: Run, inj: Injection) -> None:
    sandbox = run.sandbox
    own = [f"{sandbox.app_prefix}{app}" for app in OWN_APPS]
    rows = run.query(
        "SELECT application_name, pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = %s AND application_name LIKE %s AND NOT application_name = ANY(%s) AND pid <> pg_backend_pid()",
        [sandbox.database, f"{sandbox.app_prefix}%", own],
    )
    by_app = Counter(app.removeprefix(sandbox.app_prefix) for app, done in rows if done)
    inj.observed["backends_terminated"] = sum(by_app.values())
    inj.observed["by_process"] = dict(sorted(by_app.items()))
    inj.cleared_at = time.time()
    recover_flow(run, inj)


def erp_down(run: Run, inj: Injection) -> None:
    hold = 3600 * run.scale
    supervisor = run.supervisor
    with supervisor.lock:
        supervisor.planned.add("erp")
    run.system.stop("erp", grace_seconds=10)
    time.sleep(hold)
    up_at = time.time()
    run.system.relaunch("erp")
    run.system.wait_ready(["erp"], timeout=60)
    with supervisor.lock:
        supervisor.planned.discard("erp")
    inj.cleared_at = up_at
    inj.observed["down_s"] = round(up_at - inj.started_at, 1)
    attempts = run.query(
        "SELECT a.outcome, count(*) FROM webhook_delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id "
        "WHERE d.endpoint_id = %s AND a.started_at BETWEEN to_timestamp(%s) AND to_timestamp(%s) GROUP BY a.outcome",
        [run.endpoint_id, inj.started_at, up_at],
    )
    inj.observed["delivery_attempts_while_down"] = {outcome: n for outcome, n in attempts}
    waiting = [
        row[0]
        for row in run.query(
            "SELECT id FROM webhook_deliveries WHERE endpoint_id = %s AND state <> 'delivered' "
            "AND created_at <= to_timestamp(%s)",
            [run.endpoint_id, up_at],
        )
    ]
    inj.observed["deliveries_waiting_at_return"] = len(waiting)

    def backlog_delivered() -> float | None:
        if not waiting:
            return time.time()
        row = run.query(
            "SELECT count(*) FILTER (WHERE state <> 'delivered'), extract(epoch FROM max(delivered_at))::float8 "
            "FROM webhook_deliveries WHERE id = ANY(%s)",
            [waiting],
        )[0]
        return row[1] if row[0] == 0 else None

    recover_flow(run, inj, extra=backlog_delivered, timeout=run.settle + 3600 * run.scale)


def webhooks_redelivered(run: Run, inj: Injection) -> None:
    since = datetime.fromtimestamp(time.time() - 30, UTC).isoformat()
    done = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "redeliver_webhooks",
            "--tenant",
            run.tenant_slug,
            "--state",
            "delivered",
            "--since",
            since,
        ],
        cwd=PROJECT_ROOT,
        env={**run.env, "PGAPPNAME": f"{run.sandbox.app_prefix}redeliver"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    ids = [line.strip() for line in done.stdout.splitlines()[1:] if line.strip()]
    inj.observed["redelivered"] = len(ids)
    if done.returncode != 0 or not ids:
        inj.note = f"redeliver_webhooks exited {done.returncode} with {len(ids)} deliveries: {done.stderr[-300:]}"
        return
    inj.cleared_at = time.time()
    ledger_before = run.one("SELECT count(*) FROM erp_ledger WHERE connection_id = %s", [run.erp_slug])

    def sent_again() -> float | None:
        row = run.query(
            "SELECT count(*) FILTER (WHERE state <> 'delivered' OR delivered_at < to_timestamp(%s)), "
            "extract(epoch FROM max(delivered_at))::float8, "
            "count(*) FILTER (WHERE response_snippet LIKE '%%duplicate%%') "
            "FROM webhook_deliveries WHERE id = ANY(%s::uuid[])",
            [inj.started_at, ids],
        )[0]
        inj.observed["erp_answered_duplicate"] = row[2]
        return row[1] if row[0] == 0 else None

    recover_flow(run, inj, extra=sent_again)
    # Ledger rows of jobs finished meanwhile are new; the redelivered ones must add none.
    ledger_jobs = run.one(
        "SELECT count(*) FROM erp_ledger l JOIN webhook_events w ON w.job_id = l.job_id "
        "JOIN webhook_deliveries d ON d.event_id = w.event_id WHERE d.id = ANY(%s::uuid[]) AND l.connection_id = %s",
        [ids, run.erp_slug],
    )
    inj.observed["ledger_rows_before"] = ledger_before
    inj.observed["ledger_rows_of_redelivered_jobs"] = ledger_jobs


def events_republished(run: Run, inj: Injection) -> None:
    from extraction.outbox.relay import OutboxRelay, OutboxRow

    rows = run.query(
        "SELECT event_id, event_type, payload FROM outbox_events WHERE tenant_id = %s "
        "AND event_type = 'extraction.completed.v1' AND published_at IS NOT NULL ORDER BY published_at DESC LIMIT 10",
        [run.tenant_id],
    )
    relay = OutboxRelay(broker_url=run.sandbox.broker_url)  # straight to RabbitMQ, not through the proxy
    try:
        for event_id, event_type, payload in rows:
            relay.publish(
                OutboxRow(event_id, event_type, payload if isinstance(payload, dict) else json.loads(payload))
            )
    finally:
        relay.close()
    event_ids = [row[0] for row in rows]
    inj.observed["republished"] = len(event_ids)
    if not event_ids:
        inj.note = "no completed event to publish again"
        return
    inj.cleared_at = time.time()

    cleared = inj.cleared_at

    def fanned_out_again() -> float | None:
        latest = run.sampler.latest()
        if latest is None or latest.t < cleared + 1 or latest.queues.get("delivery") != 0:
            return None
        return latest.t

    recover_flow(run, inj, extra=fanned_out_again)
    inj.observed["deliveries_per_event"] = sorted(
        {
            n
            for (n,) in run.query(
                "SELECT count(*) FROM webhook_deliveries WHERE event_id = ANY(%s) AND endpoint_id = %s GROUP BY event_id",
                [event_ids, run.endpoint_id],
            )
        }
    )


def inject(run: Run, fault: Fault, round_: int) -> Injection:
    inj = Injection(fault.name, round_, time.time())
    run.injections.append(inj)
    name = fault.name
    try:
        if name == "provider_429_storm":
            model_burst(run, inj, forced="rate_limit", count=30, outcome_key="rate_limited")
        elif name == "provider_5xx_burst":
            model_burst(run, inj, forced="error", count=20, outcome_key="server_error")
        elif name in KILLS:
            process, point = KILLS[name]
            kill_at_fault_point(run, inj, name=process, point=point)
        elif name == "broker_connections_dropped":
            broker_fault(run, inj, kind="drop")
        elif name == "broker_stalled":
            broker_fault(run, inj, kind="stall")
        elif name == "broker_down":
            broker_fault(run, inj, kind="outage")
        elif name == "redis_down":
            redis_down(run, inj)
        elif name == "postgres_backends_terminated":
            postgres_terminated(run, inj)
        elif name == "erp_down_for_an_hour":
            erp_down(run, inj)
        elif name == "webhooks_redelivered":
            webhooks_redelivered(run, inj)
        elif name == "events_republished":
            events_republished(run, inj)
    except Exception as exc:  # noqa: BLE001 - a fault the suite could not inject is a failed row, not a crash
        inj.note = f"the suite failed injecting it: {type(exc).__name__}: {exc}"[:500]
    return inj


def webhooks_settled(run: Run) -> bool:
    """Every terminal job's event fanned out and its webhook delivered (or given up), and no
    delivery pending: only then does the ERP ledger say what the run sent it."""
    undelivered = run.one(
        "SELECT count(*) FROM extraction_jobs j WHERE j.tenant_id = %(tenant)s "
        "AND j.state IN ('SUCCEEDED', 'FAILED_TERMINAL', 'REVIEW_REQUIRED') AND NOT EXISTS ("
        "  SELECT FROM webhook_events w JOIN webhook_deliveries d ON d.event_id = w.event_id "
        "   WHERE w.job_id = j.id AND d.endpoint_id = %(endpoint)s AND d.state IN ('delivered', 'failed'))",
        {"tenant": run.tenant_id, "endpoint": run.endpoint_id},
    )
    pending = run.one(
        "SELECT count(*) FROM webhook_deliveries WHERE state IN ('pending', 'sending') AND endpoint_id = %s",
        [run.endpoint_id],
    )
    return bool(undelivered == 0 and pending == 0)


def look_again(run: Run) -> None:
    """After the drain: when did an injection that missed its settle bound recover after all?
    (It stays "not recovered"; the late time says by how much.) And the backlog each one built."""
    for inj in run.injections:
        if inj.recovered_at is None and inj.condition is not None and inj.cleared_at is not None:
            late = inj.condition()
            inj.observed["recovered_late_after_s"] = None if late is None else round(late - inj.cleared_at, 2)
        end = inj.recovered_at or (inj.cleared_at or inj.started_at) + inj.bound
        window = [t for t in run.sampler.ticks if inj.started_at <= t.t <= end]
        if window:
            inj.observed["runnable_backlog_peak"] = max(t.runnable for t in window)
            inj.observed["oldest_eligible_age_peak_s"] = round(max(t.oldest_eligible_age for t in window), 1)


# --- the invariants ------------------------------------------------------------------------------


@dataclass
class Check:
    invariant: str
    jobs_checked: int
    violations: int
    examples: list[Any]

    @property
    def holds(self) -> bool:
        return self.violations == 0 and self.jobs_checked > 0


def _check(invariant: str, checked: int, bad: list[Any]) -> Check:
    return Check(invariant, checked, len(bad), bad[:5])


def check_invariants(
    run: Run, accepted: list[submissions.Submission], *, drained: bool, drain_bound: float
) -> list[Check]:
    """The suite's verdict: one check per invariant, over every job of the run."""
    jobs = run.query(
        "SELECT j.id::text, j.state, j.error_class, j.available_at, j.lease_until, j.fence, j.document_id::text, "
        "coalesce(j.lease_until > now(), false) AS lease_live, "
        "(SELECT count(*) FROM job_events e WHERE e.job_id = j.id AND e.to_state = j.state) AS transitions, "
        "(SELECT count(*) FROM outbox_events o WHERE o.job_id = j.id AND o.event_type = 'extraction.requested.v1') "
        "FROM extraction_jobs j WHERE j.tenant_id = %s",
        [run.tenant_id],
    )
    by_id = {row[0]: row for row in jobs}
    succeeded = {row[0] for row in jobs if row[1] == "SUCCEEDED"}
    return [
        _every_job_explainable(run, accepted, jobs, by_id),
        _results_by_their_fence(run),
        _model_calls_within_attempts(run, by_id),
        _ledger_once_per_success(run, by_id, succeeded),
        _outbox_within_lag(run),
        _drained(jobs, drained=drained, drain_bound=drain_bound),
        _no_invented_iban(run, succeeded),
        _no_process_exited(run),
    ]


def _every_job_explainable(
    run: Run, accepted: list[submissions.Submission], jobs: list[tuple[Any, ...]], by_id: dict[str, tuple[Any, ...]]
) -> Check:
    """(a) every accepted job is in an explainable state."""
    bad: list[Any] = [
        {"job": s.job_id, "why": "answered 202 but no such job"} for s in accepted if s.job_id not in by_id
    ]
    results = {
        row[0]
        for row in run.query(
            "SELECT r.job_id::text FROM extraction_results r JOIN extraction_jobs j ON j.id = r.job_id WHERE j.tenant_id = %s",
            [run.tenant_id],
        )
    }
    for job_id, state, error_class, available_at, lease_until, _, _, lease_live, transitions, requested in jobs:
        if state in ("SUCCEEDED", "REVIEW_REQUIRED") and job_id not in results:
            bad.append({"job": job_id, "state": state, "why": "completed without a stored result"})
        elif state == "FAILED_TERMINAL" and not error_class:
            bad.append({"job": job_id, "state": state, "why": "failed without an error class"})
        elif state in live_system.TERMINAL and transitions == 0:
            bad.append({"job": job_id, "state": state, "why": "no job event records how it got there"})
        elif state == "RUNNING" and not lease_live:
            bad.append({"job": job_id, "state": state, "why": f"RUNNING with an expired lease ({lease_until})"})
        elif state in ("READY", "RETRY_SCHEDULED") and available_at is None:
            bad.append({"job": job_id, "state": state, "why": "runnable without available_at"})
        elif state == "RETRY_SCHEDULED" and not error_class:
            bad.append({"job": job_id, "state": state, "why": "waiting for a retry without its reason"})
        elif state == "ACCEPTED" and requested != 1:
            bad.append({"job": job_id, "state": state, "why": f"ACCEPTED with {requested} requested events"})
    return _check("(a) every accepted job is terminal or pending with a stated wait", len(jobs), bad)


def _results_by_their_fence(run: Run) -> Check:
    """(b) no result written by a stale fence."""
    rows = run.query(
        "SELECT r.job_id::text, r.fence, j.fence, r.attempt_number, a.number, a.outcome, "
        "(SELECT count(*) FROM extraction_attempts s WHERE s.job_id = r.job_id "
        "   AND s.outcome IN ('succeeded', 'review_required')) "
        "FROM extraction_results r JOIN extraction_jobs j ON j.id = r.job_id "
        "LEFT JOIN extraction_attempts a ON a.job_id = r.job_id AND a.fence = r.fence WHERE j.tenant_id = %s",
        [run.tenant_id],
    )
    bad = []
    for job_id, result_fence, job_fence, result_number, attempt_number, outcome, completed in rows:
        if outcome not in ("succeeded", "review_required"):
            bad.append({"job": job_id, "result_fence": result_fence, "attempt_outcome": outcome})
        elif result_fence != job_fence or result_number != attempt_number:
            bad.append({"job": job_id, "result_fence": result_fence, "job_fence": job_fence})
        elif completed != 1:
            bad.append({"job": job_id, "why": f"{completed} attempts recorded as completing it"})
    return _check("(b) every result was written by the fence of the attempt that produced it", len(rows), bad)


def _model_calls_within_attempts(run: Run, by_id: dict[str, tuple[Any, ...]]) -> Check:
    """(c) model calls per job <= attempts recorded."""
    calls = run.simulator_stats()["calls_by_job"]
    attempts = dict(
        run.query(
            "SELECT a.job_id::text, count(*) FROM extraction_attempts a JOIN extraction_jobs j ON j.id = a.job_id "
            "WHERE j.tenant_id = %s AND a.provider <> 'einvoice' AND a.outcome NOT IN ('capacity_deferred', 'shutdown') "
            "GROUP BY a.job_id",
            [run.tenant_id],
        )
    )
    bad = [
        {"job": job_id, "model_calls": n, "attempts": attempts.get(job_id, 0)}
        for job_id, n in calls.items()
        if job_id in by_id and n > attempts.get(job_id, 0)
    ]
    strangers = [job_id for job_id in calls if job_id and job_id not in by_id]
    bad += [{"job": job_id, "why": "a model call for no job of this run"} for job_id in strangers]
    return _check(
        "(c) model calls per job (the simulator's count) <= attempts that could call in the ledger", len(by_id), bad
    )


def _ledger_once_per_success(run: Run, by_id: dict[str, tuple[Any, ...]], succeeded: set[str]) -> Check:
    """(d) every SUCCEEDED job in the ERP ledger exactly once, nothing else there."""
    ledger = Counter(
        {
            job_id: n
            for job_id, n in run.query(
                "SELECT job_id::text, count(*) FROM erp_ledger WHERE connection_id = %s GROUP BY job_id", [run.erp_slug]
            )
        }
    )
    completed_deliveries = dict(
        run.query(
            "SELECT w.job_id::text, count(*) FROM webhook_deliveries d JOIN webhook_events w ON w.event_id = d.event_id "
            "WHERE d.endpoint_id = %s AND w.event_type = 'extraction.completed.v1' GROUP BY w.job_id",
            [run.endpoint_id],
        )
    )
    completed_events = dict(
        run.query(
            "SELECT job_id::text, count(*) FROM outbox_events WHERE tenant_id = %s AND event_type = 'extraction.completed.v1' "
            "GROUP BY job_id",
            [run.tenant_id],
        )
    )
    bad = []
    for job_id in sorted(succeeded | set(ledger)):
        if job_id not in succeeded:
            bad.append(
                {
                    "job": job_id,
                    "why": f"in the ledger but {by_id[job_id][1] if job_id in by_id else 'not a job of this run'}",
                }
            )
        elif ledger[job_id] != 1:
            bad.append({"job": job_id, "ledger_rows": ledger[job_id]})
        elif completed_deliveries.get(job_id) != 1 or completed_events.get(job_id) != 1:
            bad.append(
                {
                    "job": job_id,
                    "completed_events": completed_events.get(job_id),
                    "deliveries": completed_deliveries.get(job_id),
                }
            )
    return _check("(d) every SUCCEEDED job is in the ERP ledger exactly once, and nothing else is", len(by_id), bad)


def _outbox_within_lag(run: Run) -> Check:
    """(e) no outbox row unpublished past the lag bound, at any sample or at the end."""
    bad = [
        {
            "t": datetime.fromtimestamp(t.t, UTC).isoformat(timespec="seconds"),
            "oldest_unpublished_s": round(t.outbox_oldest_age, 1),
        }
        for t in run.sampler.ticks
        if t.outbox_oldest_age > OUTBOX_LAG_BOUND_SECONDS
    ]
    late = run.query(
        "SELECT event_id::text, event_type, extract(epoch FROM now() - created_at)::float8 FROM outbox_events "
        "WHERE published_at IS NULL AND created_at < now() - make_interval(secs => %s)",
        [OUTBOX_LAG_BOUND_SECONDS],
    )
    bad += [{"event": e, "type": t, "age_s": round(age, 1)} for e, t, age in late]
    outbox_rows = run.one("SELECT count(*) FROM outbox_events WHERE tenant_id = %s", [run.tenant_id])
    oldest = max((t.outbox_oldest_age for t in run.sampler.ticks), default=0.0)
    return _check(
        f"(e) no outbox row unpublished longer than {OUTBOX_LAG_BOUND_SECONDS:g} s (sampled every second, "
        f"{len(run.sampler.ticks)} samples, longest seen {oldest:.1f} s; and at the end)",
        outbox_rows,
        bad,
    )


def _drained(jobs: list[tuple[Any, ...]], *, drained: bool, drain_bound: float) -> Check:
    """(f) drained: the backlog cleared within the bounded drain."""
    pending = [
        {
            "job": job_id,
            "state": state,
            "available_at": str(available_at),
            "lease_until": str(lease_until),
            "error_class": error_class,
        }
        for job_id, state, error_class, available_at, lease_until, *_ in jobs
        if state not in live_system.TERMINAL
    ]
    return _check(
        f"(f) every job terminal within the {drain_bound:g} s drain", len(jobs), pending if not drained else []
    )


def _no_invented_iban(run: Run, succeeded: set[str]) -> Check:
    """(g) an invented IBAN never SUCCEEDED: every SUCCEEDED result of a document carries the same IBAN."""
    ibans: dict[str, set[str]] = {}
    for document_id, iban in run.query(
        "SELECT j.document_id::text, coalesce(r.output #>> '{supplier,iban,value}', '') FROM extraction_results r "
        "JOIN extraction_jobs j ON j.id = r.job_id WHERE j.tenant_id = %s AND j.state = 'SUCCEEDED'",
        [run.tenant_id],
    ):
        ibans.setdefault(document_id, set()).add(iban)
    bad = [{"document": d, "ibans": sorted(v)} for d, v in ibans.items() if len(v) > 1]
    return _check("(g) no invented IBAN SUCCEEDED (one IBAN per document among SUCCEEDED jobs)", len(succeeded), bad)


def _no_process_exited(run: Run) -> Check:
    """(p) every long-running process survived: none exited that the suite did not kill."""
    exits = [
        {"process": d.name, "returncode": d.returncode, "log_tail": d.log_tail[-1500:]}
        for d in run.supervisor.unexpected
    ]
    return _check("(p) no process exited on its own (every fault survived)", len(run.supervisor.names), exits)


# --- the report ----------------------------------------------------------------------------------


def fault_rows(run: Run, faults: tuple[Fault, ...] = FAULTS) -> list[dict[str, Any]]:
    rows = []
    for fault in faults:
        mine = [i for i in run.injections if i.fault == fault.name]
        injected = [i for i in mine if i.injected]
        recovered = bool(injected) and all(i.recovered_at is not None for i in injected) and len(injected) == len(mine)
        times = [i.time_to_recover for i in injected if i.time_to_recover is not None]
        rows.append(
            {
                "fault": fault.name,
                "description": fault.description,
                "injected": len(injected),
                "recovered": recovered,
                "time_to_recover_s": {"max": max(times) if times else None, "each": times},
                "observed": [dict(i.observed, round=i.round, **({"note": i.note} if i.note else {})) for i in mine],
            }
        )
    return rows


def _observed_text(observed: list[dict[str, Any]]) -> str:
    if not observed:
        return "not injected"
    first = {k: v for k, v in observed[0].items() if k not in ("round", "armed_pid")}
    text = "; ".join(f"{k} {v}" for k, v in first.items())
    return text + (f" (+{len(observed) - 1} more)" if len(observed) > 1 else "")


def verdict_lines(faults: list[dict[str, Any]], checks: list[Check]) -> list[str]:
    lines = ["## Faults", ""]
    lines += load.markdown_table(
        ["fault", "injected", "observed (first injection)", "recovered", "time to recover, s (max)"],
        (
            [
                f["fault"],
                f["injected"],
                _observed_text(f["observed"]).replace("|", "/"),
                "yes" if f["recovered"] else "**NO**",
                f["time_to_recover_s"]["max"],
            ]
            for f in faults
        ),
    )
    lines += ["", "## Invariants over every accepted job", ""]
    lines += load.markdown_table(
        ["invariant", "checked", "violations", "examples"],
        (
            [
                c.invariant,
                c.jobs_checked,
                c.violations if c.holds else f"**{c.violations}**",
                json.dumps(c.examples, default=str)[:400].replace("|", "/") if c.examples else "",
            ]
            for c in checks
        ),
    )
    return lines


def print_table(faults: list[dict[str, Any]], checks: list[Check]) -> None:
    width = max(len(f["fault"]) for f in faults)
    print(f"\n{'fault':<{width}}  injected  recovered  recover s")
    for f in faults:
        print(
            f"{f['fault']:<{width}}  {f['injected']:>8}  {'yes' if f['recovered'] else 'NO':>9}  "
            f"{load.format_value(f['time_to_recover_s']['max']):>9}"
        )
    print()
    for c in checks:
        print(f"{'ok  ' if c.holds else 'FAIL'} {c.invariant}: {c.jobs_checked} checked, {c.violations} violations")
        for example in c.examples[:2]:
            print(f"       e.g. {json.dumps(example, default=str)[:300]}")


# --- a run ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Schedule:
    rounds: int
    slot: float  # planned seconds per injection
    hold: float  # how long an outage or a stall lasts
    warmup: float


def _fault_names(text: str) -> set[str]:
    names = {name.strip() for name in text.split(",") if name.strip()}
    unknown = names - {f.name for f in FAULTS}
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown fault(s) {sorted(unknown)}; known: {', '.join(f.name for f in FAULTS)}"
        )
    return names


def plan_schedule(duration: float, scale: float, rounds: int | None, faults: int = len(FAULTS)) -> Schedule:
    """Spread ``rounds`` × every fault over the run after a warm-up; each injection then takes
    as long as it needs (a fault waits for the previous one's recovery), so a short run may end
    later than ``duration``."""
    if rounds is None:
        rounds = max(1, int(duration // 300))
    warmup = min(30.0, max(8.0, 0.05 * duration))
    slot = max(1.0, (duration - warmup) / (rounds * faults))
    return Schedule(rounds, slot, hold=min(10.0, max(2.0, 0.3 * slot)), warmup=warmup)


def setup_endpoint(tenant: Any, erp_port: int) -> tuple[uuid.UUID, str]:
    """The tenant's webhooks to the reference ERP (every event type), the secret handed to the
    ERP's connection, the signed verification answered: (endpoint id, ERP connection slug)."""
    from delivery import dispatch
    from delivery.endpoints import register_endpoint
    from delivery.erp.models import ErpConnection
    from delivery.models import SUBSCRIBABLE_TYPES

    registration = register_endpoint(
        tenant=tenant,
        url=f"http://127.0.0.1:{erp_port}/erp/{tenant.slug}/webhooks",
        event_types=list(SUBSCRIBABLE_TYPES),
    )
    ErpConnection._default_manager.create(
        slug=tenant.slug,
        tenant_label=tenant.slug,
        secrets=[{"key_id": registration.secret.key_id, "secret": registration.secret.secret}],
    )
    outcome = dispatch.deliver(registration.verification_delivery_id)
    if outcome != "delivered":
        raise RuntimeError(f"the ERP did not answer the endpoint's verification: {outcome}")
    return registration.endpoint.pk, tenant.slug


# --- the run: parse → set up → run → report ------------------------------------------------------


def parse_args(argv: list[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, required=True, help="seconds of load (faults spread over it)")
    parser.add_argument("--rate", type=float, default=2.0, help="submissions per second (default 2)")
    parser.add_argument(
        "--time-scale", type=parse_scale, default=1 / 60, help="an hour lasts 3600 × this (default 1/60)"
    )
    parser.add_argument("--rounds", type=int, help="times every fault is injected (default: one per 300 s)")
    parser.add_argument("--drain", type=float, help="bounded wait after the load (default 60 s + 2 × the scaled hour)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--sandbox", default=DEFAULT_SANDBOX[0], help="database and vhost, bench* (default bench_faults)"
    )
    parser.add_argument("--redis-db", type=int, default=DEFAULT_SANDBOX[1], help="Redis database (default 14)")
    parser.add_argument("--only", type=_fault_names, help="inject only these faults (comma-separated names)")
    parser.add_argument("--out", type=Path, help="directory for faults.json, report.md, faults.png and the logs")
    args = parser.parse_args(argv)
    if args.duration <= 0 or args.rate <= 0:
        parser.error("--duration and --rate must be positive")
    return parser, args


@dataclass(frozen=True)
class Plan:
    """The faults to inject and when, the drain's bound, and where the run writes."""

    faults: tuple[Fault, ...]
    schedule: Schedule
    drain_bound: float
    settle: float
    out: Path
    log_dir: Path
    media_root: Path


def plan_run(args: argparse.Namespace) -> Plan:
    """The run's plan, with its output directory made (its logs and media emptied)."""
    faults_run = tuple(f for f in FAULTS if args.only is None or f.name in args.only)
    schedule = plan_schedule(args.duration, args.time_scale, args.rounds, len(faults_run))
    drain_bound = args.drain if args.drain is not None else 60 + 2 * 3600 * args.time_scale
    out = (args.out or load.default_out("faults")).resolve()
    log_dir, media_root = out / "logs", out / "media"
    shutil.rmtree(log_dir, ignore_errors=True)
    shutil.rmtree(media_root, ignore_errors=True)
    log_dir.mkdir(parents=True)
    media_root.mkdir(parents=True)
    return Plan(faults_run, schedule, drain_bound, 45.0, out, log_dir, media_root)


@dataclass
class Stage:
    """The sandbox made ready: the proxies in front of RabbitMQ and Redis, the tenant, the
    processes (not started yet), their sampler and the checker's connection; the supervisor and
    the accepter once they exist. :meth:`close` stops whatever was started."""

    sandbox: harness.Sandbox
    broker_proxy: ProxyThread
    redis_proxy: ProxyThread
    common: dict[str, str]
    tenant: Any
    token: str
    system: live_system.System
    processes: live_system.ProcessPlan
    sampler: live_system.Sampler
    conn: psycopg.Connection[Any]
    supervisor: Supervisor | None = None
    accepter: submissions.OpenLoopAccepter | None = None

    def close(self) -> None:
        self.sampler.stop()
        if self.accepter is not None:
            self.accepter.stop()
        self.system.stop_all()
        self.broker_proxy.close()
        self.redis_proxy.close()
        self.conn.close()


def set_up(parser: argparse.ArgumentParser, args: argparse.Namespace, plan: Plan) -> Stage:
    try:
        sandbox = live_system.sandbox_named(args.sandbox, args.redis_db)
    except ValueError as exc:
        parser.error(str(exc))
    print(f"setting up {sandbox.database} ...", flush=True)
    os.environ["LOG_LEVEL"] = "WARNING"  # this process's own log lines (the processes log at INFO)
    harness.ensure_database(sandbox.database, DEMO_ERP="1")
    broker_proxy = ProxyThread("127.0.0.1", 5672)
    redis_proxy = ProxyThread("127.0.0.1", 6379)
    proxied = {
        "BROKER_URL": f"amqp://guest:guest@127.0.0.1:{broker_proxy.port}/{sandbox.vhost}",
        "REDIS_URL": f"redis://127.0.0.1:{redis_proxy.port}/{sandbox.redis_db}",
        "CHANNELS_REDIS_URL": f"redis://127.0.0.1:{redis_proxy.port}/{sandbox.redis_db}",
    }
    common = {
        "DEMO_ERP": "1",
        "POOL_TOKENS_PER_MINUTE": "100000000",  # the budget is not under test here; its fail mode is
        **FAST_CLOCKS,
        # A killed worker's permits outlive its longest attempt (ATTEMPT_TIMEOUT_SECONDS 3) and no
        # more, as the default does for 45 s attempts; the default's 60 s floor is not scaled.
        "CAPACITY_PERMIT_TTL_SECONDS": "15",
        **delivery_clocks(args.time_scale),
    }
    sandbox.set_up(
        plan.media_root, app="bench", CHANNELS_REDIS_URL=f"redis://127.0.0.1:6379/{sandbox.redis_db}", **common
    )
    live_system.reset_sandbox(
        sandbox, extra_tables=(*live_system.EXTRA_TABLES, "erp_ledger", "erp_inbox", "erp_connections")
    )
    tenant, token = live_system.make_api_tenant("faults")
    system = live_system.System(sandbox, log_dir=plan.log_dir, media_root=plan.media_root, **common, **proxied)
    processes = live_system.ProcessPlan(web_workers=2, llm_concurrency=100, notifier=True)
    sampler = live_system.Sampler(system)
    conn = psycopg.connect(sandbox.dsn(app="checker"), autocommit=True)
    return Stage(sandbox, broker_proxy, redis_proxy, common, tenant, token, system, processes, sampler, conn)


def start_erp(system: live_system.System) -> int:
    """The reference ERP in a gunicorn of its own; its port."""
    erp_port = harness.free_loopback_port()
    erp_argv = [
        str(harness.VENV_BIN / "gunicorn"),
        "config.wsgi",
        "--workers",
        "1",
        "--threads",
        "4",
        "--bind",
        f"127.0.0.1:{erp_port}",
    ]
    system.launch("erp", live_system.ProcessSpec("erp", erp_argv, {}, health_port=erp_port))
    return erp_port


def start_processes(stage: Stage, args: argparse.Namespace, plan: Plan) -> Run:
    """The simulator, the web, the ERP and the pipeline up, the tenant's webhook endpoint
    verified, and the supervisor made (not started yet)."""
    system = stage.system
    system.start_simulator(live_system.simulator_config(*MODEL_LATENCY, args.seed, **MODEL_FAULTS))
    system.start_web(stage.processes.web_workers)
    erp_port = start_erp(system)
    names = system.start_pipeline(stage.processes)
    system.wait_ready(["web", "erp", *names])
    endpoint_id, erp_slug = setup_endpoint(stage.tenant, erp_port)
    stage.supervisor = Supervisor(system, ["web", "erp", *names, "simulator"])
    return Run(
        sandbox=stage.sandbox,
        system=system,
        supervisor=stage.supervisor,
        sampler=stage.sampler,
        broker_proxy=stage.broker_proxy,
        redis_proxy=stage.redis_proxy,
        conn=stage.conn,
        tenant_id=stage.tenant.pk,
        tenant_slug=stage.tenant.slug,
        endpoint_id=endpoint_id,
        erp_slug=erp_slug,
        scale=args.time_scale,
        hold=plan.schedule.hold,
        settle=plan.settle,
        env=system.env,
    )


@dataclass(frozen=True)
class Load:
    mix: submissions.DocumentMix
    accepter: submissions.OpenLoopAccepter
    t0: float  # when the schedule's first submission was due


def start_load(run: Run, stage: Stage, args: argparse.Namespace, plan: Plan) -> Load:
    """The supervisor, the sampler and the open-loop load started."""
    mix = submissions.DocumentMix(submissions.DEFAULT_MIX, seed=args.seed)
    stage.accepter = accepter = submissions.OpenLoopAccepter(
        port=stage.system.web_port,
        token=stage.token,
        mix=mix,
        offsets=submissions.Arrivals(args.rate, seed=args.seed).offsets(),
    )
    run.supervisor.start()
    run.sampler.start()
    t0 = time.time() + 0.5
    accepter.start(t0)
    schedule = plan.schedule
    print(
        f"processes up; load {args.rate:g}/s; {schedule.rounds} round(s) of {len(plan.faults)} faults, slot "
        f"{schedule.slot:.1f} s, hold {schedule.hold:.1f} s, time scale {args.time_scale:.4g}",
        flush=True,
    )
    return Load(mix, accepter, t0)


def inject_faults(run: Run, plan: Plan, t0: float) -> None:
    """After the warm-up, every fault once per round, each at its slot or once the previous one
    has recovered, whichever is later."""
    schedule, faults_run = plan.schedule, plan.faults
    time.sleep(schedule.warmup)
    for round_ in range(1, schedule.rounds + 1):
        for k, fault in enumerate(faults_run):
            planned = t0 + schedule.warmup + ((round_ - 1) * len(faults_run) + k) * schedule.slot
            if (wait := planned - time.time()) > 0:
                time.sleep(wait)
            inj = inject(run, fault, round_)
            print(
                f"  [{time.time() - t0:6.1f} s] {fault.name}: injected {inj.injected}, recovered in "
                f"{load.format_value(inj.time_to_recover)} s {inj.note}",
                flush=True,
            )


@dataclass(frozen=True)
class Outcome:
    """What the run found: the load's end, the drain, the invariants and the faults' rows."""

    load_ended: float
    drained: bool
    checks: list[Check]
    faults: list[dict[str, Any]]
    rows: list[live_system.JobRow]
    simulator: dict[str, Any]
    proxies: dict[str, Any]


def finish_and_check(run: Run, stage: Stage, args: argparse.Namespace, plan: Plan, loaded: Load) -> Outcome:
    """End the load at the run's duration, drain it (bounded), stop the sampler and the
    supervisor, and check the invariants over every accepted job."""
    t0, accepter = loaded.t0, loaded.accepter
    if (tail := t0 + args.duration - time.time()) > 0:
        time.sleep(tail)
    time.sleep(5)  # a few more jobs after the last fault's recovery
    accepter.stop()
    accepter.join(grace=30)
    load_ended = time.time()
    print(f"load done: {len(accepter.submissions)} submitted; draining (≤ {plan.drain_bound:g} s) ...", flush=True)
    drained = live_system.wait_for_drain(
        stage.conn,
        stage.tenant.pk,
        timeout=plan.drain_bound,
        also=lambda: webhooks_settled(run),
    )
    time.sleep(2)  # let the last samples see the drained state
    look_again(run)
    run.sampler.stop()
    run.supervisor.stop()
    accepted = [s for s in accepter.submissions if s.accepted]
    checks = check_invariants(run, accepted, drained=drained, drain_bound=plan.drain_bound)
    faults = fault_rows(run, plan.faults)
    rows = live_system.job_rows(run.conn, stage.tenant.pk)
    simulator = {k: v for k, v in run.simulator_stats().items() if k not in ("calls_by_job", "recent_requests")}
    proxies = {"broker": run.broker_proxy.stats(), "redis": run.redis_proxy.stats()}
    return Outcome(load_ended, drained, checks, faults, rows, simulator, proxies)


def fault_result(
    args: argparse.Namespace,
    argv: list[str] | None,
    plan: Plan,
    run: Run,
    loaded: Load,
    outcome: Outcome,
    *,
    passed: bool,
    started: float,
) -> dict[str, Any]:
    """The verdict with everything behind it: faults.json's content."""
    t0, accepter, supervisor, sampler = loaded.t0, loaded.accepter, run.supervisor, run.sampler
    return {
        "script": "tests/acceptance/faults.py",
        "argv": sys.argv[1:] if argv is None else argv,
        "verdict": "pass" if passed else "fail",
        "faults": outcome.faults,
        "invariants": [asdict(c) | {"holds": c.holds} for c in outcome.checks],
        "contract": {
            "arrivals": submissions.Arrivals(args.rate, seed=args.seed).describe(),
            "duration_s": args.duration,
            "load_seconds": round(outcome.load_ended - t0, 1),
            "time_scale": args.time_scale,
            "schedule": asdict(plan.schedule),
            "drain_bound_s": plan.drain_bound,
            "drained": outcome.drained,
            "model": {
                "latency_mean_seconds": MODEL_LATENCY[0],
                "latency_p95_seconds": MODEL_LATENCY[1],
                **MODEL_FAULTS,
            },
            "mix": loaded.mix.describe(),
            "clocks": {**FAST_CLOCKS, **delivery_clocks(args.time_scale)},
            "outbox_lag_bound_s": OUTBOX_LAG_BOUND_SECONDS,
        },
        "accept": load.accept_figures(accepter.submissions, outcome.load_ended - t0),
        "jobs": load.job_figures(outcome.rows, accepter.submissions),
        "simulator": outcome.simulator,
        "deaths": [asdict(d) | {"log_tail": d.log_tail[-800:]} for d in supervisor.deaths],
        "restarts": dict(supervisor.restarts),
        "proxies": outcome.proxies,
        "sampler_errors": dict(sampler.errors),
        "seconds": round(time.time() - started, 1),
        "series": load.series(sampler.ticks, accepter.submissions, t0),
    }


def main(argv: list[str] | None = None) -> int:
    parser, args = parse_args(argv)
    plan = plan_run(args)
    stage = set_up(parser, args, plan)
    started = time.time()
    try:
        run = start_processes(stage, args, plan)
        loaded = start_load(run, stage, args, plan)
        inject_faults(run, plan, loaded.t0)
        outcome = finish_and_check(run, stage, args, plan, loaded)
    except Exception:
        print(f"the suite could not run to its end (logs in {plan.log_dir}):", flush=True)
        if stage.supervisor is not None:
            stage.supervisor.stop()
        raise
    finally:
        stage.close()

    checks, faults = outcome.checks, outcome.faults
    passed = all(c.holds for c in checks) and all(f["injected"] >= 1 and f["recovered"] for f in faults)
    result = fault_result(args, argv, plan, run, loaded, outcome, passed=passed, started=started)
    out = plan.out
    write_report(out, result, checks, faults, run, loaded.t0, outcome.load_ended)
    print_table(faults, checks)
    print(
        f"\nverdict: {result['verdict'].upper()}; written: {out / 'report.md'}, {out / 'faults.json'}, {out / 'faults.png'}"
    )
    return 0 if passed else 1


def write_report(
    out: Path,
    result: dict[str, Any],
    checks: list[Check],
    faults: list[dict[str, Any]],
    run: Run,
    t0: float,
    load_ended: float,
) -> None:
    contract = result["contract"]
    jobs, accept = result["jobs"], result["accept"]
    lines = [
        f"# Fault-injection suite — {result['verdict'].upper()}",
        "",
        f"`python -m tests.acceptance.faults {' '.join(result['argv'])}`",
        "",
    ]
    lines += [
        "## What ran",
        "",
        f"- **Load**: {contract['arrivals']} for {contract['load_seconds']:g} s through the HTTP API (upload + "
        f"create with an Idempotency-Key, up to 3 tries with the same key); {accept['submitted']} submitted, "
        f"{accept['accepted']} accepted ({accept['outcomes']}); jobs {jobs['jobs']}: {jobs['states']}.",
        f"- **Faults**: {contract['schedule']['rounds']} round(s) of {len(faults)}, after a "
        f"{contract['schedule']['warmup']:g} s warm-up; outages and stalls hold {contract['schedule']['hold']:g} s; "
        f"the ERP's hour lasts {3600 * contract['time_scale']:g} s (time scale {contract['time_scale']:.4g}).",
        f"- **Model**: the provider simulator, latency lognormal mean {MODEL_LATENCY[0]} s / p95 {MODEL_LATENCY[1]} s, "
        + ", ".join(f"{k} {v}" for k, v in MODEL_FAULTS.items())
        + ".",
        "- **Real**: PostgreSQL, RabbitMQ, Redis, every Procfile process (web gunicorn, relay, ingress, llm "
        "worker, delivery worker, scheduler, notifier; not the WebSocket server or the local model), the reference "
        "ERP in its own gunicorn, signed webhooks, SIGKILL at the named fault points. RabbitMQ and Redis are reached "
        "through the suite's TCP proxies (bench/tcp_proxy.py): a broker or Redis fault is done to the connections, "
        "the shared servers are never stopped. PostgreSQL faults terminate the sandbox's backends.",
        "- **Scaled**: execution clocks shortened as in the tests ("
        + ", ".join(f"{k} {v}" for k, v in FAST_CLOCKS.items())
        + "); the webhook schedule on the time scale ("
        + ", ".join(f"{k} {v}" for k, v in delivery_clocks(contract["time_scale"]).items() if k.startswith("WEBHOOK"))
        + ").",
        f"- **Drain**: bounded at {contract['drain_bound_s']:g} s after the load: "
        + ("everything drained." if contract["drained"] else "**not drained**."),
        "- **Time to recover** runs from the moment the fault's cause was gone (the hold ended, the killed process "
        "died, the ERP came back) until every process was up, the fault's own work was done (jobs in hand terminal, "
        "rows republished, the ERP's backlog delivered) and a job accepted after it had gone the whole way (ingress, "
        "model, terminal, webhook delivered): it includes that job's own path and, for a killed process, its "
        "restart.",
        "",
    ]
    lines += verdict_lines(faults, checks)
    deaths = result["deaths"]
    if deaths:
        lines += ["", "## Process deaths", ""]
        lines += load.markdown_table(
            ["process", "generation", "at s", "returncode", "fault point"],
            (
                [
                    d["name"],
                    d["generation"],
                    round(d["at"] - t0, 1),
                    d["returncode"],
                    d["fault_point"] or "**none: exited on its own**",
                ]
                for d in deaths
            ),
        )
    lines += ["", "![the run](faults.png)", ""]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    (out / "faults.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    spans = [
        (i.started_at - t0, (i.cleared_at or i.started_at) - t0 + 0.5, i.fault.replace("_", " "))
        for i in run.injections
    ]
    load.plot(
        out / "faults.png",
        result["series"],
        title=f"tests/acceptance/faults.py — {result['verdict'].upper()}: {contract['arrivals']}, "
        f"{contract['schedule']['rounds']} round(s), time scale {contract['time_scale']:.4g}",
        spans=spans,
        marks=[(load_ended - t0, "load ends")],
    )
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception:  # noqa: BLE001 - a run that could not be made is no verdict: exit 2, not 1
        traceback.print_exc()
        sys.exit(2)
