"""The probe port of the processes that serve no HTTP of their own (config/probes.py): /livez
fails exactly when one of the process's loops stops turning, and /metrics serves the process's
own instruments."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request

import pytest

from config import probes
from tests.system import wait_for


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get(port: int, path: str) -> tuple[int, str, dict | str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            status, content_type, body = response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        status, content_type, body = error.code, error.headers["Content-Type"], error.read()
    text = body.decode()
    return status, content_type, json.loads(text) if "json" in content_type else text


@pytest.fixture(scope="module")
def probe_port() -> int:
    port = probes.start_probe_server(free_port())
    assert port is not None
    return port


@pytest.fixture(autouse=True)
def only_this_test_s_loops() -> None:
    """Loops an earlier test ran in this process and left registered are not this test's."""
    for loop in probes.loop_ages():
        probes.forget(loop)


def test_livez_fails_while_a_loop_is_past_its_bound_and_recovers_when_it_turns(probe_port, settings):
    settings.METRICS_TOKEN = ""
    probes.beat("test-loop", bound_seconds=0.3)
    status, _, body = get(probe_port, "/livez")
    assert status == 200 and body["status"] == "alive" and "test-loop" in body["loops"]

    time.sleep(0.5)  # the loop misses its bound
    status, content_type, body = get(probe_port, "/livez")
    assert (status, content_type) == (503, "application/problem+json")
    assert list(body["stuck"]) == ["test-loop"] and body["detail"].startswith("Stuck: test-loop (")

    probes.beat("test-loop", bound_seconds=0.3)  # it turned again
    assert get(probe_port, "/livez")[0] == 200
    probes.forget("test-loop")


def test_a_wait_that_is_the_loop_s_work_keeps_it_alive(probe_port):
    with probes.beating("waiting-loop", every_seconds=0.1, bound_seconds=0.3):
        time.sleep(0.6)  # twice its bound, beating meanwhile
        assert get(probe_port, "/livez")[0] == 200
    probes.forget("waiting-loop")


def test_metrics_serve_the_process_s_instruments_to_loopback(probe_port):
    status, content_type, body = get(probe_port, "/metrics")
    assert status == 200 and content_type.startswith("text/plain")
    assert "# TYPE extraction_attempts_total counter" in body
    assert get(probe_port, "/elsewhere")[0] == 404


@pytest.mark.slow
def test_a_celery_worker_and_the_relay_serve_their_probes(processes):
    worker_port, relay_port = free_port(), free_port()
    processes.celery("llm", "llm", concurrency=2, PROBE_PORT=str(worker_port))
    processes.relay(PROBE_PORT=str(relay_port))

    def loops(port: int) -> dict[str, float]:
        try:
            status, _, body = get(port, "/livez")
        except OSError:
            return {}
        return body["loops"] if status == 200 else {}

    # The consumer's event loop beats once it consumes; the relay's loop at every turn.
    assert "consumer" in wait_for(lambda: loops(worker_port), timeout=60, message=processes.logs)
    assert "relay" in wait_for(lambda: loops(relay_port), timeout=60, message=processes.logs)
    assert get(worker_port, "/metrics")[0] == 200
