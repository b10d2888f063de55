"""Machinery of the capacity benchmark (bench/capacity_bench.py); what every benchmark shares is
in bench/harness.py.

- The Procfile's processes in the benchmark's own :data:`SANDBOX` (database and RabbitMQ vhost
  ``benchcap``, Redis database 5): llm Celery workers, the scheduler, the relay and the ingress
  worker. An llm worker is started through :func:`run_celery_worker`, which sets ONE thing in
  its own process before Celery starts: the claim strategy or the admission (the naive
  baseline: no shared limiter). The project's code is never edited; the rest of the worker
  runs as deployed.
- Set-up and reads of PostgreSQL: bulk-inserted READY backlogs, the attempt ledger, job
  timings (database clock), and the claim-cost schemas of (c).

Run as a script by the llm workers (``celery``, below), so the project root goes on the path.
"""

from __future__ import annotations

import os
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

from bench import harness  # noqa: E402
from config.sql import load_statements  # noqa: E402

SANDBOX = harness.Sandbox(database="benchcap", vhost="benchcap", redis_db=5, app_prefix="benchcap-")
# Attempts that never reached the provider: a capacity hand-back, a shutdown before the call.
UNSENT_OUTCOMES = ("capacity_deferred", "shutdown")
# Attempts the provider answered: their latency is the model's (capacity_plan._ANSWERED).
ANSWERED_OUTCOMES = ("succeeded", "review_required", "invalid_output", "stale_completion")


# --- what an llm worker process may be pointed at ------------------------------------------------


# The baseline claim (plain FIFO), which production does not have: bench/baseline_claim.sql.
BASELINE_CLAIMS = load_statements(PROJECT_ROOT / "bench" / "baseline_claim.sql")


def claim_statement(claim: str) -> str:
    """The claim statement of ``fair`` (production's) or ``fifo`` (the baseline)."""
    from extraction.execution import lifecycle

    return lifecycle.SQL["claim_fair"] if claim == "fair" else BASELINE_CLAIMS["claim_fifo"]


def use_claim_strategy(claim: str) -> None:
    """Point this process's claim_next_job at the ``fair`` or ``fifo`` claim statement (the
    module attribute lifecycle.CLAIM it reads at every claim). After Django is set up."""
    from extraction.execution import lifecycle

    lifecycle.CLAIM = claim_statement(claim)


def use_naive_admission() -> None:
    """The baseline of (a): no shared limiter (the pool's budget ``unlimited``). Every call is
    granted at once (the process's thread count, Celery --concurrency, is its only semaphore),
    nothing is counted in Redis, and a 429 cools nobody down (the job's own retry still waits
    the Retry-After). Set before Django loads its settings."""
    os.environ["POOL_BUDGET"] = "unlimited"


def check_naive_admission() -> None:
    from extraction.capacity import limiter

    if limiter.pool_limits("default").budget != limiter.UNLIMITED:
        raise SystemExit("POOL_BUDGET=unlimited was not taken up: config/settings.py must read it from the environment")


def run_celery_worker(*, claim: str, admission: str, celery_argv: list[str]) -> None:
    """``python bench/capacity_lib.py celery --claim fair|fifo --admission shared|naive -- <celery args>``"""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(PROJECT_ROOT))
    import django

    if admission == "naive":
        use_naive_admission()
    django.setup()
    use_claim_strategy(claim)
    if admission == "naive":
        check_naive_admission()
    from celery.bin.celery import main

    sys.argv = ["celery", *celery_argv]
    main()


# --- the processes -------------------------------------------------------------------------------


class Services(harness.Services):
    """The processes of one phase in :data:`SANDBOX`; llm workers through :func:`run_celery_worker`."""

    def llm_worker(
        self, name: str, *, slots: int, claim: str = "fair", admission: str = "shared", pool_max_size: int = 4
    ) -> None:
        argv = [
            sys.executable,
            str(Path(__file__).resolve()),
            "celery",
            "--claim",
            claim,
            "--admission",
            admission,
            "--",
            *harness.celery_args(name, "llm", slots),
        ]
        self.start(name, argv, POSTGRES_POOL_MAX_SIZE=str(pool_max_size))


