"""The capacity plan (CAP-1, CAP-3): the arithmetic, the command's output, and statistics read
from real attempt rows."""

from __future__ import annotations

import uuid
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from extraction.capacity import plan as capacity_plan
from extraction.execution import lifecycle
from extraction.execution.lifecycle import AttemptReport
from extraction.models import AttemptOutcome
from tests.factories import make_job, make_tenant

ARTICLE_FLAGS = {
    "rpm": 600,
    "tpm": 600_000,
    "reserved_tokens": 6000,
    "concurrency": 30,
    "mean_latency": 15,
    "attempts_per_job": 1.10,
    "backlog": 10_000,
    "arrival_rate": 1,
}


def plan_output(**options) -> str:
    out = StringIO()
    call_command("capacity_plan", stdout=out, **options)
    return out.getvalue()


# --- the arithmetic ---------------------------------------------------------------------------------


def test_article_numbers():
    attempts = capacity_plan.attempt_capacity(
        requests_per_minute=600,
        tokens_per_minute=600_000,
        reserved_tokens=6000,
        concurrency=30,
        mean_latency_seconds=15,
    )
    jobs = capacity_plan.job_capacity(attempts.per_second, attempts_per_job=1.10)
    assert round(attempts.per_second, 4) == 1.6667
    assert attempts.binding == "tpm"
    assert round(jobs, 4) == 1.5152
    assert capacity_plan.drain_seconds(10_000, jobs_per_second=jobs) == pytest.approx(6600)
    assert capacity_plan.drain_seconds(10_000, jobs_per_second=jobs, arrival_rate=1) == pytest.approx(
        19_411.76, abs=0.01
    )


@pytest.mark.parametrize(
    ("rpm", "tpm", "concurrency", "binding", "per_second"),
    [
        (60, 600_000, 30, "rpm", 1.0),  # 60/60 = 1 < 1.6667 < 2
        (600, 600_000, 30, "tpm", 600_000 / 360_000),
        (600, 6_000_000, 15, "concurrency", 1.0),  # 15 / 15 s = 1 < 10, < 16.67
    ],
)
def test_binding_limit_is_named(rpm, tpm, concurrency, binding, per_second):
    attempts = capacity_plan.attempt_capacity(
        requests_per_minute=rpm,
        tokens_per_minute=tpm,
        reserved_tokens=6000,
        concurrency=concurrency,
        mean_latency_seconds=15,
    )
    assert attempts.binding == binding
    assert attempts.per_second == pytest.approx(per_second)


def test_arrivals_at_or_above_capacity_never_drain():
    assert capacity_plan.drain_seconds(10_000, jobs_per_second=1.5, arrival_rate=1.5) is None
    assert capacity_plan.drain_seconds(10_000, jobs_per_second=1.5, arrival_rate=2.0) is None
    assert capacity_plan.drain_seconds(0, jobs_per_second=1.5, arrival_rate=2.0) == 0.0


def test_littles_law_in_flight():
    assert capacity_plan.littles_law_in_flight(arrival_rate=20, mean_service_seconds=15) == 300


def test_kv_cache_concurrency_counts_tokens_not_requests():
    sequences = capacity_plan.kv_cache_concurrency(kv_cache_tokens=48_000, reserved_tokens=6000)
    attempts = capacity_plan.attempt_capacity(
        requests_per_minute=600,
        tokens_per_minute=600_000,
        reserved_tokens=6000,
        concurrency=sequences,
        mean_latency_seconds=15,
    )
    assert sequences == 8
    assert attempts.binding == "concurrency"
    assert attempts.per_second == pytest.approx(8 / 15)


def test_non_positive_inputs_are_refused():
    with pytest.raises(ValueError, match="mean_latency_seconds"):
        capacity_plan.attempt_capacity(
            requests_per_minute=600,
            tokens_per_minute=600_000,
            reserved_tokens=6000,
            concurrency=30,
            mean_latency_seconds=0,
        )


