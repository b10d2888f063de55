"""Execution benchmark: accepted jobs through the real processes to a terminal state.

Run from the project root::

    .venv/bin/python bench/execution_bench.py [--quick] [--rate R] [--latency S] [--backlog N]
        [--transport rabbitmq|kafka|both]

(a) at a fixed model latency, in an open loop: throughput, accept-to-terminal percentiles,
in-flight calls of one llm worker, its connections and RSS, and per job the transactions and
the orchestration's CPU; (b) at zero latency, a backlog's throughput beside a plain SKIP LOCKED
claim/complete loop measured in the same run. ``--transport`` carries the outbox's events on
RabbitMQ (the default), on Kafka, or on both one after the other in the same sitting, with a
side-by-side table. Method and how to read the report: bench/README.md.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

import psycopg  # noqa: E402

from bench import execution_lib as lib  # noqa: E402
from bench import harness  # noqa: E402

MIB = 1024 * 1024
STATEMENTS_SHOWN = 12  # per window in the printed report; the JSON keeps them all


@dataclass(frozen=True)
class Targets:
    in_flight_calls: int = 300
    worker_db_connections: int = 20
    worker_rss_mib: float = 500.0
    transactions_per_job: float = 8.0
    cpu_ms_per_job: float = 5.0
    floor_ratio: float = 0.40


@dataclass(frozen=True)
class Profile:
    name: str
    rate: float  # (a): accepts per second
    latency_seconds: float  # (a): the simulated model's latency
    warmup_seconds: float
    measure_seconds: float
    backlog_jobs: int  # (b)
    backlog_trials: int
    # Before each counter reading: an idle backend can keep its last second of counts for up
    # to 10 s (PostgreSQL 15's PGSTAT_IDLE_INTERVAL) before pg_stat_database shows them. The
    # probe's counts are exact at once; this only settles the cross-check.
    stats_settle_seconds: float
    floor_processes: int = 4


# 300 calls in flight = arrival rate x model latency. Made of 2 s at 150 jobs/s, they would
# need more CPU per second than this machine's two cores have (orchestration, PostgreSQL,
# simulator, accepter; a run's "cpu_budget_ms_per_job" says how much per job): the same 300 in
# flight come from 30 jobs/s at 10 s. --rate/--latency choose another pair.
FULL = Profile(
    "full",
    rate=30.0,
    latency_seconds=10.0,
    warmup_seconds=12.0,
    measure_seconds=40.0,
    backlog_jobs=3000,
    backlog_trials=1,
    stats_settle_seconds=11.0,
)
QUICK = Profile(
    "quick",
    rate=30.0,
    latency_seconds=10.0,
    warmup_seconds=4.0,
    measure_seconds=15.0,
    backlog_jobs=800,
    backlog_trials=1,
    stats_settle_seconds=2.0,
)
TARGETS = Targets()
# A backlog not drained by then is reported with the throughput it reached.
BACKLOG_TIMEOUT_SECONDS = 150.0


@dataclass
class Run:
    services: lib.Services
    monitor: psycopg.Connection  # on the "postgres" database: its reads never count in benchexec
    db: psycopg.Connection  # on benchexec, for progress and timings
    sampler: lib.Sampler
    probe_dir: Path | None
    accept_counter: lib.AcceptTransactions
    profile_worker: bool = False  # py-spy on the llm worker in (b): the first trial every thread, the second --gil


# --- a measured window ----------------------------------------------------------------------------


def window_costs(
    run: Run, before: lib.Counters, after: lib.Counters, jobs: int, accept_transactions: int
) -> dict[str, Any]:
    """Per-job orchestration cost between two counter readings, and how busy the rest of the
    machine was meanwhile."""
    seconds = after.at - before.at
    cpu = {name: after.process_cpu[name] - before.process_cpu[name] for name in after.process_cpu}
    orchestration_cpu = sum(cpu[name] for name in lib.ORCHESTRATION)
    backend_cpu = run.sampler.backend_cpu_by_process()
    ours = sum(cpu.values()) + sum(backend_cpu.values()) + (after.own_cpu - before.own_cpu)
    probe = lib.probe_delta(before.probe, after.probe)
    probe_total = {name: sum(counts.values()) for name, counts in probe.items()}
    db_delta = after.db_transactions - before.db_transactions - (after.bench_statements - before.bench_statements)
    postgres_cpu = sum(v for name, v in backend_cpu.items() if name != "monitor")
    budget = {
        "orchestration": orchestration_cpu,
        "postgres_backends_sampled": postgres_cpu,
        "simulator": cpu["simulator"],
        "accepter": after.own_cpu - before.own_cpu,
    }
    budget_total = sum(budget.values())
    model_call_cpu = after.model_call_cpu - before.model_call_cpu
    return {
        "window_seconds": round(seconds, 2),
        "cpu_ms_per_job": {name: round(cpu[name] * 1000 / jobs, 3) for name in cpu},
        "orchestration_cpu_ms_per_job": round(orchestration_cpu * 1000 / jobs, 3),
        "orchestration_cores": round(orchestration_cpu / seconds, 3),
        # The client side of the model call (the OpenAI SDK and HTTP, inside the worker), which the
        # orchestration figure above includes: apart, for the reading "model excluded" = the call.
        "model_call_client_cpu_ms_per_job": round(model_call_cpu * 1000 / jobs, 3) if run.probe_dir else None,
        "orchestration_cpu_ms_per_job_without_model_call": (
            round((orchestration_cpu - model_call_cpu) * 1000 / jobs, 3) if run.probe_dir else None
        ),
        "postgres_backend_cpu_ms_per_job_sampled": {
            name: round(v * 1000 / jobs, 3) for name, v in sorted(backend_cpu.items())
        },
        "transactions_per_job": {name: round(n / jobs, 3) for name, n in probe_total.items()},
        "orchestration_transactions_per_job": round(sum(probe_total.values()) / jobs, 3) if probe else None,
        "pg_stat_database_transactions_per_job": round((db_delta - accept_transactions) / jobs, 3),
        "accepter_transactions_per_job": round(accept_transactions / jobs, 3),
        "transactions_by_statement": {
            name: {label: round(n / jobs, 3) for label, n in counts.items()} for name, counts in probe.items()
        },
        "cpu_budget_ms_per_job": {name: round(v * 1000 / jobs, 3) for name, v in budget.items()},
        "all_cpu_ms_per_job": round(budget_total * 1000 / jobs, 3),
        "jobs_per_s_two_idle_cores_could_carry": round(2 * jobs / budget_total, 1) if budget_total else None,
        "other_processes_cores": round(max(0.0, (after.machine_busy - before.machine_busy) - ours) / seconds, 2),
        "wal_bytes_per_job": round((after.wal_bytes - before.wal_bytes) / jobs),
        "statements": lib.statement_costs(before.statements, after.statements, jobs),
        "waits_share_of_active_backends": {
            wait: round(n / run.sampler.active_seen, 3) for wait, n in run.sampler.waits.most_common(8)
        }
        if run.sampler.active_seen
        else {},
    }


def drain(run: Run, tenant_id, count: int, timeout: float) -> bool:
    """Wait for every job terminal and every outbox row published; False (reported as
    incomplete, never hanging the run) after ``timeout``."""
    if lib.wait_until_done(run.db, tenant_id, count, timeout=timeout, services=run.services):
        return True
    terminal, unpublished = lib.job_progress(run.db, tenant_id)
    print(
        f"    only {terminal}/{count} jobs terminal ({unpublished} outbox rows unpublished) after {timeout:.0f} s; "
        f"logs in {run.services.log_dir}",
        flush=True,
    )
    return False


# --- (a) fixed latency ----------------------------------------------------------------------------


def fixed_latency(run: Run, profile: Profile) -> dict[str, Any]:
    services = run.services
    warm = harness.make_tenant("benchexec-warm-a", max_in_flight=lib.TENANT_MAX_IN_FLIGHT)
    warm_count = int(profile.rate * profile.warmup_seconds)
    lib.accept_jobs(warm, count=warm_count, rate=profile.rate, counter=lib.AcceptTransactions())
    drain(run, warm.tenant.pk, warm_count, timeout=120)

    bench = harness.make_tenant("benchexec-fixed", max_in_flight=lib.TENANT_MAX_IN_FLIGHT)
    count = int(profile.rate * profile.measure_seconds)
    services.simulator_reset()  # peak and counters from here; the startup latency stays
    counter = lib.AcceptTransactions()
    time.sleep(profile.stats_settle_seconds)
    before = lib.read_counters(services, run.monitor, run.probe_dir)
    run.sampler.start()
    accepted = lib.accept_jobs(bench, count=count, rate=profile.rate, counter=counter)
    complete = drain(run, bench.tenant.pk, count, timeout=profile.latency_seconds + 60)
    run.sampler.stop()
    time.sleep(profile.stats_settle_seconds)
    after = lib.read_counters(services, run.monitor, run.probe_dir)
    sim = services.simulator_stats()

    times = lib.job_times(run.db, bench.tenant.pk)
    latencies = [t - a for a, t in zip(times.accepted_at, times.terminal_at, strict=True)]
    span = max(times.terminal_at) - min(times.terminal_at)
    samples = run.sampler.samples
    # The steady part: after the first latency has passed, before the arrivals stop.
    steady = [
        s
        for s in samples
        if s.in_flight is not None
        and accepted.started_at + profile.latency_seconds + 1 <= s.t <= accepted.started_at + accepted.seconds
    ]
    peak_in_flight = sim["concurrency"]["peak"]
    near_peak = [s for s in samples if s.in_flight is not None and s.in_flight >= 0.9 * max(peak_in_flight, 1)]
    return {
        "rate_offered": profile.rate,
        "latency_model_seconds": profile.latency_seconds,
        "jobs": count,
        "complete": complete,
        "states": times.states,
        "accept_seconds": round(accepted.seconds, 2),
        "accept_send_lag_p99_ms": accepted.send_lag_p99_ms,
        "accept_refused": accepted.refused,
        "completed_per_s": round((len(times.terminal_at) - 1) / span, 1) if span > 0 else None,
        "accept_to_terminal_seconds": harness.summarize(latencies),
        "orchestration_overhead_p50_ms": round(
            (harness.percentile(latencies, 0.5) - profile.latency_seconds) * 1000, 1
        ),
        "simulator": {
            "calls": sim["calls"],
            "outcomes": sim["outcomes"],
            "peak_in_flight": peak_in_flight,
            "mean_in_flight_steady": round(statistics.mean(s.in_flight for s in steady), 1) if steady else None,
        },
        "worker": {
            "db_connections_peak": max((s.worker_connections for s in samples), default=0),
            "db_connections_busy_peak": max((s.worker_busy for s in samples), default=0),
            "db_connections_busy_mean": round(statistics.mean(s.worker_busy for s in samples), 2) if samples else None,
            "db_connections_at_peak_in_flight": max((s.worker_connections for s in near_peak), default=None),
            "rss_mib_peak": round(max((s.worker_rss for s in samples), default=0) / MIB, 1),
            "rss_mib_end": round(harness.rss_bytes(services.pid("worker")) / MIB, 1),
            "threads": harness.thread_count(services.pid("worker")),
        },
        "in_flight_vs_connections": [
            {
                "t": round(s.t - accepted.started_at, 1),
                "in_flight": s.in_flight,
                "connections": s.worker_connections,
                "busy": s.worker_busy,
            }
            for s in samples
            if s.in_flight is not None
        ],
        "cost": window_costs(run, before, after, count, counter.transactions),
    }


# --- (b) zero latency against the floor -----------------------------------------------------------


def backlog_trial(run: Run, profile: Profile, count: int, label: str, *, gil: bool = False) -> dict[str, Any]:
    services = run.services
    bench = harness.make_tenant(f"benchexec-{label}", max_in_flight=lib.TENANT_MAX_IN_FLIGHT)
    lib.pause_relay(services, run.monitor)
    try:
        counter = lib.AcceptTransactions()
        lib.accept_jobs(bench, count=count, rate=None, counter=counter)
        time.sleep(profile.stats_settle_seconds)
        quiet = harness.wait_for_quiet_machine()
        before = lib.read_counters(services, run.monitor, run.probe_dir)
        run.sampler.start()
        released_at = time.time()
        profile_path = harness.RESULTS_DIR / f"worker-profile-{label}{'-gil' if gil else ''}.txt"
        profiler = lib.start_worker_profile(services, profile_path, gil=gil) if run.profile_worker else None
    finally:
        lib.resume_relay(services)
    complete = drain(run, bench.tenant.pk, count, timeout=BACKLOG_TIMEOUT_SECONDS)
    worker_profile = lib.stop_worker_profile(profiler, profile_path) if profiler is not None else None
    run.sampler.stop()
    time.sleep(profile.stats_settle_seconds)
    after = lib.read_counters(services, run.monitor, run.probe_dir)
    times = lib.job_times(run.db, bench.tenant.pk)
    done = len(times.terminal_at)
    seconds = (max(times.terminal_at) if complete else time.time()) - released_at
    # Accepted while the relay was paused: the wait in the outbox is the benchmark's, so the
    # latency that says something is from the release.
    released = [max(0.0, t - released_at) for t in times.terminal_at]
    return {
        "jobs": count,
        "complete": complete,
        "states": times.states,
        "machine_cores_busy_before_release": quiet,
        "seconds": round(seconds, 3),
        "jobs_per_s": round(done / seconds, 1),
        "release_to_terminal_seconds": harness.summarize(released) if released else None,
        "worker_rss_mib_peak": round(max((s.worker_rss for s in run.sampler.samples), default=0) / MIB, 1),
        "worker_db_connections_peak": max((s.worker_connections for s in run.sampler.samples), default=0),
        # Not counted in the accepter's window: the count is from released_at.
        "cost": window_costs(run, before, after, done, 0),
        **({"worker_profile": {"gil_only": gil, **worker_profile}} if worker_profile is not None else {}),
    }


def zero_latency(run: Run, profile: Profile) -> dict[str, Any]:
    services = run.services
    services.simulator_reset()
    services.simulator_control(latency_mean_seconds=0)
    warm = harness.make_tenant("benchexec-warm-b", max_in_flight=lib.TENANT_MAX_IN_FLIGHT)
    lib.accept_jobs(warm, count=300, rate=None, counter=lib.AcceptTransactions())
    drain(run, warm.tenant.pk, 300, timeout=120)

    floors, trials = [], []

    def floor() -> None:
        lib.fill_floor_table(profile.backlog_jobs, warm.tenant.pk, warm.document.pk)
        floors.append(lib.run_floor(profile.floor_processes, profile.backlog_jobs))

    floor()
    for i in range(profile.backlog_trials):
        trials.append(backlog_trial(run, profile, profile.backlog_jobs, f"zero-{i}", gil=run.profile_worker and i == 1))
        floor()
    floor_rate = statistics.median(f.jobs_per_s for f in floors)
    pipeline_rate = statistics.median(t["jobs_per_s"] for t in trials)
    # Both are CPU-bound on this machine: their CPU per job (processes + PostgreSQL backends,
    # the model excluded) says what the ratio would be on idle cores, whatever else ran.
    floor_cpu = statistics.median(f.cpu_ms_per_job for f in floors)
    pipeline_cost = trials[-1]["cost"]
    pipeline_cpu = pipeline_cost["orchestration_cpu_ms_per_job"] + sum(
        v
        for k, v in pipeline_cost["postgres_backend_cpu_ms_per_job_sampled"].items()
        if k not in ("monitor", "accepter")
    )
    return {
        "backlog_jobs": profile.backlog_jobs,
        "floor": [asdict(f) for f in floors],
        "floor_jobs_per_s_median": floor_rate,
        "trials": trials,
        "pipeline_jobs_per_s_median": pipeline_rate,
        "ratio": round(pipeline_rate / floor_rate, 3),
        "floor_cpu_ms_per_job": floor_cpu,
        "pipeline_cpu_ms_per_job_with_postgres": round(pipeline_cpu, 3),
        "cpu_ratio": round(floor_cpu / pipeline_cpu, 3),
    }


# --- report ----------------------------------------------------------------------------------------


def verdicts(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    cost = a["cost"]
    tx = cost["orchestration_transactions_per_job"]
    if tx is None:
        tx = cost["pg_stat_database_transactions_per_job"]
    return [
        (
            "in-flight calls, one worker (peak at simulator)",
            f"{a['simulator']['peak_in_flight']}",
            f">= {TARGETS.in_flight_calls}",
            a["simulator"]["peak_in_flight"] >= TARGETS.in_flight_calls,
        ),
        (
            "worker DB connections (peak open)",
            f"{a['worker']['db_connections_peak']}",
            f"<= {TARGETS.worker_db_connections}",
            a["worker"]["db_connections_peak"] <= TARGETS.worker_db_connections,
        ),
        (
            "worker RSS MiB (peak)",
            f"{a['worker']['rss_mib_peak']}",
            f"< {TARGETS.worker_rss_mib:.0f}",
            a["worker"]["rss_mib_peak"] < TARGETS.worker_rss_mib,
        ),
        (
            "DB transactions per job (orchestration)",
            f"{tx}",
            f"<= {TARGETS.transactions_per_job:.0f}",
            tx <= TARGETS.transactions_per_job,
        ),
        (
            "CPU ms per job (relay+ingress+worker+scheduler)",
            f"{cost['orchestration_cpu_ms_per_job']}",
            f"<= {TARGETS.cpu_ms_per_job:.0f}",
            cost["orchestration_cpu_ms_per_job"] <= TARGETS.cpu_ms_per_job,
        ),
        # Informational: the same figure with the model call's client side counted as the model's.
        (
            "  the same without the model call's client side",
            f"{cost['orchestration_cpu_ms_per_job_without_model_call']}",
            f"<= {TARGETS.cpu_ms_per_job:.0f}",
            (cost["orchestration_cpu_ms_per_job_without_model_call"] or 1e9) <= TARGETS.cpu_ms_per_job,
        ),
        (
            "zero-latency throughput / SKIP LOCKED floor",
            f"{b['ratio']:.2f}",
            f">= {TARGETS.floor_ratio:.2f}",
            b["ratio"] >= TARGETS.floor_ratio,
        ),
    ]


def print_report(result: dict[str, Any]) -> None:
    a, b = result["fixed_latency"], result["zero_latency"]
    lat = a["accept_to_terminal_seconds"]
    print(
        f"\n(a) fixed latency {a['latency_model_seconds']} s, open loop {a['rate_offered']:.0f} jobs/s, "
        f"{a['jobs']} jobs: states {a['states']}"
    )
    print(
        f"    completed {a['completed_per_s']} jobs/s; accept-to-terminal p50 {lat['p50']:.3f} s, "
        f"p95 {lat['p95']:.3f} s, p99 {lat['p99']:.3f} s, max {lat['max']:.3f} s"
    )
    print(
        f"    in flight at simulator: peak {a['simulator']['peak_in_flight']}, steady mean "
        f"{a['simulator']['mean_in_flight_steady']}; worker DB connections: peak open "
        f"{a['worker']['db_connections_peak']}, peak busy {a['worker']['db_connections_busy_peak']}, mean busy "
        f"{a['worker']['db_connections_busy_mean']}; worker RSS peak {a['worker']['rss_mib_peak']} MiB"
    )
    for label, cost in (("(a)", a["cost"]), ("(b)", b["trials"][-1]["cost"])):
        print(
            f"    {label} per job: CPU ms {cost['cpu_ms_per_job']} → orchestration "
            f"{cost['orchestration_cpu_ms_per_job']} ms (of which the model call's client side, SDK + HTTP: "
            f"{cost['model_call_client_cpu_ms_per_job']} ms); transactions {cost['transactions_per_job']} → "
            f"{cost['orchestration_transactions_per_job']} (pg_stat_database: "
            f"{cost['pg_stat_database_transactions_per_job']}); other processes on the machine "
            f"{cost['other_processes_cores']} cores"
        )
    for label, cost in (("(a)", a["cost"]), ("(b)", b["trials"][-1]["cost"])):
        print(
            f"    {label} WAL {cost['wal_bytes_per_job']} bytes/job; active backends were "
            + ", ".join(f"{wait} {share:.0%}" for wait, share in cost["waits_share_of_active_backends"].items())
        )
        for row in cost["statements"][:STATEMENTS_SHOWN]:
            print(
                f"      {row['process']:<9} {row['per_job']:>6}/job {row['mean_ms']:>8.3f} ms "
                f"= {row['ms_per_job']:>7.3f} ms/job  {row['statement']}"
            )
    print(
        f"\n(b) zero latency, backlog of {b['backlog_jobs']}: pipeline "
        f"{[t['jobs_per_s'] for t in b['trials']]} jobs/s, floor ({b['floor'][0]['processes']} processes) "
        f"{[f['jobs_per_s'] for f in b['floor']]} jobs/s → ratio {b['ratio']:.2f}"
    )
    print(
        f"    CPU per job (processes + their PostgreSQL backends, model excluded): pipeline "
        f"{b['pipeline_cpu_ms_per_job_with_postgres']} ms, floor {[f['cpu_ms_per_job'] for f in b['floor']]} ms "
        f"→ ratio on idle cores {b['cpu_ratio']:.3f}; other processes during the floor "
        f"{[f['other_processes_cores'] for f in b['floor']]} cores"
    )
    for trial in b["trials"]:
        worker_profile = trial.get("worker_profile")
        if worker_profile and worker_profile.get("samples"):
            which = "the thread holding the GIL" if worker_profile["gil_only"] else "every thread"
            print(f"\n    llm worker profile (py-spy, {which}, {worker_profile['samples']} samples): innermost frames")
            for frame, share in worker_profile["innermost"]:
                print(f"      {share:>6.1%}  {frame}")
            print("    first-party frames anywhere on the stack")
            for frame, share in worker_profile["first_party_inclusive"]:
                print(f"      {share:>6.1%}  {frame}")
    print()
    width = max(len(v[0]) for v in result["verdicts"])
    print(f"{'target':<{width}}  {'measured':>10}  {'target':>8}  verdict")
    for name, measured, target, ok in result["verdicts"]:
        print(f"{name:<{width}}  {measured:>10}  {target:>8}  {'met' if ok else 'MISSED'}")


def side_by_side(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per transport and phase: throughput, latency and CPU per job per process.
    Phase (b)'s latency is from the relay's release (its jobs waited in the outbox before)."""
    rows = []
    for transport, result in results.items():
        a, b = result["fixed_latency"], result["zero_latency"]
        trial = b["trials"][-1]
        for phase, jobs_per_s, latency, cost in (
            ("a", a["completed_per_s"], a["accept_to_terminal_seconds"], a["cost"]),
            ("b", b["pipeline_jobs_per_s_median"], trial["release_to_terminal_seconds"] or {}, trial["cost"]),
        ):
            rows.append(
                {
                    "transport": transport,
                    "phase": phase,
                    "jobs_per_s": jobs_per_s,
                    "p50_s": latency.get("p50"),
                    "p99_s": latency.get("p99"),
                    "cpu_ms_per_job": cost["cpu_ms_per_job"],
                    "orchestration_cpu_ms_per_job": cost["orchestration_cpu_ms_per_job"],
                    "postgres_backend_cpu_ms_per_job": round(
                        sum(
                            v
                            for k, v in cost["postgres_backend_cpu_ms_per_job_sampled"].items()
                            if k not in ("monitor", "accepter")
                        ),
                        3,
                    ),
                    "transactions_per_job": cost["orchestration_transactions_per_job"],
                }
            )
    return rows


