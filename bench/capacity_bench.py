"""Capacity-control benchmark: three ratios, each measured in one run.

Run from the project root::

    .venv/bin/python bench/capacity_bench.py [--quick] [--only a|b|c] [--naive-share divided|full]

(a) quota utilization of a shared pool against CAP-3, beside a naive per-process baseline; (b)
fairness: a trickling tenant's accept-to-terminal p95 behind another tenant's backlog, fair claim
beside FIFO; (c) the claim's cost at 10,000 vs 1,000,000 rows. Method, options and how to read
the report: bench/README.md.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

import psycopg  # noqa: E402

from bench import capacity_lib as lib  # noqa: E402
from bench import harness  # noqa: E402

RESULTS_DIR = harness.RESULTS_DIR
LOG_DIR = RESULTS_DIR / "capacity-logs"
MEDIA_ROOT = RESULTS_DIR / "capacity-media"


@dataclass(frozen=True)
class Targets:
    utilization: float = 0.95
    rate_limited_share: float = 0.001
    fairness_p95_over_latency: float = 2.0
    claim_cost_ratio: float = 1.5


@dataclass(frozen=True)
class QuotaScenario:
    """(a): the simulator's quota, which the shared pool is configured to, and the workers."""

    rpm: int = 600
    tpm: int = 2_700_000
    max_concurrency: int = 24
    latency_mean_seconds: float = 2.0
    latency_p95_seconds: float = 3.0
    processes: int = 4
    threads_per_process: int = 24
    backlog: int = 8_000


@dataclass(frozen=True)
class FairnessScenario:
    latency_seconds: float = 1.0
    processes: int = 4
    threads_per_process: int = 8
    backlog_a: int = 10_000
    b_interval_seconds: float = 3.0


@dataclass(frozen=True)
class Profile:
    name: str
    windows_a: int  # (a) whole 60 s windows measured
    duration_b_seconds: float  # (b) B submits for this long
    rounds_c: int  # (c) rounds of RAW_PER_ROUND + CLAIMS_PER_ROUND per size
    history_c: tuple[int, int] = (10_000, 1_000_000)


FULL = Profile("full", windows_a=2, duration_b_seconds=60.0, rounds_c=30)
QUICK = Profile("quick", windows_a=1, duration_b_seconds=30.0, rounds_c=10)
TARGETS = Targets()
QUOTA = QuotaScenario()
FAIRNESS = FairnessScenario()
WINDOW_SECONDS = 60.0  # the limiter's and the simulator's (time_scale 1) rate window
# After the measured window, calls in hand finish before the processes are stopped.
GRACE_SECONDS = 6.0
# (b): how long after B's last submission its jobs may take before the phase ends.
B_DRAIN_SECONDS = 20.0
RAW_PER_ROUND = 10
CLAIMS_PER_ROUND = 5
TPM_NOTE = (
    "TPM is enforced by the simulator and the limiter but does not bind: the limiter reserves the "
    "prompt estimate + max output tokens for each call in flight and reconciles it to the usage the "
    "simulator reports once answered, while CAP-3's TPM term assumes the whole reservation; with TPM "
    "binding, achieved/CAP-3 could exceed 1 and would not be a utilization."
)


def monitor() -> psycopg.Connection:
    return psycopg.connect(lib.SANDBOX.dsn(), autocommit=True)


def new_services(phase: str, **env: str) -> lib.Services:
    log_dir = LOG_DIR / phase
    log_dir.mkdir(parents=True, exist_ok=True)
    return lib.Services(lib.SANDBOX, log_dir=log_dir, media_root=MEDIA_ROOT, **env)


def wait_db_seconds(conn: psycopg.Connection, until_epoch: float, services: lib.Services) -> None:
    while (left := until_epoch - lib.db_now(conn)) > 0:
        services.check_alive()
        time.sleep(min(1.0, left))


# --- (a) quota utilization -----------------------------------------------------------------------


