"""What a local model server reports about itself (BP-6): its queue, its slots, its speed.

``llama-server --metrics --slots`` publishes Prometheus text on ``/metrics`` and each slot's
state on ``/slots``. :func:`read` takes both with a short timeout; a server that does not answer
is reported as down rather than waited for, because the caller is a ``/metrics`` scrape.
"""

from __future__ import annotations

from dataclasses import dataclass

import requests
from prometheus_client.parser import text_string_to_metric_families

# The server's gauges we re-export, by their names without the "llamacpp:" prefix.
GAUGES = {
    "requests_processing": "Requests the server is generating for now.",
    "requests_deferred": "Requests waiting at the server for a free slot.",
    "prompt_tokens_seconds": "Prompt tokens processed per second (the server's running average).",
    "predicted_tokens_seconds": "Tokens generated per second (the server's running average).",
    "n_busy_slots_per_decode": "Busy slots per decode step, on average.",
}
COUNTERS = {
    "prompt_tokens_total": "Prompt tokens processed since the server started.",
    "tokens_predicted_total": "Tokens generated since the server started.",
}
_TIMEOUT = (0.5, 1.0)


@dataclass(frozen=True)
class ServerReport:
    values: dict[str, float]  # GAUGES and COUNTERS present in the server's answer
    slots: int
    slots_busy: int
    context_tokens_per_slot: int


def read(base_url: str, *, session: requests.Session | None = None) -> ServerReport | None:
    """The server's report, or None when it does not answer both endpoints quickly."""
    http = session or requests
    try:
        metrics = http.get(f"{base_url}/metrics", timeout=_TIMEOUT)
        slots = http.get(f"{base_url}/slots", timeout=_TIMEOUT)
        metrics.raise_for_status()
        slots.raise_for_status()
        slot_states = slots.json()
    except (requests.RequestException, ValueError):
        return None
    return ServerReport(
        values=parse_metrics(metrics.text),
        slots=len(slot_states),
        slots_busy=sum(1 for slot in slot_states if slot.get("is_processing")),
        context_tokens_per_slot=max((int(slot.get("n_ctx") or 0) for slot in slot_states), default=0),
    )


def parse_metrics(text: str) -> dict[str, float]:
    wanted = set(GAUGES) | set(COUNTERS)
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name = sample.name.removeprefix("llamacpp:")
            if name in wanted and not sample.labels:
                values[name] = float(sample.value)
    return values
