"""Worker "hosts" as Linux network namespaces on a bridge the test owns, and link cuts between them
and the rest of the machine, for the cluster scenarios (issue #23, point 5). Needs root and
``iproute2`` (``ip``) and ``procps`` (``sysctl``).

Layout, for a run whose tag is T (``pid % 1000``, or the next free number)::

    root namespace                              namespace ctT-<name>
    brctT  10.251.X.1/24  <-- vctTh<i> ==veth== eth0  10.251.X.<10+i>/24   (lo up, no default route)
      Forwarder 10.251.X.1:P  ->  127.0.0.1:P

- Only the bridge's /24 is routed inside a namespace (no default route) and the root namespace
  does not forward (``ip_forward`` stays as it is, 0 here): a process in a namespace can reach
  the other namespaces and the bridge address, nothing else. IPv6 is off on every link we make.
- The machine's PostgreSQL, RabbitMQ and Redis listen on 127.0.0.1 only, which inside a
  namespace is the namespace's own loopback: processes there reach them through a
  :class:`Forwarder` listening on the bridge address (bench/tcp_proxy.py's proxy, whose
  loopback-only guard admits the bridge address only while this bridge exists). The test's own
  engines may listen on the bridge address instead: ``PostgresPrimary(listen_addresses=
  f"127.0.0.1,{net.gateway}", trust_networks=[str(net.subnet)])``, and Sentinel must
  (``RedisSentinelGroup(host=net.gateway)``: it hands clients the address it monitors).
- ``Host.cut()`` sets the root-side veth down. The namespace's ``eth0`` loses carrier, so an
  established TCP connection goes silent (no RST, no FIN: the peers only notice by their own
  timeouts) and a new connection fails (EHOSTUNREACH, after 0.3-1.1 s here, or the client's
  connect timeout first). ``restore()`` sets it up again; with STP off the bridge port forwards
  at once (a connect works ~1 s after, ARP included), and a held connection carries on: TCP
  retransmits what the cut held back. Through a forwarder, the engine's socket is connected to
  the forwarder, which stays up during a cut: only an application heartbeat tells the engine
  the client is gone (RabbitMQ's does). PostgreSQL has none, and its TCP keepalives would probe
  the forwarder, so a cut client's session (and its locks) lives on until the forwarder drops it
  (``Forwarder.drop()``) or ``idle_in_transaction_session_timeout`` ends it: unlike behind a
  real partition, where keepalives would.
- Teardown kills every process started in a namespace (by process group, then whatever
  ``ip netns pids`` still lists), deletes the namespaces, veths and the bridge, also after a
  failed test. A crashed run's leftovers are found by name and removed by :func:`cleanup_stale`,
  which leaves alone every run whose owner process is still alive (the owner's pid and start
  time are kept in ``/run/ct-netns/brctT``).
"""

from __future__ import annotations

import fcntl
import ipaddress
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.tcp_proxy import ProxyThread, allow_listen_address, forbid_listen_address
from tests.system import wait_for

BRIDGE_PREFIX = "brct"
STATE_DIR = Path("/run/ct-netns")
SUPERNET = ipaddress.ip_network("10.251.0.0/16")
_NETNS = re.compile(r"^ct(\d+)-")
_VETH = re.compile(r"^vct(\d+)h\d+$")
_BRIDGE = re.compile(rf"^{BRIDGE_PREFIX}(\d+)$")


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``ip ARGS`` (iproute2); raises with its stderr when ``check`` and it fails."""
    result = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
    return result


def _links() -> list[dict[str, object]]:
    return list(json.loads(ip("-j", "link", "show").stdout or "[]"))


def _netns_names() -> list[str]:
    return [line.split()[0] for line in ip("netns", "list").stdout.splitlines() if line.strip()]


def _used_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 network assigned or routed on the machine (root namespace), to stay clear of."""
    used = []
    for entry in json.loads(ip("-j", "-4", "addr", "show").stdout or "[]"):
        for info in entry.get("addr_info", []):
            used.append(ipaddress.ip_network(f"{info['local']}/{info['prefixlen']}", strict=False))
    for route in json.loads(ip("-j", "-4", "route", "show", "table", "all").stdout or "[]"):
        dst = route.get("dst", "")
        if dst and dst != "default":
            used.append(ipaddress.ip_network(dst if "/" in dst else f"{dst}/32", strict=False))
    return used


