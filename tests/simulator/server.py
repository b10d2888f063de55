"""The HTTP side: aiohttp handlers for the OpenAI routes and the control routes, and the serve loop."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import math
import re
import signal
import time
import uuid
from collections.abc import Callable, Mapping
from email.utils import formatdate
from typing import Any

from aiohttp import web

from extraction.intake.bundles import split_bundle
from extraction.intake.text import DocumentText
from extraction.providers import boundaries
from extraction.providers.prompt import parse_document_from_messages
from tests.simulator import dialects
from tests.simulator.config import SimulatorConfig
from tests.simulator.faults import hallucinate, injected_instructions, malformed, obey_injection
from tests.simulator.quotes import quotes_answer, wants_quotes
from tests.simulator.state import CHARS_PER_TOKEN, Admission, Extractor, Rejection, SimulatorState, estimate_tokens

# The order in which faults are drawn once a call is admitted; the first that fires wins, so a
# forced "next N" of a later fault is not used up by a call an earlier fault already took.
_CALL_FAULTS = ("error", "disconnect", "hang", "malformed", "refusal", "hallucination", "injection")


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
        if _asks_for_boundaries(body):
            return _boundary_answer(state, config, model, messages)
        document = parse_document_from_messages(messages)
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        state.outcomes["bad_request"] += 1
        return _openai_error(400, f"Invalid request: {error}", type_="invalid_request_error", code=None)
    refused = dialects.refusal(config.structured_output, body.get("response_format"))
    if refused is not None:
        state.outcomes["structured_output_refused"] += 1
        return _openai_error(refused.status, refused.message, type_=refused.type, code=None)

    try:
        answer = state.extractor(document)
    except Exception as error:  # noqa: BLE001 — a bug in the extractor must show as a 500, not a dropped request
        state.outcomes["extractor_error"] += 1
        return _openai_error(500, f"extractor failed: {error!r}", type_="server_error", code=None)
    quotes = wants_quotes(body.get("response_format"))
    content = _content(answer, answer, quotes=quotes)
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
    if isinstance(admission, Rejection):
        state.outcomes["rate_limited" if admission.status == 429 else "bad_request"] += 1
        return _openai_error(
            admission.status,
            admission.message,
            type_=admission.limit_type,
            code="rate_limit_exceeded" if admission.status == 429 else "request_too_large",
            headers={**state.rate_limit_headers(), **_retry_after_headers(admission.retry_after, config)},
        )

    try:
        return await _answer(
            request, state, config, model, body, document, answer, content, prompt_tokens, admission, quotes=quotes
        )
    finally:
        state.release()


def _asks_for_boundaries(body: Mapping[str, Any]) -> bool:
    response_format = body.get("response_format") or {}
    return (response_format.get("json_schema") or {}).get("name") == boundaries.SCHEMA_NAME


_SHOWN_PAGE = re.compile(r'<page number="(\d+)">\n(.*?)\n</page>', re.DOTALL)


def _boundary_answer(
    state: SimulatorState, config: SimulatorConfig, model: str, messages: list[dict[str, Any]]
) -> web.Response:
    """A bundle question: the first pages configured, or the detector's reading of the pages as
    shown; the error fault applies as to any call."""
    state.outcomes["boundaries"] += 1
    if state.draw("error"):
        return _openai_error(config.error_status, "The server had an error.", type_="server_error", code=None)
    shown = str(messages[-1].get("content") or "")
    pages = [text for _, text in _SHOWN_PAGE.findall(shown)]
    if config.boundary_answer:
        first_pages = [int(page) for page in config.boundary_answer.split(",")]
    else:
        first_pages = [1, *split_bundle(pages).boundaries]
    content = json.dumps({"invoice_first_pages": first_pages})
    prompt_tokens = sum(estimate_tokens(str(m.get("content") or "")) + 4 for m in messages)
    completion_tokens = estimate_tokens(content)
    state.prompt_tokens += prompt_tokens
    state.completion_tokens += completion_tokens
    return web.json_response(
        {
            "id": f"chatcmpl-sim-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
        headers={"x-request-id": _request_id()},
    )


def _content(answer: dict[str, Any], original: dict[str, Any], *, quotes: bool) -> str:
    """The "model's" content: the invoice.v1 ``answer`` (perhaps a fault's copy of ``original``),
    or for a request asking for the quotes answer format, that answer written as quotes."""
    return json.dumps(quotes_answer(answer, original=original) if quotes else answer, ensure_ascii=False)


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
        "schema_beside_json_object": "schema" in response_format,
        "answer_format": "quotes" if wants_quotes(response_format) else "invoice.v1",
        "sampling": {key: body[key] for key in ("temperature", "repeat_penalty", "top_p", "seed") if key in body},
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
    admission: Admission,
    *,
    quotes: bool = False,
) -> web.StreamResponse:
    orders = injected_instructions(document)
    fault = next(
        (f for f in _CALL_FAULTS if (f != "injection" or orders is not None) and state.draw(f)),
        None,
    )
    if fault == "error":
        state.outcomes["server_error"] += 1
        return _openai_error(
            config.error_status, "The server had an error processing your request.", type_="server_error", code=None
        )
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
        # Faults defined on the invoice.v1 answer strike it first; the quotes answer is written from that.
        content = _content(hallucinate(answer, document, state.rng), answer, quotes=quotes)
        outcome = "hallucination"
    elif fault == "injection":
        assert orders is not None
        content, outcome = _content(obey_injection(answer, orders), answer, quotes=quotes), "injection_obeyed"
    elif fault == "refusal":
        content, refusal, outcome = "", "I'm sorry, I can't help with that.", "refusal"

    finish_reason = "stop"
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    if isinstance(limit, int) and limit > 0 and estimate_tokens(content) > limit:
        content, finish_reason, outcome = content[: limit * CHARS_PER_TOKEN], "length", "truncated"
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
    return web.json_response(
        {"object": "list", "data": [{"id": "simulator", "object": "model", "owned_by": "simulator"}]}
    )


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
