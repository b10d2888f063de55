"""The claims' plans at a backlog: ``EXPLAIN (ANALYZE, BUFFERS)`` of the fair claim the workers
run (lifecycle.sql's ``claim_fair``), the FIFO baseline (bench/baseline_claim.sql's
``claim_fifo``: the same take and records, no fairness) and the execution benchmark's floor (a
bare ``SKIP LOCKED`` claim on a copy of the jobs table), each in a transaction rolled back, so
all three see the same backlog (five runs each; the plan shown is the last).

Run from the project root::

    .venv/bin/python bench/explain_claims.py [--backlog N] [--tenants T]

The backlog is N READY jobs spread over T tenants, in the capacity benchmark's database
(``benchcap``), inserted as ingress leaves them. The plans and their timings are printed and
written to bench/results/.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

import psycopg  # noqa: E402

from bench import capacity_lib, execution_lib, harness  # noqa: E402

RUNS = 5  # per statement; the plan shown is the last, once caches are warm


def explain(conn: psycopg.Connection[Any], sql: str, params: dict[str, Any]) -> list[str]:
    """The plan of the last of RUNS executions, each rolled back (each sees the same backlog)."""
    lines: list[str] = []
    for _ in range(RUNS):
        with conn.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            lines = [row[0] for row in cursor.fetchall()]
        conn.rollback()
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backlog", type=int, default=2000, help="READY jobs in all")
    parser.add_argument("--tenants", type=int, default=2, help="tenants the backlog is spread over")
    args = parser.parse_args()
    media_root = harness.RESULTS_DIR / "explain-media"
    media_root.mkdir(parents=True, exist_ok=True)
    sandbox = capacity_lib.SANDBOX
    sandbox.set_up(media_root, app="explain")
    harness.reset_job_tables(sandbox.dsn(app="setup"))
    tenants = [harness.make_tenant(f"explain-{i}") for i in range(args.tenants)]
    for bench in tenants:
        capacity_lib.insert_ready_jobs(bench, args.backlog // args.tenants, sandbox=sandbox)
    params = capacity_lib.claim_params("bench-explain")
    floor_sql = execution_lib.FLOOR_CLAIM_SQL
    with psycopg.connect(sandbox.dsn(app="explain"), cursor_factory=psycopg.ClientCursor) as conn:
        execution_lib.fill_floor_table(args.backlog, tenants[0].tenant.pk, tenants[0].document.pk, sandbox=sandbox)
        plans = {
            "claim_fair (ours)": explain(conn, capacity_lib.claim_statement("fair"), params),
            "claim_fifo (baseline)": explain(conn, capacity_lib.claim_statement("fifo"), params),
            "floor (bare SKIP LOCKED)": explain(conn, floor_sql, {"worker": "bench-explain"}),
        }

    def report() -> None:
        print(f"Claims at a backlog of {args.backlog} READY jobs over {args.tenants} tenants\n")
        for name, lines in plans.items():
            print(f"== {name}")
            print("\n".join(lines))
            print()
        for name, lines in plans.items():
            timings = [line.strip() for line in lines if line.startswith(("Planning Time", "Execution Time"))]
            print(f"{name}: {', '.join(timings)}")

    harness.publish_results("explain_claims", report, {"backlog": args.backlog, "plans": plans})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