# --- the command -------------------------------------------------------------------------------------


def test_command_prints_the_article_plan_for_a_pool_that_does_not_exist(db):
    output = plan_output(**ARTICLE_FLAGS)
    assert "not configured" in output
    assert "1.6667 attempts/s (binding: tpm)" in output
    assert "1.5152 jobs/s" in output
    assert "drain of 10,000 jobs: 6,600 s (1 h 50 min)" in output
    assert "with 1.0000 jobs/s arriving: ≈19,412 s (5 h 23 min)" in output


def test_command_says_never_when_arrivals_exceed_capacity(db):
    output = plan_output(**{**ARTICLE_FLAGS, "arrival_rate": 2})
    assert "never: arrivals exceed capacity" in output


def test_command_names_the_missing_limits_of_a_new_pool(db):
    with pytest.raises(CommandError, match="--tpm"):
        plan_output(pool="not-there-yet", rpm=600)


def test_command_plans_a_kv_cache_pool_from_its_configuration(db, settings):
    pool = f"vllm-{uuid.uuid4().hex[:8]}"
    settings.PROVIDER_POOLS = {
        pool: {
            "provider": "builtin",
            "model": "m",
            "requests_per_minute": 6000,
            "tokens_per_minute": 6_000_000,
            "max_in_flight": 500,
            "reserved_tokens": 6000,
            "budget": "kv_tokens",
            "kv_cache_tokens": 48_000,
        }
    }
    settings.MODEL_POLICIES = {}
    output = plan_output(pool=pool, mean_latency=15)
    assert "KV-cache tokens       48,000" in output
    assert "0.5333 attempts/s (binding: concurrency)" in output  # 8 sequences / 15 s, not 500 / 15 s


# --- observed statistics from the ledger ---------------------------------------------------------------


@pytest.fixture
def pool_setup(db, settings):
    pool = f"obs-{uuid.uuid4().hex[:8]}"
    other = f"other-{uuid.uuid4().hex[:8]}"
    settings.PROVIDER_POOLS = {
        name: {
            "provider": "builtin",
            "model": "m",
            "requests_per_minute": 600,
            "tokens_per_minute": 600_000,
            "max_in_flight": 30,
            "reserved_tokens": 6000,
        }
        for name in (pool, other)
    }
    settings.MODEL_POLICIES = {
        "p-main": {"provider_pool": pool, "reserved_tokens": 6000, "price_per_1k_tokens_micros": 0},
        "p-other": {"provider_pool": other, "reserved_tokens": 6000, "price_per_1k_tokens_micros": 0},
    }
    tenant = make_tenant()
    return pool, other, tenant


def run_to_success(policy: str, *, latency_ms: int, **report: Any) -> None:
    """Claim the policy's next job and complete it; ``report`` adds to the attempt's ledger row."""
    claim = lifecycle.claim_next_job(worker_id="w", policies=[policy])
    assert claim is not None
    assert lifecycle.complete_job(
        claim,
        review_required=False,
        output={},
        validation={},
        policy_version="t",
        report=AttemptReport(outcome=AttemptOutcome.SUCCEEDED, latency_ms=latency_ms, **report),
    )


