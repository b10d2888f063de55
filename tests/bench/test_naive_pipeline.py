"""The naive baseline that bench/naive_bench.py measures ours against does what it claims: a
job accepted with INSERT, COMMIT and ``.delay()`` ends ``succeeded`` through a real ``acks_late``
Celery worker and the simulator, with one model call and the answer the product's prompt asks for."""

from __future__ import annotations

import os
import uuid

import psycopg
import pytest

from bench.harness import SAMPLE_INVOICE
from config.db import database_conninfo
from tests.system import VENV_BIN, SystemProcesses, celery_args, wait_for

pytestmark = pytest.mark.slow  # a Celery worker as a real process


def test_naive_jobs_end_succeeded_with_one_model_call_each(transactional_db, broker, sim, tmp_path):
    from bench import naive_pipeline  # its own Celery app, created only where it runs

    dsn = database_conninfo()
    naive_pipeline.app.conf.broker_url = broker
    worker = SystemProcesses(
        env={**os.environ, "NAIVE_DSN": dsn, "NAIVE_BROKER_URL": broker, "NAIVE_MODEL_URL": sim.base_url},
        log_dir=tmp_path,
    )
    with psycopg.connect(dsn) as conn:
        naive_pipeline.create_schema(conn)
        try:
            worker.start(
                "naive", [str(VENV_BIN / "celery"), *celery_args("naive", "naive", 4, app="bench.naive_pipeline")]
            )
            tenant = uuid.uuid4()
            job_ids = [naive_pipeline.accept(conn, tenant, [SAMPLE_INVOICE]) for _ in range(3)]

            def finished() -> list[tuple[str, str, dict | None]]:
                rows = conn.execute(
                    "SELECT id::text, state, result FROM naive_jobs WHERE finished_at IS NOT NULL ORDER BY id"
                ).fetchall()
                conn.commit()
                return rows if len(rows) == len(job_ids) else []

            rows = wait_for(finished, timeout=60, message=worker.logs)
        finally:
            worker.stop_all()
            conn.rollback()
            conn.execute("DROP TABLE naive_jobs")
            conn.commit()
    assert [(job_id, state) for job_id, state, _ in rows] == [(job_id, "succeeded") for job_id in sorted(job_ids)]
    assert {result["invoice_number"]["value"] for _, _, result in rows} == {"INV-2026-001"}
    assert {job: n for job, n in sim.stats()["calls_by_job"].items() if job} == dict.fromkeys(job_ids, 1)