def reservation_per_call() -> int:
    """What the limiter reserves for one call of the benchmark's document: the same functions
    the worker uses (extraction.capacity.tokens.reservation on the stored text)."""
    from django.conf import settings

    from extraction.capacity.tokens import reservation
    from extraction.intake.text import extract_document_text

    pool = settings.PROVIDER_POOLS["default"]
    text = extract_document_text(harness.SAMPLE_INVOICE.encode(), "text/plain").full_text
    return reservation(text, model=pool["model"], max_output_tokens=int(pool["max_output_tokens"]))


def quota_run(label: str, *, admission: str, threads: int, profile: Profile, reserved: int) -> dict[str, Any]:
    """One measured run of (a): processes up, backlog in, whole windows from the first call."""
    scenario = QUOTA
    lib.SANDBOX.reset()
    pool_env = {
        "POOL_REQUESTS_PER_MINUTE": str(scenario.rpm),
        "POOL_TOKENS_PER_MINUTE": str(scenario.tpm),
        "POOL_MAX_IN_FLIGHT": str(scenario.max_concurrency),
        "POOL_RESERVED_TOKENS": str(reserved),
    }
    services = new_services(f"a-{label}", **pool_env)
    measured_seconds = profile.windows_a * WINDOW_SECONDS
    try:
        start_quota_processes(services, label, admission=admission, threads=threads)
        measured = measure_quota(services, label, measured_seconds)
    finally:
        services.stop_all()
    return quota_figures(
        label, admission=admission, threads=threads, reserved=reserved, measured=measured, services=services
    )


def start_quota_processes(services: lib.Services, label: str, *, admission: str, threads: int) -> None:
    """The simulator with the pool's quota, the llm workers with ``admission`` and the scheduler."""
    scenario = QUOTA
    services.start_simulator(
        {
            "rpm": scenario.rpm,
            "tpm": scenario.tpm,
            "max_concurrency": scenario.max_concurrency,
            "latency_mean_seconds": scenario.latency_mean_seconds,
            "latency_p95_seconds": scenario.latency_p95_seconds,
            "seed": 4,
        }
    )
    names = [f"{label}-llm-{n}" for n in range(scenario.processes)]
    for name in names:
        services.llm_worker(name, slots=threads, admission=admission)
    services.scheduler()
    services.wait_until_ready(names)


@dataclass(frozen=True)
class QuotaMeasured:
    """What one run of (a) read: its window of whole limiter windows from the first call."""

    measured_seconds: float
    machine_load: harness.MachineLoad
    simulator: dict[str, Any]
    window: lib.LedgerWindow
    timeline: list[dict[str, float]]
    reuse_lag: dict[str, float] | None
    progress: dict[str, int]


def measure_quota(services: lib.Services, label: str, measured_seconds: float) -> QuotaMeasured:
    """Put the backlog in, wait for the first model call, measure whole windows from it; the
    processes are stopped before the ledger is read."""
    scenario = QUOTA
    bench = harness.make_tenant(f"benchcap-quota-{label}")
    load = harness.LoadMeter()
    # The backlog appears at once, after every worker is consuming: the first window is
    # not spent waiting for a process to start.
    lib.insert_ready_jobs(bench, scenario.backlog)
    with monitor() as conn:
        deadline = time.monotonic() + 30
        while (first := lib.first_call_at(conn)) is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no model call 30 s after the backlog appeared; logs in {LOG_DIR}")
            services.check_alive()
            time.sleep(0.2)
        print(f"    {label}: first call; measuring {measured_seconds:.0f} s", flush=True)
        wait_db_seconds(conn, first + measured_seconds + GRACE_SECONDS, services)
        machine_load = load.read()
        simulator = services.simulator_stats()
        services.stop_all()
        window = lib.ledger_window(conn, first, measured_seconds)
        timeline = lib.calls_timeline(conn, first, measured_seconds)
        reuse_lag = lib.request_slot_reuse_lag(conn, first, measured_seconds, rpm=scenario.rpm)
        progress = lib.tenant_progress(conn, bench.tenant.pk)
    return QuotaMeasured(measured_seconds, machine_load, simulator, window, timeline, reuse_lag, progress)


