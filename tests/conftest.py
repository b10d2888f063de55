"""Tests run against the real PostgreSQL (and, where they need them, the real RabbitMQ and
Redis); nothing mocks the ORM, the broker or a neighbour module. The shared fixtures are the
plugins in tests/fixtures/; the shared objects are made by tests/factories.py."""

from __future__ import annotations

pytest_plugins = [
    "tests.fixtures.settings",
    "tests.fixtures.tenants",
    "tests.fixtures.system",
    "tests.fixtures.local_model",
]
