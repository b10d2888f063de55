"""The running simulator's memory: its configuration, quota windows, forced faults and counters."""

from __future__ import annotations

import dataclasses
import math
import random
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from extraction.intake.text import DocumentText
from tests.simulator.config import FAULTS, SimulatorConfig, lognormal_parameters

Extractor = Callable[[DocumentText], dict]

# ~4 characters per token: good enough for quotas and usage; the simulator is not a tokenizer.
CHARS_PER_TOKEN = 4
# Enough for a test to look at what its last calls asked for; a benchmark must not grow memory.
_RECENT_REQUESTS = 50


@dataclass
class Admission:
    """A call's place in the quota windows; its tokens are corrected once its answer is known."""

    admitted_at: float
    tokens: int


@dataclass(frozen=True)
class Rejection:
    status: int
    limit_type: str  # "requests", "tokens" or "concurrency"
    message: str
    retry_after: float | None  # real seconds


class SimulatorState:
    """Configuration, quota windows, forced faults and statistics of one running simulator.

    Touched only from the event loop's thread, so a check-and-take needs no lock as long as it
    does not await in between.
    """

    def __init__(self, config: SimulatorConfig, extractor: Extractor, clock: Callable[[], float] = time.monotonic):
        self.startup_config = config
        self.extractor = extractor
        self.clock = clock
        # Calls in flight are a fact about open connections, not a statistic: reset keeps them.
        self.in_flight = 0
        self._restore(config)

    def reset(self) -> None:
        self._restore(self.startup_config)

    def _restore(self, config: SimulatorConfig) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.pending: Counter[str] = Counter()
        self.requests_window: deque[Admission] = deque()
        self.calls = 0
        self.outcomes: Counter[str] = Counter()
        self.calls_by_job: Counter[str] = Counter()
        self.recent_requests: deque[dict[str, Any]] = deque(maxlen=_RECENT_REQUESTS)
        self.peak_in_flight = self.in_flight
        self.abandoned = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def control(self, changes: Mapping[str, Any]) -> None:
        changes = dict(changes)
        forced = {key: changes.pop(key) for key in list(changes) if key.endswith("_next")}
        for key in forced:
            if key.removesuffix("_next") not in FAULTS:
                raise ValueError(f"unknown fault {key}")
        config = self.config.updated(changes)
        if config.seed != self.config.seed:
            self.rng = random.Random(config.seed)
        self.config = config
        for key, count in forced.items():
            self.pending[key.removesuffix("_next")] = int(count)

    def draw(self, fault: str) -> bool:
        """Does ``fault`` strike this call? Forced "next N" calls first, then the probability."""
        if self.pending[fault] > 0:
            self.pending[fault] -= 1
            return True
        rate = getattr(self.config, f"{fault}_rate")
        return rate > 0 and self.rng.random() < rate

    def latency(self) -> float:
        """A service time in real seconds."""
        mu, sigma = lognormal_parameters(self.config.latency_mean_seconds, self.config.latency_p95_seconds)
        if mu == -math.inf:
            return 0.0
        return self.rng.lognormvariate(mu, sigma) * self.config.time_scale

    @property
    def window_seconds(self) -> float:
        return 60.0 * self.config.time_scale

    def admit(self, tokens: int) -> Admission | Rejection:
        """Take a concurrency permit, a request and ``tokens`` from the windows, or say why not."""
        config, now = self.config, self.clock()
        window = self.window_seconds
        while self.requests_window and self.requests_window[0].admitted_at <= now - window:
            self.requests_window.popleft()
        if config.max_concurrency and self.in_flight >= config.max_concurrency:
            # No window to wait out: suggest one mean service time.
            wait = max(config.latency_mean_seconds * config.time_scale, 0.001)
            return Rejection(
                429, "concurrency", f"Too many concurrent requests (limit {config.max_concurrency}).", wait
            )
        if config.rpm and len(self.requests_window) >= config.rpm:
            frees_at = self.requests_window[len(self.requests_window) - config.rpm].admitted_at + window
            return Rejection(
                429, "requests", f"Rate limit reached for requests per min (limit {config.rpm}).", frees_at - now
            )
        if config.tpm:
            if tokens > config.tpm:
                return Rejection(
                    400, "tokens", f"Request too large: {tokens} tokens, limit {config.tpm} per min.", None
                )
            used = sum(admission.tokens for admission in self.requests_window)
            if used + tokens > config.tpm:
                return Rejection(
                    429,
                    "tokens",
                    f"Rate limit reached for tokens per min (limit {config.tpm}, used {used}, requested {tokens}).",
                    self._tokens_free_at(used + tokens - config.tpm) + window - now,
                )
        admission = Admission(admitted_at=now, tokens=tokens)
        self.requests_window.append(admission)
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        return admission

    def release(self) -> None:
        """Give back the concurrency permit of a call that has answered (or given up)."""
        self.in_flight -= 1

    def _tokens_free_at(self, needed: int) -> float:
        freed = 0
        for admission in self.requests_window:
            freed += admission.tokens
            if freed >= needed:
                return admission.admitted_at
        return self.requests_window[-1].admitted_at

    def rate_limit_headers(self) -> dict[str, str]:
        config, now = self.config, self.clock()
        window = self.window_seconds
        live = [a for a in self.requests_window if a.admitted_at > now - window]
        headers: dict[str, str] = {}
        # OpenAI's reset: the time until the window is back to its full budget.
        reset = _duration((live[-1].admitted_at + window - now) if live else 0.0)
        if config.rpm:
            headers["x-ratelimit-limit-requests"] = str(config.rpm)
            headers["x-ratelimit-remaining-requests"] = str(max(0, config.rpm - len(live)))
            headers["x-ratelimit-reset-requests"] = reset
        if config.tpm:
            headers["x-ratelimit-limit-tokens"] = str(config.tpm)
            headers["x-ratelimit-remaining-tokens"] = str(max(0, config.tpm - sum(a.tokens for a in live)))
            headers["x-ratelimit-reset-tokens"] = reset
        return headers

    def stats(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "outcomes": dict(self.outcomes),
            "rate_limited": self.outcomes["rate_limited"],
            "calls_by_job": dict(self.calls_by_job),
            "recent_requests": list(self.recent_requests),
            "concurrency": {"current": self.in_flight, "peak": self.peak_in_flight},
            # Answered after the client had hung up: generated and billed all the same (CAP-2).
            "abandoned": self.abandoned,
            "tokens": {"prompt": self.prompt_tokens, "completion": self.completion_tokens},
            "pending_faults": {fault: count for fault, count in self.pending.items() if count},
            "config": dataclasses.asdict(self.config),
        }


def _duration(seconds: float) -> str:
    """OpenAI's reset format: ``250ms``, ``1.5s``, ``6m0s``."""
    seconds = max(0.0, seconds)
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    minutes, rest = divmod(seconds, 60)
    text = f"{rest:.3f}".rstrip("0").rstrip(".") + "s"
    return f"{int(minutes)}m{text}" if minutes else text


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)