def quota_figures(
    label: str, *, admission: str, threads: int, reserved: int, measured: QuotaMeasured, services: lib.Services
) -> dict[str, Any]:
    """A run's utilization against CAP-3 (at the measured and at the configured latency) and
    what the simulator and the ledger saw."""
    from extraction.capacity.plan import attempt_capacity

    scenario = QUOTA
    window, simulator, measured_seconds = measured.window, measured.simulator, measured.measured_seconds
    achieved = (window.calls - window.rate_limited) / measured_seconds
    latency = window.mean_latency_seconds or scenario.latency_mean_seconds
    capacity = attempt_capacity(
        requests_per_minute=scenario.rpm,
        tokens_per_minute=scenario.tpm,
        reserved_tokens=reserved,
        concurrency=scenario.max_concurrency,
        mean_latency_seconds=latency,
    )
    configured = attempt_capacity(
        requests_per_minute=scenario.rpm,
        tokens_per_minute=scenario.tpm,
        reserved_tokens=reserved,
        concurrency=scenario.max_concurrency,
        mean_latency_seconds=scenario.latency_mean_seconds,
    )
    return {
        "label": label,
        "admission": admission,
        "processes": scenario.processes,
        "threads_per_process": threads,
        "measured_seconds": measured_seconds,
        "calls": window.calls,
        "admitted_calls": window.calls - window.rate_limited,
        "rate_limited": window.rate_limited,
        "rate_limited_share": round(window.rate_limited / window.calls, 5) if window.calls else None,
        "other_errors": window.other_errors,
        "achieved_attempts_per_s": round(achieved, 3),
        "mean_latency_seconds_measured": round(latency, 3),
        "cap3": asdict(capacity),
        "utilization": round(achieved / capacity.per_second, 4),
        "utilization_vs_configured_latency": round(achieved / configured.per_second, 4),
        "limiter_denials": window.deferred,
        # RPM binds: how promptly each request slot freed by the window was spent again.
        "request_slot_reuse_lag_seconds": measured.reuse_lag,
        "simulator": {
            "calls": simulator["calls"],
            "outcomes": simulator["outcomes"],
            "peak_concurrency": simulator["concurrency"]["peak"],
            "tokens": simulator["tokens"],
        },
        "calls_per_5_seconds": measured.timeline,
        "backlog_states_at_end": measured.progress,
        "machine": asdict(measured.machine_load),
        "logged_errors": services.logged_errors(),
    }


def bench_quota(profile: Profile, naive_share: str) -> dict[str, Any]:
    scenario = QUOTA
    reserved = reservation_per_call()
    naive_threads = (
        scenario.max_concurrency // scenario.processes if naive_share == "divided" else scenario.max_concurrency
    )
    print(f"(a) quota utilization: {profile.windows_a} x {WINDOW_SECONDS:.0f} s per run", flush=True)
    shared = quota_run(
        "shared", admission="shared", threads=scenario.threads_per_process, profile=profile, reserved=reserved
    )
    naive = quota_run("naive", admission="naive", threads=naive_threads, profile=profile, reserved=reserved)
    lag = shared["request_slot_reuse_lag_seconds"]
    met = (
        shared["utilization"] >= TARGETS.utilization
        and (lag is None or lag["steady_state_utilization"] >= TARGETS.utilization)
        and (shared["rate_limited_share"] or 0.0) <= TARGETS.rate_limited_share
    )
    return {
        "scenario": asdict(scenario),
        "reservation_tokens_per_call": reserved,
        "naive_share": naive_share,
        "tpm_note": TPM_NOTE,
        "shared_limiter": shared,
        "naive_baseline": naive,
        "target": {
            "utilization_at_least": TARGETS.utilization,
            "rate_limited_share_at_most": TARGETS.rate_limited_share,
            "met": met,
        },
    }


# --- (b) fairness ---------------------------------------------------------------------------------