def process_start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat): with the
    pid it names one process, even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def owner_record() -> str:
    """``"PID START"`` of this process: written next to what it starts, so a later run can tell
    leftovers of a run that died (its record names no live process) from a live run's."""
    return f"{os.getpid()} {process_start_time(os.getpid())}"


def owner_alive(record: str) -> bool:
    """Whether the process an :func:`owner_record` names still runs."""
    try:
        pid_text, started = record.split()
        return process_start_time(int(pid_text)) == started
    except ValueError:
        return False


def _owner_alive(tag: int) -> bool:
    try:
        return owner_alive((STATE_DIR / f"{BRIDGE_PREFIX}{tag}").read_text())
    except OSError:
        return False


def _kill_netns_processes(netns: str) -> None:
    """SIGKILL every process in ``netns`` and wait (bounded) until none is left."""

    def pids() -> list[int]:
        result = ip("netns", "pids", netns, check=False)
        return [int(p) for p in result.stdout.split()] if result.returncode == 0 else []

    for pid in pids():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_for(lambda: not pids(), timeout=10, interval=0.05, message=f"the processes of {netns} to exit")


def _remove_tag(tag: int) -> list[str]:
    """Delete the namespaces, veths and bridge of run ``tag`` and its state file."""
    removed = []
    for name in _netns_names():
        match = _NETNS.match(name)
        if match and int(match.group(1)) == tag:
            _kill_netns_processes(name)
            ip("netns", "del", name, check=False)
            removed.append(name)
    for link in _links():
        name = str(link.get("ifname", ""))
        match = _VETH.match(name) or _BRIDGE.match(name)
        if match and int(match.group(1)) == tag:
            ip("link", "del", name, check=False)
            removed.append(name)
    (STATE_DIR / f"{BRIDGE_PREFIX}{tag}").unlink(missing_ok=True)
    return removed


def cleanup_stale() -> list[str]:
    """Remove what earlier runs that crashed left behind (bridges ``brct*``, namespaces ``ct*-*``,
    veths ``vct*h*``, state files), except what belongs to a run whose owner is still alive.
    Returns the names removed."""
    tags = set()
    for name in _netns_names():
        if match := _NETNS.match(name):
            tags.add(int(match.group(1)))
    for link in _links():
        name = str(link.get("ifname", ""))
        if match := _VETH.match(name) or _BRIDGE.match(name):
            tags.add(int(match.group(1)))
    if STATE_DIR.exists():
        for path in STATE_DIR.iterdir():
            if match := _BRIDGE.match(path.name):
                tags.add(int(match.group(1)))
    removed = []
    with _lock():
        for tag in sorted(tags):
            if not _owner_alive(tag):
                removed += _remove_tag(tag)
    return removed


