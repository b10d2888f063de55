"""The cluster harness against itself: each engine once, quickly, with the fault the scenarios
will inject, so a scenario that fails points at the system and not at the harness. The timings
each test measures are printed (``-s``) and kept in ``timings.json`` in the engine's base dir."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import pytest
import redis
import redis.sentinel
from kombu import Connection, Exchange, Queue

from bench.tcp_proxy import ProxyThread
from tests.cluster.netns import STATE_DIR, Network, cleanup_stale, connect_from
from tests.cluster.postgres_cluster import (
    WORK_PREFIX,
    PostgresPrimary,
    PostgresReplica,
    kill_stale_servers,
    multi_host_conninfo,
)
from tests.cluster.rabbitmq_cluster import RabbitMQCluster
from tests.cluster.redis_sentinel import RedisSentinelGroup, kill_stale_instances
from tests.system import wait_for

pytestmark = pytest.mark.slow


def _report(base_dir: Path, name: str, timings: dict[str, float]) -> None:
    rounded = {key: round(value, 3) for key, value in timings.items()}
    (base_dir / "timings.json").write_text(json.dumps(rounded, indent=2) + "\n")
    print(f"\n{name} timings: {rounded}")


# -- RabbitMQ -----------------------------------------------------------------------------------
def test_rabbitmq_quorum_leader_moves_on_kill_and_confirmed_publishes_fail_over(rabbitmq: RabbitMQCluster):
    cluster = rabbitmq
    assert sorted(cluster.running_nodes()) == [f"rmq{n}@localhost" for n in (1, 2, 3)]
    timings = dict(cluster.timings)
    broker_url = cluster.add_vhost("engines")
    assert broker_url.count(";") == 2

    exchange = Exchange("engines.x", "direct", durable=True)
    queue = Queue("engines.qq", exchange, routing_key="qq", durable=True, queue_arguments={"x-queue-type": "quorum"})
    # kombu connects to the first URL (rmq1): a quorum queue declared there is led from there
    # (client-local leader placement), so killing the leader also kills the client's node.
    with Connection(broker_url, transport_options={"confirm_publish": True}) as conn:
        conn.ensure_connection(max_retries=3)
        assert ":5681/" in conn.as_uri()
        queue(conn.default_channel).declare()
        producer = conn.Producer()
        for i in range(50):
            producer.publish({"i": i}, exchange=exchange, routing_key="qq")  # returns once confirmed
        leader = cluster.wait_leader(queue.name, "engines")
        assert leader == "rmq1"

        began = time.monotonic()
        cluster.kill(leader)
        new_leader = cluster.wait_leader(queue.name, "engines", not_on=leader, timeout=30)
        timings["kill_to_new_leader"] = time.monotonic() - began
        assert new_leader in ("rmq2", "rmq3")

        # The same Connection: its socket is dead, ensure() reconnects along the ";" list.
        publish = conn.ensure(producer, producer.publish, max_retries=10, interval_start=0, interval_step=0.5)
        publish({"i": 50}, exchange=exchange, routing_key="qq")
        timings["kill_to_confirmed_publish"] = time.monotonic() - began
        assert ":5681/" not in conn.as_uri()

    wait_for(
        lambda: cluster.queue_messages(queue.name, "engines").ready >= 51,
        timeout=15,
        interval=0.5,
        message=lambda: f"51 messages in {queue.name}: {cluster.queue_messages(queue.name, 'engines')}",
    )
    timings["restart_killed_node"] = cluster.start(leader)
    assert len(cluster.running_nodes()) == 3
    assert cluster.leader_of(queue.name, "engines") in ("rmq2", "rmq3")  # the restarted node follows
    row = cluster.ctl("list_queues", "-p", "engines", "name", "online", "--formatter", "json").stdout
    assert "rmq1@localhost" in row

    # Nothing confirmed was lost: drain and count (a retried unknown publish may add one more).
    with Connection(broker_url) as conn:
        received = 0
        while (message := queue(conn.default_channel).get(no_ack=True)) is not None:
            assert message.payload["i"] <= 50
            received += 1
    assert received >= 51
    _report(cluster.base_dir, "rabbitmq", timings)


# -- PostgreSQL ---------------------------------------------------------------------------------
def _landed_port(conninfo: str) -> int:
    with psycopg.connect(conninfo) as conn:
        row = conn.execute("SELECT inet_server_port()").fetchone()
        assert row is not None
        return int(row[0])


def test_postgres_replica_streams_and_promotion_moves_the_multi_host_conninfo(postgres_primary: PostgresPrimary):
    primary = postgres_primary
    timings: dict[str, float] = {}
    primary.create_database("engines")
    primary.query("CREATE TABLE marks (n int)", "engines")
    primary.query("INSERT INTO marks VALUES (1)", "engines")

    began = time.monotonic()
    with PostgresReplica.from_primary(primary, primary.base_dir, port=5442) as replica:
        assert replica.basebackup_seconds is not None
        timings["basebackup"] = replica.basebackup_seconds
        replica.wait_streaming()
        timings["basebackup_to_streaming"] = time.monotonic() - began
        assert replica.in_recovery()
        primary.query("INSERT INTO marks VALUES (2)", "engines")
        wait_for(lambda: replica.query("SELECT count(*) FROM marks", "engines")[0][0] == 2, timeout=10)

        conninfo = multi_host_conninfo([5441, 5442], "engines")
        assert _landed_port(conninfo) == 5441
        timings["restart_fast"] = primary.restart("fast")
        assert _landed_port(conninfo) == 5441

        timings["stop_immediate"] = primary.stop("immediate")
        began = time.monotonic()
        with pytest.raises(psycopg.OperationalError, match="read-only|hot standby"):
            _landed_port(conninfo)  # a refused primary and a read-only standby: no host qualifies
        timings["no_writable_host_error"] = time.monotonic() - began
        assert timings["no_writable_host_error"] < 1.5  # a refused port costs no connect_timeout

        timings["promote"] = replica.promote()
        began = time.monotonic()
        assert _landed_port(conninfo) == 5442
        timings["connect_skipping_dead_primary"] = time.monotonic() - began
        replica.query("INSERT INTO marks VALUES (3)", "engines")
        assert replica.query("SELECT count(*) FROM marks", "engines")[0][0] == 3
    _report(primary.base_dir, "postgres", timings)


# -- Redis Sentinel -----------------------------------------------------------------------------
def test_sentinel_elects_a_new_master_after_kill_master(redis_sentinel: RedisSentinelGroup):
    group = redis_sentinel
    sentinel = redis.sentinel.Sentinel(group.sentinels(), socket_timeout=1)
    master = sentinel.master_for(group.master_name, socket_timeout=1, decode_responses=True)
    master.set("mark", "before")
    old = group.master_address()
    assert sentinel.discover_master(group.master_name) == old
    wait_for(lambda: all(group.client(p).get("mark") == "before" for p in group.redis_ports), timeout=10)

    killed = group.kill_master()
    assert killed == old
    new = group.wait_new_master(old, timeout=30)
    assert new != old and group.role(new[1]) == "master"
    assert group.failover_seconds is not None and group.failover_seconds < 15

    # A fresh client of the Sentinels finds and writes the new master; the data replicated.
    assert sentinel.discover_master(group.master_name) == new
    assert master.get("mark") == "before"  # master_for() re-asks the Sentinels on reconnect
    master.set("mark", "after")

    began = time.monotonic()
    group.restart(old[1])
    restart_seconds = time.monotonic() - began
    assert group.role(old[1]) == "slave"
    wait_for(lambda: group.client(old[1]).get("mark") == "after", timeout=10)
    _report(
        group.base_dir, "sentinel", {"failover": group.failover_seconds, "old_master_back_as_replica": restart_seconds}
    )


# -- network namespaces -------------------------------------------------------------------------
# Speaks just enough of the PostgreSQL protocol to hold one session and time a query on it: a
# session that is only an open socket would not show that the server's answers stop arriving.
_PG_SESSION = r"""
import socket, struct, sys