# --- READY backlogs ------------------------------------------------------------------------------

# The default policy's token reservation (settings.MODEL_POLICIES), which acceptance charges to
# the tenant and every job's end gives back.
ESTIMATED_TOKENS = 6000


def insert_ready_jobs(
    bench: harness.BenchTenant, count: int, *, waited_seconds: float = 60.0, sandbox: harness.Sandbox = SANDBOX
) -> None:
    """``count`` READY jobs of one tenant in one transaction (as ingress leaves them, available
    ``waited_seconds`` ago), charged to the tenant's pending usage like acceptance would; in
    this benchmark's sandbox unless another benchmark names its own."""
    with psycopg.connect(sandbox.dsn(app="setup")) as conn:
        conn.execute(
            """
            INSERT INTO extraction_jobs (
                id, tenant_id, document_id, document_version, idempotency_key, request_hash, schema,
                model_policy, options, priority_class, state, state_version, attempt, max_attempts, fence,
                lease_owner, available_at, deadline_at, estimated_tokens, byte_size, error_class,
                error_detail, created_at, updated_at)
            SELECT gen_random_uuid(), %(tenant)s, %(document)s, %(version)s, 'bulk-' || gen_random_uuid(),
                   repeat('0', 64), 'invoice.v1', 'default', '{}', 'batch', 'READY', 2, 0, 5, 0, '',
                   now() - make_interval(secs => %(waited)s), now() + interval '1 day', %(tokens)s, %(bytes)s, '', '',
                   now() - make_interval(secs => %(waited)s), now() - make_interval(secs => %(waited)s)
              FROM generate_series(1, %(count)s)
            """,
            {
                "tenant": bench.tenant.pk,
                "document": bench.document.pk,
                "version": bench.document.version,
                "waited": waited_seconds,
                "bytes": bench.document.size,
                "count": count,
                "tokens": ESTIMATED_TOKENS,
            },
        )
        conn.execute(
            "UPDATE accounts_tenantusage SET pending_jobs = pending_jobs + %s, "
            "pending_bytes = pending_bytes + %s, reserved_tokens = reserved_tokens + %s WHERE tenant_id = %s",
            [count, count * bench.document.size, count * ESTIMATED_TOKENS, bench.tenant.pk],
        )
        conn.commit()
        conn.execute("ANALYZE extraction_jobs")


def db_now(conn: psycopg.Connection) -> float:
    return float(conn.execute("SELECT extract(epoch FROM now())").fetchone()[0])


# --- reading the attempt ledger and the jobs -----------------------------------------------------


@dataclass(frozen=True)
class LedgerWindow:
    """Attempts that reached the provider, started within [start, start + seconds) (DB clock)."""

    start: float
    seconds: float
    calls: int  # reached the provider
    rate_limited: int  # answered 429
    answered: int  # answered with a completion
    other_errors: int
    mean_latency_seconds: float | None  # of the answered ones, as the worker timed them
    deferred: dict[str, int]  # limiter denials (no call) by reason


def first_call_at(conn: psycopg.Connection) -> float | None:
    row = conn.execute(
        "SELECT extract(epoch FROM min(started_at)) FROM extraction_attempts WHERE outcome <> ALL(%s)",
        [list(UNSENT_OUTCOMES)],
    ).fetchone()
    return float(row[0]) if row[0] is not None else None


