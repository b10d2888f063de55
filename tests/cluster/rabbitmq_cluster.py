"""A real 3-node RabbitMQ cluster on loopback, for the cluster scenarios (issue #23, point 5).

Debian's RabbitMQ 3.10 binaries (``/usr/lib/rabbitmq/bin``) are run directly, as root, with
everything of theirs inside ``base_dir``. Debian's traps, and what this module does about them:

- ``/etc/rabbitmq/rabbitmq-env.conf`` sets ``NODENAME=rabbit@localhost`` (the machine's own
  node) and ``/etc/rabbitmq/rabbitmq.conf`` pins ``127.0.0.1:5672``: every node and every CLI
  call gets ``RABBITMQ_CONF_ENV_FILE`` pointing at an empty file and a config file of its own.
- The ``/usr/sbin`` wrappers ``su`` to the ``rabbitmq`` user, whose Erlang cookie is not ours:
  the scripts in ``/usr/lib/rabbitmq/bin`` are used instead, with ``HOME`` (so the cookie) in
  ``base_dir``.
- The guest user may only connect over loopback by default; ``loopback_users = none`` lets a
  process in a network namespace, coming through a forwarder, use it too.
- ``rabbitmqctl await_startup`` fails at once (it does not wait) until the node has registered
  with epmd, and every CLI call boots an Erlang VM (about 1 s of CPU). So the boot first polls
  epmd's name list over its socket, which costs nothing, and calls ``await_startup`` once per node.
- The machine's epmd (4369, loopback) is shared: our nodes register there under their own names
  and it is never stopped. ``ERL_EPMD_ADDRESS=127.0.0.1`` keeps an epmd that a node would start
  (when none runs) off other interfaces; such an epmd outlives the cluster, as epmd does. The
  nodes' and the CLI's distribution listeners are bound to 127.0.0.1 (``inet_dist_use_interface``).
- Counts from ``list_queues`` (``queue_messages``) are a quorum queue's last *tick*, not a live
  read: ``quorum_tick_interval`` is lowered from 5 s to 1 s in ``advanced.config``, so poll.
- A node boot costs about 6 s of CPU on one scheduler (measured: 6.5 s wall for one node on an
  idle core), most of it before the first boot step; three nodes on two cores take 20-27 s.

Joining: nodes 2 and 3 boot with ``classic_config`` peer discovery naming only node 1, so they
join it while they boot (retrying every 250 ms until node 1 has its tables) instead of the
``stop_app; reset; join_cluster; start_app`` dance, which costs 8 CLI VMs and a second boot of
two nodes (measured: 35-37 s against 19-23 s for the whole boot). The dance stays as the
fallback for a node that booted alone. A fresh 3.10 node enables every feature flag while it
initialises, and each flag migrates mnesia tables: a node that joins during that window dies with
``schema_integrity_check_failed`` (``table_attributes_mismatch`` on ``rabbit_user``, seen here).
So the nodes initialise with no flag (``RABBITMQ_FEATURE_FLAGS=""``) and the formed cluster
enables them all at once (``rabbitmqctl enable_feature_flag all``, quorum queues included).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from tests.cluster.netns import owner_alive, owner_record
from tests.system import wait_for

RABBITMQ_BIN = Path("/usr/lib/rabbitmq/bin")
HOST = "localhost"  # the Erlang host part of every node name: short names, resolved by /etc/hosts
EPMD = ("127.0.0.1", 4369)
# One scheduler per node: three VMs share two cores with the system under test.
ERL_ARGS = "+S 1:1 -kernel inet_dist_use_interface {127,0,0,1}"
# The distribution listeners of the CLI's own hidden node stay on loopback too.
CTL_ERL_ARGS = "-kernel inet_dist_use_interface {127,0,0,1}"


@dataclass(frozen=True)
class QueueCounts:
    """A queue's messages as the cluster last reported them (see the module docstring on lag)."""

    ready: int
    unacked: int

    @property
    def total(self) -> int:
        return self.ready + self.unacked


