"""Redis 7 with Sentinel: one master, two replicas and three Sentinels on loopback (or on a
bridge address of ours), for the cluster scenarios (issue #23, point 5).

Debian's ``redis-server`` is the Sentinel too (``redis-server sentinel.conf --sentinel``). What
the generated configuration does and why (measured here: ready in ~1.5 s, a killed master
replaced in 2.1-2.8 s, the old master back as a replica ~3 s after its restart):

- quorum 2 of 3, ``down-after-milliseconds`` 1000 and ``failover-timeout`` 5000, so a killed
  master is replaced in a few seconds rather than Sentinel's default 30 s + 3 min;
- ``repl-diskless-sync-delay 0``: Redis 7 syncs replicas diskless by default but first waits 5 s
  for more replicas to arrive, which would delay every (re)sync;
- no persistence (``save ""``, no AOF), ``bind`` to one address only;
- Sentinel finds replicas in the master's INFO, which it asks every 10 s: started together with
  the replicas it saw none and needed 10 s more. So the Sentinels start once the replicas are
  online, and ``SENTINEL DEBUG info-period 1000`` (Redis 7, in memory, set after each start)
  makes the next INFO come in 1 s, which also turns a restarted old master into a replica in
  ~1-3 s instead of ~10 s; ``publish-period 500`` speeds up the Sentinels finding each other;
- Sentinel enters TILT mode (it stops acting) when its 100 ms timer is late by more than 2 s, as
  on a machine loaded enough to stall it: ``tilt-period 5000`` bounds that pause to 5 s instead
  of 30 s. ``logs()`` shows ``+tilt`` if it happened;
- Sentinel rewrites its own configuration file (it records the other Sentinels, the replicas and
  every failover), and it makes the instances it reconfigures rewrite theirs (``CONFIG
  REWRITE``): both stay in ``base_dir``, writable, and are the evidence of what happened;
- Sentinel hands clients the address it monitors: 127.0.0.1 by default, which inside a network
  namespace is the namespace's own loopback, so a forwarder cannot help. For clients in
  namespaces, pass ``host=network.gateway``: everything binds there (protected mode off, the
  address is on our own bridge) and root-namespace clients reach it as well.

Every process runs in its own process group and is SIGKILLed on teardown.
"""

from __future__ import annotations

import ipaddress
import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import redis

from tests.cluster.netns import owner_alive, owner_record
from tests.system import wait_for

REDIS_SERVER = "/usr/bin/redis-server"
Address = tuple[str, int]


