"""A loopback TCP proxy that can break the connections through it, for fault injection.

Every process of a fault run reaches RabbitMQ (and Redis) through one of these instead of the
server's own port, so the suite can do to those connections what a network or a server
restart does, without touching the shared servers themselves:

- ``drop()``: reset every open connection (both sides see RST), as a broker restart or a
  NAT timeout does; new connections are accepted again at once;
- ``stall(seconds)``: stop forwarding bytes in both directions for that long while the
  connections stay open (a partition, a frozen server); TCP back-pressure holds the senders;
- ``refuse(seconds)``: close the listening socket for that long, so a new connection gets
  ECONNREFUSED (the server is down); open connections are not touched (``outage`` also drops them).

:class:`TcpProxy` runs on an asyncio loop; :class:`ProxyThread` runs one on a loop of its own
in a daemon thread and makes its controls callable from any thread. Usable alone::

    .venv/bin/python bench/tcp_proxy.py --target 127.0.0.1:5672 --listen 5673
    # then type: drop | stall 5 | refuse 5 | outage 5 | stats
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import socket
import struct
import sys
import threading
import time
from collections.abc import Coroutine
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

CHUNK = 64 * 1024
T = TypeVar("T")


@dataclass
class ProxyStats:
    accepted: int = 0  # connections accepted since the start
    active: int = 0  # open now
    dropped: int = 0  # reset by drop()
    upstream_failures: int = 0  # accepted, but the target did not take the connection
    bytes_forwarded: int = 0
    drops: int = 0  # drop() calls
    stalls: int = 0
    refusals: int = 0


class _Link:
    """One proxied connection: the client's streams and the target's."""

    def __init__(self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        self.client = client
        self.upstream = upstream

    def abort(self) -> None:
        for writer in (self.client, self.upstream):
            _reset(writer)

    def close(self) -> None:
        for writer in (self.client, self.upstream):
            writer.close()


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with RST, not FIN: SO_LINGER 0 makes the kernel discard the buffers and reset, as a
    peer that vanished does; an orderly close would look like a clean shutdown."""
    sock = writer.transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()


def _require_loopback(host: str) -> None:
    if not ipaddress.ip_address(host).is_loopback:
        raise ValueError(f"{host!r} is not a loopback address; the proxy only listens on and forwards to loopback")


# Addresses other than loopback that a proxy may *listen* on: only those a test harness assigned
# to a network of its own making, for as long as that network exists (tests/cluster/netns.py
# adds its bridge's address when it creates the bridge and removes it on teardown), so processes
# in its network namespaces can reach loopback services. A proxy still forwards only to loopback,
# and nothing here ever adds an address: bench's own proxies stay loopback-only.
_HARNESS_LISTEN_ADDRESSES: set[str] = set()


def allow_listen_address(address: str) -> None:
    """Let proxies listen on ``address``, an address of a network the caller itself created."""
    _HARNESS_LISTEN_ADDRESSES.add(str(ipaddress.ip_address(address)))


def forbid_listen_address(address: str) -> None:
    """Undo :func:`allow_listen_address` (the network is gone)."""
    _HARNESS_LISTEN_ADDRESSES.discard(str(ipaddress.ip_address(address)))


def _require_listen_address(host: str) -> None:
    if str(ipaddress.ip_address(host)) not in _HARNESS_LISTEN_ADDRESSES:
        _require_loopback(host)


