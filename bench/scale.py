"""Scaling measured: the llm-worker tier as 1, 2, 3 and 4 processes on one host, and as 2 and 4
processes split over two hosts (network namespaces), against one provider pool's budget.

Run from the project root, as root (the two-host layouts are network namespaces)::

    .venv/bin/python bench/scale.py [--layouts 1x1,2x1,3x1,4x1,2x2,4x2] [--quick] [--out DIR]

Every layout works off the same READY backlog of two tenants through the provider simulator at a
fixed latency, with the pool's requests/min binding between 2 and 4 workers. Over a fixed window
after a warm-up it measures jobs/s, quota use, the provider's 429s, each tenant's share of the
completions and the autoscaling signal; it writes report.md, scale.json and scale.png. Method
and what is real: bench/README.md ("Scaling the llm-worker tier").
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

import psycopg  # noqa: E402

from bench import capacity_lib, harness, live_system  # noqa: E402
from bench.capacity_bench import wait_db_seconds  # noqa: E402
from tests.cluster.hosts import namespace_env, run_on_host  # noqa: E402
from tests.cluster.netns import Host, Network, cleanup_stale  # noqa: E402

POOL = "default"
DEFAULT_SANDBOX = ("bench_scale", 15)
HOSTS = ("hostA", "hostB")
WORKER_DB_POOL = 4  # one pooled connection per thread: a claim never waits for a connection
BUCKET_SECONDS = 10.0  # the tenants' shares are also read per bucket of the window


@dataclass(frozen=True)
class Scenario:
    """The pool, the model and the measurement: the budget (rpm) binds between 2 and 4 workers,
    since one worker carries ``concurrency / latency`` calls per second."""

    latency_seconds: float = 1.0  # constant: the p95 is the mean
    concurrency: int = 4  # threads of each worker process (Celery --concurrency)
    rpm: int = 600  # the pool's budget; the simulator enforces the same quota
    max_in_flight: int = 20  # above every layout's slots: requests/min is the budget that binds
    tpm: int = 1_000_000_000  # out of the way
    warmup_seconds: float = 20.0
    window_seconds: float = 60.0  # one limiter window: calls in it can never exceed rpm
    backlog: tuple[int, int] = (1200, 600)  # READY jobs of tenant "big" (older) and "small"

    @property
    def budget_per_second(self) -> float:
        return self.rpm / 60

    def model_jobs_per_second(self, workers: int) -> float:
        """What ``workers`` processes can do on paper: their slots over the latency, capped by
        the budget (one call per job: the simulator answers right first time)."""
        return min(workers * self.concurrency / self.latency_seconds, self.budget_per_second)

    @property
    def knee(self) -> int:
        """The fewest workers whose slots can spend the whole budget."""
        return math.ceil(self.budget_per_second * self.latency_seconds / self.concurrency - 1e-9)


FULL = Scenario()
QUICK = Scenario(warmup_seconds=8.0, window_seconds=20.0, backlog=(600, 300))


@dataclass(frozen=True)
class Targets:
    quota_use_bound: float = 0.95  # once the budget binds
    quota_use_max: float = 1.0
    rate_limited_share: float = 0.001
    tenant_share_tolerance: float = 0.05  # |share - 1/2| over the window, equal weights
    # Below the knee, n workers do at least this share of n times what one worker does: the
    # tier scales with its processes (one worker's own overhead per job is reported, not judged).
    linear_growth: float = 0.9


TARGETS = Targets()


@dataclass(frozen=True)
class Layout:
    """``workers`` llm worker processes on ``hosts`` hosts: 1 is this machine's own namespace,
    2 is the namespaces hostA and hostB with the workers split evenly."""

    workers: int
    hosts: int

    @classmethod
    def parse(cls, text: str) -> Layout:
        """``WORKERSxHOSTS``, e.g. ``4x2``."""
        try:
            workers, hosts = (int(part) for part in text.lower().split("x"))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{text!r} is not WORKERSxHOSTS (e.g. 4x2)") from exc
        if workers < 1 or hosts not in (1, 2) or workers % hosts:
            raise argparse.ArgumentTypeError(f"{text!r}: 1 or 2 hosts, the workers split evenly over them")
        return cls(workers, hosts)

    @property
    def key(self) -> str:
        return f"{self.workers}x{self.hosts}"

    def placement(self) -> list[str | None]:
        """Each worker's host: None (this machine's namespace) or hostA and hostB in turn."""
        return [None if self.hosts == 1 else HOSTS[n % 2] for n in range(self.workers)]


DEFAULT_LAYOUTS = "1x1,2x1,3x1,4x1,2x2,4x2"


# --- the processes -------------------------------------------------------------------------------


def pool_env(scenario: Scenario) -> dict[str, str]:
    """The pool's limits for every process, and the slots per replica the autoscaling signal
    divides by (the workers' --concurrency)."""
    return {
        "POOL_REQUESTS_PER_MINUTE": str(scenario.rpm),
        "POOL_TOKENS_PER_MINUTE": str(scenario.tpm),
        "POOL_MAX_IN_FLIGHT": str(scenario.max_in_flight),
        "LLM_WORKER_CONCURRENCY": str(scenario.concurrency),
    }


def start_workers(services: harness.Services, layout: Layout, scenario: Scenario, network: Network | None) -> list[str]:
    """The layout's llm workers, as the Procfile runs them: in this namespace, or on a namespace
    host with every service reached through the bridge (tests/cluster/hosts.py)."""
    names = []
    for n, host in enumerate(layout.placement(), start=1):
        name = f"llm-{n}" if host is None else f"llm-{n}-{host}"
        if host is None:
            services.celery(name, "llm", scenario.concurrency, pool_max_size=WORKER_DB_POOL)
        else:
            assert network is not None, "a two-host layout without its hosts"
            start_on_host(services, name, network.hosts[host], network, scenario)
        names.append(name)
    return names


def start_on_host(services: harness.Services, name: str, host: Host, network: Network, scenario: Scenario) -> None:
    """One llm worker on ``host``, tracked with the phase's other processes (started, checked
    and stopped alike: its Popen is its process group)."""
    argv = [str(harness.VENV_BIN / "celery"), *harness.celery_args(name, "llm", scenario.concurrency)]
    env = {
        **services.env,
        "POSTGRES_POOL_MAX_SIZE": str(WORKER_DB_POOL),
        "PGAPPNAME": f"{services.sandbox.app_prefix}{name}",
    }
    log = services.log_dir / f"{name}.log"
    services.procs[name] = run_on_host(host, argv, namespace_env(env, network), log=log, cwd=PROJECT_ROOT)


def fill_backlog(scenario: Scenario, sandbox: harness.Sandbox) -> dict[str, str]:
    """Two tenants' READY jobs, the big one's older: a FIFO claim would serve it alone for the
    whole window, a fair one serves both alike. Returns tenant id -> label."""
    labels = {}
    for label, count, waited in (("big", scenario.backlog[0], 120.0), ("small", scenario.backlog[1], 60.0)):
        tenant = harness.make_tenant(f"benchscale-{label}")
        capacity_lib.insert_ready_jobs(tenant, count, waited_seconds=waited, sandbox=sandbox)
        labels[str(tenant.tenant.pk)] = label
    return labels


def read_signal(services: harness.Services) -> dict[str, Any]:
    """``manage.py autoscale_signal --format json`` with the processes' settings: the llm
    worker's row for the pool."""
    done = subprocess.run(
        [sys.executable, "manage.py", "autoscale_signal", "--format", "json"],
        cwd=PROJECT_ROOT,
        env={**services.env, "PGAPPNAME": f"{services.sandbox.app_prefix}signal"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rows = json.loads(done.stdout)
    return next(row for row in rows if row["process"] == "worker" and row["pool"] == POOL)


# --- what a window holds ---------------------------------------------------------------------------


def completions(conn: psycopg.Connection[Any], start: float, seconds: float) -> dict[str, list[int]]:
    """Jobs that reached a terminal state in [start, start + seconds), per tenant and per
    bucket of BUCKET_SECONDS (database clock: the job event of the terminal transition)."""
    rows = conn.execute(
        """
        SELECT tenant_id::text, floor((extract(epoch FROM created_at) - %(start)s) / %(bucket)s)::int, count(*)
          FROM job_events
         WHERE to_state = ANY(%(terminal)s)
           AND created_at >= to_timestamp(%(start)s) AND created_at < to_timestamp(%(end)s)
         GROUP BY 1, 2
        """,
        {"start": start, "end": start + seconds, "bucket": BUCKET_SECONDS, "terminal": list(harness.TERMINAL_STATES)},
    ).fetchall()
    buckets = math.ceil(seconds / BUCKET_SECONDS)
    counts: dict[str, list[int]] = {}
    for tenant, bucket, n in rows:
        counts.setdefault(tenant, [0] * buckets)[min(bucket, buckets - 1)] += int(n)
    return counts


def calls_by_host(conn: psycopg.Connection[Any], start: float, seconds: float) -> dict[str, int]:
    """Provider calls started in the window, by the host part of the worker id."""
    rows = conn.execute(
        """
        SELECT split_part(worker_id, ':', 1), count(*) FROM extraction_attempts
         WHERE started_at >= to_timestamp(%(start)s) AND started_at < to_timestamp(%(end)s)
           AND outcome <> ALL(%(unsent)s)
         GROUP BY 1 ORDER BY 1
        """,
        {"start": start, "end": start + seconds, "unsent": list(capacity_lib.UNSENT_OUTCOMES)},
    ).fetchall()
    return {host: int(n) for host, n in rows}


def tenant_shares(counts: Mapping[str, int]) -> dict[str, float]:
    """Each tenant's share of the completions (0 for all when there were none)."""
    total = sum(counts.values())
    return {tenant: round(n / total, 4) if total else 0.0 for tenant, n in counts.items()}


def share_ranges(buckets: Mapping[str, Sequence[int]]) -> dict[str, tuple[float, float]]:
    """Each tenant's lowest and highest share over the buckets that completed anything: how
    steady the split is within the window, not only over it."""
    tenants = list(buckets)
    totals = [sum(column) for column in zip(*buckets.values(), strict=True)]
    ranges = {}
    for tenant in tenants:
        shares = [n / total for n, total in zip(buckets[tenant], totals, strict=True) if total]
        ranges[tenant] = (round(min(shares), 3), round(max(shares), 3)) if shares else (0.0, 0.0)
    return ranges


# --- one layout --------------------------------------------------------------------------------------


@dataclass
class Phase:
    """What one layout's run needs: the sandbox, the simulator's process handle and the hosts."""

    sandbox: harness.Sandbox
    simulator: harness.Services
    scenario: Scenario
    network: Network | None
    log_root: Path
    media_root: Path


def run_layout(layout: Layout, phase: Phase) -> dict[str, Any]:
    """Empty sandbox, the layout's workers and the scheduler up, the backlog in, then one
    measured window; every process of the layout stopped however it ends."""
    live_system.reset_sandbox(phase.sandbox)
    phase.simulator.simulator_reset()
    services = harness.Services(
        phase.sandbox,
        log_dir=_fresh_dir(phase.log_root / layout.key),
        media_root=phase.media_root,
        OPENAI_BASE_URL=phase.simulator.env["OPENAI_BASE_URL"],
        **pool_env(phase.scenario),
    )
    try:
        names = start_workers(services, layout, phase.scenario, phase.network)
        services.scheduler()
        services.wait_until_ready(names)
        labels = fill_backlog(phase.scenario, phase.sandbox)
        with psycopg.connect(phase.sandbox.dsn(app="reader"), autocommit=True) as conn:
            measured = measure_window(conn, services, phase)
            measured["signal"] = read_signal(services)
            services.check_alive()
    finally:
        services.stop_all()
    return summarize(layout, phase.scenario, measured, labels) | {"logged_errors": services.logged_errors()}


def measure_window(conn: psycopg.Connection[Any], services: harness.Services, phase: Phase) -> dict[str, Any]:
    """From the first call, a warm-up, then the window: the simulator's counters at both ends,
    and what the database recorded in between (all on the database clock)."""
    scenario = phase.scenario
    started = time.monotonic()
    while (first := capacity_lib.first_call_at(conn)) is None:
        if time.monotonic() - started > 60:
            raise RuntimeError(f"no model call 60 s after the backlog appeared; logs in {services.log_dir}")
        services.check_alive()
        time.sleep(0.2)
    start = first + scenario.warmup_seconds
    wait_db_seconds(conn, start, services)
    load, before = harness.LoadMeter(), phase.simulator.simulator_stats()
    wait_db_seconds(conn, start + scenario.window_seconds, services)
    after, machine = phase.simulator.simulator_stats(), load.read()
    return {
        "provider_calls": after["calls"] - before["calls"],
        "rate_limited": after["rate_limited"] - before["rate_limited"],
        "completions": completions(conn, start, scenario.window_seconds),
        "calls_by_host": calls_by_host(conn, start, scenario.window_seconds),
        "ledger": asdict(capacity_lib.ledger_window(conn, start, scenario.window_seconds)),
        "machine": asdict(machine),
    }


def summarize(
    layout: Layout, scenario: Scenario, measured: dict[str, Any], labels: Mapping[str, str]
) -> dict[str, Any]:
    """One row of the table: the figures and, beside them, what the targets say."""
    window = scenario.window_seconds
    buckets = {labels.get(tenant, tenant): counts for tenant, counts in measured["completions"].items()}
    totals = {tenant: sum(counts) for tenant, counts in buckets.items()}
    admitted = measured["provider_calls"] - measured["rate_limited"]
    calls = measured["provider_calls"]
    row = {
        "layout": layout.key,
        "workers": layout.workers,
        "hosts": layout.hosts,
        "jobs_per_s": round(sum(totals.values()) / window, 3),
        "model_jobs_per_s": round(scenario.model_jobs_per_second(layout.workers), 3),
        "quota_use": round(admitted / (scenario.rpm * window / 60), 4),
        "rate_limited_share": round(measured["rate_limited"] / calls, 5) if calls else 0.0,
        "tenant_shares": tenant_shares(totals),
        "tenant_share_ranges": share_ranges(buckets),
        "completions_per_bucket": buckets,
        **{key: measured[key] for key in ("provider_calls", "rate_limited", "calls_by_host", "signal", "ledger")},
        "machine": measured["machine"],
    }
    return row | {"checks": checks(row, scenario)}


def checks(row: Mapping[str, Any], scenario: Scenario) -> dict[str, bool]:
    """The targets one layout meets alone: from the knee on the budget used; 429s, never above
    the budget, the tenants' split and the signal's replica count always. (Growth below the
    knee compares layouts: :func:`curve`.)"""
    bound = row["workers"] >= scenario.knee
    result = {
        "429s_within_target": row["rate_limited_share"] <= TARGETS.rate_limited_share,
        "quota_never_above_budget": row["quota_use"] <= TARGETS.quota_use_max,
        "tenants_served_alike": all(
            abs(share - 0.5) <= TARGETS.tenant_share_tolerance for share in row["tenant_shares"].values()
        )
        and len(row["tenant_shares"]) == 2,
        "signal_names_the_knee": row["signal"]["replicas"] == scenario.knee,
    }
    if bound:
        result["budget_used"] = row["quota_use"] >= TARGETS.quota_use_bound
    return result


def _fresh_dir(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


# --- the verdict, the plot and the report ----------------------------------------------------------


def curve(rows: Sequence[Mapping[str, Any]], scenario: Scenario) -> dict[str, Any]:
    """Does jobs/s grow with the workers and then stay at the budget, and where does it flatten
    (the fewest workers whose quota use met the target), beside the signal's replica count.
    None where the layouts run cannot tell (no single worker, no layout at the knee)."""
    single = next((r["jobs_per_s"] for r in rows if r["workers"] == 1), None)
    below = [r for r in rows if 1 < r["workers"] < scenario.knee]
    bound = [r for r in rows if r["workers"] >= scenario.knee]
    flat = [r["workers"] for r in rows if r["quota_use"] >= TARGETS.quota_use_bound]
    replicas = Counter(r["signal"]["replicas"] for r in rows)
    grows = None
    if single is not None and below:
        grows = all(r["jobs_per_s"] >= TARGETS.linear_growth * r["workers"] * single for r in below)
    return {
        "knee_workers": scenario.knee,
        "flattens_at_workers": min(flat) if flat else None,
        "grows_below_the_knee": grows,
        "stays_at_the_budget": all(r["checks"]["budget_used"] for r in bound) if bound else None,
        "signal_replicas": replicas.most_common(1)[0][0] if replicas else None,
        "signal_readings": dict(replicas),
        "all_checks_met": all(all(r["checks"].values()) for r in rows) and grows is not False,
    }


def plot(rows: Sequence[Mapping[str, Any]], scenario: Scenario, verdict: Mapping[str, Any], path: Path) -> None:
    """jobs/s against workers, one line per host layout, with the budget, the paper capacity
    and the signal's replica count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for hosts, style, label in ((1, "o-", "one host"), (2, "s--", "two hosts (split evenly)")):
        points = sorted((r["workers"], r["jobs_per_s"]) for r in rows if r["hosts"] == hosts)
        if points:
            ax.plot(*zip(*points, strict=True), style, label=label, markersize=7)
    most = max(r["workers"] for r in rows)
    xs = [x / 10 for x in range(10, most * 10 + 1)]
    ax.plot(
        xs,
        [min(x * scenario.concurrency / scenario.latency_seconds, scenario.budget_per_second) for x in xs],
        ":",
        color="gray",
        label="on paper: slots ÷ latency, capped by the budget",
    )
    ax.axhline(
        scenario.budget_per_second,
        color="tab:red",
        linestyle="--",
        label=f"pool budget: {scenario.rpm}/min = {scenario.budget_per_second:g} calls/s",
    )
    if verdict["signal_replicas"] is not None:
        ax.axvline(
            verdict["signal_replicas"],
            color="tab:green",
            linestyle="-.",
            label=f"autoscaling signal: {verdict['signal_replicas']} replicas",
        )
    ax.set_xticks(range(1, most + 1))
    ax.set_xlabel(f"llm worker processes ({scenario.concurrency} threads each)")
    ax.set_ylabel("jobs completed per second")
    ax.set_ylim(0, scenario.budget_per_second * 1.25)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(
        f"bench/scale.py: model latency {scenario.latency_seconds:g} s, {scenario.window_seconds:g} s windows",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = [
        "| workers × hosts | jobs/s | on paper | quota use | 429s | tenant shares big / small (10 s buckets: small's range) "
        "| calls by host | signal: replicas (slots / cap) | busy cores | checks |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        shares, ranges, signal = r["tenant_shares"], r["tenant_share_ranges"], r["signal"]
        low, high = ranges.get("small", (0.0, 0.0))
        missed = [name for name, ok in r["checks"].items() if not ok]
        lines.append(
            f"| {r['workers']} × {r['hosts']} | {r['jobs_per_s']:.2f} | {r['model_jobs_per_s']:.2f} "
            f"| {r['quota_use']:.3f} | {r['rate_limited']} of {r['provider_calls']} ({r['rate_limited_share']:.2%}) "
            f"| {shares.get('big', 0):.3f} / {shares.get('small', 0):.3f} ({low:.2f}–{high:.2f}) "
            f"| {', '.join(f'{h} {n}' for h, n in r['calls_by_host'].items())} "
            f"| {signal['replicas']} ({signal['slots']:g} / {signal['slot_cap']}) "
            f"| {r['machine']['busy_cores']} | {'met' if not missed else 'MISSED: ' + ', '.join(missed)} |"
        )
    return lines


def verdict_lines(verdict: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], scenario: Scenario) -> list[str]:
    """The answer in words: does the curve grow, then flatten at the budget, and where does
    the signal put the replica count."""
    one_host = {r["workers"]: r["jobs_per_s"] for r in rows if r["hosts"] == 1}
    points = ", ".join(f"{one_host[n]:.2f} at {n}" for n in sorted(one_host))
    growth = {
        True: f"grows in proportion to the workers (at least {TARGETS.linear_growth:g} × n × one worker's) "
        "while their slots are what binds",
        False: "does NOT grow in proportion to the workers below the knee",
        None: "cannot show its growth (no single worker and a layout below the knee run)",
    }[verdict["grows_below_the_knee"]]
    flattens, stays = verdict["flattens_at_workers"], verdict["stays_at_the_budget"]
    if stays is None:
        flat = "never reaches the budget in the layouts run"
    elif stays and flattens is not None:
        flat = f"flattens at the budget from {flattens} workers on"
    else:
        flat = "does NOT stay at the budget once it binds (see the quota use)"
    paper = (
        f"{scenario.knee} = ⌈{scenario.budget_per_second:g} calls/s × {scenario.latency_seconds:g} s "
        f"÷ {scenario.concurrency} slots⌉"
    )
    signal = verdict["signal_replicas"]
    named = (
        "the replica count at which the measured curve flattens"
        if signal == flattens
        else f"not where the measured curve flattens ({flattens or 'nowhere in the layouts run'})"
    )
    over = "never" if all(r["checks"]["quota_never_above_budget"] for r in rows) else "ABOVE it in some window"
    calls = sum(r["provider_calls"] for r in rows)
    compared = "; ".join(
        f"{r['workers']} workers: {r['jobs_per_s']:.2f} jobs/s on two hosts, {one_host[r['workers']]:.2f} on one"
        for r in rows
        if r["hosts"] == 2 and r["workers"] in one_host
    )
    return [
        f"- **The curve** (one host, jobs/s): {points}. It {growth} and {flat} (on paper: {paper}).",
        f"- **The autoscaling signal** named {signal} replicas (readings {verdict['signal_readings']}): {named}.",
        f"- **Over the budget**: {over}; 429s: {sum(r['rate_limited'] for r in rows)} of {calls} calls in all.",
        f"- **Two hosts against one**: {compared or 'not run'}.",
        f"- **Every check met**: {'yes' if verdict['all_checks_met'] else 'NO: see the last column'}.",
    ]


def contract_lines(scenario: Scenario, layouts: Sequence[Layout]) -> list[str]:
    big, small = scenario.backlog
    return [
        f"- **Layouts** (workers × hosts): {', '.join(layout.key for layout in layouts)}. One host is this "
        "machine's own network namespace; two hosts are the namespaces hostA and hostB on a bridge of the "
        "run's own (tests/cluster/netns.py), the workers split evenly, each with its own hostname, reaching "
        "PostgreSQL, RabbitMQ, Redis and the model through forwarders on the bridge's address.",
        f"- **Workers**: the Procfile's llm worker (Celery, threads pool, `--concurrency {scenario.concurrency}`, "
        f"database pool {WORKER_DB_POOL}) and the scheduler (wake-ups, reaper); no web, relay or ingress: the "
        "backlog is inserted READY, as ingress leaves jobs.",
        f"- **Model**: the provider simulator, constant latency {scenario.latency_seconds:g} s (p95 = mean), "
        f"enforcing {scenario.rpm} requests/min itself, so an over-admission would show as a 429.",
        f"- **Pool `{POOL}`**: {scenario.rpm} requests/min (= {scenario.budget_per_second:g} calls/s, the budget "
        f"that binds), {scenario.tpm:,} tokens/min and {scenario.max_in_flight} in flight (neither binds).",
        f"- **Backlog**: tenant big {big} READY jobs (available 120 s ago), tenant small {small} (60 s ago); equal "
        "weights: a FIFO claim would serve big alone for the whole window.",
        f"- **Window**: {scenario.warmup_seconds:g} s after the first model call, then {scenario.window_seconds:g} s "
        "(database clock); the signal is read right after it, the workers still running.",
        "- **Figures**: jobs/s = terminal transitions in the window ÷ its length; quota use = calls the simulator "
        f"admitted in the window ÷ ({scenario.rpm} × window ÷ 60 s); 429s = the simulator's 429 answers ÷ its "
        "calls; tenant shares = each tenant's completions in the window (and its range over "
        f"{BUCKET_SECONDS:g} s buckets); calls by host = provider calls by the host part of the worker id; "
        "busy cores = the whole machine's during the window (of 2).",
    ]


def write_report(out: Path, result: Mapping[str, Any], scenario: Scenario, layouts: Sequence[Layout]) -> str:
    """report.md, scale.json and scale.png into ``out``; returns the report's text."""
    rows, verdict = result["rows"], result["verdict"]
    lines = [f"# Scaling the llm-worker tier — {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}", ""]
    lines += [f"`python bench/scale.py {' '.join(result['argv'])}`", "", "## What ran", ""]
    lines += contract_lines(scenario, layouts) + ["", "## Results", ""] + table_lines(rows)
    lines += ["", "## Verdict", ""] + verdict_lines(verdict, rows, scenario)
    lines += ["", "![jobs/s against workers](scale.png)", ""]
    text = "\n".join(lines) + "\n"
    (out / "report.md").write_text(text)
    (out / "scale.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    plot(rows, scenario, verdict, out / "scale.png")
    return text


# --- the run -----------------------------------------------------------------------------------------


def run_all(
    layouts: Sequence[Layout], scenario: Scenario, sandbox: harness.Sandbox, log_root: Path, media_root: Path
) -> list[dict[str, Any]]:
    """The simulator (one for the run, reset per layout) and, if a layout needs them, the two
    namespace hosts; then each layout in turn. Everything is torn down however it ends."""
    with ExitStack() as stack:
        network = open_hosts(stack) if any(layout.hosts == 2 for layout in layouts) else None
        simulator = harness.Services(sandbox, log_dir=log_root, media_root=media_root)
        stack.callback(simulator.stop_all)
        simulator.start_simulator(live_system.simulator_config(scenario.latency_seconds, 0.0, seed=1, rpm=scenario.rpm))
        phase = Phase(sandbox, simulator, scenario, network, log_root, media_root)
        rows = []
        for layout in layouts:
            print(f"{layout.key}: {layout.workers} workers on {layout.hosts} host(s) ...", flush=True)
            rows.append(run_layout(layout, phase))
            row = rows[-1]
            print(
                f"    {row['jobs_per_s']:.2f} jobs/s, quota use {row['quota_use']:.3f}, "
                f"429s {row['rate_limited']}, shares {row['tenant_shares']}, signal {row['signal']['replicas']}",
                flush=True,
            )
        return rows


def open_hosts(stack: ExitStack) -> Network:
    """hostA and hostB on a bridge of this run's own, removed when ``stack`` closes (what an
    earlier run that died left behind is removed first)."""
    cleanup_stale()
    network = stack.enter_context(Network())
    for name in HOSTS:
        network.add_host(name)
    return network


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layouts", default=DEFAULT_LAYOUTS, help=f"WORKERSxHOSTS,... (default {DEFAULT_LAYOUTS})")
    parser.add_argument("--quick", action="store_true", help="shorter windows and backlog (a smoke run)")
    parser.add_argument(
        "--sandbox", default=DEFAULT_SANDBOX[0], help="database and vhost, bench* (default bench_scale)"
    )
    parser.add_argument("--redis-db", type=int, default=DEFAULT_SANDBOX[1], help="Redis database (default 15)")
    parser.add_argument("--out", type=Path, help="directory for report.md, scale.json and scale.png")
    parser.add_argument(
        "--render", type=Path, help="write the report of an earlier run's scale.json again, run nothing"
    )
    args = parser.parse_args(argv)
    if args.render:
        return render(args.render, (args.out or args.render.parent).resolve())
    layouts = [Layout.parse(text) for text in args.layouts.split(",") if text]
    scenario = QUICK if args.quick else FULL
    if any(layout.hosts == 2 for layout in layouts) and os.geteuid() != 0:
        parser.error("the two-host layouts are network namespaces: run as root, or only WORKERSx1 layouts")
    try:
        sandbox = live_system.sandbox_named(args.sandbox, args.redis_db)
    except ValueError as exc:
        parser.error(str(exc))
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = (args.out or harness.RESULTS_DIR / f"scale-{stamp}").resolve()
    work = _fresh_dir(harness.RESULTS_DIR / f"scale-work-{stamp}")  # logs and media stay out of a report
    out.mkdir(parents=True, exist_ok=True)
    os.environ["LOG_LEVEL"] = "WARNING"  # this process's own lines (the processes log at INFO)
    sandbox.set_up(work / "media", app="bench", **pool_env(scenario))
    rows = run_all(layouts, scenario, sandbox, work / "logs", work / "media")
    verdict = curve(rows, scenario)
    result = {
        "script": "bench/scale.py",
        "argv": sys.argv[1:] if argv is None else argv,
        "scenario": asdict(scenario),
        "targets": asdict(TARGETS),
        "machine": harness.machine(),
        "rows": rows,
        "verdict": verdict,
        "logs": str((work / "logs").relative_to(PROJECT_ROOT)),
    }
    sys.stdout.write(write_report(out, result, scenario, layouts))
    print(f"written: {out / 'report.md'}, {out / 'scale.json'}, {out / 'scale.png'}; logs in {work / 'logs'}")
    return 0 if verdict["all_checks_met"] else 1


def render(path: Path, out: Path) -> int:
    """The report, its JSON and its plot from an earlier run's figures (a wording or a plot
    changed; the measurement did not)."""
    result = json.loads(path.read_text())
    scenario = Scenario(**{**result["scenario"], "backlog": tuple(result["scenario"]["backlog"])})
    layouts = [Layout(row["workers"], row["hosts"]) for row in result["rows"]]
    result["verdict"] = curve(result["rows"], scenario)
    out.mkdir(parents=True, exist_ok=True)
    sys.stdout.write(write_report(out, result, scenario, layouts))
    return 0 if result["verdict"]["all_checks_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
