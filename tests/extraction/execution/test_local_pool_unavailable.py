"""A local pool whose own model server is not serving (restarting, loading its model) hands its
jobs back unspent and cools the pool down; a hosted provider's refusal still spends the attempt.

The "server" is the provider simulator answering 503 the way llama-server does while it loads,
or a loopback port nothing listens on."""

from __future__ import annotations

import uuid

import pytest

from extraction.capacity import limiter
from extraction.execution import worker
from extraction.execution.runtime import WorkerRuntime
from extraction.models import Attempt, ExtractionJob, JobState
from tests.factories import make_job
from tests.local_model import free_port


def _pool(settings, base_url: str, *, local: bool) -> str:
    pool = f"local-{uuid.uuid4().hex[:10]}"
    settings.PROVIDER_POOLS = {
        pool: {
            "provider": "openai",
            "model": "sim-model",
            "base_url": f"{base_url}/v1" if not base_url.endswith("/v1") else base_url,
            "api_key_env": "LOCAL_POOL_TEST_API_KEY",
            "token_limit_parameter": "max_tokens",
            "structured_output": "json_schema",
            "max_output_tokens": 2000,
            "requests_per_minute": 600,
            "tokens_per_minute": 600_000,
            "max_in_flight": 2,
            "reserved_tokens": 4000,
            **({"local_server": base_url.removesuffix("/v1")} if local else {}),
        }
    }
    settings.MODEL_POLICIES = {
        f"p-{pool}": {"provider_pool": pool, "reserved_tokens": 4000, "price_per_1k_tokens_micros": 0}
    }
    limiter.reset_pool(pool)
    return pool


@pytest.mark.django_db(transaction=True)
def test_a_loading_local_server_hands_the_job_back_unspent_and_cools_the_pool(tenant, settings, sim):
    pool = _pool(settings, sim.base_url, local=True)
    sim.control(error_next=1, error_status=503)
    job_id = make_job(tenant.tenant, model_policy=f"p-{pool}").pk

    assert worker.run_slot(WorkerRuntime(worker_id="w-local")) == 1

    job = ExtractionJob.objects.get(pk=job_id)
    assert (job.state, job.attempt) == (JobState.READY, 0)
    assert list(Attempt.objects.filter(job_id=job_id).values_list("outcome", "number")) == [("capacity_deferred", 1)]
    assert "local model server not serving" in Attempt.objects.get(job_id=job_id).error_detail
    snapshot = limiter.snapshot(limiter.pool_limits(pool))
    assert snapshot is not None and snapshot.cooldown_remaining_seconds > 0
    assert sim.stats()["calls_by_job"] == {str(job_id): 1}
    limiter.reset_pool(pool)


@pytest.mark.django_db(transaction=True)
def test_a_local_server_that_refuses_connections_spends_no_attempt(tenant, settings):
    pool = _pool(settings, f"http://127.0.0.1:{free_port()}", local=True)
    job_id = make_job(tenant.tenant, model_policy=f"p-{pool}").pk

    assert worker.run_slot(WorkerRuntime(worker_id="w-local")) == 1

    job = ExtractionJob.objects.get(pk=job_id)
    assert (job.state, job.attempt) == (JobState.READY, 0)
    assert list(Attempt.objects.filter(job_id=job_id).values_list("outcome", flat=True)) == ["capacity_deferred"]
    limiter.reset_pool(pool)


@pytest.mark.django_db(transaction=True)
def test_a_hosted_provider_refusing_connections_still_spends_the_attempt(tenant, settings):
    pool = _pool(settings, f"http://127.0.0.1:{free_port()}", local=False)
    job_id = make_job(tenant.tenant, model_policy=f"p-{pool}").pk

    assert worker.run_slot(WorkerRuntime(worker_id="w-hosted")) == 1

    job = ExtractionJob.objects.get(pk=job_id)
    assert (job.state, job.attempt) == (JobState.RETRY_SCHEDULED, 1)
    assert list(Attempt.objects.filter(job_id=job_id).values_list("outcome", flat=True)) == ["provider_error"]
    limiter.reset_pool(pool)