def print_side_by_side(rows: list[dict[str, Any]]) -> None:
    processes = list(dict.fromkeys(name for row in rows for name in row["cpu_ms_per_job"]))
    header = ["transport", "phase", "jobs/s", "p50 s", "p99 s", *processes, "orch.", "pg", "tx/job"]
    lines = [header]
    for row in rows:
        lines.append(
            [
                row["transport"],
                row["phase"],
                f"{row['jobs_per_s']}",
                f"{row['p50_s']:.3f}" if row["p50_s"] is not None else "-",
                f"{row['p99_s']:.3f}" if row["p99_s"] is not None else "-",
                *(f"{row['cpu_ms_per_job'][name]:.3f}" if name in row["cpu_ms_per_job"] else "-" for name in processes),
                f"{row['orchestration_cpu_ms_per_job']:.3f}",
                f"{row['postgres_backend_cpu_ms_per_job']:.3f}",
                f"{row['transactions_per_job']}",
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    print("\nside by side (a: fixed latency, accept-to-terminal; b: zero-latency backlog, release-to-terminal);")
    print("CPU ms per job by process; orch. = relay+ingress+worker+scheduler; pg = their PostgreSQL backends")
    for line in lines:
        print(
            "  ".join(
                cell.rjust(width) if i > 1 else cell.ljust(width)
                for i, (cell, width) in enumerate(zip(line, widths, strict=True))
            )
        )


def sitting(
    transport: str, profile: Profile, *, no_probe: bool, started: float, tag: str, profile_worker: bool = False
) -> dict[str, Any]:
    """Both phases on one transport: its own processes (and, on Kafka, broker), logs and probe
    files, the sandbox emptied first."""
    log_dir, media_root, probe_dir = sitting_dirs(transport, no_probe=no_probe)
    sitting_started = time.monotonic()
    lib.SANDBOX.set_up(media_root, app="accepter", **lib.POOL_LIMITS)
    lib.SANDBOX.reset()

    services = lib.Services(log_dir=log_dir, media_root=media_root, probe_dir=probe_dir, transport=transport)
    monitor = psycopg.connect(lib.SANDBOX.dsn("postgres"), autocommit=True)
    db = psycopg.connect(lib.SANDBOX.dsn(), autocommit=True)
    try:
        a, b = run_phases(
            services, monitor, db, profile, probe_dir=probe_dir, started=started, tag=tag, profile_worker=profile_worker
        )
    finally:
        services.stop_all()
        db.close()
    server_version = monitor.execute("SHOW server_version").fetchone()[0]
    monitor.close()
    return sitting_result(
        transport, profile, server_version=server_version, probe=probe_dir is not None, a=a, b=b, since=sitting_started
    )


def sitting_dirs(transport: str, *, no_probe: bool) -> tuple[Path, Path, Path | None]:
    """The transport's log and probe directories, emptied, and the media directory."""
    suffix = "" if transport == "rabbitmq" else f"-{transport}"
    log_dir = harness.RESULTS_DIR / f"execution-logs{suffix}"
    media_root = harness.RESULTS_DIR / "execution-media"
    probe_dir = None if no_probe else harness.RESULTS_DIR / f"execution-probe{suffix}"
    for path in (log_dir, probe_dir):
        if path is not None:
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True)
    media_root.mkdir(parents=True, exist_ok=True)
    return log_dir, media_root, probe_dir


def run_phases(
    services: lib.Services,
    monitor: psycopg.Connection[Any],
    db: psycopg.Connection[Any],
    profile: Profile,
    *,
    probe_dir: Path | None,
    started: float,
    tag: str,
    profile_worker: bool = False,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The simulator and the orchestration up, then (a) fixed latency and (b) zero latency."""
    services.start_simulator({"latency_mean_seconds": profile.latency_seconds})
    services.start_orchestration()
    run = Run(
        services=services,
        monitor=monitor,
        db=db,
        sampler=lib.Sampler(services),
        probe_dir=probe_dir,
        accept_counter=lib.AcceptTransactions(),
        profile_worker=profile_worker,
    )
    print(f"{tag}processes up after {time.monotonic() - started:.0f} s; (a) fixed latency ...", flush=True)
    a = fixed_latency(run, profile)
    print(
        f"{tag}(a) done after {time.monotonic() - started:.0f} s; (b) zero latency against the floor ...",
        flush=True,
    )
    b = zero_latency(run, profile)
    run.sampler.close()
    return a, b


def sitting_result(
    transport: str,
    profile: Profile,
    *,
    server_version: str,
    probe: bool,
    a: dict[str, Any],
    b: dict[str, Any],
    since: float,
) -> dict[str, Any]:
    """A sitting's figures, with the processes' settings and the verdicts."""
    result = {
        "profile": profile.name,
        **({} if transport == "rabbitmq" else {"transport": transport}),
        "machine": {**harness.machine(), "postgresql": server_version},
        "processes": {
            "worker_concurrency": lib.WORKER_CONCURRENCY,
            "worker_pool_max": lib.WORKER_POOL_MAX,
            "ingress_concurrency": lib.INGRESS_CONCURRENCY,
            "probe": probe,
            "pool_limits": lib.POOL_LIMITS,
            "tenant_max_in_flight": lib.TENANT_MAX_IN_FLIGHT,
            "redis_url": lib.SANDBOX.redis_url,
            **(
                {
                    "kafka": {
                        "broker": "tansu (tests/kafka_broker.py, in-memory)",
                        "partitions": lib.KAFKA_PARTITIONS,
                        "session_timeout_ms": lib.KAFKA_SESSION_TIMEOUT_MS,
                        "max_poll_interval_ms": lib.KAFKA_MAX_POLL_INTERVAL_MS,
                    }
                }
                if transport == "kafka"
                else {}
            ),
        },
        "targets": asdict(TARGETS),
        "fixed_latency": a,
        "zero_latency": b,
        "seconds": round(time.monotonic() - since, 1),
    }
    result["verdicts"] = verdicts(a, b)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter windows and a smaller backlog (~2 min)")
    parser.add_argument("--rate", type=float, help="(a): accepts per second")
    parser.add_argument("--latency", type=float, help="(a): model latency in seconds")
    parser.add_argument("--backlog", type=int, help="(b): jobs in the zero-latency backlog")
    parser.add_argument(
        "--no-probe", action="store_true", help="no per-process transaction counter (pg_stat_database only)"
    )
    parser.add_argument(
        "--profile-worker",
        action="store_true",
        help="py-spy on the llm worker during (b): two backlog trials, every thread then --gil",
    )
    parser.add_argument(
        "--transport",
        choices=(*lib.TRANSPORTS, "both"),
        default="rabbitmq",
        help="what carries the outbox's events; both: one sitting per transport and a side-by-side table",
    )
    args = parser.parse_args()
    profile = QUICK if args.quick else FULL
    profile = replace(
        profile,
        rate=args.rate or profile.rate,
        latency_seconds=args.latency or profile.latency_seconds,
        backlog_jobs=args.backlog or profile.backlog_jobs,
        backlog_trials=max(2, profile.backlog_trials) if args.profile_worker else profile.backlog_trials,
    )

    started = time.monotonic()
    transports = lib.TRANSPORTS if args.transport == "both" else (args.transport,)
    results = {}
    for transport in transports:
        tag = f"[{transport}] " if len(transports) > 1 else ""
        results[transport] = sitting(
            transport, profile, no_probe=args.no_probe, started=started, tag=tag, profile_worker=args.profile_worker
        )
    seconds = round(time.monotonic() - started, 1)

    if len(transports) == 1:
        (transport,) = transports
        result = results[transport]
        result["seconds"] = seconds
        script = "execution_bench" if transport == "rabbitmq" else f"execution_bench-{transport}"
        harness.publish_results(script, lambda: print_report(result), result)
        suffix = "" if transport == "rabbitmq" else f"-{transport}"
        print(f"{seconds} s; logs in {(harness.RESULTS_DIR / f'execution-logs{suffix}').relative_to(PROJECT_ROOT)}/")
        return 0

    rows = side_by_side(results)

    def report() -> None:
        for transport, result in results.items():
            print(f"\n=== transport {transport} ({result['seconds']} s) ===")
            print_report(result)
        print_side_by_side(rows)

    combined = {"profile": profile.name, "transports": results, "side_by_side": rows, "seconds": seconds}
    harness.publish_results("execution_bench-both", report, combined)
    print(f"{seconds} s; logs in {harness.RESULTS_DIR.relative_to(PROJECT_ROOT)}/execution-logs{{,-kafka}}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
