"""bench/tcp_proxy.py seen from a real client socket: bytes pass, and drop, stall and refuse do
to the client what a reset link, a frozen link and a server that is down do."""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Iterator

import pytest

from bench.tcp_proxy import ProxyThread


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        try:
            while data := self.request.recv(65536):
                self.request.sendall(data)
        except ConnectionResetError:
            pass  # the proxy reset the link on purpose


@pytest.fixture
def echo_server() -> Iterator[int]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy(echo_server: int) -> Iterator[ProxyThread]:
    proxy = ProxyThread("127.0.0.1", echo_server)
    yield proxy
    proxy.close()


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=2)


def _echo(sock: socket.socket, payload: bytes) -> bytes:
    sock.sendall(payload)
    received = b""
    while len(received) < len(payload):
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return received


def test_bytes_pass_through_both_ways(proxy):
    with _connect(proxy.port) as sock:
        assert _echo(sock, b"hello broker") == b"hello broker"
    assert proxy.stats()["accepted"] == 1


def test_drop_resets_open_connections_and_accepts_new_ones(proxy):
    with _connect(proxy.port) as sock:
        assert _echo(sock, b"before") == b"before"
        assert proxy.drop() == 1
        with pytest.raises((ConnectionResetError, BrokenPipeError)):
            sock.sendall(b"after")
            if not sock.recv(10):  # an orderly EOF instead of a reset would not be a drop
                raise AssertionError("the connection was closed, not reset")
    with _connect(proxy.port) as sock:
        assert _echo(sock, b"again") == b"again"
    assert proxy.stats()["dropped"] == 1


def test_stall_holds_the_bytes_until_it_ends(proxy):
    with _connect(proxy.port) as sock:
        assert _echo(sock, b"warm") == b"warm"
        proxy.stall(1.5)
        began = time.monotonic()
        sock.sendall(b"held")
        sock.settimeout(0.7)
        with pytest.raises(TimeoutError):
            sock.recv(10)
        sock.settimeout(3)
        assert sock.recv(10) == b"held"
        assert 1.3 <= time.monotonic() - began < 3.0


def test_refuse_refuses_new_connections_for_its_time_and_keeps_open_ones(proxy):
    with _connect(proxy.port) as kept:
        assert _echo(kept, b"open") == b"open"
        proxy.refuse(1.5)
        with pytest.raises(ConnectionRefusedError):
            _connect(proxy.port)
        assert _echo(kept, b"still open") == b"still open"
        time.sleep(1.8)
        with _connect(proxy.port) as sock:
            assert _echo(sock, b"back") == b"back"


def test_outage_resets_open_connections_and_refuses_new_ones(proxy):
    with _connect(proxy.port) as sock:
        assert _echo(sock, b"up") == b"up"
        assert proxy.outage(1.0) == 1
        with pytest.raises((ConnectionResetError, BrokenPipeError)):
            sock.sendall(b"x")
            sock.recv(10)
    with pytest.raises(ConnectionRefusedError):
        _connect(proxy.port)
    time.sleep(1.3)
    with _connect(proxy.port) as sock:
        assert _echo(sock, b"up again") == b"up again"