def read_until_ready(sock):
    while True:
        kind, length = struct.unpack("!ci", recv_exact(sock, 5))
        recv_exact(sock, length - 4)
        if kind == b"Z":
            return

def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data

def query(sock):
    text = b"SELECT 1\0"
    sock.sendall(b"Q" + struct.pack("!i", 4 + len(text)) + text)
    read_until_ready(sock)

sock = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
params = b"user\0postgres\0database\0postgres\0\0"
sock.sendall(struct.pack("!ii", 8 + len(params), 196608) + params)
read_until_ready(sock)
for line in sys.stdin:
    sock.settimeout(float(line))
    try:
        query(sock)
        print("answered", flush=True)
    except TimeoutError:
        print("silent", flush=True)
    except OSError as exc:
        print(type(exc).__name__, flush=True)
"""


def test_a_namespace_host_reaches_postgres_through_the_forwarder_and_loses_it_on_cut(netns_network: Network):
    net = netns_network
    timings: dict[str, float] = {}
    host = net.add_host("hostA")
    other = net.add_host("hostB")
    routes = host.exec(["ip", "-4", "route"]).stdout
    assert routes.strip().startswith(str(net.subnet)) and "default" not in routes  # nothing else is reachable

    net.forward(5432)  # the machine's PostgreSQL, 127.0.0.1 only, reached from the bridge address
    assert connect_from(host, net.gateway, 5432) == "ok"
    assert connect_from(host, "127.0.0.1", 5432).startswith("ConnectionRefusedError")  # the namespace's own lo

    session = host.run(
        [sys.executable, "-c", _PG_SESSION, net.gateway, "5432"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    to_session, from_session = session.stdin, session.stdout
    assert to_session is not None and from_session is not None

    def ask(timeout: float) -> str:
        """One ``SELECT 1`` on the held session, waiting at most ``timeout`` for the answer."""
        to_session.write(f"{timeout}\n")
        to_session.flush()
        return from_session.readline().strip()

    assert ask(5) == "answered"  # a real PostgreSQL session through the forwarder

    host.cut()
    assert ask(2) == "silent"  # no RST, no FIN: the established session just stops answering
    began = time.monotonic()
    outcome = connect_from(host, net.gateway, 5432, timeout=5)
    timings["new_connect_fails_after"] = time.monotonic() - began
    assert outcome != "ok"
    assert connect_from(other, net.gateway, 5432) == "ok"  # only hostA is cut

    began = time.monotonic()
    host.restore()
    assert connect_from(host, net.gateway, 5432) == "ok"
    timings["restore_to_connect"] = time.monotonic() - began
    # The held session was partitioned, not reset: TCP retransmits the query and it completes.
    assert ask(15) == "answered"

    # The forwarder's guard: only loopback and this bridge's own address may be listened on.
    with pytest.raises(ValueError, match="not a loopback address"):
        ProxyThread("127.0.0.1", 5432, listen_host=host.address)
    print(f"\nnetns timings: { {key: round(value, 3) for key, value in timings.items()} }")


def _ip_objects() -> str:
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    return links + subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout


def test_network_teardown_and_cleanup_stale_leave_nothing_behind(netns_network: Network):
    # netns_network only for its root check; these two networks are the test's own.
    with Network() as net:
        host = net.add_host("hostA")
        sleeper = host.run(["sleep", "600"])
        names = (net.bridge, host.netns, host.veth)
        gateway = net.gateway
    assert sleeper.poll() is not None
    assert not any(name in _ip_objects() for name in names)
    with pytest.raises(ValueError, match="not a loopback address"):
        ProxyThread("127.0.0.1", 5432, listen_host=gateway)  # no longer an address of ours

    # A run that crashed: its owner record no longer names a live process.
    crashed = Network()
    try:
        crashed.create()
        host = crashed.add_host("hostA")
        sleeper = host.run(["sleep", "600"])
        names = (crashed.bridge, host.netns, host.veth)
        (STATE_DIR / crashed.bridge).write_text("999999999 0\n")
        removed = cleanup_stale()
        assert {crashed.bridge, host.netns} <= set(removed)  # the veth went with its namespace
        assert sleeper.wait(timeout=10) is not None
        assert not any(name in _ip_objects() for name in names)
        assert netns_network.bridge in _ip_objects()  # a live run's network is left alone
    finally:
        crashed.close()


_CRASHING_RUN = """
import os, signal, sys
from tests.cluster.postgres_cluster import PostgresPrimary
from tests.cluster.redis_sentinel import RedisSentinelGroup, kill_stale_instances
PostgresPrimary(sys.argv[1] + "/postgres").__enter__()
RedisSentinelGroup(sys.argv[1] + "/redis").__enter__()
print("up", flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # no teardown, as a SIGKILLed or SIGTERMed pytest
"""


def test_engines_of_a_run_that_died_without_teardown_are_removed(tmp_path: Path, stale_engines_removed: None):
    run = subprocess.run(
        [sys.executable, "-c", _CRASHING_RUN, str(tmp_path)],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.stdout.strip() == "up", run.stderr
    work_dirs = list(Path(tempfile.gettempdir()).glob(f"{WORK_PREFIX}primary-5441-*"))
    assert work_dirs and all((d / "data" / "postmaster.pid").exists() for d in work_dirs)

    assert len(kill_stale_instances()) == 6  # three Redis, three Sentinels
    assert set(kill_stale_servers()) >= {str(d) for d in work_dirs}
    assert not any(d.exists() for d in work_dirs)
    listening = subprocess.run(["ss", "-ltnH"], capture_output=True, text=True, check=True).stdout
    for port in (5441, 6391, 6392, 6393, 26391, 26392, 26393):
        assert f"127.0.0.1:{port} " not in listening