def kill_stale_instances() -> list[int]:
    """SIGKILL the Redis and Sentinel processes an earlier run left behind when it died without
    its teardown, and return their pids. One is ours when its group's base_dir (its working
    directory, or that directory's parent for a Redis) holds an ``owner`` record and the configuration file of the port in its process
    title (``redis-PORT.conf``/``sentinel-PORT.conf``), and stale when that record names no
    live process."""
    killed = []
    for proc_dir in Path("/proc").iterdir():
        if not proc_dir.name.isdigit():
            continue
        try:
            if not (proc_dir / "comm").read_text().startswith("redis-"):
                continue
            cwd = Path(os.readlink(proc_dir / "cwd"))
            argv = (proc_dir / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile, or not readable
        # A Sentinel runs in the base dir, a Redis in its ``dir`` (base_dir/redis-PORT). Redis
        # rewrites its process title to "redis-server 127.0.0.1:PORT [sentinel]": the port is
        # what is left to match against the configuration files there.
        base_dir = cwd.parent if cwd.name.startswith("redis-") else cwd
        port = re.search(rb":(\d+)", argv[0])
        ours = port is not None and any(
            (base_dir / f"{kind}-{int(port.group(1))}.conf").exists() for kind in ("redis", "sentinel")
        )
        try:
            record = (base_dir / "owner").read_text()
        except OSError:
            continue  # no owner record: not ours
        if not ours or owner_alive(record):
            continue
        pid = int(proc_dir.name)
        try:
            os.killpg(os.getpgid(pid), signal.SIGKILL)  # its own session: that instance only
            killed.append(pid)
        except ProcessLookupError:
            pass
    return killed


class RedisSentinelGroup:
    """``with RedisSentinelGroup(base_dir) as group:`` starts the master (the first of
    ``redis_ports``), its replicas and the Sentinels, and waits until every Sentinel knows both
    replicas and both other Sentinels (before that a failover could not be voted)."""

    def __init__(
        self,
        base_dir: Path | str,
        redis_ports: Sequence[int] = (6391, 6392, 6393),
        sentinel_ports: Sequence[int] = (26391, 26392, 26393),
        master_name: str = "mymaster",
        *,
        quorum: int = 2,
        down_after_ms: int = 1000,
        failover_timeout_ms: int = 5000,
        start_timeout: float = 30.0,
        sentinel_debug: dict[str, int] | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.base_dir = Path(base_dir)
        # Where every instance binds and what Sentinel hands to clients as the master's address.
        # Keep loopback unless processes in a network namespace must use Sentinel: a forwarder
        # would not do, Sentinel would still answer 127.0.0.1, the namespace's own loopback. Give
        # it the address of a bridge of ours instead (``Network.gateway``), reachable from both.
        self.host = host
        self.redis_ports = list(redis_ports)
        self.sentinel_ports = list(sentinel_ports)
        self.master_name = master_name
        self.quorum = quorum
        self.down_after_ms = down_after_ms
        self.failover_timeout_ms = failover_timeout_ms
        self.start_timeout = start_timeout
        # Sentinel's own periods (``SENTINEL DEBUG``, Redis 7; in memory, so set after each start):
        # INFO every 1 s instead of 10 s, so a restarted old master is turned into a replica and
        # replicas are found in about a second; hellos every 0.5 s instead of 2 s; TILT, if the
        # loaded machine ever triggers it, lasts 5 s instead of 30 s.
        self.sentinel_debug = (
            sentinel_debug
            if sentinel_debug is not None
            else {"info-period": 1000, "publish-period": 500, "tilt-period": 5000}
        )
        self.procs: dict[int, subprocess.Popen[bytes]] = {}  # by port, Redis and Sentinel alike
        self.failover_seconds: float | None = None  # kill_master() until wait_new_master() saw it
        self._killed_at: float | None = None

    # -- lifecycle --------------------------------------------------------------------------------
    def __enter__(self) -> RedisSentinelGroup:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> float:
        """Write the configurations, start everything and wait until it is ready (see the class
        docstring). Returns the seconds it took."""
        began = time.monotonic()
        deadline = began + self.start_timeout
        self.base_dir.mkdir(parents=True, exist_ok=True)
        (self.base_dir / "owner").write_text(owner_record() + "\n")  # for kill_stale_instances()
        master = self.redis_ports[0]
        for port in self.redis_ports:
            self._write_redis_conf(port, replica_of=None if port == master else master)
            self._launch(port, self._redis_conf(port))
        # Sentinels learn replicas from the master's INFO, asked once at connect and then every
        # info-period: start them once the replicas are in that INFO, or wait one period more.
        wait_for(
            lambda: self._replicas_online(master),
            timeout=max(1.0, deadline - time.monotonic()),
            message=lambda: f"{len(self.redis_ports) - 1} replicas online at {master}\n{self.logs()}",
        )
        for port in self.sentinel_ports:
            self._write_sentinel_conf(port, master)
            self._launch(port, self._sentinel_conf(port), "--sentinel")
        for port in self.sentinel_ports:
            wait_for(
                lambda p=port: self._ping(p),
                timeout=max(1.0, deadline - time.monotonic()),
                message=lambda p=port: f"sentinel on {p} answering PING\n{self.logs()}",
            )
            for name, value in self.sentinel_debug.items():
                self.client(port).execute_command("SENTINEL", "DEBUG", name, value)
        wait_for(self._ready, timeout=max(1.0, deadline - time.monotonic()), interval=0.2, message=self._not_ready)
        return time.monotonic() - began

    def _redis_conf(self, port: int) -> Path:
        return self.base_dir / f"redis-{port}.conf"

    def _sentinel_conf(self, port: int) -> Path:
        return self.base_dir / f"sentinel-{port}.conf"

    def log_file(self, port: int) -> Path:
        kind = "sentinel" if port in self.sentinel_ports else "redis"
        return self.base_dir / f"{kind}-{port}.log"

    def _protected_mode(self) -> str:
        """Redis 7 refuses clients from non-loopback addresses without a password ("protected
        mode"); a bridge address of ours is no outside network, so it is off there."""
        return "yes" if ipaddress.ip_address(self.host).is_loopback else "no"

    def _write_redis_conf(self, port: int, replica_of: int | None) -> None:
        data_dir = self.base_dir / f"redis-{port}"
        data_dir.mkdir(exist_ok=True)
        lines = [
            f"port {port}",
            f"bind {self.host}",
            f"protected-mode {self._protected_mode()}",
            "daemonize no",
            f"dir {data_dir}",
            f"logfile {self.log_file(port)}",
            'save ""',
            "appendonly no",
            "repl-diskless-sync-delay 0",
        ]
        if replica_of is not None:
            lines.append(f"replicaof {self.host} {replica_of}")
        self._redis_conf(port).write_text("\n".join(lines) + "\n")

    def _write_sentinel_conf(self, port: int, master: int) -> None:
        name = self.master_name
        lines = [
            f"port {port}",
            f"bind {self.host}",
            f"protected-mode {self._protected_mode()}",
            "daemonize no",
            f"dir {self.base_dir}",
            f"logfile {self.log_file(port)}",
            "sentinel resolve-hostnames no",
            f"sentinel monitor {name} {self.host} {master} {self.quorum}",
            f"sentinel down-after-milliseconds {name} {self.down_after_ms}",
            f"sentinel failover-timeout {name} {self.failover_timeout_ms}",
            f"sentinel parallel-syncs {name} 1",
        ]
        self._sentinel_conf(port).write_text("\n".join(lines) + "\n")

    def _launch(self, port: int, conf: Path, *extra: str) -> None:
        with open(self.base_dir / f"stdout-{port}.log", "ab") as out:
            self.procs[port] = subprocess.Popen(
                [REDIS_SERVER, str(conf), *extra],
                cwd=self.base_dir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def close(self) -> None:
        """SIGKILL every process group we started (Redis keeps nothing worth a clean shutdown)."""
        for proc in self.procs.values():
            self._kill(proc)
        self.procs.clear()

    @staticmethod
    def _kill(proc: subprocess.Popen[bytes]) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)

    # -- clients ----------------------------------------------------------------------------------
    def client(self, port: int) -> redis.Redis:
        """A client of the Redis or Sentinel on ``port``; 2 s timeouts, so a dead or stalled
        instance fails the call instead of hanging the test."""
        return redis.Redis(host=self.host, port=port, socket_timeout=2, socket_connect_timeout=2, decode_responses=True)

    def _ping(self, port: int) -> bool:
        try:
            return bool(self.client(port).ping())
        except redis.RedisError:
            return False

    def sentinels(self) -> list[Address]:
        """The Sentinels' addresses, as django-redis and channels_redis take them."""
        return [(self.host, port) for port in self.sentinel_ports]

    def sentinels_setting(self) -> str:
        """The same as the project's ``REDIS_SENTINELS`` value (``host:port,host:port,...``)."""
        return ",".join(f"{host}:{port}" for host, port in self.sentinels())

    def master_address(self, sentinel_port: int | None = None) -> Address:
        """The master as a Sentinel reports it (the first that answers, unless one is named)."""
        ports = [sentinel_port] if sentinel_port else self.sentinel_ports
        errors = []
        for port in ports:
            try:
                host, master_port = self.client(port).execute_command(
                    "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.master_name
                )
                return (str(host), int(master_port))
            except (redis.RedisError, TypeError, ValueError) as exc:
                errors.append(f"{port}: {exc}")
        raise RuntimeError(f"no Sentinel answered for {self.master_name}: {errors}")

    def role(self, port: int) -> str:
        """``master`` or ``slave`` (Redis's word), as the instance itself says."""
        return str(self.client(port).info("replication")["role"])

    def _ready(self) -> bool:
        for port in self.sentinel_ports:
            try:
                state = self.client(port).sentinel_master(self.master_name)
            except redis.RedisError:
                return False
            if int(state["num-slaves"]) < len(self.redis_ports) - 1:
                return False
            if int(state["num-other-sentinels"]) < len(self.sentinel_ports) - 1:
                return False
        return True

    def _replicas_online(self, master: int) -> bool:
        """Whether every replica is attached to ``master`` and past its initial sync."""
        try:
            info = self.client(master).info("replication")
        except redis.RedisError:
            return False
        replicas = [value for key, value in info.items() if key.startswith("slave") and isinstance(value, dict)]
        return len(replicas) >= len(self.redis_ports) - 1 and all(r.get("state") == "online" for r in replicas)

    def _not_ready(self) -> str:
        return f"every Sentinel to know {len(self.redis_ports) - 1} replicas and the other Sentinels\n{self.logs()}"

    # -- faults -----------------------------------------------------------------------------------
    def kill(self, port: int) -> None:
        """``kill -9`` the Redis (or Sentinel) on ``port``."""
        proc = self.procs.get(port)
        if proc is None:
            raise KeyError(f"no process of ours on port {port}")
        self._kill(proc)

    def kill_master(self) -> Address:
        """``kill -9`` the current master (as the Sentinels report it); returns its address and
        starts the failover clock ``wait_new_master`` stops."""
        old = self.master_address()
        self._killed_at = time.monotonic()
        self.kill(old[1])
        return old

    def wait_new_master(self, old: Address, timeout: float = 30.0) -> Address:
        """Poll until every running Sentinel reports a master other than ``old`` and that
        instance says it is a master. Returns it; ``failover_seconds`` is the time since
        ``kill_master``. The timeout bounds a failover that never happens (a lost vote is retried
        only after 2 x failover-timeout, TILT mode pauses Sentinel for 30 s)."""

        def promoted() -> Address | None:
            seen = set()
            for port in self.sentinel_ports:
                if port not in self.procs or self.procs[port].poll() is not None:
                    continue
                try:
                    seen.add(self.master_address(port))
                except RuntimeError:
                    return None
            if len(seen) != 1:
                return None
            new = seen.pop()
            if new == old:
                return None
            try:
                return new if self.role(new[1]) == "master" else None
            except redis.RedisError:
                return None

        new = wait_for(
            promoted, timeout=timeout, interval=0.1, message=lambda: f"a master other than {old}\n{self.logs()}"
        )
        if self._killed_at is not None:
            self.failover_seconds = time.monotonic() - self._killed_at
        return cast(Address, new)

    def restart(self, port: int, *, timeout: float = 30.0) -> None:
        """Start the Redis on ``port`` again from its configuration file. An old master comes
        back as a master; the Sentinels then turn it into a replica of the new one (polled)."""
        proc = self.procs.get(port)
        if proc is not None and proc.poll() is None:
            raise RuntimeError(f"redis on {port} is running")
        self._launch(port, self._redis_conf(port))
        wait_for(
            lambda: self._ping(port), timeout=timeout, message=lambda: f"redis on {port} answering PING\n{self.logs()}"
        )
        if self.master_address()[1] != port:
            wait_for(
                lambda: self.role(port) == "slave", timeout=timeout, message=lambda: f"{port} a replica\n{self.logs()}"
            )

    # -- evidence ---------------------------------------------------------------------------------
    def logs(self, tail_chars: int = 3000) -> str:
        out = []
        for port in [*self.redis_ports, *self.sentinel_ports]:
            path = self.log_file(port)
            if path.exists():
                out.append(f"===== {path.name} =====\n{path.read_text(errors='replace')[-tail_chars:]}")
        return "\n".join(out)