class TcpProxy:
    """Listens on ``listen_host:listen_port`` (0: a free port) and forwards each connection to
    ``target_host:target_port``."""

    def __init__(
        self, target_host: str, target_port: int, *, listen_host: str = "127.0.0.1", listen_port: int = 0
    ) -> None:
        _require_loopback(target_host)
        _require_listen_address(listen_host)
        self.target = (target_host, target_port)
        self.listen_host = listen_host
        self.port = listen_port
        self.stats = ProxyStats()
        self._server: asyncio.Server | None = None
        self._links: set[_Link] = set()
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._stall_until = 0.0
        self._refuse_until = 0.0
        self._reopen: asyncio.Task[None] | None = None
        self._resume: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self._listen()

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.listen_host, self.port, reuse_address=True)
        # The port is fixed after the first bind: every process keeps the URL it was given.
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        for task in (self._reopen, self._resume):
            if task is not None:
                task.cancel()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        self._drop_links()

    # -- faults --------------------------------------------------------------------------------
    def drop(self) -> int:
        """Reset every open connection; returns how many."""
        self.stats.drops += 1
        return self._drop_links()

    def _drop_links(self) -> int:
        links = list(self._links)
        for link in links:
            link.abort()
        self._links.clear()
        self.stats.dropped += len(links)
        self.stats.active = 0
        return len(links)

    def stall(self, seconds: float) -> None:
        """Forward nothing for ``seconds`` (a later, longer stall extends it)."""
        self.stats.stalls += 1
        self._stall_until = max(self._stall_until, time.monotonic() + seconds)
        self._flowing.clear()
        if self._resume is None or self._resume.done():
            self._resume = asyncio.get_running_loop().create_task(self._resume_flow())

    async def _resume_flow(self) -> None:
        while (wait := self._stall_until - time.monotonic()) > 0:
            await asyncio.sleep(wait)
        self._flowing.set()

    async def refuse(self, seconds: float) -> None:
        """Close the listening socket for ``seconds``: connecting is refused meanwhile."""
        self.stats.refusals += 1
        self._refuse_until = max(self._refuse_until, time.monotonic() + seconds)
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        if self._reopen is None or self._reopen.done():
            self._reopen = asyncio.get_running_loop().create_task(self._reopen_later())

    async def _reopen_later(self) -> None:
        while (wait := self._refuse_until - time.monotonic()) > 0:
            await asyncio.sleep(wait)
        await self._listen()

    async def outage(self, seconds: float) -> int:
        """The server is down for ``seconds``: refuse new connections and reset the open ones."""
        await self.refuse(seconds)
        return self.drop()

    # -- forwarding ----------------------------------------------------------------------------
    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.stats.accepted += 1
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(*self.target), timeout=5)
        except (OSError, TimeoutError):
            self.stats.upstream_failures += 1
            writer.transport.abort()
            return
        link = _Link(writer, up_writer)
        self._links.add(link)
        self.stats.active = len(self._links)
        try:
            await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))
        finally:
            if link in self._links:
                self._links.discard(link)
                self.stats.active = len(self._links)
            link.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(CHUNK):
                # A stalled proxy holds what it read; the next read waits too, so the sender's
                # window fills and it blocks as behind a dead link.
                await self._flowing.wait()
                writer.write(data)
                await writer.drain()
                self.stats.bytes_forwarded += len(data)
        except OSError:
            _reset(writer)  # the other side broke: so does this one
        else:
            # One side closed: close the other after what it was sent (a half-open link would
            # leave a client waiting on a peer that is gone).
            writer.close()


class ProxyThread:
    """A :class:`TcpProxy` on its own event loop in a daemon thread; every method may be called
    from any thread and returns once the proxy has done it."""

    def __init__(
        self, target_host: str, target_port: int, *, listen_port: int = 0, listen_host: str = "127.0.0.1"
    ) -> None:
        self.proxy = TcpProxy(target_host, target_port, listen_host=listen_host, listen_port=listen_port)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp-proxy", daemon=True)
        self._thread.start()
        try:
            self._call(self.proxy.start())
        except BaseException:
            self.close()  # e.g. the port is taken: no loop thread left behind
            raise

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=30)

    async def _sync(self, function: Any, *args: Any) -> Any:
        return function(*args)

    @property
    def port(self) -> int:
        return self.proxy.port

    def drop(self) -> int:
        return int(self._call(self._sync(self.proxy.drop)))

    def stall(self, seconds: float) -> None:
        self._call(self._sync(self.proxy.stall, seconds))

    def refuse(self, seconds: float) -> None:
        self._call(self.proxy.refuse(seconds))

    def outage(self, seconds: float) -> int:
        return self._call(self.proxy.outage(seconds))

    def stats(self) -> dict[str, int]:
        return dict(self._call(self._sync(lambda: asdict(self.proxy.stats))))

    def close(self) -> None:
        try:
            self._call(self.proxy.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", required=True, type=_address, help="HOST:PORT to forward to (loopback)")
    parser.add_argument("--listen", type=int, default=0, help="port to listen on, 127.0.0.1 (0: a free one)")
    args = parser.parse_args()
    proxy = ProxyThread(*args.target, listen_port=args.listen)
    print(f"proxy listening on 127.0.0.1:{proxy.port} → {args.target[0]}:{args.target[1]}", flush=True)
    commands = {
        "drop": lambda _: proxy.drop(),
        "stall": lambda s: proxy.stall(float(s)),
        "refuse": lambda s: proxy.refuse(float(s)),
        "outage": lambda s: proxy.outage(float(s)),
        "stats": lambda _: proxy.stats(),
    }
    try:
        for line in sys.stdin:
            name, _, argument = line.strip().partition(" ")
            if name in commands:
                print(json.dumps(commands[name](argument or "0")), flush=True)
            elif name:
                print(f"unknown command {name!r}; one of {', '.join(commands)}", flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        proxy.close()


if __name__ == "__main__":
    main()