@contextmanager
def _lock() -> Iterator[None]:
    """An exclusive flock on ``/run/ct-netns/.lock``: choosing a tag and a subnet and creating the
    bridge is one step against another run doing the same at the same moment."""
    STATE_DIR.mkdir(mode=0o755, exist_ok=True)
    fd = os.open(STATE_DIR / ".lock", os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


class Host:
    """One worker "host": network namespace ``ct<tag>-<name>`` with ``address`` on ``eth0``,
    attached to the bridge by a veth pair. Made by :meth:`Network.add_host`."""

    def __init__(self, network: Network, name: str, address: str, index: int) -> None:
        self.network = network
        self.name = name
        self.address = address
        self.netns = f"ct{network.tag}-{name}"
        self.veth = f"vct{network.tag}h{index}"  # the root side: what cut() takes down
        self.procs: list[subprocess.Popen[Any]] = []

    def _create(self) -> None:
        peer = f"vct{self.network.tag}n{self.veth.rpartition('h')[2]}"
        ip("netns", "add", self.netns)
        ip("link", "add", self.veth, "type", "veth", "peer", "name", peer, "netns", self.netns)
        _disable_ipv6(self.veth)
        ip("link", "set", self.veth, "master", self.network.bridge)
        ip("link", "set", self.veth, "up")
        ip("-n", self.netns, "link", "set", peer, "name", "eth0")
        self.exec(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"])
        ip("-n", self.netns, "addr", "add", f"{self.address}/{self.network.subnet.prefixlen}", "dev", "eth0")
        ip("-n", self.netns, "link", "set", "eth0", "up")
        ip("-n", self.netns, "link", "set", "lo", "up")

    def run(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        log: Path | str | None = None,
        cwd: Path | str | None = None,
        **popen_kwargs: Any,
    ) -> subprocess.Popen[Any]:
        """Start ``argv`` inside the namespace (``ip netns exec``, which execs it: the Popen's pid
        is the process's) in a process group of its own. Its output is appended to ``log``
        (default: discarded); ``popen_kwargs`` (``stdin=PIPE``, ``stdout=PIPE``, ``text=True``,
        ...) go to Popen as they are. Teardown kills it if the test did not."""
        log_file = open(log, "ab") if log is not None else None
        options: dict[str, Any] = {
            "stdin": subprocess.DEVNULL,
            "stdout": log_file if log_file is not None else subprocess.DEVNULL,
            "stderr": subprocess.STDOUT,
            **popen_kwargs,
        }
        try:
            proc = subprocess.Popen(
                ["ip", "netns", "exec", self.netns, *argv],
                env=dict(env) if env is not None else None,
                cwd=cwd,
                start_new_session=True,
                **options,
            )
        finally:
            if log_file is not None:
                log_file.close()  # the child has its own copy of the fd
        self.procs.append(proc)
        return proc

    def exec(self, argv: Sequence[str], timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        """Run a short command inside the namespace and wait for it (output captured)."""
        return subprocess.run(
            ["ip", "netns", "exec", self.netns, *argv], capture_output=True, text=True, timeout=timeout, check=False
        )

    def cut(self) -> None:
        """Take the root-side veth down: the host is partitioned from everything (see module)."""
        ip("link", "set", self.veth, "down")

    def restore(self) -> None:
        """Bring the link back and wait (bounded) until the namespace side has carrier again."""
        ip("link", "set", self.veth, "up")
        wait_for(self._carrier, timeout=10, interval=0.05, message=f"{self.netns} eth0 carrier")

    def _carrier(self) -> bool:
        result = ip("-n", self.netns, "-j", "link", "show", "eth0", check=False)
        if result.returncode != 0:
            return False
        return "LOWER_UP" in json.loads(result.stdout)[0].get("flags", [])

    def kill_all(self) -> None:
        """SIGKILL every process group we started here, then anything else left in the namespace."""
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait(timeout=30)
        _kill_netns_processes(self.netns)

    def _remove(self) -> None:
        self.kill_all()
        ip("netns", "del", self.netns, check=False)
        ip("link", "del", self.veth, check=False)  # normally gone with the namespace's end


def _disable_ipv6(device: str) -> None:
    path = Path(f"/proc/sys/net/ipv6/conf/{device}/disable_ipv6")
    if path.exists():
        path.write_text("1")


class Forwarder:
    """A TCP forwarder in the root namespace from ``listen`` (a bridge address of ours) to
    ``target`` (loopback): how processes in a namespace reach the machine's services. It is
    bench/tcp_proxy.py's proxy, so ``drop``/``stall``/``refuse``/``outage`` work on it too."""

    def __init__(self, listen: tuple[str, int], target: tuple[str, int]) -> None:
        self.listen = listen
        self.target = target
        self._proxy = ProxyThread(target[0], target[1], listen_host=listen[0], listen_port=listen[1])

    @property
    def port(self) -> int:
        return self._proxy.port

    def drop(self) -> int:
        return self._proxy.drop()

    def stall(self, seconds: float) -> None:
        self._proxy.stall(seconds)

    def refuse(self, seconds: float) -> None:
        self._proxy.refuse(seconds)

    def outage(self, seconds: float) -> int:
        return self._proxy.outage(seconds)

    def stats(self) -> dict[str, int]:
        return self._proxy.stats()

    def close(self) -> None:
        self._proxy.close()

    def __enter__(self) -> Forwarder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Network:
    """The bridge ``brct<tag>`` with ``10.251.X.1/24``, its hosts and forwarders.

    ``with Network() as net:`` creates the bridge; ``net.add_host("hostA")`` a namespace on it;
    ``net.forward(5432)`` a forwarder from ``net.gateway:5432`` to ``127.0.0.1:5432``. Leaving the
    context removes all of it, whatever happened in between."""

    def __init__(self, subnet_index: int | None = None) -> None:
        self.tag: int = -1
        self.bridge = ""
        self.subnet = ipaddress.ip_network("10.251.0.0/24")
        self.gateway = ""
        self._subnet_index = subnet_index
        self.hosts: dict[str, Host] = {}
        self.forwarders: list[Forwarder] = []

    def __enter__(self) -> Network:
        try:
            self.create()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def create(self) -> None:
        """Pick a free tag and a /24 of 10.251.0.0/16 that no address or route of the machine
        overlaps (under the lock), create and address the bridge, record our ownership."""
        with _lock():
            taken = {int(m.group(1)) for link in _links() if (m := _BRIDGE.match(str(link.get("ifname", ""))))}
            taken |= {int(m.group(1)) for name in _netns_names() if (m := _NETNS.match(name))}
            tag = os.getpid() % 1000
            while tag in taken:
                tag = (tag + 1) % 1000
            used = _used_networks()
            candidates = [self._subnet_index] if self._subnet_index is not None else range(256)
            start = os.getpid() % 256 if self._subnet_index is None else 0
            for offset in range(len(candidates)):
                index = candidates[(start + offset) % len(candidates)]
                subnet = ipaddress.ip_network(f"10.251.{index}.0/24")
                if not any(subnet.overlaps(net) for net in used):
                    break
            else:
                raise RuntimeError(f"no free /24 in {SUPERNET} (or 10.251.{self._subnet_index}.0/24 is in use)")
            self.tag, self.subnet = tag, subnet
            self.bridge = f"{BRIDGE_PREFIX}{tag}"
            self.gateway = str(subnet.network_address + 1)
            (STATE_DIR / self.bridge).write_text(owner_record() + "\n")
            ip("link", "add", self.bridge, "type", "bridge", "stp_state", "0", "forward_delay", "0")
        _disable_ipv6(self.bridge)
        ip("addr", "add", f"{self.gateway}/{subnet.prefixlen}", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        allow_listen_address(self.gateway)

    def add_host(self, name: str, address: str | None = None) -> Host:
        """A namespace ``ct<tag>-<name>`` attached to the bridge with ``address`` (default: the
        next of .10, .11, ... in the bridge's /24; a given one must lie in it)."""
        if name in self.hosts:
            raise ValueError(f"host {name!r} exists")
        index = len(self.hosts)
        chosen = address or str(self.subnet.network_address + 10 + index)
        if ipaddress.ip_address(chosen) not in self.subnet or chosen == self.gateway:
            raise ValueError(f"{chosen} is not a host address of {self.subnet}")
        host = Host(self, name, chosen, index)
        self.hosts[name] = host  # registered first: close() removes a half-made host too
        host._create()
        return host

    def forward(self, port: int, target_port: int | None = None) -> Forwarder:
        """A :class:`Forwarder` from ``gateway:port`` to ``127.0.0.1:target_port`` (default the
        same port), closed with the network."""
        forwarder = Forwarder((self.gateway, port), ("127.0.0.1", target_port or port))
        self.forwarders.append(forwarder)
        return forwarder

    def close(self) -> None:
        """Forwarders, processes, namespaces, veths, bridge, state file: all gone. Idempotent."""
        for forwarder in self.forwarders:
            forwarder.close()
        self.forwarders.clear()
        for host in self.hosts.values():
            host._remove()
        self.hosts.clear()
        if self.gateway:
            forbid_listen_address(self.gateway)
        if self.tag >= 0:
            with _lock():
                _remove_tag(self.tag)
        self.tag, self.gateway = -1, ""

    def wait_reachable(self, host: Host, port: int, timeout: float = 10.0) -> float:
        """Poll until a TCP connect from ``host`` to ``gateway:port`` succeeds; returns seconds."""
        began = time.monotonic()
        wait_for(
            lambda: connect_from(host, self.gateway, port, timeout=1.0) == "ok",
            timeout=timeout,
            interval=0.1,
            message=f"{host.netns} reaching {self.gateway}:{port}",
        )
        return time.monotonic() - began


_CONNECT_PROBE = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3])).close()
    print("ok")
except OSError as exc:
    print(type(exc).__name__, exc.errno)
"""


def connect_from(host: Host, address: str, port: int, timeout: float = 2.0) -> str:
    """Try one TCP connect from inside ``host``: ``"ok"``, or the error's class and errno
    (``TimeoutError None``, ``OSError 113`` for EHOSTUNREACH, ...)."""
    result = host.exec([sys.executable, "-c", _CONNECT_PROBE, address, str(port), str(timeout)], timeout=timeout + 30)
    return result.stdout.strip() or result.stderr.strip()
