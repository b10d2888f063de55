"""A Kafka event log for one test: fresh topics and consumer groups on the session's Tansu
broker, this process's settings pointed at them, and the same settings for the processes a
test starts."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.system import SystemProcesses, system_env


@dataclass
class EventLog:
    broker: object  # tests.kafka_broker.KafkaBroker
    topics: dict[str, str]
    groups: dict[str, str]
    env: dict[str, str] = field(default_factory=dict)

    @property
    def requested(self) -> str:
        return self.topics["KAFKA_TOPIC_REQUESTED"]

    @property
    def outcomes(self) -> str:
        return self.topics["KAFKA_TOPIC_OUTCOMES"]

    @property
    def dead_letters(self) -> str:
        return self.topics["KAFKA_TOPIC_DEAD_LETTERS"]

    @property
    def ingress_group(self) -> str:
        return self.groups["KAFKA_INGRESS_GROUP"]


def event_log_for(kafka_broker, settings, *, partitions: int) -> EventLog:
    suffix = uuid.uuid4().hex[:10]
    topics = {
        "KAFKA_TOPIC_REQUESTED": f"requested-{suffix}",
        "KAFKA_TOPIC_OUTCOMES": f"outcomes-{suffix}",
        "KAFKA_TOPIC_DEAD_LETTERS": f"dead-letters-{suffix}",
    }
    groups = {"KAFKA_INGRESS_GROUP": f"ingress-{suffix}", "KAFKA_DELIVERY_GROUP": f"fan-out-{suffix}"}
    for name in topics.values():
        kafka_broker.create_topic(name, partitions=partitions)
    values: dict[str, object] = {
        "EVENT_TRANSPORT": "kafka",
        "KAFKA_BOOTSTRAP_SERVERS": kafka_broker.bootstrap_servers,
        "KAFKA_PARTITIONS": partitions,
        # Tansu answers a JoinGroup after about half the session timeout (tests/kafka_broker.py).
        "KAFKA_SESSION_TIMEOUT_MS": 6000,
        "KAFKA_MAX_POLL_INTERVAL_MS": 10000,
        # Tansu holds a Fetch until this runs out even when a record arrived.
        "KAFKA_FETCH_WAIT_MAX_MS": 50,
        **topics,
        **groups,
    }
    for name, value in values.items():
        setattr(settings, name, value)
    settings.KAFKA_CONSUMERS = {
        "ingress": {
            "group": groups["KAFKA_INGRESS_GROUP"],
            "topics": [topics["KAFKA_TOPIC_REQUESTED"]],
            "handler": "extraction.eventlog.ingress.take_in_record",
        },
        "delivery": {
            "group": groups["KAFKA_DELIVERY_GROUP"],
            "topics": [topics["KAFKA_TOPIC_OUTCOMES"]],
            "handler": "delivery.kafka_fan_out.fan_out_record",
        },
    }
    # The scheduler's lost-ingress recovery would make a job READY without the log: pushed
    # out of the tests' way, so every job here was taken in from a record.
    env = {name: str(value) for name, value in values.items()} | {"INGRESS_RECOVERY_SECONDS": "600"}
    return EventLog(broker=kafka_broker, topics=topics, groups=groups, env=env)


@pytest.fixture
def event_log(kafka_broker, settings) -> EventLog:
    """Fresh single-partition topics (one partition: offsets are the tests' to name)."""
    return event_log_for(kafka_broker, settings, partitions=1)


@pytest.fixture
def partitioned_event_log(kafka_broker, settings) -> EventLog:
    """Fresh topics of four partitions, for rebalances."""
    return event_log_for(kafka_broker, settings, partitions=4)


def kafka_system(event_log: EventLog, *, broker: str, sim, settings, log_dir: Path) -> SystemProcesses:
    """The system's processes on ``event_log``: the test starts the ones it needs. The reference
    ERP listens on loopback, so the test switch that lets webhooks reach it is on."""
    settings.EGRESS_ALLOW_LOOPBACK = True
    env = system_env(
        broker_url=broker,
        simulator_url=sim.base_url,
        media_root=Path(settings.MEDIA_ROOT),
        EGRESS_ALLOW_LOOPBACK="1",
        **event_log.env,
    )
    return SystemProcesses(env=env, log_dir=log_dir)