@dataclass
class RabbitNode:
    """One node: its short name (``rmq1``), AMQP and distribution ports and its directory."""

    name: str
    port: int
    dist_port: int
    dir: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def nodename(self) -> str:
        return f"{self.name}@{HOST}"

    @property
    def pid_file(self) -> Path:
        return self.dir / "pid"

    @property
    def log_file(self) -> Path:
        return self.dir / "log" / f"{self.nodename}.log"

    @property
    def stdout_file(self) -> Path:
        return self.dir / "stdout.log"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


def epmd_names() -> set[str]:
    """The node names registered with the local epmd (its NAMES request: a 4-byte port, then one
    ``name N at port P`` line per node). An unreachable epmd answers the empty set."""
    try:
        with socket.create_connection(EPMD, timeout=2) as sock:
            sock.sendall(struct.pack(">HB", 1, 110))
            data = b""
            while chunk := sock.recv(4096):
                data += chunk
    except OSError:
        return set()
    return set(re.findall(r"name (\S+) at port", data[4:].decode(errors="replace")))


def kill_stale_nodes(names: Sequence[str] = ("rmq1", "rmq2", "rmq3")) -> list[int]:
    """SIGKILL the nodes named ``names`` that an earlier run started and left behind when it died
    without its teardown (a SIGTERMed or SIGKILLed pytest), and return their pids. A node is ours
    by its environment (``RABBITMQ_CONF_ENV_FILE`` is our empty file, ``HOME`` its base dir) and
    stale when ``HOME/owner`` names no live process; a live run's nodes and the machine's own
    ``rabbit@localhost`` never match."""
    killed = []
    for proc_dir in Path("/proc").iterdir():
        if not proc_dir.name.isdigit():
            continue
        try:
            if (proc_dir / "comm").read_text().strip() != "beam.smp":
                continue
            environ = dict(item.split("=", 1) for item in (proc_dir / "environ").read_text().split("\0") if "=" in item)
        except OSError:
            continue  # gone meanwhile, or not readable
        home = environ.get("HOME", "")
        if _short(environ.get("RABBITMQ_NODENAME", "")) not in names:
            continue
        if environ.get("RABBITMQ_CONF_ENV_FILE") != f"{home}/empty-env.conf":
            continue
        try:
            record = (Path(home) / "owner").read_text()
        except OSError:
            record = ""
        if owner_alive(record):
            continue
        pid = int(proc_dir.name)
        try:
            os.killpg(os.getpgid(pid), signal.SIGKILL)  # its own session: the node's processes only
            killed.append(pid)
        except ProcessLookupError:
            pass
    if killed:
        wait_for(lambda: not (epmd_names() & set(names)), timeout=10, message="stale nodes to leave epmd")
    return killed


def _short(nodename: str) -> str:
    return nodename.partition("@")[0]


def _json_rows(output: str) -> list[dict[str, object]]:
    """The rows of a ``--formatter json`` answer. 3.10 prints a banner line first for some
    commands and then the JSON array; skip to the first ``[``."""
    start = output.find("[")
    if start < 0:
        raise ValueError(f"no JSON array in CLI output: {output[:500]!r}")
    rows = json.loads(output[start:])
    if not isinstance(rows, list):
        raise ValueError(f"expected a JSON array, got {rows!r}")
    return rows


