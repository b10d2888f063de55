"""Where the PostgreSQL backends' CPU goes while ours runs at a steady 30 jobs/s.

Run from the project root, as root (perf reads other users' processes)::

    .venv/bin/python bench/backend_profile.py [--jobs 450] [--rate 30]

``pg_stat_statements`` sees the time statements spend executing; the backends spend more than
that per job (the accept, the claim and the completion are a few of about 30 statements and 14
commits). This runs ours as ``naive_bench`` does (1 llm worker, 10 s model), warms it, then
samples every PostgreSQL process with ``perf record --call-graph dwarf`` while N jobs arrive at
the rate, and sorts each sample's stack into one stage of a statement's life: parse and plan
(statements sent unprepared), executor start-up, execution (with CHECK constraints, PL/pgSQL
and index inserts broken out), executor finish (AFTER triggers), commit (WAL flush, deferred
triggers, NOTIFY), client I/O, delivering notifications to listeners, idle waits. Each share
is also given in ms per job, against the backends' CPU the ledger counted in the same run
(sampling itself adds to that: compare shares across runs, not the absolute figure with
naive_bench's).

perf comes from Debian's ``linux-perf`` package (``apt-get install linux-perf``); without it
the script says so and stops. The binaries are stripped: a frame perf cannot name is skipped,
and a sample with no known frame counts as "other".
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

from bench import execution_lib as lib  # noqa: E402
from bench import harness, naive_bench  # noqa: E402

SAMPLE_HZ = 499
# Each stage of a sample, by the first of these frames found in its stack, outermost first:
# (stage, frames that mark it). A sample in none is "other".
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("NOTIFY delivered to this listener", ("ProcessNotifyInterrupt",)),
    ("commit: WAL flush", ("XLogFlush",)),
    ("commit: deferred triggers", ("AfterTriggerFireDeferred",)),
    ("commit: NOTIFY queued", ("AtCommit_Notify", "PreCommit_Notify")),
    ("commit: the rest", ("CommitTransactionCommand",)),
    (
        "parse + analyze (unprepared)",
        (
            "pg_parse_query",
            "pg_analyze_and_rewrite_fixedparams",
            "pg_analyze_and_rewrite_varparams",
            "pg_analyze_and_rewrite_withcb",
        ),
    ),
    ("plan (unprepared or custom)", ("pg_plan_queries",)),
    ("executor start-up", ("standard_ExecutorStart",)),
    ("execution: CHECK constraints", ("ExecConstraints",)),
    ("execution: PL/pgSQL", ("plpgsql_exec_function", "plpgsql_exec_trigger")),
    ("execution: index inserts", ("ExecInsertIndexTuples",)),
    ("execution: the rest", ("standard_ExecutorRun",)),
    ("executor finish (AFTER triggers)", ("standard_ExecutorFinish",)),
    ("executor end", ("standard_ExecutorEnd",)),
    ("client I/O", ("secure_read", "secure_write", "pq_getbyte", "pq_flush", "internal_flush")),
    ("idle wait", ("WaitEventSetWait",)),
)


def stacks(perf_data: Path) -> list[list[str]]:
    """Each sample's frames, innermost first, as ``perf script`` names them."""
    text = subprocess.run(
        ["perf", "script", "-i", str(perf_data), "-F", "ip,sym"], capture_output=True, text=True, check=True
    ).stdout
    samples: list[list[str]] = []
    frames: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            if frames:
                samples.append(frames)
            frames = []
            continue
        parts = line.split()
        if len(parts) >= 2:
            frames.append(parts[1].split("+")[0])
    if frames:
        samples.append(frames)
    return samples


def stage_of(frames: list[str]) -> str:
    present = set(frames)
    for stage, marks in STAGES:
        if present.intersection(marks):
            return stage
    return "other"


def profile(jobs: int, rate: float, latency: float) -> dict[str, Any]:
    media_root = harness.RESULTS_DIR / "naive-bench-media"
    media_root.mkdir(parents=True, exist_ok=True)
    lib.SANDBOX.set_up(media_root, app="accepter", **lib.POOL_LIMITS)
    sim = harness.Services(lib.SANDBOX, log_dir=harness.RESULTS_DIR, media_root=media_root)
    sim.start_simulator({"latency_mean_seconds": 0.0})
    log_dir = harness.RESULTS_DIR / "backend-profile-logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    side = naive_bench.OurSide(1, sim.simulator_url, log_dir, media_root)
    workdir = Path(tempfile.mkdtemp(prefix="backend-profile-"))
    perf_data = workdir / "perf.data"
    try:
        naive_bench.measure(side, sim, 100, None, 0.0)  # connections, caches, queues
        naive_bench.measure(side, sim, int(rate * 10), rate, latency)  # the steady rate's plans
        backends = subprocess.run(["pgrep", "-d,", "-x", "postgres"], capture_output=True, text=True).stdout.strip()
        # dwarf: PostgreSQL is built without frame pointers; 16 kB of stack names the callers.
        recorder = subprocess.Popen(
            [
                "perf",
                "record",
                "-F",
                str(SAMPLE_HZ),
                "--call-graph",
                "dwarf,16384",
                "-p",
                backends,
                "-o",
                str(perf_data),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(1.0)  # perf attaches before the first job arrives
        run = naive_bench.measure(side, sim, jobs, rate, latency)
        recorder.send_signal(2)
        recorder.wait(timeout=60)
        samples = stacks(perf_data)
    finally:
        side.stop()
        sim.stop_all()
    counted = Counter(stage_of(frames) for frames in samples)
    backend_ms = run["cpu_ms_per_job_by_process"].get("postgres backends", 0.0)
    total = sum(counted.values()) or 1
    shares = {stage: counted.get(stage, 0) / total for stage, _ in (*STAGES, ("other", ()))}
    shutil.rmtree(workdir, ignore_errors=True)
    return {
        "jobs": run["jobs"],
        "rate": rate,
        "samples": total,
        "backend_cpu_ms_per_job": backend_ms,
        "cpu_ms_per_job": run["cpu_ms_per_job"],
        "stages": {
            stage: {"share": round(share, 4), "ms_per_job": round(share * backend_ms, 2)}
            for stage, share in shares.items()
        },
    }


def print_report(figures: dict[str, Any]) -> None:
    print(
        f"\nPostgreSQL backends at {figures['rate']:g} jobs/s (ours, 1 llm worker): {figures['jobs']} jobs, "
        f"{figures['samples']} samples, {figures['backend_cpu_ms_per_job']} ms of backend CPU per job "
        f"(perf running; {figures['cpu_ms_per_job']} ms per job in all)\n"
    )
    print(f"{'stage':<36} {'share':>7} {'ms/job':>7}")
    for stage, entry in figures["stages"].items():
        print(f"{stage:<36} {entry['share'] * 100:6.1f}% {entry['ms_per_job']:7.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=450, help="jobs sampled (450: 15 s at 30 jobs/s)")
    parser.add_argument("--rate", type=float, default=30.0, help="jobs per second")
    parser.add_argument("--latency", type=float, default=10.0, help="the model's latency, seconds")
    args = parser.parse_args()
    if shutil.which("perf") is None:
        print("perf is not installed: apt-get install linux-perf", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("run as root: perf samples the PostgreSQL server's processes", file=sys.stderr)
        return 2
    figures = profile(args.jobs, args.rate, args.latency)
    harness.publish_results("backend_profile", lambda: print_report(figures), figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
