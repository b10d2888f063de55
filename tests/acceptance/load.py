"""Open-loop load report (OPS-3): the real processes under a stated load of real invoices.

Run from the project root::

    .venv/bin/python -m tests.acceptance.load --rate 5 --duration 300 [--burst 20:30@120 ...] [--out DIR]

It starts the Procfile's processes in its own sandbox (database, vhost and Redis database
``bench_load``/13) with the provider simulator as the model, submits real sample invoices
through the HTTP API on an open-loop schedule (upload, then ``POST /api/v1/extraction-jobs``
with an Idempotency-Key; each submission due at its intended time and timed from it), samples
the pipeline every second, and writes the load contract it ran under with the figures: a
Markdown report, the JSON and a PNG plot of the queue over time. Method: tests/acceptance/README.md.

The load is bench/submissions.py's and the processes and their sampler bench/live_system.py's;
this script holds the report: the figures, the phases, the per-second series and the plot, the
limits in force and the Markdown, which the fault suite (tests/acceptance/faults.py) reuses.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import shutil
import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from bench import harness
from bench.live_system import (
    DEAD_LETTER_QUEUES,
    TERMINAL,
    WORK_QUEUES,
    JobRow,
    ProcessPlan,
    Sampler,
    System,
    Tick,
    job_rows,
    make_api_tenant,
    reset_sandbox,
    sandbox_named,
    simulator_config,
    simulator_counts,
    wait_for_drain,
)
from bench.submissions import (
    DEFAULT_MIX,
    Arrivals,
    Burst,
    DocumentMix,
    OpenLoopAccepter,
    Submission,
    parse_mix,
)

DEFAULT_SANDBOX = ("bench_load", 13)


# --- the figures ---------------------------------------------------------------------------------


def _finite(value: float, ndigits: int = 3) -> float | None:
    return None if math.isinf(value) or math.isnan(value) else round(value, ndigits)


def percentiles(values: Iterable[float], ndigits: int = 3) -> dict[str, float | None]:
    """p50/p95/p99/max, nearest rank; an infinite value (a submission not accepted, a job not
    terminal) makes the percentiles it reaches None."""
    ordered = sorted(values)
    return {
        name: _finite(harness.percentile(ordered, q), ndigits) if ordered else None
        for name, q in (("p50", 0.50), ("p95", 0.95), ("p99", 0.99), ("max", 1.0))
    }


def accept_figures(submissions: list[Submission], seconds: float) -> dict[str, Any]:
    outcomes = Counter(s.status for s in submissions)
    accepted = [s for s in submissions if s.accepted]
    lags = [s.started - s.due for s in submissions if s.started]
    return {
        "submitted": len(submissions),
        "accepted": len(accepted),
        "accepted_per_s": round(len(accepted) / seconds, 3) if seconds > 0 else None,
        "offered_per_s": round(len(submissions) / seconds, 3) if seconds > 0 else None,
        "outcomes": dict(sorted(outcomes.items())),
        "submissions_retried": sum(1 for s in submissions if s.tries > 2),
        "answered_as_replays": sum(1 for s in submissions if s.replayed),
        "accept_latency_seconds": percentiles(s.latency for s in submissions),
        "send_lag_p99_ms": round(harness.percentile(lags, 0.99) * 1000, 1) if lags else None,
    }


def job_figures(rows: list[JobRow], submissions: list[Submission]) -> dict[str, Any]:
    kinds = {s.job_id: s.kind for s in submissions if s.job_id}
    to_terminal = [(r.terminal_at - r.created_at) if r.terminal_at is not None else math.inf for r in rows]
    answered = [r for r in rows if r.model_answers > 0]
    by_kind: dict[str, list[float]] = {}
    for row, latency in zip(rows, to_terminal, strict=True):
        by_kind.setdefault(kinds.get(row.job_id, "?"), []).append(latency)
    return {
        "jobs": len(rows),
        "states": dict(sorted(Counter(r.state for r in rows).items())),
        "not_terminal": sum(1 for r in rows if r.state not in TERMINAL),
        "failed_by_error_class": dict(Counter(r.error_class for r in rows if r.state == "FAILED_TERMINAL")),
        "accept_to_terminal_seconds": percentiles(to_terminal),
        "accept_to_terminal_seconds_by_kind": {kind: percentiles(v) for kind, v in sorted(by_kind.items())},
        "attempts_per_job": percentiles((r.attempts for r in rows), 1),
        "jobs_with_a_model_answer": len(answered),
        "jobs_without_a_model_call": sum(1 for r in rows if r.model_answers == 0 and r.state in TERMINAL),
        "input_tokens_per_job": percentiles((r.input_tokens for r in answered), 0),
        "output_tokens_per_job": percentiles((r.output_tokens for r in answered), 0),
        "tokens_total": {"input": sum(r.input_tokens for r in rows), "output": sum(r.output_tokens for r in rows)},
    }


def phases(arrivals: Arrivals, duration: float) -> list[tuple[str, float, float]]:
    """The schedule cut where the rate changes: (label, start, end) offsets."""
    cuts = sorted({0.0, duration, *(e for b in arrivals.bursts for e in (b.offset, b.offset + b.seconds))})
    cuts = [c for c in cuts if c <= duration]
    out = []
    for start, end in zip(cuts, cuts[1:], strict=False):
        rate = arrivals.rate_at(start)
        label = f"burst {rate:g}/s" if any(b.covers(start) for b in arrivals.bursts) else f"base {rate:g}/s"
        out.append((label, start, end))
    return out


def phase_figures(
    arrivals: Arrivals, duration: float, t0: float, submissions: list[Submission], rows: list[JobRow]
) -> list[dict[str, Any]]:
    by_job = {r.job_id: r for r in rows}
    out = []
    for label, start, end in phases(arrivals, duration):
        mine = [s for s in submissions if t0 + start <= s.due < t0 + end]
        jobs = [by_job[s.job_id] for s in mine if s.job_id in by_job]
        out.append(
            {
                "phase": label,
                "from_s": round(start, 1),
                "to_s": round(end, 1),
                "submitted": len(mine),
                "accepted_per_s": round(sum(s.accepted for s in mine) / (end - start), 3),
                "accept_latency_seconds": percentiles(s.latency for s in mine),
                "accept_to_terminal_seconds": percentiles(
                    (r.terminal_at - r.created_at) if r.terminal_at is not None else math.inf for r in jobs
                ),
            }
        )
    return out


def series(ticks: list[Tick], submissions: list[Submission], t0: float) -> dict[str, list[Any]]:
    """The per-second series the plot draws (t from the load's start)."""
    accepted = Counter(int(s.done - t0) for s in submissions if s.accepted and s.done is not None)
    last = int(max((t.t for t in ticks), default=t0) - t0) + 1
    terminal_per_s = [0.0] + [
        round(max(0, b.terminal - a.terminal) / max(b.t - a.t, 0.001), 2)
        for a, b in zip(ticks, ticks[1:], strict=False)
    ]
    return {
        "t": [round(t.t - t0, 2) for t in ticks],
        "runnable": [t.runnable for t in ticks],
        "eligible": [t.eligible for t in ticks],
        "running": [t.running for t in ticks],
        "oldest_eligible_age": [round(t.oldest_eligible_age, 2) for t in ticks],
        "outbox_unpublished": [t.outbox_unpublished for t in ticks],
        "queues_work": [sum(v or 0 for k, v in t.queues.items() if k in WORK_QUEUES) for t in ticks],
        "terminal": [t.terminal for t in ticks],
        "terminal_per_s": terminal_per_s,
        "accepted_per_s_t": list(range(max(last, 0))),
        "accepted_per_s": [accepted.get(second, 0) for second in range(max(last, 0))],
    }


def plot(
    path: Path,
    data: dict[str, list[Any]],
    *,
    title: str,
    spans: Iterable[tuple[float, float, str]] = (),
    marks: Iterable[tuple[float, str]] = (),
) -> None:
    """Three panels over time: the runnable backlog (with RUNNING and the broker's work
    queues), the oldest eligible job's age, and accepted / terminal jobs per second. ``spans``
    shade windows (bursts, faults); ``marks`` draw instants."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(11, 8.5), sharex=True)
    t = data["t"]
    axes[0].plot(t, data["runnable"], label="runnable backlog (READY + RETRY_SCHEDULED)", color="tab:red")
    axes[0].plot(t, data["running"], label="RUNNING", color="tab:blue", linewidth=0.8)
    axes[0].plot(t, data["queues_work"], label="RabbitMQ work queues (ready msgs)", color="tab:gray", linewidth=0.8)
    axes[0].set_ylabel("jobs / messages")
    axes[1].plot(t, data["oldest_eligible_age"], color="tab:orange")
    axes[1].set_ylabel("oldest eligible age (s)")
    axes[2].step(
        data["accepted_per_s_t"], data["accepted_per_s"], where="post", label="accepted/s (202)", color="tab:green"
    )
    axes[2].plot(t, data["terminal_per_s"], label="terminal/s", color="tab:purple", linewidth=0.8)
    axes[2].set_ylabel("jobs per second")
    axes[2].set_xlabel("seconds since the load started")
    colors = ["#f4cccc", "#cfe2f3", "#d9ead3", "#fff2cc", "#ead1dc", "#d0e0e3"]
    labels_seen: dict[str, str] = {}
    for start, end, label in spans:
        color = labels_seen.setdefault(label, colors[len(labels_seen) % len(colors)])
        for ax in axes:
            ax.axvspan(start, end, color=color, alpha=0.5, linewidth=0)
        axes[0].text(start, axes[0].get_ylim()[1], label, fontsize=6, rotation=90, va="top")
    for at, label in marks:
        for ax in axes:
            ax.axvline(at, color="black", linewidth=0.6, linestyle=":")
        axes[0].text(at, axes[0].get_ylim()[1], label, fontsize=6, rotation=90, va="top")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper left")
    axes[2].legend(fontsize=7, loc="upper left")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def in_force(system: System, plan: ProcessPlan) -> dict[str, Any]:
    """The limits and process counts the processes ran with, read from the settings the same
    environment gives this process."""
    from django.conf import settings

    pool = settings.PROVIDER_POOLS["default"]
    return {
        "pool_default": {
            key: pool[key]
            for key in (
                "provider",
                "model",
                "requests_per_minute",
                "tokens_per_minute",
                "max_in_flight",
                "reserved_tokens",
                "max_output_tokens",
                "budget",
            )
        },
        "capacity_fail_mode": settings.CAPACITY_FAIL_MODE,
        "tenant_defaults": {
            "max_pending_jobs": settings.TENANT_DEFAULT_MAX_PENDING_JOBS,
            "max_in_flight": settings.TENANT_DEFAULT_MAX_IN_FLIGHT,
            "max_reserved_tokens": settings.TENANT_DEFAULT_MAX_RESERVED_TOKENS,
            "daily_spend_micros": settings.TENANT_DEFAULT_DAILY_SPEND_MICROS,
        },
        "execution_clocks": {
            key: getattr(settings, key)
            for key in (
                "ATTEMPT_TIMEOUT_SECONDS",
                "LEASE_SECONDS",
                "HEARTBEAT_SECONDS",
                "RETRY_BASE_SECONDS",
                "RETRY_CAP_SECONDS",
                "JOB_MAX_ATTEMPTS",
                "SCHEDULER_INTERVAL_SECONDS",
                "OUTBOX_CLAIM_SECONDS",
            )
        },
        "processes": {
            "web (gunicorn sync workers)": plan.web_workers,
            "relay": 1,
            "ingress": f"{plan.ingress} × {plan.ingress_concurrency} threads, DB pool {plan.ingress_pool}",
            "llm worker": f"{plan.llm} × {plan.llm_concurrency} threads, DB pool {plan.llm_pool}",
            "delivery": f"{plan.delivery} × {plan.delivery_concurrency} threads, DB pool {plan.delivery_pool}",
            "scheduler": 1,
            **({"notifier": 1} if plan.notifier else {}),
        },
    }


# --- the report ----------------------------------------------------------------------------------


def format_value(value: Any) -> str:
    if value is None:
        return "inf"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value < 1000 else f"{value:.0f}"
    return str(value)


def _pct_row(label: str, values: dict[str, Any], unit: str = "") -> str:
    return f"| {label} | " + " | ".join(format_value(values[k]) + unit for k in ("p50", "p95", "p99", "max")) + " |"


def markdown_table(header: list[str], rows: Iterable[Iterable[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(format_value(cell) for cell in row) + " |" for row in rows]
    return lines


def contract_lines(contract: dict[str, Any]) -> list[str]:
    lines = ["## The load contract", ""]
    lines.append(f"- **Arrivals**: {contract['arrivals']}, for {contract['duration_s']:g} s of schedule.")
    lines.append(
        "- **Each submission**: upload the document (`POST /api/v1/documents`, multipart), then "
        "`POST /api/v1/extraction-jobs` with its own `Idempotency-Key` (schema "
        f"`{contract['schema']}`), on a fresh loopback connection each; due at its intended time and timed from "
        f"it (coordinated-omission correct); up to {contract['tries']} tries per request on 408/409/425/429/5xx "
        "or a broken connection, with the same key; at most "
        f"{contract['max_in_flight']} open at once."
    )
    lines.append("- **Document mix** (real sample invoices from `testdata/invoices/`):")
    lines += (
        [""]
        + markdown_table(
            ["kind", "share", "files", "what", "e.g."],
            ([m["kind"], m["share"], m["files"], m["description"], ", ".join(m["examples"])] for m in contract["mix"]),
        )
        + [""]
    )
    model = contract["model"]
    lines.append(
        f"- **Model**: the provider simulator (`tests/simulator`, OpenAI-compatible HTTP on loopback) answering "
        f"with the built-in extractor's output; latency lognormal, mean {model['latency_mean_seconds']:g} s, "
        f"p95 {model['latency_p95_seconds']:g} s; usage tokens reported as characters / 4 of prompt and answer"
        + (f"; faults: {model['faults']}" if model.get("faults") else "; no faults")
        + "."
    )
    limits = contract["in_force"]
    pool = limits["pool_default"]
    lines.append(
        f"- **Pool `default`**: {pool['requests_per_minute']} requests/min, {pool['tokens_per_minute']} tokens/min, "
        f"{pool['max_in_flight']} in flight, reservation per call = prompt estimate + {pool['max_output_tokens']} "
        f"output tokens; capacity fail mode `{limits['capacity_fail_mode']}`."
    )
    tenant = limits["tenant_defaults"]
    lines.append(
        f"- **Tenant** (one, the defaults): {tenant['max_pending_jobs']} pending jobs, {tenant['max_in_flight']} "
        f"running at once, {tenant['max_reserved_tokens']} reserved tokens, {tenant['daily_spend_micros']} "
        "micro-units spend per day."
    )
    lines.append(
        "- **Processes** (the Procfile's command lines, real PostgreSQL, RabbitMQ and Redis): "
        + "; ".join(f"{k}: {v}" for k, v in limits["processes"].items())
        + "."
    )
    lines.append("- **Clocks**: " + ", ".join(f"`{k}` {v:g}" for k, v in limits["execution_clocks"].items()) + ".")
    for note in contract.get("notes", []):
        lines.append(f"- {note}")
    return lines


def results_lines(result: dict[str, Any]) -> list[str]:
    accept, jobs = result["accept"], result["jobs"]
    lines = ["## Results", ""]
    lines.append(
        f"Submitted {accept['submitted']}, accepted {accept['accepted']} "
        f"({format_value(accept['accepted_per_s'])}/s over the schedule, offered {format_value(accept['offered_per_s'])}/s); "
        f"answers {accept['outcomes']}; generator send lag p99 {format_value(accept['send_lag_p99_ms'])} ms. "
        f"Jobs {jobs['jobs']}: {jobs['states']}; not terminal after the drain: {jobs['not_terminal']}."
    )
    lines += [""] + ["| seconds | p50 | p95 | p99 | max |", "|---|---|---|---|---|"]
    lines.append(_pct_row("accept latency (due → 202)", accept["accept_latency_seconds"]))
    lines.append(_pct_row("accept → terminal (job rows)", jobs["accept_to_terminal_seconds"]))
    for kind, values in jobs["accept_to_terminal_seconds_by_kind"].items():
        lines.append(_pct_row(f"… of {kind} documents", values))
    lines += ["", "| per job | p50 | p95 | p99 | max |", "|---|---|---|---|---|"]
    lines.append(
        _pct_row(
            f"input tokens ({jobs['jobs_with_a_model_answer']} jobs with a model answer)", jobs["input_tokens_per_job"]
        )
    )
    lines.append(_pct_row("output tokens", jobs["output_tokens_per_job"]))
    lines.append(_pct_row("attempts (all jobs)", jobs["attempts_per_job"]))
    lines.append("")
    lines.append(
        f"{jobs['jobs_without_a_model_call']} terminal jobs needed no model call (e-invoices read from their XML); "
        f"tokens in total: {jobs['tokens_total']['input']} in, {jobs['tokens_total']['output']} out."
    )
    if result.get("phases") and len(result["phases"]) > 1:
        lines += ["", "By phase (jobs by the time they were due):", ""]
        lines += markdown_table(
            [
                "phase",
                "from s",
                "to s",
                "submitted",
                "accepted/s",
                "accept p50",
                "accept p99",
                "→terminal p50",
                "→terminal p99",
            ],
            (
                [
                    p["phase"],
                    p["from_s"],
                    p["to_s"],
                    p["submitted"],
                    p["accepted_per_s"],
                    p["accept_latency_seconds"]["p50"],
                    p["accept_latency_seconds"]["p99"],
                    p["accept_to_terminal_seconds"]["p50"],
                    p["accept_to_terminal_seconds"]["p99"],
                ]
                for p in result["phases"]
            ),
        )
    queue = result["queue"]
    lines += [
        "",
        "Queue over the run (sampled every second; PNG beside this report):",
        "",
        *markdown_table(
            ["figure", "peak", "at s", "end"],
            (
                [name, v["peak"], "–" if v["peak_at_s"] is None else v["peak_at_s"], v["end"]]
                for name, v in queue.items()
            ),
        ),
    ]
    lines += ["", "## Resources (CPU over the measured window, memory peaks)", ""]
    lines += markdown_table(
        ["process set", "CPU s", "cores", "peak RSS MiB", "peak private MiB"],
        (
            [name, v["cpu_seconds"], v["cores"], v["peak_rss_mib"], v["peak_private_mib"]]
            for name, v in result["resources"].items()
        ),
    )
    lines += [
        "",
        f"Window {result['window_seconds']:g} s; the machine: {result['machine']['cores']} cores, load average "
        f"{result['load_average_end']} at the end. The server rows (PostgreSQL, RabbitMQ, Redis) are every process "
        "of that server on this machine, other sessions' work included; the sandbox's PostgreSQL backends are ours "
        "alone (by `application_name`).",
    ]
    if result.get("sampler_errors"):
        lines.append(f"Sampler gaps: {result['sampler_errors']}.")
    return lines


def queue_summary(ticks: list[Tick], t0: float) -> dict[str, dict[str, Any]]:
    out = {}
    for name, get in (
        ("runnable backlog", lambda t: t.runnable),
        ("oldest eligible age, s", lambda t: round(t.oldest_eligible_age, 2)),
        ("RUNNING", lambda t: t.running),
        ("outbox unpublished", lambda t: t.outbox_unpublished),
        ("RabbitMQ work queues", lambda t: sum(v or 0 for k, v in t.queues.items() if k in WORK_QUEUES)),
        ("RabbitMQ dead-letter queues", lambda t: sum(v or 0 for k, v in t.queues.items() if k in DEAD_LETTER_QUEUES)),
    ):
        if not ticks:
            continue
        values = [get(t) for t in ticks]
        peak = max(range(len(values)), key=values.__getitem__)
        at = round(ticks[peak].t - t0, 1) if values[peak] else None  # an empty queue has no peak
        out[name] = {"peak": values[peak], "peak_at_s": at, "end": values[-1]}
    return out


# --- a run ---------------------------------------------------------------------------------------


def warm_up(system: System, conn: psycopg.Connection[Any], args: argparse.Namespace, *, mix_seed: int) -> None:
    """``args.warmup`` seconds of the base load from a tenant of its own, then drained: the
    measured schedule starts on processes whose threads, connections and caches are warm."""
    tenant, token = make_api_tenant("load-warmup")
    accepter = OpenLoopAccepter(
        port=system.web_port,
        token=token,
        mix=DocumentMix(args.mix, seed=mix_seed),
        offsets=Arrivals(args.rate, (), args.arrivals, mix_seed).offsets(args.warmup),
        schema=args.schema,
    )
    accepter.start(time.time() + 0.2)
    accepter.join(grace=30)
    wait_for_drain(conn, tenant.pk, timeout=60)


def default_out(script: str) -> Path:
    return harness.RESULTS_DIR / f"{script}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"


def parse_args(argv: list[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, required=True, help="base submissions per second")
    parser.add_argument(
        "--burst", type=Burst.parse, action="append", default=[], help="RATE:SECONDS@OFFSET, repeatable"
    )
    parser.add_argument("--duration", type=float, required=True, help="seconds of schedule")
    parser.add_argument("--arrivals", choices=("poisson", "uniform"), default="poisson")
    parser.add_argument("--workers", default="", help="processes per role, e.g. web=4,ingress=1,worker=1,delivery=1")
    parser.add_argument("--llm-concurrency", type=int, default=300, help="threads per llm worker (Procfile: 300)")
    parser.add_argument(
        "--mix", type=parse_mix, default=DEFAULT_MIX, help="KIND=SHARE,... over pdf, text, facturx, xml"
    )
    parser.add_argument("--schema", choices=("invoice.v1", "invoice.v2"), default="invoice.v1")
    parser.add_argument("--latency-mean", type=float, default=3.0, help="model latency mean, seconds")
    parser.add_argument("--latency-p95", type=float, default=8.0, help="model latency p95, seconds")
    parser.add_argument("--pool-rpm", type=int, help="POOL_REQUESTS_PER_MINUTE (default: the settings' 600)")
    parser.add_argument("--pool-tpm", type=int, help="POOL_TOKENS_PER_MINUTE (default: the settings' 600000)")
    parser.add_argument("--pool-max-in-flight", type=int, help="POOL_MAX_IN_FLIGHT (default: the settings' 30)")
    parser.add_argument("--tenant-max-in-flight", type=int, help="TENANT_DEFAULT_MAX_IN_FLIGHT (default 50)")
    parser.add_argument("--drain", type=float, default=120.0, help="seconds to wait for the backlog after the load")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds of unmeasured load first (default 10)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sandbox", default=DEFAULT_SANDBOX[0], help="database and vhost, bench* (default bench_load)")
    parser.add_argument("--redis-db", type=int, default=DEFAULT_SANDBOX[1], help="Redis database (default 13)")
    parser.add_argument("--out", type=Path, help="directory for report.md, load.json, load.png and the logs")
    args = parser.parse_args(argv)
    if args.rate <= 0 or args.duration <= 0:
        parser.error("--rate and --duration must be positive")
    return parser, args


@dataclass(frozen=True)
class Plan:
    """What a run is made of: where it writes, the limits it overrides, its processes and its load."""

    out: Path
    log_dir: Path
    media_root: Path
    env: dict[str, str]
    processes: ProcessPlan
    arrivals: Arrivals
    mix: DocumentMix


def plan_run(args: argparse.Namespace) -> Plan:
    """The run's plan, with its output directory made (its media emptied)."""
    out = (args.out or default_out("load")).resolve()
    log_dir, media_root = out / "logs", out / "media"
    shutil.rmtree(media_root, ignore_errors=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    media_root.mkdir(parents=True, exist_ok=True)
    env = {
        key: str(value)
        for key, value in (
            ("POOL_REQUESTS_PER_MINUTE", args.pool_rpm),
            ("POOL_TOKENS_PER_MINUTE", args.pool_tpm),
            ("POOL_MAX_IN_FLIGHT", args.pool_max_in_flight),
            ("TENANT_DEFAULT_MAX_IN_FLIGHT", args.tenant_max_in_flight),
        )
        if value is not None
    }
    return Plan(
        out=out,
        log_dir=log_dir,
        media_root=media_root,
        env=env,
        processes=ProcessPlan.parse(args.workers, llm_concurrency=args.llm_concurrency),
        arrivals=Arrivals(args.rate, tuple(args.burst), args.arrivals, args.seed),
        mix=DocumentMix(args.mix, seed=args.seed),
    )


@dataclass(frozen=True)
class Stage:
    """The sandbox made ready: its tenant, the processes (not started yet), their sampler and a
    connection to read the jobs."""

    tenant: Any
    token: str
    system: System
    sampler: Sampler
    conn: psycopg.Connection[Any]


def set_up(parser: argparse.ArgumentParser, args: argparse.Namespace, plan: Plan) -> Stage:
    try:
        sandbox = sandbox_named(args.sandbox, args.redis_db)
    except ValueError as exc:
        parser.error(str(exc))
    print(f"setting up {sandbox.database} ...", flush=True)
    os.environ["LOG_LEVEL"] = "WARNING"  # this process's own log lines (the processes log at INFO)
    sandbox.set_up(plan.media_root, app="bench", **plan.env)
    reset_sandbox(sandbox)
    tenant, token = make_api_tenant("load")
    system = System(sandbox, log_dir=plan.log_dir, media_root=plan.media_root, **plan.env)
    sampler = Sampler(system)
    conn = psycopg.connect(sandbox.dsn(app="bench-reader"), autocommit=True)
    return Stage(tenant=tenant, token=token, system=system, sampler=sampler, conn=conn)


@dataclass(frozen=True)
class Measured:
    """What the run saw: the submissions, the load's window, the drain and the jobs."""

    accepter: OpenLoopAccepter
    t0: float
    load_ended: float
    drained: bool
    model_before: dict[str, Any]
    model_after: dict[str, Any]
    exited: dict[str, int | None]
    rows: list[JobRow]
    limits: dict[str, Any]


def run_load(args: argparse.Namespace, plan: Plan, stage: Stage) -> Measured:
    """Start the processes, warm them up, run the measured schedule and drain it; every process
    is stopped at the end, whatever happened."""
    system, sampler, conn = stage.system, stage.sampler, stage.conn
    try:
        system.start_simulator(simulator_config(args.latency_mean, args.latency_p95, args.seed))
        system.start_web(plan.processes.web_workers)
        names = system.start_pipeline(plan.processes)
        system.wait_ready(["web", *names])
        if args.warmup > 0:
            print(f"processes up; warming up for {args.warmup:g} s ...", flush=True)
            warm_up(system, conn, args, mix_seed=args.seed + 1)
        print(f"{plan.arrivals.describe()} for {args.duration:g} s ...", flush=True)
        accepter = OpenLoopAccepter(
            port=system.web_port,
            token=stage.token,
            mix=plan.mix,
            offsets=plan.arrivals.offsets(args.duration),
            schema=args.schema,
        )
        gc.collect()
        gc.freeze()  # Django's objects out of the collector: a full collection would stall every open request
        model_before = simulator_counts(system)
        sampler.start()
        t0 = time.time() + 0.5
        accepter.start(t0)
        accepter.join(grace=30)
        load_ended = time.time()
        print(f"load done: {len(accepter.submissions)} submitted; draining (≤ {args.drain:g} s) ...", flush=True)
        drained = wait_for_drain(conn, stage.tenant.pk, timeout=args.drain)
        model_after = simulator_counts(system)
        sampler.stop()
        exited = {name: proc.returncode for name, proc in system.procs.items() if proc.poll() is not None}
        return Measured(
            accepter=accepter,
            t0=t0,
            load_ended=load_ended,
            drained=drained,
            model_before=model_before,
            model_after=model_after,
            exited=exited,
            rows=job_rows(conn, stage.tenant.pk),
            limits=in_force(system, plan.processes),
        )
    finally:
        sampler.stop()
        system.stop_all()
        conn.close()


def load_result(
    args: argparse.Namespace, argv: list[str] | None, plan: Plan, sampler: Sampler, measured: Measured
) -> dict[str, Any]:
    """The load contract the run was under and every figure it measured."""
    arrivals, mix, accepter, t0 = plan.arrivals, plan.mix, measured.accepter, measured.t0
    model_before, model_after = measured.model_before, measured.model_after
    window = sampler.stopped_at - sampler.started_at
    contract = {
        "arrivals": arrivals.describe(),
        "rate": args.rate,
        "bursts": [asdict(b) for b in args.burst],
        "duration_s": args.duration,
        "schema": args.schema,
        "tries": accepter.tries,
        "max_in_flight": accepter.max_in_flight,
        "mix": mix.describe(),
        "model": {"latency_mean_seconds": args.latency_mean, "latency_p95_seconds": args.latency_p95},
        "in_force": measured.limits,
        "notes": [
            f"Before the measured schedule, {args.warmup:g} s of the same load by another tenant (threads, "
            "connections and caches warm), drained and not counted."
            if args.warmup > 0
            else "No warm-up: the first submissions meet processes that have just started.",
            "No webhook endpoint is registered: the delivery worker fans each event out to no one. The WebSocket "
            "server and notifier are not run (no clients), nor the local model (the simulator stands in).",
        ],
    }
    return {
        "script": "tests/acceptance/load.py",
        "argv": sys.argv[1:] if argv is None else argv,
        "contract": contract,
        "machine": harness.machine(),
        "drained": measured.drained,
        "exited_processes": measured.exited,
        "accept": accept_figures(accepter.submissions, args.duration),
        "jobs": job_figures(measured.rows, accepter.submissions),
        "phases": phase_figures(arrivals, args.duration, t0, accepter.submissions, measured.rows),
        "queue": queue_summary(sampler.ticks, t0),
        "resources": sampler.meter.report(window),
        "window_seconds": round(window, 1),
        "load_seconds": round(measured.load_ended - t0, 1),
        "load_average_end": [round(v, 2) for v in os.getloadavg()],
        "sampler_errors": dict(sampler.errors),
        # What the model itself counted over the measured window (the warm-up was drained before).
        "model_side": {key: model_after[key] - model_before[key] for key in model_after},
        "series": series(sampler.ticks, accepter.submissions, t0),
    }


def write_load_report(args: argparse.Namespace, plan: Plan, result: dict[str, Any], measured: Measured) -> None:
    """report.md, load.json and load.png into the run's directory; the report printed too."""
    out, log_dir = plan.out, plan.log_dir
    lines = [f"# Load report — {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}", ""]
    lines += [f"`python -m tests.acceptance.load {' '.join(result['argv'])}`", ""]
    lines += contract_lines(result["contract"]) + [""] + results_lines(result)
    if not measured.drained:
        lines += ["", f"**Not drained** within {args.drain:g} s after the load: see the not-terminal count above."]
    if measured.exited:
        lines += ["", f"**Processes that exited during the run**: {measured.exited} (logs in `{log_dir}`)."]
    lines += ["", "![queue over time](load.png)", ""]
    text = "\n".join(lines) + "\n"
    (out / "report.md").write_text(text)
    (out / "load.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    plot(
        out / "load.png",
        result["series"],
        title=f"tests/acceptance/load.py — {plan.arrivals.describe()}, {args.duration:g} s",
        spans=[(b.offset, b.offset + b.seconds, f"burst {b.rate:g}/s") for b in args.burst],
        marks=[(measured.load_ended - measured.t0, "load ends")],
    )
    sys.stdout.write(text)
    print(f"written: {out / 'report.md'}, {out / 'load.json'}, {out / 'load.png'}; logs in {log_dir}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser, args = parse_args(argv)
    plan = plan_run(args)
    stage = set_up(parser, args, plan)
    measured = run_load(args, plan, stage)
    result = load_result(args, argv, plan, stage.sampler, measured)
    write_load_report(args, plan, result, measured)
    return 0 if not measured.exited else 1


if __name__ == "__main__":
    sys.exit(main())
