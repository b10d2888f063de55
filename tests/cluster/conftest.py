"""Fixtures of the cluster scenarios: real multi-node engines on their own ports and data
directories (under pytest's ``tmp_path_factory``), and network namespaces for worker hosts.
Each fixture tears down what it started however the test ends; a failing test's report gets the
tail of each engine's log it used (the full logs stay in the fixture's base directory).

Ports are fixed (RabbitMQ 5681-5683 / 25681-25683, PostgreSQL 5441-5442, Redis 6391-6393 and
Sentinel 26391-26393), so two runs of these tests on one machine at once collide: the second
fails at start-up and never touches the first's engines. Engines and namespaces that a run which
died without its teardown left behind are removed before the first engine starts.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Generator, Iterator

import pytest

from tests.cluster.netns import Network, cleanup_stale
from tests.cluster.postgres_cluster import PostgresPrimary, PostgresReplica, kill_stale_servers
from tests.cluster.rabbitmq_cluster import RabbitMQCluster, kill_stale_nodes
from tests.cluster.redis_sentinel import RedisSentinelGroup, kill_stale_instances

# The fixtures whose ``logs()`` a failing test's report gets, by fixture name.
ENGINE_FIXTURES = ("rabbitmq_cluster", "postgres_primary", "postgres_replica", "redis_sentinel")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failing test's report gets the tail of the log of each engine fixture it used."""
    report = yield
    if report.failed and report.when in ("setup", "call"):
        funcargs = getattr(item, "funcargs", {})
        for name in ENGINE_FIXTURES:
            engine = funcargs.get(name)
            if engine is not None:
                try:
                    report.sections.append((f"{name} logs", engine.logs()))
                except Exception as exc:  # noqa: BLE001 - a log we cannot read must not hide the failure
                    report.sections.append((f"{name} logs", f"(could not read: {exc!r})"))
    return report


def _can_use_netns() -> bool:
    return os.geteuid() == 0 and shutil.which("ip") is not None


@pytest.fixture(scope="session")
def stale_engines_removed() -> None:
    """Once per session, before the first engine starts: what runs that died without their
    teardown left (engines on our fixed ports, namespaces, bridges). Each module's ``kill_stale``
    spares the engines of a run that is still alive (owner records)."""
    kill_stale_nodes()
    kill_stale_servers()
    kill_stale_instances()
    if _can_use_netns():
        cleanup_stale()


@pytest.fixture(scope="session")
def rabbitmq_cluster(
    stale_engines_removed: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RabbitMQCluster]:
    """Three clustered RabbitMQ nodes for the whole session: a boot costs 20-27 s on 2 cores, so
    scenarios share one and keep apart by vhost (``add_vhost``). Use it through ``rabbitmq``."""
    with RabbitMQCluster(tmp_path_factory.mktemp("rabbitmq")) as cluster:
        yield cluster


@pytest.fixture
def rabbitmq(rabbitmq_cluster: RabbitMQCluster) -> RabbitMQCluster:
    """The session's cluster with every node running: a node an earlier test killed and did not
    start again is started here (~8 s), so each test begins with three running nodes."""
    for node in rabbitmq_cluster.nodes:
        if not node.running():
            rabbitmq_cluster.start(node.name)
    return rabbitmq_cluster


@pytest.fixture
def postgres_primary(
    stale_engines_removed: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PostgresPrimary]:
    """A fresh PostgreSQL 15 primary on 5441 (initdb + start: ~1-2 s)."""
    with PostgresPrimary(tmp_path_factory.mktemp("postgres"), port=5441) as primary:
        yield primary


@pytest.fixture
def postgres_replica(postgres_primary: PostgresPrimary) -> Iterator[PostgresReplica]:
    """A streaming standby of ``postgres_primary`` on 5442, already streaming."""
    with PostgresReplica.from_primary(postgres_primary, postgres_primary.base_dir, port=5442) as replica:
        replica.wait_streaming()
        yield replica


@pytest.fixture
def redis_sentinel(
    stale_engines_removed: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RedisSentinelGroup]:
    """A Redis master, two replicas and three Sentinels on 6391-6393 / 26391-26393 (~2 s)."""
    with RedisSentinelGroup(tmp_path_factory.mktemp("redis")) as group:
        yield group


@pytest.fixture
def netns_network(stale_engines_removed: None) -> Iterator[Network]:
    """A bridge of this test's own with no hosts yet (``add_host``, ``forward``); needs root."""
    if not _can_use_netns():
        # Failed, not skipped: a scenario that quietly does not run proves nothing (CI runs as root).
        pytest.fail("network namespaces need root and iproute2 (bin/setup installs iproute2)")
    with Network() as network:
        yield network
