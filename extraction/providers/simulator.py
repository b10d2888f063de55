"""A provider simulator: a real OpenAI-compatible HTTP server for tests and benchmarks.

``POST /v1/chat/completions`` reads the document back out of our prompt
(:func:`~extraction.providers.prompt.parse_document_from_messages`) and answers with the builtin
extractor's ``invoice.v1`` JSON as a Chat Completions response, after a latency drawn from a
lognormal fitted to a mean and a p95. Around that it behaves like a shared, imperfect provider:

- quotas: requests per minute, tokens per minute (prompt + completion, sliding windows) and
  concurrent requests, answered with 429, ``Retry-After`` / ``retry-after-ms`` and OpenAI's
  ``x-ratelimit-*`` headers;
- faults, each by probability (``<fault>_rate``) or for "the next N calls" (``<fault>_next``):
  ``rate_limit`` (429 regardless of quota), ``error`` (5xx), ``disconnect`` (connection dropped
  without an answer), ``hang`` (no answer until the client gives up), ``malformed`` (content that
  is not JSON), ``refusal`` (no content, a refusal instead), ``hallucination`` (a well-formed invented IBAN with evidence pointing elsewhere),
  ``injection`` (obey "ignore previous instructions ..." found in the document);
- ``GET /_stats``, ``POST /_control`` (JSON, same names as :class:`SimulatorConfig` plus
  ``<fault>_next``) and ``POST /_reset`` (back to the startup configuration, counters cleared).

Every duration in the configuration is in *model* seconds and is multiplied by ``time_scale``:
at 0.01 a "15 s" call lasts 150 ms and a 60 s quota window lasts 600 ms. Everything the server
reports to a client (latency, ``Retry-After``, ``x-ratelimit-reset-*``) is in real time, because
that is the clock the client waits on.
"""
from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import json
import math
import os
import random
import re
import selectors
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path
from typing import Any

from aiohttp import web

from extraction.providers.prompt import parse_document_from_messages
from extraction.intake.text import DocumentText

Extractor = Callable[[DocumentText], dict]

FAULTS = ("rate_limit", "error", "disconnect", "hang", "malformed", "refusal", "hallucination", "injection")
# The order in which faults are drawn once a call is admitted; the first that fires wins, so a
# forced "next N" of a later fault is not used up by a call an earlier fault already took.
_CALL_FAULTS = ("error", "disconnect", "hang", "malformed", "refusal", "hallucination", "injection")
_Z95 = 1.6448536269514722
# ~4 characters per token: good enough for quotas and usage; the simulator is not a tokenizer.
_CHARS_PER_TOKEN = 4
# Enough for a test to look at what its last calls asked for; a benchmark must not grow memory.
_RECENT_REQUESTS = 50


@dataclass(frozen=True)
class SimulatorConfig:
    latency_mean_seconds: float = 0.0
    latency_p95_seconds: float = 0.0    # 0 = every call takes the mean
    time_scale: float = 1.0
    rpm: int = 0                        # 0 = no limit
    tpm: int = 0
    max_concurrency: int = 0
    rate_limit_rate: float = 0.0
    rate_limit_retry_after_seconds: float = 20.0  # the wait a simulated 429 asks for
    retry_after_format: str = "seconds"  # "seconds" (+ retry-after-ms), "http-date" or "none"
    error_rate: float = 0.0
    error_status: int = 500
    disconnect_rate: float = 0.0
    hang_rate: float = 0.0
    hang_seconds: float = 3600.0        # also ends as soon as the client hangs up
    malformed_rate: float = 0.0
    refusal_rate: float = 0.0
    hallucination_rate: float = 0.0
    injection_rate: float = 0.0         # chance to obey an injection, when the document has one
    api_key: str = ""                   # when set, requests must send "Authorization: Bearer <key>"
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.time_scale <= 0:
            raise ValueError("time_scale must be positive")
        if self.retry_after_format not in ("seconds", "http-date", "none"):
            raise ValueError("retry_after_format must be seconds, http-date or none")
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
        p95 = mean      # no p95 given: a constant latency
    if p95 < mean:
        raise ValueError("the p95 latency must be at least the mean")
    gap = math.log(p95) - math.log(mean)
    sigma = _Z95 - math.sqrt(max(0.0, _Z95 * _Z95 - 2 * gap))
    return (math.log(mean) - sigma * sigma / 2, sigma)


@dataclass
class _Admission:
    """A call's place in the quota windows; its tokens are corrected once its answer is known."""

    admitted_at: float
    tokens: int


