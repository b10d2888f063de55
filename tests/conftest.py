"""Tests run against the real PostgreSQL (and, where they need them, the real RabbitMQ and
Redis); nothing mocks the ORM, the broker or a neighbour module. The shared fixtures are the
plugins in tests/fixtures/; the shared objects are made by tests/factories.py."""

from __future__ import annotations

import pytest

from tests.kafka_broker import KafkaBroker

pytest_plugins = [
    "tests.fixtures.settings",
    "tests.fixtures.tenants",
    "tests.fixtures.system",
    "tests.fixtures.local_model",
]


@pytest.fixture(scope="session")
def kafka_broker():
    """One real Kafka-protocol broker (Tansu, in-memory storage) for the whole session; tests
    keep apart by their own topics and ``fresh_group()`` ids."""
    with KafkaBroker() as broker:
        yield broker