def ledger_window(conn: psycopg.Connection, start: float, seconds: float) -> LedgerWindow:
    window = {"start": start, "end": start + seconds}
    rows = conn.execute(
        """
        SELECT outcome, count(*), avg(latency_ms)
          FROM extraction_attempts
         WHERE started_at >= to_timestamp(%(start)s) AND started_at < to_timestamp(%(end)s)
         GROUP BY outcome
        """,
        window,
    ).fetchall()
    by_outcome = {outcome: (int(n), avg) for outcome, n, avg in rows}
    answered = sum(by_outcome.get(o, (0, None))[0] for o in ANSWERED_OUTCOMES)
    latency_ms = sum(
        by_outcome[o][0] * float(by_outcome[o][1])
        for o in ANSWERED_OUTCOMES
        if o in by_outcome and by_outcome[o][1] is not None
    )
    calls = sum(n for outcome, (n, _) in by_outcome.items() if outcome not in UNSENT_OUTCOMES)
    limited = by_outcome.get("rate_limited", (0, None))[0]
    deferred = conn.execute(
        """
        SELECT split_part(error_detail, ': ', 2) AS reason, count(*)
          FROM extraction_attempts
         WHERE outcome = 'capacity_deferred'
           AND started_at >= to_timestamp(%(start)s) AND started_at < to_timestamp(%(end)s)
         GROUP BY 1
        """,
        window,
    ).fetchall()
    return LedgerWindow(
        start=start,
        seconds=seconds,
        calls=calls,
        rate_limited=limited,
        answered=answered,
        other_errors=calls - limited - answered,
        mean_latency_seconds=latency_ms / answered / 1000 if answered else None,
        deferred={reason: int(n) for reason, n in deferred},
    )