@dataclass(frozen=True)
class _Rejection:
    status: int
    limit_type: str      # "requests", "tokens" or "concurrency"
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
        self.requests_window: deque[_Admission] = deque()
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

    def admit(self, tokens: int) -> _Admission | _Rejection:
        """Take a concurrency permit, a request and ``tokens`` from the windows, or say why not."""
        config, now = self.config, self.clock()
        window = self.window_seconds
        while self.requests_window and self.requests_window[0].admitted_at <= now - window:
            self.requests_window.popleft()
        if config.max_concurrency and self.in_flight >= config.max_concurrency:
            # No window to wait out: suggest one mean service time.
            wait = max(config.latency_mean_seconds * config.time_scale, 0.001)
            return _Rejection(429, "concurrency", f"Too many concurrent requests (limit {config.max_concurrency}).", wait)
        if config.rpm and len(self.requests_window) >= config.rpm:
            frees_at = self.requests_window[len(self.requests_window) - config.rpm].admitted_at + window
            return _Rejection(429, "requests", f"Rate limit reached for requests per min (limit {config.rpm}).", frees_at - now)
        if config.tpm:
            if tokens > config.tpm:
                return _Rejection(
                    400, "tokens", f"Request too large: {tokens} tokens, limit {config.tpm} per min.", None
                )
            used = sum(admission.tokens for admission in self.requests_window)
            if used + tokens > config.tpm:
                return _Rejection(
                    429,
                    "tokens",
                    f"Rate limit reached for tokens per min (limit {config.tpm}, used {used}, requested {tokens}).",
                    self._tokens_free_at(used + tokens - config.tpm) + window - now,
                )
        admission = _Admission(admitted_at=now, tokens=tokens)
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
    return math.ceil(len(text) / _CHARS_PER_TOKEN)


# --- what the "model" answers --------------------------------------------------------------------

_INJECTION = re.compile(
    r"ignore\s+(?:all\s+)?(?:the\s+|your\s+)?(?:previous|prior|above|earlier)\s+(?:instructions|rules|prompts?)",
    re.IGNORECASE,
)
_URL = re.compile(r"https?://[^\s\"'<>]+")
_SET_DIRECTIVE = re.compile(
    r"\bset\s+(?:the\s+)?(?P<field>[a-z][a-z_ ]*?)\s+to\s+(?P<value>\"[^\"]*\"|'[^']*'|\S+)", re.IGNORECASE
)


def injected_instructions(document: DocumentText) -> dict[str, Any] | None:
    """What an obedient model would do with an injection in ``document``, or None if it has none.

    The text after "ignore previous instructions" is read for a URL to send the result to
    (becomes ``callback_url``) and for "set <field> to <value>" directives.
    """
    text = document.full_text
    match = _INJECTION.search(text)
    if match is None:
        return None
    tail = text[match.end():]
    orders: dict[str, Any] = {"set": {}}
    url = _URL.search(tail)
    if url:
        orders["callback_url"] = url.group(0).rstrip(".,;)")
    for directive in _SET_DIRECTIVE.finditer(tail):
        field = directive["field"].strip().lower().replace(" ", "_")
        value = directive["value"]
        value = value[1:-1] if value[:1] in "\"'" else value.rstrip(".,;")
        orders["set"][field] = value
    return orders


def obey_injection(answer: dict[str, Any], orders: Mapping[str, Any]) -> dict[str, Any]:
    obeyed = json.loads(json.dumps(answer))
    if "callback_url" in orders:
        obeyed["callback_url"] = orders["callback_url"]
    for field, value in orders["set"].items():
        # "set the supplier iban to ..." names the field "iban" in the answer's terms.
        if not _replace_field(obeyed, field, value) and not _replace_field(obeyed, field.split("_")[-1], value):
            obeyed[field] = value
    return obeyed


def _replace_field(node: Any, field: str, value: Any) -> bool:
    """Set every ``field`` in the nested answer (its ``value`` if it is an evidenced field)."""
    found = False
    if isinstance(node, dict):
        for key, current in node.items():
            if key.lower() == field:
                found = True
                if isinstance(current, dict) and "value" in current:
                    current["value"] = _like(current["value"], value)
                else:
                    node[key] = _like(current, value)
            else:
                found = _replace_field(current, field, value) or found
    elif isinstance(node, list):
        for item in node:
            found = _replace_field(item, field, value) or found
    return found


def _like(current: Any, value: Any) -> Any:
    """``value`` as a number when the field held one, so the answer stays schema-shaped."""
    if isinstance(current, (int, float)) and not isinstance(current, bool):
        try:
            return float(value) if isinstance(current, float) else int(value)
        except ValueError:
            return value
    return value