def fairness_run(claim: str, profile: Profile) -> dict[str, Any]:
    scenario = FAIRNESS
    lib.SANDBOX.reset()
    # The pool and the tenants' caps stay out of the way: what differs is the claim order.
    services = new_services(
        f"b-{claim}",
        POOL_MAX_IN_FLIGHT=str(2 * scenario.processes * scenario.threads_per_process),
        POOL_REQUESTS_PER_MINUTE="100000000",
        POOL_TOKENS_PER_MINUTE="1000000000000",
    )
    slots = scenario.processes * scenario.threads_per_process
    try:
        start_fairness_processes(services, claim)
        measured = measure_fairness(services, claim, profile, slots)
    finally:
        services.stop_all()
    return fairness_figures(claim, slots, measured, services)


def start_fairness_processes(services: lib.Services, claim: str) -> None:
    """The simulator, the relay, the ingress, the llm workers claiming by ``claim`` and the scheduler."""
    scenario = FAIRNESS
    services.start_simulator({"latency_mean_seconds": scenario.latency_seconds})
    services.relay()
    services.celery("ingress", "ingress", concurrency=2, pool_max_size=2)
    names = [f"{claim}-llm-{n}" for n in range(scenario.processes)]
    for name in names:
        services.llm_worker(name, slots=scenario.threads_per_process, claim=claim)
    services.scheduler()
    services.wait_until_ready(["ingress", *names])


@dataclass(frozen=True)
class FairnessMeasured:
    """What one run of (b) read: B's jobs, the window they ran in and A's progress meanwhile."""

    started_at: float
    ended_at: float
    timings: list[lib.JobTiming]
    window: lib.LedgerWindow
    a_done: int
    a_left: int
    machine_load: harness.MachineLoad


def measure_fairness(services: lib.Services, claim: str, profile: Profile, slots: int) -> FairnessMeasured:
    """A's backlog in; once every slot holds one of A's jobs, B submits one job every interval
    for the profile's duration; then B's jobs drain (bounded)."""
    scenario = FAIRNESS
    tenant_a = harness.make_tenant(f"benchcap-{claim}-a")
    tenant_b = harness.make_tenant(f"benchcap-{claim}-b")
    load = harness.LoadMeter()
    lib.insert_ready_jobs(tenant_a, scenario.backlog_a)
    with monitor() as conn:
        # B arrives into a system already busy with A: every slot holds one of A's jobs.
        deadline = time.monotonic() + 30
        while services.simulator_stats()["concurrency"]["current"] < slots and time.monotonic() < deadline:
            services.check_alive()
            time.sleep(0.2)
        started_at = lib.db_now(conn)
        b_jobs: list[str] = []
        submissions = int(profile.duration_b_seconds / scenario.b_interval_seconds)
        t0 = time.monotonic()
        for i in range(submissions):
            delay = t0 + i * scenario.b_interval_seconds - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            b_jobs.append(harness.accept_one(tenant_b))
        last_submitted = time.monotonic()
        while time.monotonic() - last_submitted < B_DRAIN_SECONDS:
            if all(t.ended_at is not None for t in lib.job_timings(conn, b_jobs)):
                break
            services.check_alive()
            time.sleep(0.2)
        ended_at = lib.db_now(conn)
        timings = lib.job_timings(conn, b_jobs)
        window = lib.ledger_window(conn, started_at, ended_at - started_at)
        a_done = conn.execute(
            "SELECT count(*) FROM extraction_jobs WHERE tenant_id = %s AND state = ANY(%s) "
            "AND updated_at >= to_timestamp(%s)",
            [tenant_a.tenant.pk, list(harness.TERMINAL_STATES), started_at],
        ).fetchone()[0]
        a_left = conn.execute(
            "SELECT count(*) FROM extraction_jobs WHERE tenant_id = %s AND state <> ALL(%s)",
            [tenant_a.tenant.pk, list(harness.TERMINAL_STATES)],
        ).fetchone()[0]
        machine_load = load.read()
    return FairnessMeasured(started_at, ended_at, timings, window, a_done, a_left, machine_load)


