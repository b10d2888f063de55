"""Liveness and readiness probes against the real PostgreSQL, RabbitMQ and Redis. An outage is
simulated by pointing a setting at a closed loopback port, never by stopping a service."""

from __future__ import annotations

import pytest

CLOSED_PORT = "127.0.0.1:1"


@pytest.fixture
def redis_down(settings):
    settings.REDIS_URL = f"redis://{CLOSED_PORT}/0"
    settings.CACHES = {
        "default": {**settings.CACHES["default"], "LOCATION": settings.REDIS_URL},
    }


@pytest.fixture
def rabbitmq_down(settings):
    settings.BROKER_URL = f"amqp://guest:guest@{CLOSED_PORT}//"


def test_healthz_answers_without_credentials(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_healthz_does_not_depend_on_the_services(client, redis_down, rabbitmq_down):
    assert client.get("/healthz").status_code == 200


def test_readyz_is_200_when_every_service_answers(client, db):
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json() == {"status": "ready", "checks": {"postgresql": "ok", "rabbitmq": "ok", "redis": "ok"}}


@pytest.mark.parametrize(
    ("outages", "down"),
    [
        pytest.param(["rabbitmq_down"], ["rabbitmq"], id="rabbitmq"),
        pytest.param(["redis_down"], ["redis"], id="redis"),
        pytest.param(["rabbitmq_down", "redis_down"], ["rabbitmq", "redis"], id="both"),
    ],
)
def test_readyz_is_503_naming_what_is_down(client, db, request, outages, down):
    for outage in outages:
        request.getfixturevalue(outage)
    response = client.get("/readyz")
    assert response.status_code == 503, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == "/problems/not-ready"
    assert sorted(body["down"]) == down
    for name in down:
        assert name in body["detail"]
    assert "postgresql" not in body["down"]
