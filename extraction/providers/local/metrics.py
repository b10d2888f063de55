"""Local model servers as ``/metrics`` reports them (config.metrics calls ``collect`` after its
database transaction), beside the pool's headroom that extraction.capacity.metrics reports: BP-6
for a server we run ourselves."""

from __future__ import annotations

from django.conf import settings
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from extraction.providers.local import telemetry


def local_server_pools() -> dict[str, str]:
    """Pool name → base URL of its local server, for the pools that have one."""
    return {
        name: config["local_server"] for name, config in settings.PROVIDER_POOLS.items() if config.get("local_server")
    }


def collect() -> list[Metric]:
    pool = ["pool"]
    up = GaugeMetricFamily(
        "extraction_local_model_up", "1 when the pool's local model server answered this scrape.", labels=pool
    )
    slots = GaugeMetricFamily(
        "extraction_local_model_slots", "Requests the server can serve at once (its slots).", labels=pool
    )
    busy = GaugeMetricFamily("extraction_local_model_slots_busy", "Slots generating now.", labels=pool)
    context = GaugeMetricFamily(
        "extraction_local_model_context_tokens_per_slot", "Context (KV-cache) tokens each slot holds.", labels=pool
    )
    # The server's own counters keep their names (prompt_tokens_total: the family is
    # prompt_tokens, its sample prompt_tokens_total).
    reported: dict[str, GaugeMetricFamily | CounterMetricFamily] = {
        **{
            name: GaugeMetricFamily(f"extraction_local_model_{name}", description, labels=pool)
            for name, description in telemetry.GAUGES.items()
        },
        **{
            name: CounterMetricFamily(f"extraction_local_model_{name}", description, labels=pool)
            for name, description in telemetry.COUNTERS.items()
        },
    }
    for name, base_url in local_server_pools().items():
        report = telemetry.read(base_url)
        up.add_metric([name], 0 if report is None else 1)
        if report is None:
            continue
        slots.add_metric([name], report.slots)
        busy.add_metric([name], report.slots_busy)
        context.add_metric([name], report.context_tokens_per_slot)
        for figure, value in report.values.items():
            reported[figure].add_metric([name], value)
    return [up, slots, busy, context, *reported.values()]