def calls_timeline(
    conn: psycopg.Connection, start: float, seconds: float, *, bucket: float = 5.0
) -> list[dict[str, float]]:
    """Provider calls per ``bucket`` seconds from ``start``: admitted and answered 429. Shows
    where a window's capacity went unused (the re-use of expired request slots, say)."""
    rows = conn.execute(
        """
        SELECT floor((extract(epoch FROM started_at) - %(start)s) / %(bucket)s)::int AS slot,
               count(*) FILTER (WHERE outcome <> 'rate_limited'), count(*) FILTER (WHERE outcome = 'rate_limited')
          FROM extraction_attempts
         WHERE started_at >= to_timestamp(%(start)s) AND started_at < to_timestamp(%(end)s)
           AND outcome <> ALL(%(unsent)s)
         GROUP BY 1 ORDER BY 1
        """,
        {"start": start, "end": start + seconds, "bucket": bucket, "unsent": list(UNSENT_OUTCOMES)},
    ).fetchall()
    counts = {slot: (admitted, limited) for slot, admitted, limited in rows}
    return [
        {
            "t": round(slot * bucket, 1),
            "admitted": counts.get(slot, (0, 0))[0],
            "rate_limited": counts.get(slot, (0, 0))[1],
        }
        for slot in range(int(seconds // bucket))
    ]


def request_slot_reuse_lag(
    conn: psycopg.Connection, start: float, seconds: float, *, rpm: int
) -> dict[str, float] | None:
    """How late each expired request slot was spent again: for the admitted calls in order,
    call i + rpm started lag_i = t[i + rpm] - t[i] - 60 s after call i's slot left the window.
    Whole windows counted from a cold start hide this lag (each window's burst ends early), but
    in a long run it is what is lost: an RPM-bound pool runs at rpm / (60 + mean lag) calls/s,
    so 60 / (60 + mean lag) is its steady-state utilization. Claim times stand for call times
    (a few ms apart), so a lag may read slightly negative."""
    times = [
        float(row[0])
        for row in conn.execute(
            """
        SELECT extract(epoch FROM started_at) FROM extraction_attempts
         WHERE started_at >= to_timestamp(%(start)s) AND started_at < to_timestamp(%(end)s)
           AND outcome <> ALL(%(unsent)s) AND outcome <> 'rate_limited'
         ORDER BY started_at
        """,
            {"start": start, "end": start + seconds, "unsent": list(UNSENT_OUTCOMES)},
        )
    ]
    lags = [times[i + rpm] - times[i] - 60.0 for i in range(len(times) - rpm)]
    if not lags:
        return None
    mean = sum(lags) / len(lags)
    return {
        "n": len(lags),
        "mean": round(mean, 3),
        "p50": round(harness.percentile(lags, 0.5), 3),
        "p95": round(harness.percentile(lags, 0.95), 3),
        "min": round(min(lags), 3),
        "steady_state_utilization": round(60.0 / (60.0 + max(0.0, mean)), 4),
    }


@dataclass(frozen=True)
class JobTiming:
    """One job's way from acceptance to its end, by the database clock (epoch seconds)."""

    job_id: str
    state: str
    accepted_at: float
    ready_at: float | None
    claimed_at: float | None  # the claim of the attempt that ended it (the last claim)
    ended_at: float | None  # None while not terminal


def job_timings(conn: psycopg.Connection, job_ids: list[str]) -> list[JobTiming]:
    rows = conn.execute(
        """
        SELECT j.id::text, j.state, extract(epoch FROM j.created_at)::float8,
               (SELECT extract(epoch FROM min(e.created_at))::float8 FROM job_events e
                 WHERE e.job_id = j.id AND e.to_state = 'READY'),
               (SELECT extract(epoch FROM max(e.created_at))::float8 FROM job_events e
                 WHERE e.job_id = j.id AND e.to_state = 'RUNNING'),
               CASE WHEN j.state = ANY(%(terminal)s) THEN extract(epoch FROM j.updated_at)::float8 END
          FROM extraction_jobs j
         WHERE j.id = ANY(%(ids)s::uuid[])
        """,
        {"ids": job_ids, "terminal": list(harness.TERMINAL_STATES)},
    ).fetchall()
    return [JobTiming(*row) for row in rows]


def tenant_progress(conn: psycopg.Connection, tenant_id: uuid.UUID) -> dict[str, int]:
    return {
        state: int(n)
        for state, n in conn.execute(
            "SELECT state, count(*) FROM extraction_jobs WHERE tenant_id = %s GROUP BY state", [tenant_id]
        ).fetchall()
    }


# --- (c) the claim at two table sizes -----------------------------------------------------------

# The tables the fair claim reads or writes, copied per schema with their columns, defaults,
# constraints, indexes and the job_events NOTIFY trigger (foreign keys are not copied: nothing
# here could violate them).
CLAIM_TABLES = ("accounts_tenant", "accounts_tenantusage", "extraction_jobs", "job_events", "extraction_attempts")
CLAIM_TENANTS = 100
BACKLOG_TENANTS = 10
RUNNABLE_JOBS = 2_000
RUNNING_JOBS = 30
# Bumped whenever the shape of the generated history changes, so a cached schema is rebuilt.
CLAIM_SCHEMA_VERSION = 1


def prepare_claim_schema(schema: str, total_jobs: int, *, rebuild: bool = False) -> dict[str, Any]:
    """``schema`` with copies of the claim's tables holding ``total_jobs`` jobs: the same live
    work whatever the size (RUNNABLE_JOBS READY jobs of BACKLOG_TENANTS tenants, RUNNING_JOBS
    running) and the rest history — terminal: 90 % SUCCEEDED, 7 % FAILED_TERMINAL, 3 %
    REVIEW_REQUIRED — of CLAIM_TENANTS tenants over 30 days.

    The history takes minutes to build at 1,000,000 rows on a busy machine and nothing in a
    run changes it, so a schema built earlier with the same size and version is kept
    (``rebuild`` forces a new one); the live work is always deleted and inserted afresh."""
    started = time.monotonic()
    with psycopg.connect(SANDBOX.dsn(app="setup"), autocommit=True) as conn:
        marker = None
        if not rebuild:
            try:
                marker = conn.execute(f"SELECT total_jobs, version FROM {schema}.bench_marker").fetchone()
            except psycopg.errors.UndefinedTable:
                marker = None
        reused = marker == (total_jobs, CLAIM_SCHEMA_VERSION)
        if not reused:
            _build_claim_history(conn, schema, total_jobs)
        _insert_live_work(conn, schema)
        counts = dict(conn.execute(f"SELECT state, count(*) FROM {schema}.extraction_jobs GROUP BY state").fetchall())
        size = conn.execute(f"SELECT pg_total_relation_size('{schema}.extraction_jobs')").fetchone()[0]
    return {
        "schema": schema,
        "jobs": sum(counts.values()),
        "states": {k: int(v) for k, v in sorted(counts.items())},
        "table_and_indexes_mib": round(size / 1024 / 1024, 1),
        "history_reused": reused,
        "prepare_seconds": round(time.monotonic() - started, 1),
    }


def _build_claim_history(conn: psycopg.Connection, schema: str, total_jobs: int) -> None:
    conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    conn.execute(f"CREATE SCHEMA {schema}")
    for table in CLAIM_TABLES:
        conn.execute(f"CREATE TABLE {schema}.{table} (LIKE public.{table} INCLUDING ALL EXCLUDING INDEXES)")
    tenants = [uuid.uuid4() for _ in range(CLAIM_TENANTS)]
    conn.execute(
        f"""
        INSERT INTO {schema}.accounts_tenant (id, slug, name, created_at, max_pending_jobs, max_pending_bytes,
            max_reserved_tokens, daily_spend_limit_micros, allowed_currencies, max_in_flight,
            validation_overrides, weight, einvoice_intake, completion_target_seconds)
        SELECT t.id, 'claim-' || t.n, 'claim-' || t.n, now(), 1000000, 1000000000000, 1000000000000,
               1000000000000, '["EUR"]', 100000, '{{}}', 1, 'structured_first', 3600
          FROM unnest(%(tenants)s::uuid[]) WITH ORDINALITY AS t(id, n)
        """,
        {"tenants": tenants},
    )
    history = total_jobs - RUNNABLE_JOBS - RUNNING_JOBS
    # The history first, then the indexes (a bulk build is much faster than 1M index inserts).
    conn.execute(
        f"""
        INSERT INTO {schema}.extraction_jobs (
            id, tenant_id, document_id, document_version, idempotency_key, request_hash, schema,
            model_policy, options, priority_class, state, state_version, attempt, max_attempts, fence,
            lease_owner, available_at, deadline_at, estimated_tokens, byte_size, error_class,
            error_detail, created_at, updated_at)
        SELECT gen_random_uuid(), (%(tenants)s::uuid[])[1 + i %% %(n_tenants)s], gen_random_uuid(),
               gen_random_uuid(), 'h' || i, repeat('0', 64), 'invoice.v1', 'default', '{{}}', 'batch',
               CASE WHEN i %% 100 < 90 THEN 'SUCCEEDED' WHEN i %% 100 < 97 THEN 'FAILED_TERMINAL'
                    ELSE 'REVIEW_REQUIRED' END,
               4, 1, 5, 1, '', at, at + interval '1 day', 6000, 300, '', '', at, at + interval '20 seconds'
          FROM generate_series(1, %(history)s) AS i,
               LATERAL (SELECT now() - interval '30 days'
                               + (interval '30 days' - interval '1 hour') * i / %(history)s AS at) AS t
        """,
        {"history": history, "tenants": tenants, "n_tenants": CLAIM_TENANTS},
    )
    for table in CLAIM_TABLES:
        for (definition,) in conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = %s", [table]
        ).fetchall():
            conn.execute(definition.replace(f" ON public.{table} ", f" ON {schema}.{table} "))
    trigger = conn.execute(
        "SELECT pg_get_triggerdef(oid) FROM pg_trigger "
        "WHERE tgrelid = 'public.job_events'::regclass AND NOT tgisinternal"
    ).fetchone()
    if trigger is not None:  # the NOTIFY on job_events is part of every claim's cost
        conn.execute(
            trigger[0]
            .replace(" ON public.job_events ", f" ON {schema}.job_events ")
            .replace("EXECUTE FUNCTION ", "EXECUTE FUNCTION public.")
        )
    conn.execute(f"CREATE TABLE {schema}.bench_marker (total_jobs int, version int)")
    conn.execute(f"INSERT INTO {schema}.bench_marker VALUES (%s, %s)", [total_jobs, CLAIM_SCHEMA_VERSION])


def _insert_live_work(conn: psycopg.Connection, schema: str) -> None:
    """The live work, the newest rows: RUNNING_JOBS running, then RUNNABLE_JOBS READY jobs
    of BACKLOG_TENANTS tenants that arrived over the last hour, oldest first. Whatever an
    earlier run left (claimed jobs, their events and attempts) goes first."""
    conn.execute(
        f"DELETE FROM {schema}.extraction_jobs WHERE state NOT IN ('SUCCEEDED', 'FAILED_TERMINAL', 'REVIEW_REQUIRED')"
    )
    conn.execute(f"TRUNCATE {schema}.job_events, {schema}.extraction_attempts")
    tenants = [
        row[0]
        for row in conn.execute(f"SELECT id FROM {schema}.accounts_tenant ORDER BY id LIMIT %s", [BACKLOG_TENANTS])
    ]
    conn.execute(
        f"""
        INSERT INTO {schema}.extraction_jobs (
            id, tenant_id, document_id, document_version, idempotency_key, request_hash, schema,
            model_policy, options, priority_class, state, state_version, attempt, max_attempts, fence,
            lease_owner, lease_until, available_at, deadline_at, estimated_tokens, byte_size, error_class,
            error_detail, created_at, updated_at)
        SELECT gen_random_uuid(), (%(tenants)s::uuid[])[1 + i %% %(n_tenants)s], gen_random_uuid(),
               gen_random_uuid(), 'live-' || gen_random_uuid(), repeat('0', 64), 'invoice.v1', 'default', '{{}}',
               'batch', CASE WHEN i <= %(running)s THEN 'RUNNING' ELSE 'READY' END, 2,
               CASE WHEN i <= %(running)s THEN 1 ELSE 0 END, 5, CASE WHEN i <= %(running)s THEN 1 ELSE 0 END,
               CASE WHEN i <= %(running)s THEN 'w' ELSE '' END,
               CASE WHEN i <= %(running)s THEN now() + interval '1 hour' END,
               at, at + interval '1 day', 6000, 300, '', '', at, at
          FROM generate_series(1, %(live)s) AS i,
               LATERAL (SELECT now() - interval '1 hour' + interval '1 hour' * i / %(live)s AS at) AS t
        """,
        {"tenants": tenants, "n_tenants": len(tenants), "running": RUNNING_JOBS, "live": RUNNING_JOBS + RUNNABLE_JOBS},
    )
    conn.execute(f"UPDATE {schema}.accounts_tenantusage SET pending_jobs = 0")
    conn.execute(
        f"""
        INSERT INTO {schema}.accounts_tenantusage AS u (tenant_id, pending_jobs, pending_bytes, reserved_tokens,
                                                         spend_day, spent_today_micros)
        SELECT t.id, (SELECT count(*) FROM {schema}.extraction_jobs j
                       WHERE j.tenant_id = t.id AND j.state IN ('READY', 'RUNNING')), 0, 0, current_date, 0
          FROM {schema}.accounts_tenant t
        ON CONFLICT (tenant_id) DO UPDATE SET pending_jobs = excluded.pending_jobs
        """
    )
    conn.execute(f"VACUUM ANALYZE {schema}.extraction_jobs")
    for table in CLAIM_TABLES:
        conn.execute(f"ANALYZE {schema}.{table}")


def claim_params(worker: str) -> dict[str, Any]:
    from django.conf import settings

    # The values a claim of one job passes (lifecycle.claim_next_jobs).
    return {
        "worker": worker,
        "lease": settings.LEASE_SECONDS,
        "policies": list(settings.MODEL_POLICIES),
        "boost": settings.INTERACTIVE_PRIORITY_BOOST_SECONDS,
        "per_tenant": 4,
        "window": 64,
        "count": 1,
    }


class RawClaimTimer:
    """The bare claim statement (lifecycle.sql's claim_fair unless given) on its own connection, in ``schema``:
    each execution in a
    transaction that is rolled back, so every claim sees the same rows. A client-side-binding
    cursor, as Django's psycopg backend uses: the statement is planned at every execution (the
    worker's claim is prepared once per connection, which ClaimNextJobTimer measures; a rollback
    would drop psycopg's prepared statements, so this one cannot be)."""

    def __init__(self, schema: str, *, sql: str | None = None) -> None:
        self.sql = sql or claim_statement("fair")
        self.conn = psycopg.connect(SANDBOX.dsn(app=f"claim-{schema}"), cursor_factory=psycopg.ClientCursor)
        self.conn.execute(f"SET search_path TO {schema}, public")
        self.conn.commit()

    def time_one(self) -> float:
        params = claim_params("bench-raw")
        with self.conn.cursor() as cursor:
            started = time.perf_counter()
            cursor.execute(self.sql, params)
            row = cursor.fetchone()
            elapsed = time.perf_counter() - started
        self.conn.rollback()
        if row is None or row[0] is None:
            raise RuntimeError("the claim found no job")
        return elapsed

    def explain(self) -> dict[str, Any]:
        """Planning and execution time and the buffers the claim touched (EXPLAIN ANALYZE,
        rolled back)."""
        with self.conn.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + self.sql, claim_params("bench-explain"))
            plan = cursor.fetchone()[0][0]
        self.conn.rollback()
        hits, reads = _buffers(plan["Plan"])
        return {
            "planning_ms": round(plan.get("Planning Time", 0.0), 3),
            "execution_ms": round(plan.get("Execution Time", 0.0), 3),
            "shared_blocks_hit": hits,
            "shared_blocks_read": reads,
            "seq_scan_on_jobs": "extraction_jobs" in _seq_scans(plan["Plan"]),
        }

    def close(self) -> None:
        self.conn.close()


