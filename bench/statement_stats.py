"""Every statement our pipeline sends per job, from ``pg_stat_statements``, in one sitting.

Run from the project root::

    .venv/bin/python bench/statement_stats.py [--backlog N] [--rate R] [--seconds S] [--latency L]

The machine's PostgreSQL is never reconfigured: this starts a bench-owned server
(``tests/cluster/postgres_cluster.PostgresPrimary`` on port ``PORT``, its own data directory, gone
at the end) with ``shared_preload_libraries = pg_stat_statements``, points every process of the
benchmark at it (``POSTGRES_PORT``), and runs ours as ``bench/naive_bench.py`` does (one llm
worker process × 300 threads, the ingress, the relay, the scheduler, the simulator), in two
phases, the statistics reset before each:

(b) a backlog of N jobs with a zero-latency model;
(a) R jobs/s for S seconds with an L-second model.

Per phase: each statement's calls, rows and execution time per job, the statements, commits and
WAL bytes per job. What it cannot say: the server runs with ``fsync`` off (as the cluster tests'
servers), so a commit costs less than on the machine's server; counts are exact, times are the
statements' execution alone (planning and the commit's flush are outside them).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

PORT = 5461

import psycopg  # noqa: E402

from tests.cluster.postgres_cluster import PostgresPrimary  # noqa: E402

TOP = 25


def snapshot(conn: psycopg.Connection[Any], database: str) -> dict[str, Any]:
    """The bench database's statements (as pg_stat_statements normalised them), commits and
    the server's WAL bytes so far."""
    statements = conn.execute(
        """
        SELECT s.query, sum(s.calls)::bigint, sum(s.rows)::bigint, sum(s.total_exec_time)::float8
          FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
         WHERE d.datname = %s
         GROUP BY s.query
        """,
        [database],
    ).fetchall()
    commits = conn.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = %s", [database]).fetchone()
    wal = conn.execute("SELECT wal_bytes FROM pg_stat_wal").fetchone()
    return {
        "statements": {query: (calls, rows, ms) for query, calls, rows, ms in statements},
        "commits": int(commits[0]) if commits else 0,
        "wal_bytes": int(wal[0]) if wal else 0,
    }


def reset(conn: psycopg.Connection[Any]) -> None:
    conn.execute("SELECT pg_stat_statements_reset()")
    conn.execute("SELECT pg_stat_reset()")
    conn.execute("SELECT pg_stat_reset_shared('wal')")


def label(query: str) -> str:
    """A statement's first words, whitespace folded: enough to find it in the .sql files."""
    return re.sub(r"\s+", " ", query).strip()[:110]


def per_job(after: dict[str, Any], jobs: int) -> dict[str, Any]:
    rows = sorted(
        (
            {
                "statement": label(query),
                "calls_per_job": round(calls / jobs, 3),
                "rows_per_job": round(rows / jobs, 3),
                "exec_ms_per_job": round(ms / jobs, 4),
                "mean_exec_ms": round(ms / calls, 4) if calls else 0.0,
            }
            for query, (calls, rows, ms) in after["statements"].items()
        ),
        key=lambda row: -row["exec_ms_per_job"],
    )
    return {
        "jobs": jobs,
        "statements_per_job": round(sum(calls for calls, _, _ in after["statements"].values()) / jobs, 2),
        "exec_ms_per_job": round(sum(ms for _, _, ms in after["statements"].values()) / jobs, 3),
        "commits_per_job": round(after["commits"] / jobs, 2),
        "wal_bytes_per_job": round(after["wal_bytes"] / jobs),
        "top": rows[:TOP],
    }


def print_phase(name: str, phase: dict[str, Any]) -> None:
    print(
        f"\n{name}: {phase['jobs']} jobs; per job {phase['statements_per_job']} statements, "
        f"{phase['commits_per_job']} commits, {phase['exec_ms_per_job']} ms executing, "
        f"{phase['wal_bytes_per_job']} WAL bytes"
    )
    print(f"  {'calls/job':>9} {'ms/job':>8} {'mean ms':>8} {'rows/job':>8}  statement")
    for row in phase["top"]:
        print(
            f"  {row['calls_per_job']:>9} {row['exec_ms_per_job']:>8} {row['mean_exec_ms']:>8} "
            f"{row['rows_per_job']:>8}  {row['statement']}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backlog", type=int, default=800, help="(b): jobs in the zero-latency backlog")
    parser.add_argument("--rate", type=float, default=30.0, help="(a): jobs per second")
    parser.add_argument("--seconds", type=float, default=15.0, help="(a): seconds of arrivals")
    parser.add_argument("--latency", type=float, default=10.0, help="(a): model latency in seconds")
    parser.add_argument(
        "--nested",
        action="store_true",
        help="count the statements run inside functions and triggers too (pg_stat_statements.track=all); "
        "their time is then also inside the calling statement's",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-pgss-") as base_dir:
        settings = {
            "shared_preload_libraries": "pg_stat_statements",
            "pg_stat_statements.track": "all" if args.nested else "top",
        }
        with PostgresPrimary(base_dir, port=PORT, settings=settings) as server:
            # Every process of the benchmark (and this one's Django) dials the bench-owned server.
            os.environ["POSTGRES_PORT"] = str(PORT)
            os.environ["BENCH_POSTGRES_PORT"] = str(PORT)
            from bench import execution_lib as lib
            from bench import harness
            from bench.naive_bench import OurSide, measure

            media_root = harness.RESULTS_DIR / "statement-stats-media"
            media_root.mkdir(parents=True, exist_ok=True)
            lib.SANDBOX.set_up(media_root, app="accepter", **lib.POOL_LIMITS)
            sim = harness.Services(lib.SANDBOX, log_dir=harness.RESULTS_DIR, media_root=media_root)
            sim.start_simulator({"latency_mean_seconds": 0.0})
            stats = psycopg.connect(server.dsn("postgres"), autocommit=True)
            stats.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            side = OurSide(1, sim.simulator_url, harness.RESULTS_DIR, media_root)
            phases: dict[str, Any] = {}
            try:
                measure(side, sim, 100, None, 0.0)  # warm: connections, prepared statements, caches
                reset(stats)
                backlog = measure(side, sim, args.backlog, None, 0.0)
                phases["backlog"] = {**per_job(snapshot(stats, lib.SANDBOX.database), backlog["jobs"]), **backlog}
                reset(stats)
                steady = measure(side, sim, int(args.rate * args.seconds), args.rate, args.latency)
                phases["steady"] = {**per_job(snapshot(stats, lib.SANDBOX.database), steady["jobs"]), **steady}
            finally:
                side.stop()
                sim.stop_all()
                stats.close()

    def report() -> None:
        print(
            f"pg_stat_statements, ours (1 llm worker process): (b) backlog of {args.backlog}, zero-latency model; "
            f"(a) {args.rate:g} jobs/s for {args.seconds:g} s, {args.latency:g} s model"
        )
        print_phase("(b) backlog", phases["backlog"])
        print_phase("(a) steady", phases["steady"])

    harness.publish_results("statement_stats", report, {"args": vars(args), "phases": phases})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
