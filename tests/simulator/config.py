"""What a simulator is told at startup and on ``POST /_control``: quotas, latency and faults."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tests.simulator.dialects import DIALECTS

FAULTS = ("rate_limit", "error", "disconnect", "hang", "malformed", "refusal", "hallucination", "injection")
_Z95 = 1.6448536269514722


@dataclass(frozen=True)
class SimulatorConfig:
    latency_mean_seconds: float = 0.0
    latency_p95_seconds: float = 0.0  # 0 = every call takes the mean
    time_scale: float = 1.0
    rpm: int = 0  # 0 = no limit
    tpm: int = 0
    max_concurrency: int = 0
    rate_limit_rate: float = 0.0
    rate_limit_retry_after_seconds: float = 20.0  # the wait a simulated 429 asks for
    retry_after_format: str = "seconds"  # "seconds" (+ retry-after-ms), "http-date" or "none"
    error_rate: float = 0.0
    error_status: int = 500
    disconnect_rate: float = 0.0
    hang_rate: float = 0.0
    hang_seconds: float = 3600.0  # also ends as soon as the client hangs up
    malformed_rate: float = 0.0
    refusal_rate: float = 0.0
    hallucination_rate: float = 0.0
    injection_rate: float = 0.0  # chance to obey an injection, when the document has one
    api_key: str = ""  # when set, requests must send "Authorization: Bearer <key>"
    # The structured-output dialect the simulated server speaks (tests/simulator/dialects.py).
    structured_output: str = "openai_strict"
    seed: int | None = None
    # A bundle question (extraction.providers.boundaries) is answered with these first pages,
    # comma-separated ("1,4"); empty: with the pages the detector reads on what it was shown.
    boundary_answer: str = ""

    def __post_init__(self) -> None:
        if self.time_scale <= 0:
            raise ValueError("time_scale must be positive")
        if self.retry_after_format not in ("seconds", "http-date", "none"):
            raise ValueError("retry_after_format must be seconds, http-date or none")
        if self.structured_output not in DIALECTS:
            raise ValueError(f"structured_output must be one of {', '.join(DIALECTS)}")
        if not 100 <= self.error_status <= 599:
            raise ValueError("error_status must be an HTTP status")
        for name in ("rpm", "tpm", "max_concurrency"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        for fault in FAULTS:
            if not 0.0 <= getattr(self, f"{fault}_rate") <= 1.0:
                raise ValueError(f"{fault}_rate must be within [0, 1]")
        lognormal_parameters(self.latency_mean_seconds, self.latency_p95_seconds)

    def updated(self, changes: Mapping[str, Any]) -> SimulatorConfig:
        """A copy with ``changes`` applied, each value coerced to the field's type."""
        fields = {f.name: f for f in dataclasses.fields(self)}
        unknown = set(changes) - set(fields)
        if unknown:
            raise ValueError(f"unknown settings: {', '.join(sorted(unknown))}")
        return dataclasses.replace(self, **{name: _coerce(fields[name], value) for name, value in changes.items()})


def _coerce(field: dataclasses.Field, value: Any) -> Any:
    if value is None:
        if field.name == "seed":
            return None
        raise ValueError(f"{field.name} cannot be null")
    if field.default is None or isinstance(field.default, int) and not isinstance(field.default, bool):
        return int(value)
    if isinstance(field.default, float):
        return float(value)
    return str(value)


def lognormal_parameters(mean: float, p95: float) -> tuple[float, float]:
    """(mu, sigma) of the lognormal with this mean and 95th percentile.

    Solves mean = exp(mu + sigma²/2) and p95 = exp(mu + z·sigma), taking the smaller sigma (the
    other root is an absurd, extremely heavy tail). A lognormal cannot have p95 above
    exp(z²/2) ≈ 3.87 × its mean with that root; such a p95 is capped there.
    """
    if mean < 0 or p95 < 0:
        raise ValueError("latencies must be >= 0")
    if mean == 0:
        if p95 > 0:
            raise ValueError("a p95 needs a mean")
        return (-math.inf, 0.0)
    if p95 == 0:
        p95 = mean  # no p95 given: a constant latency
    if p95 < mean:
        raise ValueError("the p95 latency must be at least the mean")
    gap = math.log(p95) - math.log(mean)
    sigma = _Z95 - math.sqrt(max(0.0, _Z95 * _Z95 - 2 * gap))
    return (math.log(mean) - sigma * sigma / 2, sigma)