def fairness_figures(claim: str, slots: int, measured: FairnessMeasured, services: lib.Services) -> dict[str, Any]:
    """B's accept-to-terminal latency (p95 against the model's mean latency) and its stages,
    and how fast A went meanwhile."""
    scenario = FAIRNESS
    timings, started_at, ended_at = measured.timings, measured.started_at, measured.ended_at
    a_left = measured.a_left
    done = [t for t in timings if t.ended_at is not None]
    # A job not finished counts with its age at the end: the p95 is then a lower bound.
    latencies = [(t.ended_at if t.ended_at is not None else ended_at) - t.accepted_at for t in timings]
    censored = len(timings) - len(done)
    p95 = harness.percentile(latencies, 0.95)
    p95_is_lower_bound = censored > 0 and p95 >= min((ended_at - t.accepted_at) for t in timings if t.ended_at is None)
    latency = measured.window.mean_latency_seconds or scenario.latency_seconds
    a_rate = measured.a_done / (ended_at - started_at)

    def stage(values: list[float]) -> dict[str, float] | None:
        return (
            {"p50": round(harness.percentile(values, 0.5), 3), "p95": round(harness.percentile(values, 0.95), 3)}
            if values
            else None
        )

    return {
        "claim": claim,
        "slots": slots,
        "b_jobs": len(timings),
        "b_terminal": len(done),
        "b_accept_to_terminal_seconds": {
            "p50": round(harness.percentile(latencies, 0.5), 3),
            "p95": round(p95, 3),
            "max": round(max(latencies), 3) if latencies else None,
            "p95_is_lower_bound": p95_is_lower_bound,
        },
        "b_stages_seconds": {
            "accept_to_ready": stage([t.ready_at - t.accepted_at for t in timings if t.ready_at]),
            "ready_to_claimed": stage([t.claimed_at - t.ready_at for t in done if t.ready_at and t.claimed_at]),
            "claimed_to_terminal": stage([t.ended_at - t.claimed_at for t in done if t.claimed_at]),
        },
        "mean_model_latency_seconds_measured": round(latency, 3),
        "p95_over_mean_latency": round(p95 / latency, 3),
        "a_completed_per_s": round(a_rate, 2),
        "a_jobs_left_at_end": int(a_left),
        # FIFO serves B after every A job that was waiting before it: what B would wait.
        "b_projected_wait_seconds": round(a_left / a_rate, 1) if claim == "fifo" and a_rate > 0 else None,
        "machine": asdict(measured.machine_load),
        "logged_errors": services.logged_errors(),
    }


def bench_fairness(profile: Profile) -> dict[str, Any]:
    print(f"(b) fairness: B submits for {profile.duration_b_seconds:.0f} s, fair claim then FIFO", flush=True)
    fair = fairness_run("fair", profile)
    print(f"    fair: B p95 {fair['b_accept_to_terminal_seconds']['p95']} s", flush=True)
    fifo = fairness_run("fifo", profile)
    met = fair["b_terminal"] == fair["b_jobs"] and fair["p95_over_mean_latency"] <= TARGETS.fairness_p95_over_latency
    return {
        "scenario": asdict(FAIRNESS),
        "fair_claim": fair,
        "fifo_claim": fifo,
        "target": {"p95_over_mean_latency_at_most": TARGETS.fairness_p95_over_latency, "met": met},
    }


# --- (c) claim cost -------------------------------------------------------------------------------


def proposed_fix(claim_sql: str) -> str | None:
    """PROPOSED_FIX: the deadline test moved out of the two per-tenant ``LIMIT`` branches onto
    their output. Inside the branches, ``deadline_at > now()`` lets the planner — which
    multiplies the selectivities of ``state`` and ``deadline_at`` as if they were independent,
    while in fact every pending job has a future deadline and almost every other row a past
    one — estimate ONE row from job_pending_deadline_idx and scan every pending job of every
    tenant instead of reading each tenant's next rows from job_fair_claim_idx. None when the
    statement no longer has that shape (the fix is in, or the statement changed)."""
    inner = "              AND j.deadline_at > now() AND j.model_policy = ANY(%(policies)s)"
    if claim_sql.count(inner) != 2 or claim_sql.count("      ) AS c\n),") != 1:
        return None
    sql = claim_sql.replace(inner, "              AND j.model_policy = ANY(%(policies)s)")
    sql = sql.replace("AS effective_at\n", "AS effective_at, j.deadline_at\n")
    sql = sql.replace("      ) AS c\n),", "      ) AS c\n     WHERE c.deadline_at > now()\n),")
    return sql if sql.count("deadline_at > now()") == 1 and sql.count("j.deadline_at\n") == 2 else None


