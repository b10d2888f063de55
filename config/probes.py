"""Liveness and metrics for the processes that serve no HTTP of their own: the relay, the
scheduler, the notifier, the Kafka consumers and the Celery workers (ingress, llm, delivery).

An orchestrator restarts a process whose liveness probe fails, so the probe must fail exactly
when the process cannot recover by itself: when one of its own loops has stopped turning (a
deadlock, a thread that died, a call that never returns), never because PostgreSQL, RabbitMQ
or Redis is away — every loop here outlives those outages and turns while it waits for them.

Each loop calls :func:`beat` once per turn, naming itself and how long a turn may take at
most. With ``PROBE_PORT`` set, :func:`start_probe_server` serves, on that port:

- ``GET /livez``: 200 while every loop that has beaten once has beaten within its bound,
  else 503 naming the stuck loops (``application/problem+json``);
- ``GET /metrics``: the process's in-process instruments (config.instruments; with
  ``PROMETHEUS_MULTIPROC_DIR``, those of every process sharing that directory — one pod), to
  loopback clients or with the bearer token ``METRICS_TOKEN``, as web's ``/metrics``.

Off (no port) by default: on one host the web process's ``/metrics`` already sums every process
through the shared multiprocess directory.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from django.conf import settings
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import Metric

logger = logging.getLogger("config.probes")

_lock = threading.Lock()
# loop name -> (monotonic time of its last turn, the longest a turn may take)
_beats: dict[str, tuple[float, float]] = {}
_server: ThreadingHTTPServer | None = None

# A turn of a service loop (a relay batch, a sweep, a notifier round, a poll) is bounded by its
# statement and broker timeouts (30 s at most) plus its wait; past this it is stuck.
LOOP_BOUND_SECONDS = 120.0


def beat(loop: str, *, bound_seconds: float = LOOP_BOUND_SECONDS) -> None:
    """``loop`` turned just now; it is stuck if it does not turn again within ``bound_seconds``."""
    with _lock:
        _beats[loop] = (time.monotonic(), bound_seconds)


@contextmanager
def beating(loop: str, *, every_seconds: float, bound_seconds: float) -> Iterator[None]:
    """``loop`` counts as turning while the block runs (a wait that is the loop's work, e.g.
    retrying a connection): a thread beats for it every ``every_seconds``."""
    done = threading.Event()

    def _beat() -> None:
        while True:
            beat(loop, bound_seconds=bound_seconds)
            if done.wait(every_seconds):
                return

    thread = threading.Thread(target=_beat, name=f"{loop}-waiting", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        beat(loop, bound_seconds=bound_seconds)


def forget(loop: str) -> None:
    """``loop`` ended on purpose (its thread stops): it can no longer be stuck."""
    with _lock:
        _beats.pop(loop, None)


def stuck_loops() -> dict[str, float]:
    """The loops past their bound, with the seconds since each last turned."""
    now = time.monotonic()
    with _lock:
        return {loop: round(now - last, 1) for loop, (last, bound) in sorted(_beats.items()) if now - last > bound}


def loop_ages() -> dict[str, float]:
    now = time.monotonic()
    with _lock:
        return {loop: round(now - last, 1) for loop, (last, _) in sorted(_beats.items())}


class _ProbeHandler(BaseHTTPRequestHandler):
    server_version = "probe"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        path = self.path.split("?", 1)[0]
        if path == "/livez":
            self._livez()
        elif path == "/metrics":
            self._metrics()
        else:
            self._problem(slug="not-found", title="Not found", status_code=404, detail=f"No probe at {path}.")

    def _livez(self) -> None:
        stuck = stuck_loops()
        if stuck:
            detail = "Stuck: " + ", ".join(f"{loop} ({age} s)" for loop, age in stuck.items())
            self._problem(slug="loop-stuck", title="A loop is stuck", status_code=503, detail=detail, stuck=stuck)
        else:
            self._send(200, "application/json", json.dumps({"status": "alive", "loops": loop_ages()}).encode())

    def _metrics(self) -> None:
        if not (self._has_token() or self._is_loopback()):
            detail = "Metrics are served to loopback clients or with the metrics bearer token."
            self._problem(slug="permission-denied", title="Permission denied", status_code=403, detail=detail)
            return
        from config.metrics import in_process_figures  # needs the apps ready, as above

        encode, content_type = choose_encoder(self.headers.get("Accept", ""))
        self._send(200, content_type, encode(_Figures(in_process_figures)))

    def _has_token(self) -> bool:
        token = settings.METRICS_TOKEN or ""
        scheme, _, given = (self.headers.get("Authorization") or "").partition(" ")
        return (
            bool(token) and scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())
        )

    def _is_loopback(self) -> bool:
        try:
            return ipaddress.ip_address(self.client_address[0]).is_loopback
        except ValueError:
            return False

    def _problem(self, **fields: Any) -> None:
        # Imported here: config.celery imports this module before Django's apps are ready.
        from config.problems import PROBLEM_CONTENT_TYPE, problem_body

        body = problem_body(instance=self.path.split("?", 1)[0], **fields)
        self._send(fields["status_code"], PROBLEM_CONTENT_TYPE, json.dumps(body).encode())

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        pass  # a probe every few seconds is not news


class _Figures:
    """What prometheus_client's encoders read: an object with ``collect()``."""

    def __init__(self, collect: Callable[[], Iterable[Metric]]) -> None:
        self.collect = collect


def start_probe_server(port: int | None = None) -> int | None:
    """Serve ``/livez`` and ``/metrics`` on ``port`` (``PROBE_PORT``; 0 or unset: off) in a daemon
    thread; returns the port served, or None. Idempotent within a process."""
    global _server
    port = settings.PROBE_PORT if port is None else port
    if not port:
        return None
    with _lock:
        if _server is None:
            try:
                _server = ThreadingHTTPServer((settings.PROBE_ADDRESS, port), _ProbeHandler)
            except OSError:
                # Two processes of one host asked for the same port (a local run with a fixed
                # port): this one goes without; an orchestrator gives each pod its own.
                logger.warning("probe port %s is taken: no probe server in this process", port, exc_info=True)
                return None
            _server.daemon_threads = True
            threading.Thread(target=_server.serve_forever, name="probe-server", daemon=True).start()
        return int(_server.server_address[1])
