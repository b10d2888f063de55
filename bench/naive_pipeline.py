"""The naive baseline: the design most teams write first for this job, to measure ours against.

One table. Accepting is ``INSERT``, ``COMMIT``, then ``extract.delay(job_id)``; an ``acks_late``
Celery worker (prefetch 1, publisher confirms, a thread per call) reads the job, sends the
document to the model with the product's own prompt and JSON schema through the OpenAI SDK, and
writes the answer. Nothing else: a crash between the INSERT and ``.delay()`` loses the job, a
client retry or a redelivery pays for a second call, a 429 or a malformed answer ends the job
``failed``, and there is no limiter, fairness, validation or delivery. bench/naive_bench.py runs
it beside ours; it never runs in production.

Configured by the environment (bench/naive_bench.py sets it): ``NAIVE_DSN`` (its own database),
``NAIVE_BROKER_URL`` (its own vhost), ``NAIVE_MODEL_URL`` (the simulator), ``NAIVE_DB_POOL``.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from typing import Any

import openai
import psycopg
import psycopg_pool
from celery import Celery

from extraction.intake.text import DocumentText
from extraction.providers.prompt import build_messages
from extraction.providers.structured_output import response_format
from extraction.validation.schema import JSON_SCHEMA_NAME, invoice_v1_json_schema

SCHEMA = """
CREATE TABLE IF NOT EXISTS naive_jobs (
    id          uuid PRIMARY KEY,
    tenant_id   uuid NOT NULL,
    pages       jsonb NOT NULL,
    state       text NOT NULL DEFAULT 'queued',
    result      jsonb,
    error       text,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at timestamptz
)
"""
INSERT_JOB = "INSERT INTO naive_jobs (id, tenant_id, pages) VALUES (%s, %s, %s)"
READ_JOB = "SELECT pages FROM naive_jobs WHERE id = %s"
FINISH_JOB = """
UPDATE naive_jobs SET state = %s, result = %s, error = %s, finished_at = clock_timestamp() WHERE id = %s
"""
MODEL = "naive-bench"
RESPONSE_FORMAT = response_format("openai_strict", name=JSON_SCHEMA_NAME, schema=invoice_v1_json_schema())

# Not the current app: imported beside the product's (by the bench and its test), it must not
# take over ``celery.current_app``.
app = Celery(
    "naive",
    broker=os.environ.get("NAIVE_BROKER_URL", "amqp://guest:guest@127.0.0.1:5672/benchnaive"),
    set_as_current=False,
)
app.conf.update(
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    broker_transport_options={"confirm_publish": True},
    task_default_queue="naive",
    task_ignore_result=True,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
)

_pool: psycopg_pool.ConnectionPool | None = None
_client: openai.OpenAI | None = None
_lock = threading.Lock()


def database() -> psycopg_pool.ConnectionPool:
    """One pool per process, opened on first use (after Celery has started its threads)."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = psycopg_pool.ConnectionPool(
                os.environ.get("NAIVE_DSN", "host=127.0.0.1 user=postgres dbname=benchnaive"),
                min_size=1,
                max_size=int(os.environ.get("NAIVE_DB_POOL", "20")),
                open=True,
            )
        return _pool


def model() -> openai.OpenAI:
    """One SDK client for the process, as its README shows."""
    global _client
    with _lock:
        if _client is None:
            _client = openai.OpenAI(base_url=os.environ.get("NAIVE_MODEL_URL"), api_key="naive")
        return _client


def create_schema(conn: psycopg.Connection[Any]) -> None:
    conn.execute(SCHEMA)
    conn.execute("TRUNCATE naive_jobs")
    conn.commit()


def accept(conn: psycopg.Connection[Any], tenant_id: uuid.UUID, pages: list[str]) -> str:
    """The write path: the row, its commit, then the message (a crash in between loses the job)."""
    job_id = str(uuid.uuid4())
    conn.execute(INSERT_JOB, [job_id, tenant_id, json.dumps(pages)])
    conn.commit()
    extract.delay(job_id)
    return job_id


@app.task(name="naive.extract")
def extract(job_id: str) -> None:
    with database().connection() as conn:
        row = conn.execute(READ_JOB, [job_id]).fetchone()
    if row is None:
        return
    messages = build_messages(DocumentText(pages=tuple(row[0])), "invoice.v1")
    try:
        completion = model().chat.completions.create(
            model=MODEL,
            messages=messages,  # type: ignore[arg-type]
            response_format=RESPONSE_FORMAT,  # type: ignore[arg-type]
            extra_headers={"X-Job-Id": job_id},
        )
        answer = json.loads(completion.choices[0].message.content or "")
        state, result, error = "succeeded", json.dumps(answer), None
    except (openai.OpenAIError, ValueError) as exc:
        state, result, error = "failed", None, repr(exc)
    with database().connection() as conn:
        conn.execute(FINISH_JOB, [state, result, error, job_id])