def _median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 3)


def _summary_ms(values: list[float]) -> dict[str, float]:
    return {"median": _median_ms(values), "p90": round(harness.percentile(values, 0.9) * 1000, 3), "n": len(values)}


def measure_raw(schemas: tuple[str, str], rounds: int, sql: str | None) -> dict[str, Any]:
    """Rolled-back executions of the claim statement, alternating the two schemas by round."""
    timers = {schema: lib.RawClaimTimer(schema, sql=sql) for schema in schemas}
    try:
        for timer in timers.values():
            for _ in range(RAW_PER_ROUND):  # warm the caches and the connection
                timer.time_one()
        times: dict[str, list[float]] = {schema: [] for schema in schemas}
        for round_ in range(rounds):
            for schema in schemas if round_ % 2 == 0 else schemas[::-1]:
                times[schema] += [timers[schema].time_one() for _ in range(RAW_PER_ROUND)]
        explain = {schema: timer.explain() for schema, timer in timers.items()}
    finally:
        for timer in timers.values():
            timer.close()
    small, large = schemas
    return {
        "ms": {schema: _summary_ms(values) for schema, values in times.items()},
        "explain": explain,
        "ratio": round(statistics.median(times[large]) / statistics.median(times[small]), 3),
    }


def measure_claim_next_job(schemas: tuple[str, str], rounds: int) -> dict[str, Any]:
    timers = {schema: lib.ClaimNextJobTimer(schema) for schema in schemas}
    try:
        for timer in timers.values():
            timer.time_batch(CLAIMS_PER_ROUND)
        times: dict[str, list[float]] = {schema: [] for schema in schemas}
        for round_ in range(rounds):
            for schema in schemas if round_ % 2 == 0 else schemas[::-1]:
                times[schema] += timers[schema].time_batch(CLAIMS_PER_ROUND)
    finally:
        for timer in timers.values():
            timer.close()
    small, large = schemas
    return {
        "ms": {schema: _summary_ms(values) for schema, values in times.items()},
        "ratio": round(statistics.median(times[large]) / statistics.median(times[small]), 3),
    }