class RabbitMQCluster:
    """Three RabbitMQ 3.10 nodes on ``127.0.0.1``, clustered, as a context manager.

    ``with RabbitMQCluster(base_dir) as cluster:`` boots them in parallel, waits until all run in
    one cluster, and stops them (and kills what is left) on exit, also when the body failed.
    Each node's log is ``base_dir/<name>/log/<name>@localhost.log``; ``logs()`` returns their tails.
    """

    def __init__(
        self,
        base_dir: Path | str,
        ports: Sequence[int] = (5681, 5682, 5683),
        dist_ports: Sequence[int] = (25681, 25682, 25683),
        names: Sequence[str] = ("rmq1", "rmq2", "rmq3"),
        *,
        niceness: int = 10,
        boot_timeout: float = 150.0,
    ) -> None:
        if not (len(ports) == len(dist_ports) == len(names)):
            raise ValueError("ports, dist_ports and names must have the same length")
        self.base_dir = Path(base_dir)
        self.niceness = niceness
        self.boot_timeout = boot_timeout
        self.nodes = [
            RabbitNode(name, port, dist, self.base_dir / name)
            for name, port, dist in zip(names, ports, dist_ports, strict=True)
        ]
        self.boot_seconds: float | None = None  # measured by boot(): launch until one cluster runs
        # Seconds since the launch at each boot phase, and of each start(): for the report.
        self.timings: dict[str, float] = {}

    # -- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> RabbitMQCluster:
        try:
            self.boot()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def boot(self) -> float:
        """Write every node's files, launch all nodes at once and wait until they run as one
        cluster. Returns (and keeps in ``boot_seconds``) the seconds that took."""
        began = time.monotonic()
        taken = epmd_names() & {node.name for node in self.nodes}
        if taken:
            raise RuntimeError(
                f"epmd already has nodes named {sorted(taken)}: another run's, or a crashed run's"
                " (kill_stale_nodes() removes those)"
            )
        self._write_files()
        (self.base_dir / "owner").write_text(owner_record() + "\n")  # for kill_stale_nodes()
        for node in self.nodes:
            self._launch(node)
        deadline = began + self.boot_timeout
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(lambda node: self._await_startup(node, deadline), self.nodes))
        self.timings["nodes_started"] = time.monotonic() - began
        self._ensure_clustered(deadline)
        self.timings["clustered"] = time.monotonic() - began
        self._ctl_ok("enable_feature_flag", "all", node=self.nodes[0].name, timeout=60)
        self.boot_seconds = self.timings["boot"] = time.monotonic() - began
        return self.boot_seconds

    def _write_files(self) -> None:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        (self.base_dir / "empty-env.conf").write_text("")
        cookie = self.base_dir / ".erlang.cookie"
        if not cookie.exists():
            cookie.write_text(os.urandom(16).hex().upper())
            cookie.chmod(0o400)  # Erlang refuses a cookie file others can read
        seed = self.nodes[0]
        for node in self.nodes:
            (node.dir / "log").mkdir(parents=True, exist_ok=True)
            (node.dir / "mnesia").mkdir(exist_ok=True)
            (node.dir / "enabled_plugins").write_text("[].\n")
            lines = [
                f"listeners.tcp.1 = 127.0.0.1:{node.port}",
                "loopback_users = none",
                "log.console = false",  # the log file has it all; stdout.log keeps pre-logger errors
                "log.file.level = info",
            ]
            if node is not seed:
                lines += [
                    "cluster_formation.peer_discovery_backend = classic_config",
                    f"cluster_formation.classic_config.nodes.1 = {seed.nodename}",
                    # Node 1 needs about as long to boot as this one: keep retrying (a cheap RPC).
                    "cluster_formation.discovery_retry_limit = 600",
                    "cluster_formation.discovery_retry_interval = 250",
                ]
            (node.dir / "rabbitmq.conf").write_text("\n".join(lines) + "\n")
            (node.dir / "advanced.config").write_text("[{rabbit, [{quorum_tick_interval, 1000}]}].\n")

    def _cli_env(self) -> dict[str, str]:
        """The environment of every RabbitMQ script we run: none of the caller's RABBITMQ_/ERL_
        variables, our HOME (the cookie) and the empty env file instead of Debian's."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RABBITMQ_", "ERL_"))}
        env.update(
            HOME=str(self.base_dir),
            RABBITMQ_CONF_ENV_FILE=str(self.base_dir / "empty-env.conf"),
            RABBITMQ_CTL_ERL_ARGS=CTL_ERL_ARGS,
            ERL_EPMD_ADDRESS="127.0.0.1",
            LC_ALL="C.UTF-8",  # the Elixir CLI warns about latin1 otherwise
        )
        return env

    def _launch(self, node: RabbitNode) -> None:
        env = self._cli_env()
        env.update(
            RABBITMQ_NODENAME=node.nodename,
            RABBITMQ_NODE_PORT=str(node.port),
            RABBITMQ_DIST_PORT=str(node.dist_port),
            RABBITMQ_CONFIG_FILE=str(node.dir / "rabbitmq.conf"),
            RABBITMQ_ADVANCED_CONFIG_FILE=str(node.dir / "advanced.config"),
            RABBITMQ_ENABLED_PLUGINS_FILE=str(node.dir / "enabled_plugins"),
            RABBITMQ_MNESIA_BASE=str(node.dir / "mnesia"),
            RABBITMQ_LOG_BASE=str(node.dir / "log"),
            RABBITMQ_PID_FILE=str(node.pid_file),
            RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=ERL_ARGS,
            # No feature flag enabled when a fresh node initialises: see the module docstring.
            RABBITMQ_FEATURE_FLAGS="",
        )
        node.pid_file.unlink(missing_ok=True)
        with open(node.stdout_file, "ab") as out:
            # Its own process group: the rabbitmq-server shell, beam.smp and erl_child_setup
            # are killed together however the test ends.
            node.process = subprocess.Popen(
                ["nice", "-n", str(self.niceness), str(RABBITMQ_BIN / "rabbitmq-server")],
                env=env,
                cwd=node.dir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def _await_startup(self, node: RabbitNode, deadline: float) -> None:
        """Until ``deadline``: epmd knows the node (polled, free), then one ``await_startup``
        (blocks until the rabbit app runs). A node whose VM exits fails at once, with its log."""

        def registered() -> bool:
            if not node.running():
                raise RuntimeError(f"{node.nodename} exited during boot:\n{self.logs([node.name])}")
            return node.name in epmd_names()

        wait_for(
            registered,
            timeout=max(1.0, deadline - time.monotonic()),
            interval=0.2,
            message=lambda: f"{node.nodename} to register with epmd\n{self.logs([node.name])}",
        )
        while True:
            remaining = deadline - time.monotonic()
            result = self.ctl(
                "await_startup", "--timeout", str(max(1, int(remaining))), node=node.name, timeout=remaining + 10
            )
            if result.returncode == 0:
                return
            if not node.running() or time.monotonic() > deadline:
                raise RuntimeError(f"{node.nodename} did not start: {result.stdout}{result.stderr}\n{self.logs()}")
            time.sleep(0.5)  # await_startup refused early (a VM still registering): ask again

    def _ensure_clustered(self, deadline: float) -> None:
        """Every node runs in node 1's cluster (one ``cluster_status`` when peer discovery did its
        job); a node that booted alone (discovery gave up) joins the classic way."""
        seed = self.nodes[0]
        wanted = {node.nodename for node in self.nodes}
        running = set(self.running_nodes(ask=seed.name))
        if wanted <= running:
            return
        for node in self.nodes[1:]:
            if node.nodename in running:
                continue
            for step in (("stop_app",), ("reset",), ("join_cluster", seed.nodename), ("start_app",)):
                self._ctl_ok(*step, node=node.name, timeout=max(10.0, deadline - time.monotonic()))
        wait_for(
            lambda: wanted <= set(self.running_nodes(ask=seed.name)),
            timeout=max(1.0, deadline - time.monotonic()),
            interval=0.5,
            message=lambda: f"all of {sorted(wanted)} running in one cluster\n{self.logs()}",
        )

    def stop(self) -> None:
        """Stop every node (``rabbitmqctl stop``, in parallel), then SIGKILL the process group of
        any that is still there. Idempotent; never touches the machine's own ``rabbit@localhost``."""
        running = [node for node in self.nodes if node.running()]
        if running:
            with ThreadPoolExecutor(len(running)) as pool:
                list(pool.map(lambda node: self.ctl("stop", node=node.name, timeout=30), running))
        deadline = time.monotonic() + 15
        for node in self.nodes:
            if node.process is None:
                continue
            try:
                node.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            self._kill_group(node)

    def _kill_group(self, node: RabbitNode) -> None:
        if node.process is None:
            return
        try:
            os.killpg(node.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # the whole group is gone already
        node.process.wait(timeout=30)

    # -- faults ----------------------------------------------------------------------------------
    def kill(self, node: str) -> None:
        """``kill -9`` the node's beam.smp (a crash: no goodbye to peers or clients), then the
        rest of its process group (the wrapper shell, erl_child_setup)."""
        target = self.node(node)
        try:
            pid = int(target.pid_file.read_text().strip())
            os.kill(pid, signal.SIGKILL)
        except (FileNotFoundError, ValueError, ProcessLookupError):
            pass  # no pid file yet or a VM already gone: the group kill below covers it
        self._kill_group(target)
        # The peers see the node down once its distribution sockets close: at once, on one host.
        wait_for(lambda: target.name not in epmd_names(), timeout=10, interval=0.1, message=f"{node} to leave epmd")

    def start(self, node: str, *, timeout: float = 120.0) -> float:
        """Start a killed (or stopped) node again on its data: it rejoins the cluster as a
        follower of its quorum queues. Returns the seconds until the cluster lists it running."""
        target = self.node(node)
        if target.running():
            raise RuntimeError(f"{target.nodename} is running")
        began = time.monotonic()
        self._launch(target)
        deadline = began + timeout
        self._await_startup(target, deadline)
        wait_for(
            lambda: target.nodename in self.running_nodes(),
            timeout=max(1.0, deadline - time.monotonic()),
            interval=0.5,
            message=lambda: f"{target.nodename} back in the cluster\n{self.logs()}",
        )
        return time.monotonic() - began

    # -- addresses -------------------------------------------------------------------------------
    def node(self, name: str) -> RabbitNode:
        """A node by its short name (``rmq2``) or node name (``rmq2@localhost``)."""
        short = _short(name)
        for node in self.nodes:
            if node.name == short:
                return node
        raise KeyError(f"no node {name!r} in {[n.name for n in self.nodes]}")

    def urls(self, vhost: str = "/") -> list[str]:
        """One AMQP URL per node, in node order (guest/guest, loopback)."""
        path = "/" if vhost == "/" else quote(vhost, safe="")
        return [f"amqp://guest:guest@127.0.0.1:{node.port}/{path}" for node in self.nodes]

    def broker_url(self, vhost: str = "/") -> str:
        """The ``;``-joined list kombu (and so Celery and ``BROKER_URL``) takes for failover."""
        return ";".join(self.urls(vhost))

    # -- administration --------------------------------------------------------------------------
    def ctl(
        self, *args: str, node: str | None = None, timeout: float = 60.0, tool: str = "rabbitmqctl"
    ) -> subprocess.CompletedProcess[str]:
        """Run a RabbitMQ CLI tool (``rabbitmqctl``, ``rabbitmq-queues``, ...) against ``node``
        (default: the first running node). ``timeout`` bounds the whole call, VM boot included."""
        target = self.node(node) if node else self._running_node()
        argv = [str(RABBITMQ_BIN / tool), "-n", target.nodename, *args]
        try:
            return subprocess.run(argv, env=self._cli_env(), capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            return subprocess.CompletedProcess(argv, 124, str(exc.stdout or ""), f"timed out after {timeout}s")

    def _ctl_ok(self, *args: str, node: str | None = None, timeout: float = 60.0, tool: str = "rabbitmqctl") -> str:
        result = self.ctl(*args, node=node, timeout=timeout, tool=tool)
        if result.returncode != 0:
            raise RuntimeError(f"{tool} {' '.join(args)} failed ({result.returncode}): {result.stdout}{result.stderr}")
        return result.stdout

    def _running_node(self) -> RabbitNode:
        for node in self.nodes:
            if node.running():
                return node
        raise RuntimeError("no node of the cluster is running")

    def running_nodes(self, ask: str | None = None) -> list[str]:
        """The node names the cluster reports running (asked of ``ask`` or a running node)."""
        result = self.ctl("cluster_status", "--formatter", "json", node=ask, timeout=60)
        if result.returncode != 0:
            return []
        start = result.stdout.find("{")
        status = json.loads(result.stdout[start:]) if start >= 0 else {}
        return list(status.get("running_nodes", []))

    def add_vhost(self, name: str) -> str:
        """Create vhost ``name`` (no error if it exists) with full permissions for guest; returns
        its ``;`` broker URL."""
        result = self.ctl("add_vhost", name)
        if result.returncode != 0 and "already exists" not in result.stdout + result.stderr:
            raise RuntimeError(f"add_vhost {name} failed: {result.stdout}{result.stderr}")
        self._ctl_ok("set_permissions", "-p", name, "guest", ".*", ".*", ".*")
        return self.broker_url(name)

    def _queue_row(self, queue: str, vhost: str, *columns: str) -> dict[str, object] | None:
        """``queue``'s row of ``list_queues`` asked of a running node (the next one if that
        call fails: a node may be going down under us)."""
        errors = []
        for node in self.nodes:
            if not node.running():
                continue
            result = self.ctl("list_queues", "-p", vhost, "name", *columns, "--formatter", "json", node=node.name)
            if result.returncode == 0:
                for row in _json_rows(result.stdout):
                    if row.get("name") == queue:
                        return row
                return None
            errors.append(f"{node.name}: {result.stdout}{result.stderr}")
        raise RuntimeError(f"list_queues failed on every running node: {errors}")

    def leader_of(self, queue: str, vhost: str = "/") -> str | None:
        """The short name of the node leading quorum queue ``queue`` (``rmq2``), or None while
        it has no leader among the online members. 3.10 has two ways: ``list_queues name leader
        online --formatter json`` (used here: one JSON row per queue) and ``rabbitmq-queues
        quorum_status QUEUE`` (each member's Raft state and log indexes, a box-drawn table unless
        ``--formatter json``; run it through ``ctl(..., tool="rabbitmq-queues")`` when you need
        those). Right after a kill the old leader may still be listed until the election ends, so
        a leader only counts if it is online."""
        row = self._queue_row(queue, vhost, "type", "leader", "online")
        if row is None:
            raise KeyError(f"no queue {queue!r} in vhost {vhost!r}")
        if row.get("type") != "quorum":
            raise ValueError(f"{queue!r} is a {row.get('type')} queue, not a quorum queue")
        leader = str(row.get("leader") or "")
        online = row.get("online")
        online_nodes = {str(n) for n in online} if isinstance(online, list) else set()
        return _short(leader) if leader and leader in online_nodes else None

    def wait_leader(self, queue: str, vhost: str = "/", *, not_on: str | None = None, timeout: float = 30.0) -> str:
        """Poll until ``queue`` has an online leader (other than ``not_on``); return its name.

        While the election runs, a surviving node's ``list_queues`` may leave the queue out
        altogether (3.10 skips a quorum queue whose leader it cannot reach), so a missing row
        means "not elected yet" here, and only the timeout fails."""

        def elected() -> str | None:
            try:
                leader = self.leader_of(queue, vhost)
            except KeyError:
                return None
            return leader if leader and leader != not_on else None

        return str(wait_for(elected, timeout=timeout, interval=0.2, message=f"a leader of {queue} other than {not_on}"))

    def queue_messages(self, queue: str, vhost: str = "/") -> QueueCounts:
        """Ready and unacknowledged messages of ``queue`` (as of the queue's last tick, ≤ 1 s)."""
        row = self._queue_row(queue, vhost, "messages_ready", "messages_unacknowledged")
        if row is None:
            raise KeyError(f"no queue {queue!r} in vhost {vhost!r}")
        return QueueCounts(int(str(row.get("messages_ready") or 0)), int(str(row.get("messages_unacknowledged") or 0)))

    # -- evidence --------------------------------------------------------------------------------
    def log_files(self) -> list[Path]:
        return [path for node in self.nodes for path in (node.log_file, node.stdout_file) if path.exists()]

    def logs(self, names: Sequence[str] | None = None, tail_chars: int = 4000) -> str:
        """The tail of each node's log and stdout, for a failing test's message."""
        out = []
        for node in self.nodes:
            if names is not None and node.name not in names:
                continue
            for path in (node.log_file, node.stdout_file):
                if path.exists():
                    out.append(f"===== {path.name} =====\n{path.read_text(errors='replace')[-tail_chars:]}")
        return "\n".join(out)
