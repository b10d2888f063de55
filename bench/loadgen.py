"""An open-loop HTTP load generator for loopback benchmarks.

Open loop: request ``i`` of a run at rate R is due at ``t0 + i / R`` whatever happened to the
requests before it, and its latency is measured from that intended send time. A closed-loop
client (send, wait, send again) slows down with the server and so never sees the queue it
would have built; here a server that falls behind shows up as latency, because every late
request carries the time it spent waiting to be sent (coordinated omission).

The client speaks just enough HTTP/1.1 for one request per connection (``Connection:
close``, read to EOF), which is what gunicorn's sync workers do anyway, and keeps the
generator's own CPU cost low: it shares the machine with the server it measures.

Usable alone::

    .venv/bin/python bench/loadgen.py http://127.0.0.1:8000/bench/floor/accept --rate 500 --duration 5
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import ipaddress
import json
import math
import socket
import sys
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import percentile

# Requests in flight at once. Past this, a due request waits for a slot, and the wait counts
# in its latency like any other queueing.
DEFAULT_MAX_IN_FLIGHT = 512
# Bounds of one run whatever the rate and duration asked for.
MAX_REQUESTS_PER_RUN = 50_000
MAX_DURATION_SECONDS = 120.0
# After the last request is due, stragglers get this long before they count as timeouts.
DEFAULT_GRACE_SECONDS = 3.0
# Start a little after the run is set up, so that request 0 is not already late.
START_LEAD_SECONDS = 0.05


@dataclass(frozen=True)
class Target:
    """One endpoint and the request sent to it; each request gets its own Idempotency-Key."""

    host: str
    port: int
    path: str
    body: bytes = b""
    method: str = "POST"
    headers: dict[str, str] = field(default_factory=dict)
    accept_status: int = 202

    @classmethod
    def from_url(cls, url: str, **kwargs) -> Target:
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.hostname is None:
            raise ValueError(f"Only http:// URLs with a host are supported, not {url!r}.")
        return cls(host=parts.hostname, port=parts.port or 80, path=parts.path or "/", **kwargs)

    def request_bytes(self, idempotency_key: str) -> bytes:
        lines = [
            f"{self.method} {self.path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            "Connection: close",
            f"Idempotency-Key: {idempotency_key}",
            f"Content-Length: {len(self.body)}",
        ]
        lines += [f"{name}: {value}" for name, value in self.headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + self.body


@dataclass(frozen=True)
class LoadResult:
    """One open-loop run. Latencies are in milliseconds from the intended send time; a request
    that was not accepted (other status, error, timeout) counts as infinitely slow, so p99 is
    only finite when at least 99 % of the requests were accepted. ``None`` stands for infinity."""

    rate: float
    duration_s: float
    requests: int
    accepted: int
    accepted_per_s: float
    outcomes: dict[str, int]
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    # How late the generator itself started requests (p99): large values mean the client, not
    # the server, could not keep the schedule.
    send_lag_p99_ms: float

    def holds(self, p99_limit_ms: float) -> bool:
        return self.p99_ms is not None and self.p99_ms <= p99_limit_ms

    def as_dict(self) -> dict:
        return asdict(self)


def _finite(value: float) -> float | None:
    return None if math.isinf(value) else round(value, 3)


def check_loopback(host: str) -> None:
    """Refuse anything that does not resolve to loopback only: this tool floods its target."""
    addresses = {info[4][0] for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
    if not addresses or not all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses):
        raise ValueError(f"{host!r} is not a loopback address; the load generator only targets loopback.")


async def _one_request(target: Target, payload: bytes, deadline: float) -> str:
    loop = asyncio.get_running_loop()
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection(target.host, target.port), timeout=max(0.001, deadline - loop.time())
    )
    try:
        writer.write(payload)
        response = await asyncio.wait_for(reader.read(), timeout=max(0.001, deadline - loop.time()))
    finally:
        writer.close()
    status_line = response.split(b"\r\n", 1)[0].split()
    if len(status_line) < 2 or not status_line[1].isdigit():
        return "bad-response"
    return status_line[1].decode()


async def run_open_loop(
    target: Target,
    *,
    rate: float,
    duration: float,
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    grace: float = DEFAULT_GRACE_SECONDS,
) -> LoadResult:
    """Send ``rate × duration`` requests on a fixed schedule and measure each from its due time.

    1. Request ``i`` is due at ``t0 + i / rate``; a scheduler starts it then (or as soon as the
       event loop gets to it, which is counted against the latency).
    2. Each request opens its own connection, waits for a free in-flight slot first, and must
       finish by ``t0 + duration + grace``; what is still open then counts as a timeout.
    3. Latency percentiles are over all requests, a non-accepted one counting as infinite.
    """
    if rate <= 0 or duration <= 0:
        raise ValueError("rate and duration must be positive")
    check_loopback(target.host)
    duration = min(duration, MAX_DURATION_SECONDS)
    count = max(1, min(int(rate * duration), MAX_REQUESTS_PER_RUN))
    loop = asyncio.get_running_loop()
    run_id = uuid.uuid4().hex[:12]
    slots = asyncio.Semaphore(max_in_flight)
    latencies: list[float] = []
    send_lags: list[float] = []
    outcomes: Counter[str] = Counter()
    last_accept = 0.0
    t0 = loop.time() + START_LEAD_SECONDS
    deadline = t0 + count / rate + grace

    async def send(i: int, due: float) -> None:
        nonlocal last_accept
        send_lags.append(loop.time() - due)
        payload = target.request_bytes(f"bench-{run_id}-{i}")
        try:
            async with slots:
                outcome = await _one_request(target, payload, deadline)
        except TimeoutError:
            outcome = "timeout"
        except OSError as exc:
            outcome = type(exc).__name__
        done = loop.time()
        outcomes[outcome] += 1
        if outcome == str(target.accept_status):
            latencies.append(done - due)
            last_accept = max(last_accept, done)

    tasks: list[asyncio.Task[None]] = []
    for i in range(count):
        due = t0 + i / rate
        delay = due - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(send(i, due)))
    await asyncio.wait(tasks)

    accepted = len(latencies)
    ordered = sorted(latencies) + [math.inf] * (count - accepted)
    span = (last_accept - t0) if accepted else 0.0
    return LoadResult(
        rate=rate,
        duration_s=round(count / rate, 3),
        requests=count,
        accepted=accepted,
        accepted_per_s=round(accepted / span, 1) if span > 0 else 0.0,
        outcomes=dict(sorted(outcomes.items())),
        p50_ms=_finite(percentile(ordered, 0.50) * 1000),
        p95_ms=_finite(percentile(ordered, 0.95) * 1000),
        p99_ms=_finite(percentile(ordered, 0.99) * 1000),
        max_ms=_finite(ordered[-1] * 1000),
        send_lag_p99_ms=round(percentile(send_lags, 0.99) * 1000, 3),
    )


def run(target: Target, *, rate: float, duration: float, **kwargs) -> LoadResult:
    """One run, with the cyclic garbage collector off: a full collection in the generator's
    process (Django is loaded in it too) stalls every in-flight measurement at once for tens of
    milliseconds, which would be charged to the server. A run is bounded, so is its garbage."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        return asyncio.run(run_open_loop(target, rate=rate, duration=duration, **kwargs))
    finally:
        if was_enabled:
            gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="http://127.0.0.1:PORT/path (loopback only)")
    parser.add_argument("--rate", type=float, required=True, help="requests per second")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds of schedule")
    parser.add_argument("--method", default="POST")
    parser.add_argument("--body", default="", help="request body (sent as application/json when given)")
    parser.add_argument("--header", action="append", default=[], help="'Name: value', repeatable")
    parser.add_argument("--accept-status", type=int, default=202)
    args = parser.parse_args()
    headers = dict(h.split(":", 1) for h in args.header)
    headers = {name.strip(): value.strip() for name, value in headers.items()}
    if args.body:
        headers.setdefault("Content-Type", "application/json")
    try:
        target = Target.from_url(
            args.url, method=args.method, body=args.body.encode(), headers=headers, accept_status=args.accept_status
        )
        check_loopback(target.host)
    except ValueError as exc:
        parser.error(str(exc))
    print(json.dumps(run(target, rate=args.rate, duration=args.duration).as_dict(), indent=2))


if __name__ == "__main__":
    main()