def bench_claim_cost(profile: Profile, rebuild: bool) -> dict[str, Any]:
    from extraction.execution import lifecycle

    small_rows, large_rows = profile.history_c
    schemas = ("capbench_10k", "capbench_1m")
    print(f"(c) claim cost: {small_rows:,} vs {large_rows:,} rows", flush=True)
    load = harness.LoadMeter()
    tables = [
        lib.prepare_claim_schema(schemas[0], small_rows, rebuild=rebuild),
        lib.prepare_claim_schema(schemas[1], large_rows, rebuild=rebuild),
    ]
    print(f"    tables ready ({', '.join(str(t['prepare_seconds']) + ' s' for t in tables)})", flush=True)
    raw = measure_raw(schemas, profile.rounds_c, sql=None)
    # The worker's call commits and consumes runnable rows: measured after the rolled-back
    # statement, so both see the same live work.
    worker_call = measure_claim_next_job(schemas, profile.rounds_c)
    met = raw["ratio"] <= TARGETS.claim_cost_ratio and worker_call["ratio"] <= TARGETS.claim_cost_ratio
    what_if = None
    variant = proposed_fix(lifecycle.SQL["claim_fair"])
    if not met and variant is not None:
        what_if = measure_raw(schemas, max(5, profile.rounds_c // 2), sql=variant)
        what_if["sql"] = variant
    return {
        "tables": tables,
        "schemas": list(schemas),
        "raw_claim_sql": raw,
        "claim_next_job": worker_call,
        "proposed_fix_raw_claim_sql": what_if,
        "machine": asdict(load.read()),
        "target": {"ratio_at_most": TARGETS.claim_cost_ratio, "met": met},
    }


# --- report ---------------------------------------------------------------------------------------


def _verdict(met: bool) -> str:
    return "MET" if met else "MISSED"


def _print_errors(*runs: dict[str, Any]) -> None:
    for run in runs:
        if run["logged_errors"]:
            print(f"  WARNING: ERROR lines in the process logs of this run: {run['logged_errors']}")


def print_report(results: dict[str, Any]) -> None:
    print()
    print(
        f"capacity benchmark ({results['profile']}) — {results['machine']['cores']} cores, "
        f"load {results['machine']['loadavg_at_start'][0]} at start"
    )
    if "quota" in results:
        q = results["quota"]
        s = q["scenario"]
        print(
            f"\n(a) quota utilization — simulator: RPM {s['rpm']:,}, TPM {s['tpm']:,}, {s['max_concurrency']} "
            f"concurrent, latency mean {s['latency_mean_seconds']} s / p95 {s['latency_p95_seconds']} s; "
            f"{s['processes']} worker processes; reservation {q['reservation_tokens_per_call']:,} tokens/call"
        )
        print(
            f"  {'':<28}{'attempts/s':>11}{'CAP-3/s':>9}{'binding':>13}{'utilization':>13}{'429s':>8}"
            f"{'429 share':>11}{'peak conc.':>12}{'busy cores':>12}"
        )
        for key, title in (("shared_limiter", "shared limiter"), ("naive_baseline", "naive per-process")):
            r = q[key]
            name = f"{title} ({r['processes']}x{r['threads_per_process']})"
            print(
                f"  {name:<28}{r['achieved_attempts_per_s']:>11.2f}{r['cap3']['per_second']:>9.2f}"
                f"{r['cap3']['binding']:>13}{r['utilization']:>13.3f}{r['rate_limited']:>8}"
                f"{(r['rate_limited_share'] or 0) * 100:>10.2f}%{r['simulator']['peak_concurrency']:>12}"
                f"{r['machine']['busy_cores']:>12}"
            )
        shared = q["shared_limiter"]
        print(
            f"  limiter denials (no call made): {shared['limiter_denials'] or 'none'}; mean latency measured "
            f"{shared['mean_latency_seconds_measured']} s"
        )
        lag = shared["request_slot_reuse_lag_seconds"]
        if lag:
            print(
                f"  expired request slots spent again after {lag['mean']} s on average (p95 {lag['p95']} s): "
                f"steady-state utilization {lag['steady_state_utilization']:.3f}"
            )
        else:
            print("  one window only: the re-use of expired request slots is not measured (run without --quick)")
        _print_errors(q["shared_limiter"], q["naive_baseline"])
        print(
            f"  target: utilization >= {TARGETS.utilization} with <= {TARGETS.rate_limited_share * 100:.1f} % "
            f"429s -> {_verdict(q['target']['met'])}"
        )
    if "fairness" in results:
        f = results["fairness"]
        print(
            f"\n(b) fairness — A: {f['scenario']['backlog_a']:,} READY jobs; B: one job every "
            f"{f['scenario']['b_interval_seconds']} s through acceptance; simulator latency "
            f"{f['scenario']['latency_seconds']} s"
        )
        print(
            f"  {'claim':<8}{'B done':>8}{'B p50 s':>9}{'B p95 s':>10}{'mean latency s':>16}{'p95/latency':>13}"
            f"{'A jobs/s':>10}{'busy cores':>12}"
        )
        for key in ("fair_claim", "fifo_claim"):
            r = f[key]
            b = r["b_accept_to_terminal_seconds"]
            bound = ">" if b["p95_is_lower_bound"] else ""
            print(
                f"  {r['claim']:<8}{r['b_terminal']:>4}/{r['b_jobs']:<3}{b['p50']:>9.2f}{bound + format(b['p95'], '.2f'):>10}"
                f"{r['mean_model_latency_seconds_measured']:>16.3f}{bound + format(r['p95_over_mean_latency'], '.2f'):>13}"
                f"{r['a_completed_per_s']:>10.1f}{r['machine']['busy_cores']:>12}"
            )
        fifo = f["fifo_claim"]
        if fifo["b_projected_wait_seconds"] is not None:
            print(
                f"  FIFO: B waits behind A's backlog ({fifo['a_jobs_left_at_end']:,} jobs left at the end, "
                f"~{fifo['b_projected_wait_seconds']:,.0f} s at A's rate)"
            )
        print(f"  fair B stages (p95 s): {f['fair_claim']['b_stages_seconds']}")
        _print_errors(f["fair_claim"], f["fifo_claim"])
        print(
            f"  target: B p95 <= {TARGETS.fairness_p95_over_latency} x mean model latency -> "
            f"{_verdict(f['target']['met'])}"
        )
    if "claim_cost" in results:
        c = results["claim_cost"]
        small, large = c["schemas"]
        print(
            f"\n(c) claim cost — {c['tables'][0]['jobs']:,} vs {c['tables'][1]['jobs']:,} rows, same live work "
            f"({lib.RUNNABLE_JOBS:,} runnable of {lib.BACKLOG_TENANTS} tenants, {lib.RUNNING_JOBS} running)"
        )
        print(f"  {'':<34}{'10k median ms':>14}{'1M median ms':>14}{'ratio':>8}{'buffers 10k/1M':>17}")
        rows = [
            ("raw claim_fair (rolled back)", c["raw_claim_sql"]),
            ("claim_next_job (committed)", c["claim_next_job"]),
        ]
        if c["proposed_fix_raw_claim_sql"]:
            rows.append(("proposed fix, raw (rolled back)", c["proposed_fix_raw_claim_sql"]))
        for title, r in rows:
            buffers = ""
            if "explain" in r:
                e = r["explain"]
                buffers = (
                    f"{e[small]['shared_blocks_hit'] + e[small]['shared_blocks_read']}/"
                    f"{e[large]['shared_blocks_hit'] + e[large]['shared_blocks_read']}"
                )
            print(
                f"  {title:<34}{r['ms'][small]['median']:>14.3f}{r['ms'][large]['median']:>14.3f}"
                f"{r['ratio']:>8.2f}{buffers:>17}"
            )
        print(f"  target: <= {TARGETS.claim_cost_ratio}x apart -> {_verdict(c['target']['met'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter phases (a smoke run, ~4 minutes)")
    parser.add_argument("--only", choices=("a", "b", "c"), action="append", help="run only these parts")
    parser.add_argument(
        "--naive-share",
        choices=("divided", "full"),
        default="divided",
        help="(a) baseline threads per process: pool limit / processes, or the pool limit",
    )
    parser.add_argument(
        "--rebuild-claim-tables",
        action="store_true",
        help="(c) rebuild the 1,000,000-row history even if an identical one exists",
    )
    parser.add_argument(
        "--output", type=Path, help="the JSON's path (default: bench/results/capacity_bench-<UTC time>.json)"
    )
    args = parser.parse_args()
    profile = QUICK if args.quick else FULL
    parts = set(args.only or ("a", "b", "c"))

    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(LOG_DIR, ignore_errors=True)
    LOG_DIR.mkdir(parents=True)
    MEDIA_ROOT.mkdir(parents=True, exist_ok=True)
    lib.SANDBOX.set_up(MEDIA_ROOT)

    started = time.monotonic()
    results: dict[str, Any] = {
        "profile": profile.name,
        "machine": harness.machine(),
        "targets": asdict(TARGETS),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if "a" in parts:
        results["quota"] = bench_quota(profile, args.naive_share)
    if "b" in parts:
        results["fairness"] = bench_fairness(profile)
    if "c" in parts:
        results["claim_cost"] = bench_claim_cost(profile, args.rebuild_claim_tables)
    results["seconds"] = round(time.monotonic() - started, 1)
    harness.publish_results("capacity_bench", lambda: print_report(results), results, json_path=args.output)
    print(f"{results['seconds']:.0f} s; logs in {LOG_DIR.relative_to(PROJECT_ROOT)}/")


if __name__ == "__main__":
    main()
