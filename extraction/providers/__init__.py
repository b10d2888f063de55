"""Which provider serves a model policy: policy → provider pool → provider instance.

Pools are configured in ``settings.PROVIDER_POOLS``; a provider instance (and its HTTP
connection pool) is built once per process and shared by every worker thread.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from django.conf import settings

from extraction.providers.base import Provider


@dataclass(frozen=True)
class PoolBinding:
    pool: str
    provider: Provider
    model: str
    max_output_tokens: int
    local_server: str = ""  # the base URL of our own model server, for a local pool


_bindings: dict[str, PoolBinding] = {}
_lock = threading.Lock()


def _build(pool_name: str) -> PoolBinding:
    config = settings.PROVIDER_POOLS[pool_name]
    kind = config["provider"]
    if kind == "builtin":
        from extraction.providers.builtin import BuiltinProvider

        provider: Provider = BuiltinProvider()
    elif kind == "openai":
        from extraction.providers.openai_compat import OpenAIProvider

        provider = OpenAIProvider(
            base_url=config["base_url"],
            api_key=os.environ.get(config.get("api_key_env", "OPENAI_API_KEY"), "") or "not-needed",
            token_limit_parameter=config.get("token_limit_parameter", "max_completion_tokens"),
            structured_output=config.get("structured_output", "openai_strict"),
            answer_format=config.get("answer_format", "invoice.v1"),
            sampling=config.get("sampling"),
            name=config.get("provider_name", "openai"),
        )
    else:
        raise ValueError(f"provider pool {pool_name!r}: unknown provider {kind!r}")
    return PoolBinding(
        pool=pool_name,
        provider=provider,
        model=config["model"],
        max_output_tokens=int(config.get("max_output_tokens", 2000)),
        local_server=config.get("local_server", ""),
    )


def provider_for_policy(policy_name: str) -> PoolBinding:
    pool_name = settings.MODEL_POLICIES[policy_name]["provider_pool"]
    with _lock:
        binding = _bindings.get(pool_name)
        if binding is None:
            binding = _bindings[pool_name] = _build(pool_name)
    return binding
