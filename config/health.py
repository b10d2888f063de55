"""Liveness and readiness probes."""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django_redis import get_redis_connection

from config.broker import broker_connection, connect_to_a_node
from config.problems import PROBLEM_CONTENT_TYPE, problem_body


def healthz(_request: HttpRequest) -> JsonResponse:
    """The process is alive and serving; says nothing about its dependencies."""
    return JsonResponse({"status": "ok"})


def _check_postgresql() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _check_rabbitmq() -> None:
    with broker_connection(connect_timeout=2) as conn:
        connect_to_a_node(conn, timeout=2)


def _check_redis() -> None:
    get_redis_connection("default").ping()


CHECKS = {"postgresql": _check_postgresql, "rabbitmq": _check_rabbitmq, "redis": _check_redis}


def readyz(request: HttpRequest) -> JsonResponse:
    """Ready when PostgreSQL, RabbitMQ and Redis all answer; 503 names what is down."""
    down: dict[str, str] = {}
    for name, check in CHECKS.items():
        try:
            check()
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready"
            down[name] = f"{type(exc).__name__}: {exc}"[:300]
    if down:
        body = problem_body(
            slug="not-ready",
            title="Not ready",
            status_code=503,
            detail="Unreachable: " + ", ".join(sorted(down)),
            instance=request.path,
            down=down,
        )
        return JsonResponse(body, status=503, content_type=PROBLEM_CONTENT_TYPE)
    return JsonResponse({"status": "ready", "checks": {name: "ok" for name in CHECKS}})