def invent_iban(rng: random.Random) -> str:
    """A German IBAN with valid check digits (ISO 13616 mod 97) that belongs to nobody we know."""
    bban = "".join(str(rng.randrange(10)) for _ in range(18))
    check = 98 - int(bban + "131400") % 97  # "DE00" as digits: D=13, E=14
    return f"DE{check:02d}{bban}"


def hallucinate(answer: dict[str, Any], document: DocumentText, rng: random.Random) -> dict[str, Any]:
    """The answer with a schema-perfect invented IBAN in place of the real one (VAL-1).

    Its evidence still resolves in the document, to text of the right length that is not the
    IBAN: a check that only asks "does the span exist and match its quote" passes; one that asks
    "does the quote say this value" does not.
    """
    invented = json.loads(json.dumps(answer))
    iban_field = invented["supplier"]["iban"]
    real = iban_field.get("evidence")
    iban_field["value"] = invent_iban(rng)
    iban_field["evidence"] = _evidence_elsewhere(document, len(real["quote"]) if real else 22, avoid=real)
    return invented


def _evidence_elsewhere(document: DocumentText, length: int, avoid: Mapping[str, Any] | None) -> dict[str, Any] | None:
    for page, text in enumerate(document.pages, start=1):
        for start in range(0, max(1, len(text) - length + 1), max(1, length)):
            end = min(start + length, len(text))
            overlaps = avoid is not None and avoid["page"] == page and start < avoid["end"] and avoid["start"] < end
            if end > start and not overlaps:
                return {"page": page, "start": start, "end": end, "quote": text[start:end]}
    return None


