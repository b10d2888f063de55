"""Ours beside the naive baseline (bench/naive_pipeline.py), alternated in one sitting.

Run from the project root::

    .venv/bin/python bench/naive_bench.py [--quick] [--processes 1 2] [--rounds N]

For each number of worker processes (1 × 300 threads, 2 × 150), the naive pipeline and then
ours, each freshly started on its own database and vhost, with the same simulator, prompt and
JSON schema:

(b) a backlog: N jobs accepted as fast as six accepter threads can while the workers drain
    them, zero-latency model: jobs/s from the first accept to the last terminal job, and CPU
    per job, accept and drain;
(a) 30 jobs/s for S seconds with a 10 s model: CPU per job, and p50 accept-to-terminal above
    the model's latency.

CPU is counted the same way on both sides (:class:`CpuLedger`): the side's own processes, every
PostgreSQL, RabbitMQ and Redis process on the machine, and the accepter (this process); the
simulator is left out, the same on both sides. The machine's busy cores are read before each
run, and a run during which processes outside the count used more than
``OTHER_LOAD_WARNING_CORES`` is flagged.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

import psycopg  # noqa: E402

from bench import execution_lib as lib  # noqa: E402
from bench import harness, live_system  # noqa: E402

NAIVE = harness.Sandbox(database="benchnaive", vhost="benchnaive", redis_db=12, app_prefix="benchnaive-")
# Shared services whose work a job causes, on either side.
SERVICE_COMMANDS = frozenset(live_system.SERVERS.values())
OTHER_LOAD_WARNING_CORES = 0.15
THREADS_TOTAL = 300
ACCEPTERS = 6


@dataclass(frozen=True)
class Profile:
    backlog_jobs: int
    rate: float
    latency_seconds: float
    arrival_seconds: float


FULL = Profile(backlog_jobs=2000, rate=30.0, latency_seconds=10.0, arrival_seconds=40.0)
QUICK = Profile(backlog_jobs=800, rate=30.0, latency_seconds=10.0, arrival_seconds=15.0)


# PostgreSQL's own processes, by the name in their title ("postgres: 16/main: walwriter").
POSTGRES_SERVER_ROLES = (
    "checkpointer",
    "background writer",
    "walwriter",
    "autovacuum",
    "logical replication",
    "io worker",
)


def postgres_role(pid: int) -> str:
    """``postgres backends`` (a client's connection), ``postgres <server process>`` (the WAL
    writer, autovacuum...) or ``postgres`` (the postmaster): where the server's CPU goes."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            title = handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "postgres"
    if not title.startswith("postgres:"):
        return "postgres"
    role = next((role for role in POSTGRES_SERVER_ROLES if role in title), None)
    return f"postgres {role}" if role else "postgres backends"


class CpuLedger:
    """CPU seconds of the counted processes over a window, read from /proc every half second so
    a process that ends inside the window (a PostgreSQL backend) keeps what it spent; by process
    too (a side's process by its name, a shared server by its command, the accepter)."""

    def __init__(self, process_groups: dict[str, int], *, apart: set[int]) -> None:
        self.process_groups = process_groups
        self.apart = apart  # measured but not counted: the simulator
        self._label: dict[int, str] = {}
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._apart_first: dict[int, float] = {}
        self._apart_last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _read(self, *, first: bool) -> None:
        groups, commands = live_system.process_table()
        for command in SERVICE_COMMANDS:
            for pid in commands.get(command, []):
                if pid not in self._label:
                    self._label[pid] = postgres_role(pid) if command == "postgres" else command
        for name, group in self.process_groups.items():
            for pid in groups.get(group, []):
                self._label.setdefault(pid, name)
        counted = {pid for command in SERVICE_COMMANDS for pid in commands.get(command, [])}
        counted |= {pid for group in self.process_groups.values() for pid in groups.get(group, [])}
        apart = {pid for group in self.apart for pid in groups.get(group, [])} - counted
        for pids, first_seen, last_seen in (
            (counted, self._first, self._last),
            (apart, self._apart_first, self._apart_last),
        ):
            for pid in pids:
                cpu = harness.cpu_seconds(pid)
                if first:
                    first_seen[pid] = cpu
                last_seen[pid] = cpu

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self._read(first=False)

    def start(self) -> CpuLedger:
        self._own = resource.getrusage(resource.RUSAGE_SELF)
        self._busy = harness.machine_busy_seconds()
        self._at = time.monotonic()
        self._read(first=True)
        self._thread.start()
        return self

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join()
        self._read(first=False)
        own = resource.getrusage(resource.RUSAGE_SELF)
        accepter = (own.ru_utime - self._own.ru_utime) + (own.ru_stime - self._own.ru_stime)
        by_process: dict[str, float] = {"accepter": accepter}
        for pid, cpu in self._last.items():
            label = self._label.get(pid, "other")
            by_process[label] = by_process.get(label, 0.0) + cpu - self._first.get(pid, 0.0)
        counted = sum(by_process.values())
        apart = sum(cpu - self._apart_first.get(pid, 0.0) for pid, cpu in self._apart_last.items())
        seconds = time.monotonic() - self._at
        other = harness.machine_busy_seconds() - self._busy - counted - apart
        return {
            "cpu_seconds": counted,
            "cpu_seconds_by_process": by_process,
            "simulator_cpu_seconds": apart,
            "seconds": seconds,
            "other_cores": max(0.0, other) / seconds,
        }


