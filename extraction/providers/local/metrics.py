"""Local model servers as ``/metrics`` reports them (config.metrics calls ``collect`` after its
database transaction), beside the pool's headroom that extraction.capacity.metrics reports: BP-6
for a server we run ourselves."""

from __future__ import annotations

from django.conf import settings

from config.metrics import Metric, Sample
from extraction.providers.local import telemetry


def local_server_pools() -> dict[str, str]:
    """Pool name → base URL of its local server, for the pools that have one."""
    return {
        name: config["local_server"] for name, config in settings.PROVIDER_POOLS.items() if config.get("local_server")
    }


def collect() -> list[Metric]:
    up = Metric("extraction_local_model_up", "1 when the pool's local model server answered this scrape.")
    slots = Metric("extraction_local_model_slots", "Requests the server can serve at once (its slots).")
    busy = Metric("extraction_local_model_slots_busy", "Slots generating now.")
    context = Metric("extraction_local_model_context_tokens_per_slot", "Context (KV-cache) tokens each slot holds.")
    gauges = {
        name: Metric(f"extraction_local_model_{name}", description) for name, description in telemetry.GAUGES.items()
    }
    counters = {
        name: Metric(f"extraction_local_model_{name}", description, kind="counter")
        for name, description in telemetry.COUNTERS.items()
    }
    for pool, base_url in local_server_pools().items():
        label = (("pool", pool),)
        report = telemetry.read(base_url)
        up.samples.append(Sample(0 if report is None else 1, label))
        if report is None:
            continue
        slots.samples.append(Sample(report.slots, label))
        busy.samples.append(Sample(report.slots_busy, label))
        context.samples.append(Sample(report.context_tokens_per_slot, label))
        for name, value in report.values.items():
            (gauges.get(name) or counters[name]).samples.append(Sample(value, label))
    return [up, slots, busy, context, *gauges.values(), *counters.values()]
