from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from extraction.capacity import limiter
from extraction.execution import claims, completions, take_ins


@pytest.fixture
def process_batchers_reset() -> Iterator[None]:
    """The process's batchers built afresh in the test (with the settings it sets) and forgotten
    after it, so no other test inherits their batch sizes."""
    batchers = (claims.batcher, completions.batcher, take_ins.batcher)
    for batcher in batchers:
        batcher.reset()
    yield
    for batcher in batchers:
        batcher.reset()


@pytest.fixture
def sim_policy(transactional_db, sim, settings) -> Iterator[Callable[..., str]]:
    """``sim_policy(**keys)``: the name of a model policy on a pool of its own that calls the
    simulator; ``keys`` are the policy's own (``reading``, ``bundle_second_reader``)."""
    pools: list[str] = []

    def make(**keys: Any) -> str:
        pool = f"sim-{uuid.uuid4().hex[:10]}"
        settings.PROVIDER_POOLS = {
            **settings.PROVIDER_POOLS,
            pool: {
                "provider": "openai",
                "model": "sim-model",
                "base_url": sim.base_url,
                "api_key_env": "SIM_POLICY_TEST_API_KEY",
                "max_output_tokens": 4000,
                "requests_per_minute": 600,
                "tokens_per_minute": 600_000,
                "max_in_flight": 30,
                "reserved_tokens": 6000,
            },
        }
        settings.MODEL_POLICIES = {
            **settings.MODEL_POLICIES,
            f"p-{pool}": {"provider_pool": pool, "reserved_tokens": 6000, "price_per_1k_tokens_micros": 0, **keys},
        }
        limiter.reset_pool(pool)
        pools.append(pool)
        return f"p-{pool}"

    yield make
    for pool in pools:
        limiter.reset_pool(pool)