def malformed(content: str) -> str:
    """A cut-off answer: starts like our JSON, does not parse."""
    return content[: max(1, len(content) // 2)]


# --- HTTP ----------------------------------------------------------------------------------------


def build_app(state: SimulatorState) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app["state"] = state
    app.add_routes(
        [
            web.post("/v1/chat/completions", _chat_completions),
            web.get("/v1/models", _models),
            web.get("/_stats", _stats),
            web.post("/_control", _control),
            web.post("/_reset", _reset),
        ]
    )
    return app


def _openai_error(
    status: int, message: str, *, type_: str, code: str | None, headers: Mapping[str, str] | None = None
) -> web.Response:
    body = {"error": {"message": message, "type": type_, "param": None, "code": code}}
    return web.json_response(body, status=status, headers={"x-request-id": _request_id(), **(headers or {})})


def _request_id() -> str:
    return f"req_{uuid.uuid4().hex}"


def _retry_after_headers(seconds: float | None, config: SimulatorConfig) -> dict[str, str]:
    if seconds is None or config.retry_after_format == "none":
        return {}
    seconds = max(0.0, seconds)
    if config.retry_after_format == "http-date":
        # An HTTP-date has whole seconds; round up so the client never comes back early.
        return {"retry-after": formatdate(math.ceil(time.time() + seconds), usegmt=True)}
    return {"retry-after": str(math.ceil(seconds)), "retry-after-ms": str(max(1, round(seconds * 1000)))}


async def _chat_completions(request: web.Request) -> web.StreamResponse:
    state: SimulatorState = request.app["state"]
    config = state.config
    state.calls += 1
    state.calls_by_job[request.headers.get("X-Job-Id", "")] += 1

    if config.api_key and request.headers.get("Authorization") != f"Bearer {config.api_key}":
        state.outcomes["unauthorized"] += 1
        return _openai_error(401, "Incorrect API key provided.", type_="invalid_request_error", code="invalid_api_key")
    try:
        body = await request.json()
        model = body["model"]
        messages = body["messages"]
        state.recent_requests.append(_request_summary(request, body))
        document = parse_document_from_messages(messages)
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        state.outcomes["bad_request"] += 1
        return _openai_error(400, f"Invalid request: {error}", type_="invalid_request_error", code=None)

    try:
        answer = state.extractor(document)
    except Exception as error:  # a bug in the extractor must show as a 500, not a dropped request
        state.outcomes["extractor_error"] += 1
        return _openai_error(500, f"extractor failed: {error!r}", type_="server_error", code=None)
    content = json.dumps(answer, ensure_ascii=False)
    prompt_tokens = sum(estimate_tokens(str(m.get("content") or "")) + 4 for m in messages)

    if state.draw("rate_limit"):
        state.outcomes["rate_limited"] += 1
        wait = config.rate_limit_retry_after_seconds * config.time_scale
        return _openai_error(
            429,
            "Rate limit reached (simulated).",
            type_="requests",
            code="rate_limit_exceeded",
            headers={**state.rate_limit_headers(), **_retry_after_headers(wait, config)},
        )
    admission = state.admit(prompt_tokens + estimate_tokens(content))
    if isinstance(admission, _Rejection):
        state.outcomes["rate_limited" if admission.status == 429 else "bad_request"] += 1
        return _openai_error(
            admission.status,
            admission.message,
            type_=admission.limit_type,
            code="rate_limit_exceeded" if admission.status == 429 else "request_too_large",
            headers={**state.rate_limit_headers(), **_retry_after_headers(admission.retry_after, config)},
        )

    try:
        return await _answer(request, state, config, model, body, document, answer, content, prompt_tokens, admission)
    finally:
        state.release()


def _request_summary(request: web.Request, body: Mapping[str, Any]) -> dict[str, Any]:
    """What a test may want to check the client asked for: headers, output format, token limit."""
    response_format = body.get("response_format") or {}
    json_schema = response_format.get("json_schema") or {}
    return {
        "job_id": request.headers.get("X-Job-Id"),
        "attempt": request.headers.get("X-Attempt"),
        "model": body.get("model"),
        "response_format": response_format.get("type"),
        "json_schema_name": json_schema.get("name"),
        "json_schema_strict": json_schema.get("strict"),
        "json_schema_properties": sorted((json_schema.get("schema") or {}).get("properties") or {}),
        "max_completion_tokens": body.get("max_completion_tokens"),
        "max_tokens": body.get("max_tokens"),
    }


async def _answer(
    request: web.Request,
    state: SimulatorState,
    config: SimulatorConfig,
    model: str,
    body: Mapping[str, Any],
    document: DocumentText,
    answer: dict[str, Any],
    content: str,
    prompt_tokens: int,
    admission: _Admission,
) -> web.StreamResponse:
    orders = injected_instructions(document)
    fault = next(
        (f for f in _CALL_FAULTS if (f != "injection" or orders is not None) and state.draw(f)),
        None,
    )
    if fault == "error":
        state.outcomes["server_error"] += 1
        return _openai_error(config.error_status, "The server had an error processing your request.", type_="server_error", code=None)
    latency = state.latency()
    if fault == "disconnect":
        await asyncio.sleep(latency / 2)
        state.outcomes["disconnect"] += 1
        if request.transport is not None:
            request.transport.abort()
        raise asyncio.CancelledError  # nothing left to answer on
    if fault == "hang":
        state.outcomes["hang"] += 1
        await _sleep_while_connected(request, config.hang_seconds * config.time_scale)
        return _openai_error(504, "Gateway timeout (simulated hang).", type_="server_error", code=None)

    outcome, refusal = "ok", None
    if fault == "malformed":
        content, outcome = malformed(content), "malformed"
    elif fault == "hallucination":
        content, outcome = json.dumps(hallucinate(answer, document, state.rng), ensure_ascii=False), "hallucination"
    elif fault == "injection":
        assert orders is not None
        content, outcome = json.dumps(obey_injection(answer, orders), ensure_ascii=False), "injection_obeyed"
    elif fault == "refusal":
        content, refusal, outcome = "", "I'm sorry, I can't help with that.", "refusal"

    finish_reason = "stop"
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    if isinstance(limit, int) and limit > 0 and estimate_tokens(content) > limit:
        content, finish_reason, outcome = content[: limit * _CHARS_PER_TOKEN], "length", "truncated"
    completion_tokens = estimate_tokens(refusal or content)
    admission.tokens = prompt_tokens + completion_tokens

    started = time.monotonic()
    await asyncio.sleep(latency)
    state.outcomes[outcome] += 1
    state.prompt_tokens += prompt_tokens
    state.completion_tokens += completion_tokens
    if request.transport is None or request.transport.is_closing():
        state.abandoned += 1
    response_id = f"chatcmpl-sim-{uuid.uuid4().hex}"
    return web.json_response(
        {
            "id": response_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": "fp_simulator",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None if refusal else content, "refusal": refusal},
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
        headers={
            "x-request-id": _request_id(),
            "openai-processing-ms": str(round((time.monotonic() - started) * 1000)),
            **state.rate_limit_headers(),
        },
    )


async def _sleep_while_connected(request: web.Request, seconds: float) -> None:
    """Sleep up to ``seconds``, stopping early once the client has hung up (no one is waiting)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if request.transport is None or request.transport.is_closing():
            return
        await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))


async def _models(request: web.Request) -> web.Response:
    return web.json_response({"object": "list", "data": [{"id": "simulator", "object": "model", "owned_by": "simulator"}]})


async def _stats(request: web.Request) -> web.Response:
    return web.json_response(request.app["state"].stats())


async def _control(request: web.Request) -> web.Response:
    state: SimulatorState = request.app["state"]
    try:
        changes = await request.json()
        if not isinstance(changes, dict):
            raise ValueError("expected a JSON object")
        state.control(changes)
    except (ValueError, TypeError) as error:
        return web.json_response({"error": str(error)}, status=400)
    return web.json_response(state.stats())


async def _reset(request: web.Request) -> web.Response:
    state: SimulatorState = request.app["state"]
    state.reset()
    return web.json_response(state.stats())


def builtin_extractor() -> Extractor:
    from extraction.providers.builtin import extract_invoice

    return extract_invoice


def run_simulator(
    config: SimulatorConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    extractor: Extractor | None = None,
    forced_faults: Mapping[str, int] | None = None,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve until SIGTERM/SIGINT. ``announce`` gets one line with the base URL once listening."""
    if not ipaddress.ip_address(host).is_loopback:
        raise ValueError("the simulator binds loopback addresses only")
    state = SimulatorState(config, extractor or builtin_extractor())
    state.control({f"{fault}_next": count for fault, count in (forced_faults or {}).items()})
    asyncio.run(_serve(state, host, port, announce))


async def _serve(state: SimulatorState, host: str, port: int, announce: Callable[[str], None]) -> None:
    runner = web.AppRunner(build_app(state), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    # A benchmark opens hundreds of connections at once; the default backlog of 128 would drop some.
    site = web.TCPSite(runner, host, port, backlog=2048)
    await site.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    bound_port = runner.addresses[0][1]
    display_host = f"[{host}]" if ":" in host else host
    announce(f"provider simulator listening on http://{display_host}:{bound_port}")
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


# --- a handle for tests and benchmarks -----------------------------------------------------------

_MANAGE_PY = Path(__file__).resolve().parents[2] / "manage.py"
# Control calls go straight to loopback, whatever proxy the environment names.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_READY = re.compile(r"listening on (http://\S+)")


class SimulatorProcess:
    """``python manage.py run_provider_simulator`` in a subprocess on a free loopback port.

    with SimulatorProcess(latency_mean_seconds=15, latency_p95_seconds=40, time_scale=0.01) as sim:
        provider = OpenAIProvider(base_url=sim.base_url, api_key="test")
        sim.control(error_next=3)
        sim.stats()["calls_by_job"]
    """

    def __init__(self, startup_timeout_seconds: float = 30.0, **settings: Any) -> None:
        SimulatorConfig().updated({k: v for k, v in settings.items() if not k.endswith("_next")})
        self.settings = settings
        self.startup_timeout_seconds = startup_timeout_seconds
        self.process: subprocess.Popen[str] | None = None
        self.root_url = ""

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def __enter__(self) -> SimulatorProcess:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        command = [sys.executable, str(_MANAGE_PY), "run_provider_simulator", "--port", "0"]
        for name, value in self.settings.items():
            command += [f"--{name.replace('_', '-')}", str(value)]
        env = {**os.environ, "DJANGO_DEVELOPMENT": os.environ.get("DJANGO_DEVELOPMENT", "1")}
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env, cwd=_MANAGE_PY.parent)
        self.root_url = self._wait_until_listening()

    def _wait_until_listening(self) -> str:
        assert self.process is not None and self.process.stdout is not None
        deadline = time.monotonic() + self.startup_timeout_seconds
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while (remaining := deadline - time.monotonic()) > 0:
                if not selector.select(remaining):
                    break
                line = self.process.stdout.readline()
                if not line:
                    self.stop()
                    raise RuntimeError("provider simulator exited before listening")
                if match := _READY.search(line):
                    return match.group(1)
        self.stop()
        raise RuntimeError(f"provider simulator not listening after {self.startup_timeout_seconds} s")

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.process = None

    def control(self, **settings: Any) -> dict[str, Any]:
        return self._post("/_control", settings)

    def reset(self) -> dict[str, Any]:
        return self._post("/_reset", {})

    def stats(self) -> dict[str, Any]:
        with _DIRECT.open(f"{self.root_url}/_stats", timeout=10) as response:
            return json.load(response)

    def _post(self, path: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.root_url}{path}",
            data=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with _DIRECT.open(request, timeout=10) as response:
            return json.load(response)
