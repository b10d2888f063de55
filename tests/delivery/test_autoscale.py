"""The delivery workers' share of the autoscaling signal: a replica per 16 deliveries being sent
or sendable now (config/autoscaling.py)."""

from __future__ import annotations

from delivery.endpoints import register_endpoint
from tests.config.test_autoscaling import autoscale_replicas


def test_delivery_replicas_follow_sendable_deliveries(tenant, loopback, connect_guard, settings):
    settings.DELIVERY_WORKER_CONCURRENCY = 16
    assert autoscale_replicas()[("delivery", "")] == 0
    for n in range(20):
        # Each registration queues its signed verification event, due now (nothing is sent here).
        register_endpoint(
            tenant=tenant.tenant, url=f"http://127.0.0.1:9/hooks/{n}", event_types=["extraction.completed.v1"]
        )
    assert autoscale_replicas()[("delivery", "")] == 2  # 20 sendable deliveries, 16 per replica
    assert [address for address in connect_guard.attempts if address[1] == 9] == []  # no receiver was called