# --- the two sides ---------------------------------------------------------------------------------


class NaiveSide:
    def __init__(self, processes: int, simulator_url: str, log_dir: Path) -> None:
        NAIVE.ensure_vhost()
        harness.create_database(NAIVE.database)  # no migrations: the naive pipeline has one table of its own
        self.dsn = NAIVE.dsn(app="accepter")
        os.environ.update(NAIVE_BROKER_URL=NAIVE.broker_url, NAIVE_DSN=self.dsn)
        from bench import naive_pipeline

        self.pipeline = naive_pipeline
        with psycopg.connect(self.dsn) as conn:
            naive_pipeline.create_schema(conn)
        naive_pipeline.app.control.purge()
        self.services = harness.Services(NAIVE, log_dir=log_dir, media_root=log_dir)
        env = {"NAIVE_BROKER_URL": NAIVE.broker_url, "NAIVE_MODEL_URL": f"{simulator_url}/v1"}
        names = [f"naive{i}" for i in range(processes)]
        for name in names:
            worker_env = {**env, "NAIVE_DSN": NAIVE.dsn(app=name), "NAIVE_DB_POOL": str(lib.WORKER_POOL_MAX)}
            self.services.celery(name, "naive", THREADS_TOTAL // processes, app="bench.naive_pipeline", **worker_env)
        self.services.wait_until_ready(names)
        self.tenant = uuid.uuid4()

    def process_groups(self) -> dict[str, int]:
        return {name: proc.pid for name, proc in self.services.procs.items()}

    def accept(self, count: int, rate: float | None) -> None:
        pages = [harness.SAMPLE_INVOICE]
        connections = [psycopg.connect(self.dsn) for _ in range(ACCEPTERS)]
        try:
            lib.open_loop(
                count, rate, lambda k: self.pipeline.accept(connections[k], self.tenant, pages), threads=ACCEPTERS
            )
        finally:
            for conn in connections:
                conn.close()

    def wait_done(self, count: int, timeout: float) -> list[tuple[float, float]]:
        """(accepted, finished) epoch seconds of every job, once ``count`` are finished."""
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            deadline = time.monotonic() + timeout
            query = "SELECT count(*) FROM naive_jobs WHERE finished_at IS NOT NULL"
            while conn.execute(query).fetchone()[0] < count:  # type: ignore[index]
                if time.monotonic() > deadline:
                    raise RuntimeError(f"naive: not done after {timeout} s (logs in {self.services.log_dir})")
                self.services.check_alive()
                time.sleep(0.1)
            rows = conn.execute(
                "SELECT extract(epoch FROM created_at)::float8, extract(epoch FROM finished_at)::float8 FROM naive_jobs"
            ).fetchall()
            conn.execute("TRUNCATE naive_jobs")
        return [(a, b) for a, b in rows]

    def stop(self) -> None:
        self.services.stop_all()


class OurSide:
    def __init__(self, processes: int, simulator_url: str, log_dir: Path, media_root: Path) -> None:
        lib.SANDBOX.reset()
        self.services = lib.Services(log_dir=log_dir, media_root=media_root, probe_dir=None)
        self.services.env["OPENAI_BASE_URL"] = f"{simulator_url}/v1"
        self.services.relay()
        self.services.celery(
            "ingress", "ingress", concurrency=lib.INGRESS_CONCURRENCY, pool_max_size=lib.INGRESS_CONCURRENCY
        )
        workers = ["worker", *(f"worker{i}" for i in range(1, processes))]
        for name in workers:
            self.services.celery(name, "llm", concurrency=THREADS_TOTAL // processes, pool_max_size=lib.WORKER_POOL_MAX)
        self.services.scheduler()
        self.services.wait_until_ready(["ingress", *workers])
        self.db = psycopg.connect(lib.SANDBOX.dsn(), autocommit=True)
        self.bench = harness.make_tenant("benchnaive-ours", max_in_flight=lib.TENANT_MAX_IN_FLIGHT)
        self.stages: dict[str, float] = {}  # the last measured run's (execution_lib.stage_medians)

    def process_groups(self) -> dict[str, int]:
        return {name: proc.pid for name, proc in self.services.procs.items()}

    def accept(self, count: int, rate: float | None) -> None:
        lib.accept_jobs(self.bench, count=count, rate=rate, counter=lib.AcceptTransactions(), threads=ACCEPTERS)

    def wait_done(self, count: int, timeout: float) -> list[tuple[float, float]]:
        tenant_id = self.bench.tenant.pk
        if not lib.wait_until_done(self.db, tenant_id, count, timeout=timeout, services=self.services):
            raise RuntimeError(f"ours: not done after {timeout} s (logs in {self.services.log_dir})")
        times = lib.job_times(self.db, tenant_id)
        self.stages = lib.stage_medians(self.db, tenant_id)
        self.bench = harness.make_tenant("benchnaive-ours", max_in_flight=lib.TENANT_MAX_IN_FLIGHT)
        return list(zip(times.accepted_at, times.terminal_at, strict=True))

    def stop(self) -> None:
        self.db.close()
        self.services.stop_all()


# --- the phases ------------------------------------------------------------------------------------


def measure(side: NaiveSide | OurSide, sim: harness.Services, count: int, rate: float | None, latency: float):
    sim.simulator_control(latency_mean_seconds=latency, latency_p95_seconds=0.0)
    idle_before = harness.wait_for_quiet_machine()
    ledger = CpuLedger(side.process_groups(), apart={sim.pid("simulator")}).start()
    side.accept(count, rate)
    times = side.wait_done(count, timeout=latency + count / 20 + 120)
    cost = ledger.stop()
    accepted, finished = [a for a, _ in times], [f for _, f in times]
    latencies = sorted(f - a for a, f in times)
    return {
        "jobs": len(times),
        "jobs_per_s": round(len(times) / (max(finished) - min(accepted)), 1),
        "cpu_ms_per_job": round(cost["cpu_seconds"] * 1000 / len(times), 2),
        "cpu_ms_per_job_by_process": {
            name: round(seconds * 1000 / len(times), 2)
            for name, seconds in sorted(cost["cpu_seconds_by_process"].items(), key=lambda item: -item[1])
        },
        "simulator_cpu_ms_per_job": round(cost["simulator_cpu_seconds"] * 1000 / len(times), 2),
        "p50_above_model_ms": round((statistics.median(latencies) - latency) * 1000, 1),
        "machine_busy_cores_before": idle_before,
        "other_cores": round(cost["other_cores"], 2),
        "warning": cost["other_cores"] > OTHER_LOAD_WARNING_CORES,
        # Ours only: the median of each stage of a job (execution_lib.STAGE_MEDIANS).
        **({"stages_ms": side.stages} if isinstance(side, OurSide) else {}),
    }


def run_side(kind: str, processes: int, sim: harness.Services, profile: Profile) -> dict[str, Any]:
    log_dir = harness.RESULTS_DIR / f"naive-bench-logs/{kind}-{processes}"
    log_dir.mkdir(parents=True, exist_ok=True)
    side: NaiveSide | OurSide = (
        NaiveSide(processes, sim.simulator_url, log_dir)
        if kind == "naive"
        else OurSide(processes, sim.simulator_url, log_dir, harness.RESULTS_DIR / "naive-bench-media")
    )
    try:
        measure(side, sim, 100, None, 0.0)  # warm: connections, caches, the broker's queues
        backlog = measure(side, sim, profile.backlog_jobs, None, 0.0)
        steady = measure(side, sim, int(profile.rate * profile.arrival_seconds), profile.rate, profile.latency_seconds)
    finally:
        side.stop()
    return {"side": kind, "processes": processes, "backlog": backlog, "steady": steady}


def print_report(runs: list[dict[str, Any]], profile: Profile) -> None:
    print(
        f"\nnaive vs ours: (b) backlog of {profile.backlog_jobs}, zero-latency model; (a) {profile.rate:g} jobs/s "
        f"for {profile.arrival_seconds:g} s, {profile.latency_seconds:g} s model. CPU: the side's processes, "
        "PostgreSQL, RabbitMQ, Redis and the accepter.\n"
    )
    header = f"{'side':6} {'procs':>5} {'(b) jobs/s':>10} {'(b) cpu ms/job':>14} {'(a) cpu ms/job':>14} "
    print(header + f"{'(a) p50 above model':>19} {'idle before':>11} {'other cores':>11}")
    for r in runs:
        b, a = r["backlog"], r["steady"]
        flag = " (other load!)" if b["warning"] or a["warning"] else ""
        print(
            f"{r['side']:6} {r['processes']:>5} {b['jobs_per_s']:>10} {b['cpu_ms_per_job']:>14} "
            f"{a['cpu_ms_per_job']:>14} {a['p50_above_model_ms']:>16} ms "
            f"{b['machine_busy_cores_before']:>5}/{a['machine_busy_cores_before']:<5} "
            f"{b['other_cores']:>5}/{a['other_cores']:<5}{flag}"
        )
    print(
        "\nCPU ms per job by process ((b) backlog / (a) steady; postgres backends: the clients' connections, "
        "the rest PostgreSQL's own processes):"
    )
    for r in runs:
        b, a = r["backlog"]["cpu_ms_per_job_by_process"], r["steady"]["cpu_ms_per_job_by_process"]
        names = sorted(set(b) | set(a), key=lambda name: -(b.get(name, 0.0) + a.get(name, 0.0)))
        shares = ", ".join(f"{name} {b.get(name, 0.0):g}/{a.get(name, 0.0):g}" for name in names)
        print(f"  {r['side']:6} {r['processes']} process(es): {shares}")
    print("\nours, (a) median ms per stage (accepted → READY → claimed → terminal less the model call):")
    for r in runs:
        if "stages_ms" in r["steady"]:
            stages = ", ".join(f"{name} {ms:g}" for name, ms in r["steady"]["stages_ms"].items())
            print(f"  {r['processes']} process(es): {stages}")
    print("\nratios ours ÷ naive (median over rounds):")
    for processes in sorted({r["processes"] for r in runs}):
        naive = [r for r in runs if r["side"] == "naive" and r["processes"] == processes]
        ours = [r for r in runs if r["side"] == "ours" and r["processes"] == processes]

        def ratio(phase: str, key: str, naive: list = naive, ours: list = ours) -> float:
            mine = statistics.median(r[phase][key] for r in ours)
            theirs = statistics.median(r[phase][key] for r in naive)
            return round(mine / theirs, 2) if theirs else float("nan")

        print(
            f"  {processes} process(es): (b) jobs/s {ratio('backlog', 'jobs_per_s')}, (b) CPU/job "
            f"{ratio('backlog', 'cpu_ms_per_job')}, (a) CPU/job {ratio('steady', 'cpu_ms_per_job')}, "
            f"(a) p50 above model {ratio('steady', 'p50_above_model_ms')}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller backlog and a shorter steady phase")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2], help="worker processes per side")
    parser.add_argument("--rounds", type=int, default=1, help="naive, ours alternated this many times")
    args = parser.parse_args()
    profile = QUICK if args.quick else FULL
    media_root = harness.RESULTS_DIR / "naive-bench-media"
    media_root.mkdir(parents=True, exist_ok=True)
    lib.SANDBOX.set_up(media_root, app="accepter", **lib.POOL_LIMITS)
    sim = harness.Services(lib.SANDBOX, log_dir=harness.RESULTS_DIR, media_root=media_root)
    sim.start_simulator({"latency_mean_seconds": 0.0})
    runs = []
    try:
        for round_number in range(args.rounds):
            for processes in args.processes:
                for kind in ("naive", "ours"):
                    print(f"round {round_number + 1}: {kind}, {processes} process(es) ...", flush=True)
                    runs.append(run_side(kind, processes, sim, profile))
    finally:
        sim.stop_all()
    data = {"profile": profile.__dict__, "machine": harness.machine(), "runs": runs}
    harness.publish_results("naive_bench", lambda: print_report(runs, profile), data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
