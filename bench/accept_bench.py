"""Acceptance benchmark of ``POST /api/v1/extraction-jobs`` against its two floors.

Run from the project root::

    .venv/bin/python bench/accept_bench.py [--quick]

One run, one gunicorn (``config.wsgi``, 4 sync workers by default), one database: the job and
outbox INSERTs straight through psycopg (transactions/s), the same INSERTs in a bare Django view
(``bench/floor_views.py``) and the real API, each view at the highest open-loop rate whose p99
stays within 50 ms, the API also at 300 accepts/s. Method and how to read the report:
bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

from bench import harness, loadgen  # noqa: E402

RESULTS_DIR = harness.RESULTS_DIR
DEFAULT_DATABASE = "benchextract"
P99_LIMIT_MS = 50.0
TARGET_RATE = 300.0  # accepts/s at which the API must hold the p99 limit
TARGET_RATIO = 0.5  # of the bare view's highest rate
API_PATH = "/api/v1/extraction-jobs"
FLOOR_PATH = "/bench/floor/accept"
# The machine is quiet when at most this much CPU is busy outside a trial ...
QUIET_CORES = 0.25
# ... and a trial is disturbed when other processes took more than this during it.
DISTURBED_CORES = 0.3


@dataclass(frozen=True)
class Profile:
    """How long and how finely to measure."""

    trial_seconds: float
    target_rate_seconds: float
    psycopg_seconds: float
    # The search stops when the lowest missing rate is within this factor of the highest holding one.
    precision: float
    max_rates_per_search: int
    # How often a trial missed while the rest of the machine was busy is tried again.
    disturbed_retries: int
    # How long to wait for a quiet machine before each trial.
    quiet_wait_seconds: float
    warmup_seconds: float


FULL = Profile(
    trial_seconds=5.0,
    target_rate_seconds=10.0,
    psycopg_seconds=5.0,
    precision=1.08,
    max_rates_per_search=8,
    disturbed_retries=2,
    quiet_wait_seconds=5.0,
    warmup_seconds=2.0,
)
QUICK = Profile(
    trial_seconds=2.0,
    target_rate_seconds=3.0,
    psycopg_seconds=2.0,
    precision=1.25,
    max_rates_per_search=5,
    disturbed_retries=0,
    quiet_wait_seconds=1.0,
    warmup_seconds=1.0,
)


# --- Setup -------------------------------------------------------------------------------------


def setup_django() -> None:
    # The bench database follows the code: a run after a new migration just works.
    harness.ensure_database(harness.own_database(DEFAULT_DATABASE))
    harness.setup_django()


@dataclass(frozen=True)
class BenchClient:
    """The bench tenant (the floor view's, by its slug), its document and a fresh API token."""

    bench: harness.BenchTenant
    token_id: int
    token: str


def prepare_client() -> BenchClient:
    from accounts.models import ApiToken, Role
    from bench.floor_views import BENCH_TENANT_SLUG

    bench = harness.make_tenant(
        BENCH_TENANT_SLUG, unique=False, content=b"%PDF-1.4\n% accept bench invoice\n", filename="bench.pdf"
    )
    ApiToken.objects.filter(tenant=bench.tenant, name="accept-bench").delete()
    token, raw = ApiToken.issue(tenant=bench.tenant, name="accept-bench", role=Role.MEMBER)
    return BenchClient(bench=bench, token_id=token.pk, token=raw)


def reset_job_tables() -> None:
    """Every trial starts from empty job tables and zero usage, so later trials do not pay for
    the rows of earlier ones and the floors and the API see the same conditions."""
    harness.reset_job_tables(
        harness.django_dsn(), tables=("extraction_jobs", "outbox_events", "job_events"), vacuum=False
    )


# --- Floor 1: psycopg ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PsycopgFloor:
    processes: int
    seconds: float
    transactions: int
    transactions_per_s: float
    # Closed loop: per-transaction service time, not an open-loop latency.
    tx_p50_ms: float
    tx_p99_ms: float


def _psycopg_worker(args: tuple[str, dict, float, float]) -> tuple[int, list[float]]:
    """One process, one connection: the two INSERTs per transaction until ``end`` (wall clock)."""
    import psycopg

    from bench.floor_views import INSERT_JOB_SQL, INSERT_OUTBOX_SQL, FloorTarget, job_params, outbox_params

    dsn, target_fields, start, end = args
    target = FloorTarget(**target_fields)
    prefix = uuid.uuid4().hex[:12]
    durations: list[float] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        time.sleep(max(0.0, start - time.time()))
        i = 0
        while time.time() < end:
            began = time.perf_counter()
            job_id = uuid.uuid4()
            with conn.transaction(), conn.cursor() as cur:
                cur.execute(INSERT_JOB_SQL, job_params(target, job_id=job_id, idempotency_key=f"pg-{prefix}-{i}"))
                cur.fetchone()
                cur.execute(INSERT_OUTBOX_SQL, outbox_params(target, job_id=job_id))
            durations.append(time.perf_counter() - began)
            i += 1
    return i, durations


def measure_psycopg_floor(client: BenchClient, *, processes: int, seconds: float) -> PsycopgFloor:
    doc = client.bench.document
    target = {
        "tenant_id": client.bench.tenant.pk,
        "document_id": doc.pk,
        "document_version": doc.version,
        "document_size": doc.size,
    }
    # Processes, not threads: each client then pays its own Python cost in parallel, as the
    # gunicorn workers do.
    ctx = multiprocessing.get_context("spawn")
    start = time.time() + 1.5  # after every process has imported psycopg and connected
    with ctx.Pool(processes) as pool:
        results = pool.map(_psycopg_worker, [(harness.django_dsn(), target, start, start + seconds)] * processes)
    transactions = sum(count for count, _ in results)
    durations = sorted(d for _, ds in results for d in ds)
    return PsycopgFloor(
        processes=processes,
        seconds=seconds,
        transactions=transactions,
        transactions_per_s=round(transactions / seconds, 1),
        tx_p50_ms=round(harness.percentile(durations, 0.50) * 1000, 3),
        tx_p99_ms=round(harness.percentile(durations, 0.99) * 1000, 3),
    )


# --- CPU accounting -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CpuShare:
    """CPU seconds spent during a trial by this run's processes (the load generator, gunicorn,
    the PostgreSQL backends of the bench database) and by everything else on the machine.
    Other work (another test run, say) only ever slows a trial down; ``other_s`` says how much
    of it there was. It also holds kernel time no process is charged for (part of loopback
    networking) and the backends' WAL writer and checkpointer."""

    elapsed_s: float
    load_generator_s: float
    gunicorn_s: float
    postgres_s: float
    other_s: float

    @property
    def ours_cores(self) -> float:
        return (self.load_generator_s + self.gunicorn_s + self.postgres_s) / self.elapsed_s

    @property
    def other_cores(self) -> float:
        return self.other_s / self.elapsed_s

    def per_request_ms(self, requests: int) -> dict[str, float]:
        """CPU milliseconds per request, by component: what a request costs, whatever the rate."""
        per = 1000 / max(1, requests)
        return {
            "load_generator": round(self.load_generator_s * per, 3),
            "gunicorn": round(self.gunicorn_s * per, 3),
            "postgres": round(self.postgres_s * per, 3),
        }


class CpuMeter:
    """Measures a trial's CpuShare from /proc (Linux)."""

    def __init__(self, server: harness.Gunicorn) -> None:
        self.server = server

    def _groups(self) -> dict[str, list[int]]:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
            backends = [row[0] for row in cursor.fetchall()]
        master = self.server.process.pid if self.server.process else None
        return {
            "load_generator": [os.getpid()],
            "gunicorn": [master, *harness.child_pids(master)] if master else [],
            "postgres": backends,
        }

    def _read(self) -> dict[int, float]:
        return {pid: harness.cpu_seconds(pid) for pids in self.groups.values() for pid in pids}

    def __enter__(self) -> CpuMeter:
        self.groups = self._groups()
        self.began = time.monotonic()
        self.machine0 = harness.machine_busy_seconds()
        self.cpu0 = self._read()
        return self

    def __exit__(self, *exc_info) -> None:
        elapsed = time.monotonic() - self.began
        # Backends come and go during a trial (a connection past CONN_MAX_AGE is replaced): one
        # that appeared is counted whole, one that exited reads 0 and its share is lost to "other".
        before = self.groups
        self.groups = {g: sorted(set(pids) | set(before[g])) for g, pids in self._groups().items()}
        cpu1 = self._read()
        machine = harness.machine_busy_seconds() - self.machine0
        spent = {
            g: sum(max(0.0, cpu1[pid] - self.cpu0.get(pid, 0.0)) for pid in pids) for g, pids in self.groups.items()
        }
        self.share = CpuShare(
            elapsed_s=round(elapsed, 3),
            load_generator_s=round(spent["load_generator"], 3),
            gunicorn_s=round(spent["gunicorn"], 3),
            postgres_s=round(spent["postgres"], 3),
            other_s=round(max(0.0, machine - sum(spent.values())), 3),
        )


# --- Trials and the search for the highest rate ------------------------------------------------------


@dataclass(frozen=True)
class Trial:
    endpoint: str
    result: loadgen.LoadResult
    cpu: CpuShare

    @property
    def rate(self) -> float:
        return self.result.rate

    @property
    def holds(self) -> bool:
        return self.result.holds(P99_LIMIT_MS)

    def as_dict(self) -> dict:
        cpu = {
            **asdict(self.cpu),
            "ours_cores": round(self.cpu.ours_cores, 2),
            "other_cores": round(self.cpu.other_cores, 2),
            "ms_per_accepted_request": self.cpu.per_request_ms(self.result.accepted),
        }
        return {"endpoint": self.endpoint, **self.result.as_dict(), "cpu": cpu}


class Runner:
    """Runs trials against one server and keeps every one of them for the report."""

    def __init__(self, server: harness.Gunicorn, profile: Profile) -> None:
        self.server = server
        self.profile = profile
        self.trials: list[Trial] = []

    def trial(self, target: loadgen.Target, rate: float, seconds: float) -> Trial:
        self.server.wait_idle()
        reset_job_tables()
        harness.wait_for_quiet_machine(self.profile.quiet_wait_seconds, quiet_cores=QUIET_CORES)
        with CpuMeter(self.server) as meter:
            result = loadgen.run(target, rate=rate, duration=seconds)
        trial = Trial(endpoint=target.path, result=result, cpu=meter.share)
        self.trials.append(trial)
        verdict = "ok  " if trial.holds else "MISS"
        cost = meter.share.per_request_ms(result.accepted)
        print(
            f"  {verdict} {target.path:<24} {rate:>6.0f}/s  accepted {result.accepted_per_s:>6.1f}/s  "
            f"p50 {_ms(result.p50_ms)}  p99 {_ms(result.p99_ms)}  cores ours/other "
            f"{meter.share.ours_cores:.2f}/{meter.share.other_cores:.2f}  cpu ms/req gen/gunicorn/pg "
            f"{cost['load_generator']:.2f}/{cost['gunicorn']:.2f}/{cost['postgres']:.2f}  {_outcomes(result)}",
            flush=True,
        )
        return trial

    def holds_at(self, target: loadgen.Target, rate: float, seconds: float) -> Trial:
        """A trial at ``rate``. A miss while other processes took more than DISTURBED_CORES is
        tried again (up to the profile's retries): load from outside this run can only make a
        trial slower, never faster. Every attempt is reported."""
        trial = self.trial(target, rate, seconds)
        for _ in range(self.profile.disturbed_retries):
            if trial.holds or trial.cpu.other_cores <= DISTURBED_CORES:
                break
            trial = self.trial(target, rate, seconds)
        return trial


def find_max_rate(
    holds_at: Callable[[float], bool],
    *,
    start: float,
    profile: Profile,
    held: tuple[float, ...] = (),
    missed: tuple[float, ...] = (),
) -> float | None:
    """The highest rate (of those tried) whose p99 held the limit.

    1. Double the rate from ``start`` until a trial misses (or halve it until one holds).
    2. Bisect (geometrically) between the highest holding and the lowest missing rate until
       they are within ``profile.precision`` of each other or the trial budget is spent.
    """
    held_rates, missed_rates = list(held), list(missed)

    def bounds() -> tuple[float | None, float | None]:
        lowest_miss = min(missed_rates, default=None)
        # A holding rate above a missing one is noise; only the rates below the miss count.
        below = [r for r in held_rates if lowest_miss is None or r < lowest_miss]
        return max(below, default=None), lowest_miss

    rate = start
    for _ in range(profile.max_rates_per_search):
        best, worst = bounds()
        if best is not None and worst is not None:
            if worst / best <= profile.precision:
                break
            rate = round((best * worst) ** 0.5 / 10) * 10
        elif best is not None:
            rate = best * 2
        elif worst is not None:
            rate = round(worst / 2 / 10) * 10
            if rate < 10:
                break
        (held_rates if holds_at(rate) else missed_rates).append(rate)
    return bounds()[0]


# --- Report --------------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return f"{value:7.1f} ms" if value is not None else "    inf   "


def _outcomes(result: loadgen.LoadResult) -> str:
    return " ".join(f"{name}:{count}" for name, count in result.outcomes.items())


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Accept-path benchmark: the API against its two floors.")
    parser.add_argument("--quick", action="store_true", help="short trials, coarse search (about a minute)")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers (default 4)")
    parser.add_argument("--worker-class", default="sync", help="gunicorn worker class (default sync)")
    parser.add_argument("--threads", type=int, default=1, help="gunicorn threads per worker (default 1)")
    parser.add_argument(
        "--no-access-log",
        action="store_true",
        help="serve without gunicorn's access log (the Procfile's web process has one)",
    )
    parser.add_argument(
        "--gunicorn-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra gunicorn argument, repeatable (e.g. --gunicorn-arg=--config=FILE)",
    )
    parser.add_argument("--psycopg-processes", type=int, default=4, help="client processes of the psycopg floor")
    parser.add_argument(
        "--output", type=Path, help="the JSON's path (default: bench/results/accept_bench-<UTC time>.json)"
    )
    return parser.parse_args()


def set_up() -> tuple[BenchClient, str]:
    """Django on the benchmark's database, the results directory, the bench tenant with a fresh
    token; and PostgreSQL's version."""
    setup_django()
    from django.db import connection

    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    client = prepare_client()
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        pg_version = cursor.fetchone()[0]
    return client, pg_version


def run_psycopg_floor(args: argparse.Namespace, profile: Profile, client: BenchClient) -> PsycopgFloor:
    print(f"psycopg floor: {args.psycopg_processes} processes for {profile.psycopg_seconds:.0f} s", flush=True)
    reset_job_tables()
    harness.wait_for_quiet_machine(profile.quiet_wait_seconds, quiet_cores=QUIET_CORES)
    pg_floor = measure_psycopg_floor(client, processes=args.psycopg_processes, seconds=profile.psycopg_seconds)
    print(
        f"  {pg_floor.transactions_per_s:.0f} transactions/s (tx p50 {pg_floor.tx_p50_ms} ms, "
        f"p99 {pg_floor.tx_p99_ms} ms)",
        flush=True,
    )
    return pg_floor


@dataclass(frozen=True)
class HttpTrials:
    """The trials under gunicorn: the bare view's highest rate, the API at the target rate and
    the API's highest rate."""

    runner: Runner
    access_log: Path | None
    bare_max: float | None
    at_target: Trial
    api_max: float | None


def run_http_trials(args: argparse.Namespace, profile: Profile, client: BenchClient) -> HttpTrials:
    body = json.dumps({"document_id": str(client.bench.document.pk), "schema": "invoice.v1"}).encode()
    json_headers = {"Content-Type": "application/json"}
    access_log = None if args.no_access_log else RESULTS_DIR / "gunicorn-access.log"
    with harness.Gunicorn(
        workers=args.workers,
        worker_class=args.worker_class,
        threads=args.threads,
        log_path=RESULTS_DIR / "gunicorn.log",
        access_log_path=access_log,
        extra_args=args.gunicorn_arg,
        DJANGO_SETTINGS_MODULE="bench.floor_settings",
    ) as server:
        floor = loadgen.Target.from_url(server.url(FLOOR_PATH), body=body, headers=json_headers)
        api = loadgen.Target.from_url(
            server.url(API_PATH), body=body, headers=dict(json_headers, Authorization=f"Bearer {client.token}")
        )
        runner = Runner(server, profile)

        # Every worker imports, connects and reads its floor target before anything counts.
        print("warm-up (not reported)", flush=True)
        for target in (floor, api):
            runner.trial(target, 100, profile.warmup_seconds)
        runner.trials.clear()

        print(f"bare-view floor: highest rate with p99 <= {P99_LIMIT_MS:.0f} ms", flush=True)
        bare_max = find_max_rate(
            lambda r: runner.holds_at(floor, r, profile.trial_seconds).holds, start=200, profile=profile
        )

        print(f"API at {TARGET_RATE:.0f} accepts/s", flush=True)
        at_target = runner.holds_at(api, TARGET_RATE, profile.target_rate_seconds)

        print(f"API: highest rate with p99 <= {P99_LIMIT_MS:.0f} ms", flush=True)
        api_max = find_max_rate(
            lambda r: runner.holds_at(api, r, profile.trial_seconds).holds,
            start=TARGET_RATE * 2,
            profile=profile,
            held=(TARGET_RATE,) if at_target.holds else (),
            missed=() if at_target.holds else (TARGET_RATE,),
        )
        server.wait_idle()
    reset_job_tables()
    return HttpTrials(runner, access_log, bare_max, at_target, api_max)


def clean_up(client: BenchClient) -> None:
    from accounts.models import ApiToken

    ApiToken.objects.filter(pk=client.token_id).delete()


def build_report(
    args: argparse.Namespace, started: float, pg_version: str, pg_floor: PsycopgFloor, http: HttpTrials
) -> dict:
    runner, bare_max, at_target, api_max = http.runner, http.bare_max, http.at_target, http.api_max

    def trials_of(path: str) -> list[dict]:
        return [t.as_dict() for t in runner.trials if t.endpoint == path]

    ratio = _ratio(api_max, bare_max)
    return {
        "profile": "quick" if args.quick else "full",
        "machine": {**harness.machine(), "postgresql": pg_version},
        "server": {
            "wsgi": "config.wsgi",
            "workers": args.workers,
            "worker_class": args.worker_class,
            "threads": args.threads,
            "access_log": http.access_log is not None,
            "extra_args": args.gunicorn_arg,
        },
        "p99_limit_ms": P99_LIMIT_MS,
        "psycopg_floor": asdict(pg_floor),
        "bare_view": {"max_rate": bare_max, "trials": trials_of(FLOOR_PATH)},
        "api": {"at_target_rate": at_target.as_dict(), "max_rate": api_max, "trials": trials_of(API_PATH)},
        "ratios": {
            "api_max_rate / bare_view_max_rate": ratio,
            "api_max_rate / psycopg_tx_per_s": _ratio(api_max, pg_floor.transactions_per_s),
            "bare_view_max_rate / psycopg_tx_per_s": _ratio(bare_max, pg_floor.transactions_per_s),
        },
        "targets": {
            f"p99 <= {P99_LIMIT_MS:.0f} ms at {TARGET_RATE:.0f}/s": at_target.holds,
            f"api_max_rate >= {TARGET_RATIO} x bare_view_max_rate": ratio is not None and ratio >= TARGET_RATIO,
        },
        # Trials during which other processes took more than DISTURBED_CORES of the machine.
        "disturbed_trials": sum(t.cpu.other_cores > DISTURBED_CORES for t in runner.trials),
        "trials": len(runner.trials),
        "elapsed_s": round(time.monotonic() - started, 1),
    }


def main() -> None:
    args = parse_args()
    profile = QUICK if args.quick else FULL
    started = time.monotonic()
    client, pg_version = set_up()
    pg_floor = run_psycopg_floor(args, profile, client)
    http = run_http_trials(args, profile, client)
    clean_up(client)
    report = build_report(args, started, pg_version, pg_floor, http)
    harness.publish_results("accept_bench", lambda: print_table(report), report, json_path=args.output)


def print_table(report: dict) -> None:
    pg, bare, api = report["psycopg_floor"], report["bare_view"], report["api"]
    at = api["at_target_rate"]
    server = report["server"]
    print()
    print(
        f"Accept benchmark ({report['profile']}, {report['machine']['cores']} CPUs, PostgreSQL "
        f"{report['machine']['postgresql'].split()[0]}, gunicorn {server['workers']} {server['worker_class']} "
        f"worker(s) x {server['threads']} thread(s), {report['elapsed_s']} s)"
    )
    print(
        f"{'':40} {'rate/s':>8} {'p50':>10} {'p95':>10} {'p99':>10} {'other CPU':>12} "
        f"{'CPU ms/request (gunicorn+pg)':>29}"
    )
    print(f"{'psycopg floor (transactions/s)':40} {pg['transactions_per_s']:>8.0f}")
    rows = (
        (
            f"bare view: max rate, p99<={P99_LIMIT_MS:.0f}ms",
            bare["max_rate"],
            _best_at(bare["trials"], bare["max_rate"]),
        ),
        (f"API at {TARGET_RATE:.0f}/s (accepted/s)", at["accepted_per_s"], at),
        (f"API: max rate, p99<={P99_LIMIT_MS:.0f}ms", api["max_rate"], _best_at(api["trials"], api["max_rate"])),
    )
    for label, rate, trial in rows:
        rate_text = f"{rate:>8.0f}" if rate is not None else f"{'none':>8}"
        cells = ""
        if trial:
            cells = " ".join(_ms(trial[k]) for k in ("p50_ms", "p95_ms", "p99_ms"))
            cost = trial["cpu"]["ms_per_accepted_request"]
            cells += (
                f" {trial['cpu']['other_cores']:>6.2f} cores {cost['gunicorn']:>10.2f} + {cost['postgres']:.2f}"
                f" = {cost['gunicorn'] + cost['postgres']:.2f}"
            )
        print(f"{label:40} {rate_text} {cells}")
    for name, value in report["ratios"].items():
        print(f"{name:40} {value if value is not None else 'n/a':>8}")
    for name, ok in report["targets"].items():
        print(f"target {name}: {'MET' if ok else 'MISSED'}")
    if report["disturbed_trials"]:
        print(
            f"note: {report['disturbed_trials']} of {report['trials']} trials ran while other processes used "
            f"more than {DISTURBED_CORES} cores; figures from a shared machine are pessimistic."
        )


def _best_at(trials: list[dict], rate: float | None) -> dict | None:
    """The trial that made ``rate`` count: the holding one if any attempt held."""
    at_rate = [t for t in trials if rate is not None and t["rate"] == rate]
    return min(at_rate, key=lambda t: t["p99_ms"] if t["p99_ms"] is not None else float("inf"), default=None)


if __name__ == "__main__":
    main()