def test_observed_stats_come_from_answered_attempts_of_the_pool(pool_setup):
    pool, _, tenant = pool_setup
    assert capacity_plan.observed_stats(pool) is None

    make_job(tenant, model_policy="p-main")
    run_to_success("p-main", latency_ms=10_000)

    make_job(tenant, model_policy="p-main")
    # Handed back for capacity: no attempt spent, no latency.
    claim = lifecycle.claim_next_job(worker_id="w", policies=["p-main"])
    assert lifecycle.hand_back(
        claim, available_in_seconds=0, outcome=AttemptOutcome.CAPACITY_DEFERRED, detail=f"pool {pool}: rpm"
    )
    # Timed out after sending: an attempt spent, no answer, so no latency.
    claim = lifecycle.claim_next_job(worker_id="w", policies=["p-main"])
    assert (
        lifecycle.retry_or_fail(
            claim,
            report=AttemptReport(outcome=AttemptOutcome.UNCERTAIN),
            retry=True,
            delay_seconds=0,
            error_class="timeout",
        )
        == "retry"
    )
    run_to_success("p-main", latency_ms=20_000)

    make_job(tenant, model_policy="p-other")
    run_to_success("p-other", latency_ms=99_000)

    stats = capacity_plan.observed_stats(pool)
    assert stats is not None
    assert stats.mean_latency_seconds == pytest.approx(15.0)  # (10 s + 20 s) / 2; the other pool's 99 s left out
    assert stats.answered_attempts == 2
    assert stats.attempts_per_job == pytest.approx(1.5)  # 1 and 2 attempts; the hand-back is not one
    assert stats.finished_jobs == 2


def test_attempts_the_e_invoice_reader_answered_are_not_the_pools(pool_setup):
    pool, _, tenant = pool_setup
    make_job(tenant, model_policy="p-main")
    run_to_success("p-main", latency_ms=30_000)
    make_job(tenant, model_policy="p-main")
    run_to_success("p-main", latency_ms=4, provider="einvoice", input_tokens=0, output_tokens=0)

    stats = capacity_plan.observed_stats(pool)

    assert stats is not None
    assert (stats.mean_latency_seconds, stats.answered_attempts, stats.finished_jobs) == (pytest.approx(30.0), 1, 1)


def test_command_says_which_values_were_observed_and_which_assumed(pool_setup):
    pool, other, tenant = pool_setup
    make_job(tenant, model_policy="p-main")
    run_to_success("p-main", latency_ms=12_000)
    make_job(tenant, model_policy="p-main")
    make_job(tenant, model_policy="p-main")  # two pending jobs: the live backlog

    output = plan_output()
    main, rest = output.split(f"Pool {other}")
    assert f"Pool {pool}" in main
    assert "mean latency          12.000 s              observed: 1 answered attempt," in main
    assert "attempts per job      1.0000                observed: 1 finished job," in main
    assert "backlog               2 jobs                observed: pending jobs now" in main
    assert "requests per minute   600                   configured" in main
    # 600,000 / 360,000 = 1.6667 < 30 / 12 s = 2.5 < 10
    assert "1.6667 attempts/s (binding: tpm)" in main
    # Nothing observed for the other pool: the article's assumptions, said so.
    assert "mean latency          15.000 s              assumed: nothing observed" in rest
    assert "attempts per job      1.1000                assumed: nothing observed" in rest


def test_a_given_value_overrides_the_observed_one(pool_setup):
    pool, _, tenant = pool_setup
    make_job(tenant, model_policy="p-main")
    run_to_success("p-main", latency_ms=12_000)
    output = plan_output(pool=pool, mean_latency=60)
    assert "mean latency          60.000 s              given" in output
    assert "0.5000 attempts/s (binding: concurrency)" in output  # 30 / 60 s


def test_the_plan_uses_the_tokens_the_provider_reported_per_call(pool_setup):
    pool, _, tenant = pool_setup
    for input_tokens, output_tokens in ((2000, 400), (2600, 600)):
        make_job(tenant, model_policy="p-main")
        run_to_success("p-main", latency_ms=30_000, input_tokens=input_tokens, output_tokens=output_tokens)
    stats = capacity_plan.observed_stats(pool)
    assert (stats.mean_tokens, stats.counted_attempts) == (2800.0, 2)
    output = plan_output(pool=pool)
    assert "mean tokens of 2 answered attempts" in output
    # 600,000 / (60 × 2,800) = 3.5714 > 30 / 30 s = 1: the slots bind, not the token budget.
    assert "1.0000 attempts/s (binding: concurrency)" in output