def _buffers(node: dict[str, Any]) -> tuple[int, int]:
    # A plan node's buffers include its children's: the top node's are the statement's.
    return int(node.get("Shared Hit Blocks", 0)), int(node.get("Shared Read Blocks", 0))


def _seq_scans(node: dict[str, Any]) -> list[str]:
    found = [node.get("Relation Name", "")] if node.get("Node Type") == "Seq Scan" else []
    for child in node.get("Plans", []):
        found += _seq_scans(child)
    return found


class ClaimNextJobTimer:
    """extraction.execution.lifecycle.claim_next_job as a worker calls it — its own transaction with the
    job event and attempt rows, committed — on a thread whose Django connection reads
    ``schema``. Each call claims a fresh runnable job."""

    def __init__(self, schema: str) -> None:
        import queue

        self.schema = schema
        self._requests: queue.Queue[int | None] = queue.Queue()
        self._results: queue.Queue[list[float] | BaseException] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=f"claim-{schema}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from django.db import connection

        from extraction.execution.lifecycle import claim_next_job

        with connection.cursor() as cursor:
            cursor.execute(f"SET search_path TO {self.schema}, public")
        while (count := self._requests.get()) is not None:
            try:
                times = []
                for _ in range(count):
                    started = time.perf_counter()
                    claim = claim_next_job(worker_id="bench-claim")
                    times.append(time.perf_counter() - started)
                    if claim is None:
                        raise RuntimeError(f"{self.schema}: the claim found no job")
                self._results.put(times)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                self._results.put(exc)
        connection.close()

    def time_batch(self, count: int) -> list[float]:
        self._requests.put(count)
        result = self._results.get(timeout=300)
        if isinstance(result, BaseException):
            raise result
        return result

    def close(self) -> None:
        self._requests.put(None)
        self._thread.join(timeout=30)


def _main(argv: list[str]) -> None:
    if argv[:1] != ["celery"] or "--" not in argv:
        raise SystemExit("usage: capacity_lib.py celery --claim C --admission A -- ARGS")
    split = argv.index("--")
    options = dict(zip(argv[1:split:2], argv[2:split:2], strict=True))
    run_celery_worker(
        claim=options.get("--claim", "fair"),
        admission=options.get("--admission", "shared"),
        celery_argv=argv[split + 1 :],
    )


if __name__ == "__main__":
    _main(sys.argv[1:])
