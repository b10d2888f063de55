"""ASGI entry point, served by daphne (the ``ws`` process of the Procfile).

The HTTP API runs under gunicorn's sync workers; daphne serves what keeps a connection open:
the ``/ws/jobs/`` WebSocket and the ``/api/v1/job-events/stream`` SSE stream. Every other
HTTP path falls through to Django, so daphne alone can also serve the whole site.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

from config.tracing import configure_tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Before the application is built (it adds the request-span middleware). Under ASGI that
# middleware needs opentelemetry-instrumentation-asgi, which is not a dependency: the requests
# daphne serves get no span of their own (the sockets and streams are not Django views anyway).
configure_tracing("ws")
django_asgi_app = get_asgi_application()

# After get_asgi_application(): these need the app registry loaded.
from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.urls import path, re_path

from extraction.notify.consumers import JobEventsConsumer
from extraction.notify.sse import JobEventStreamConsumer

application = ProtocolTypeRouter(
    {
        "http": URLRouter(
            [
                path("api/v1/job-events/stream", AuthMiddlewareStack(JobEventStreamConsumer.as_asgi())),
                re_path(r"", django_asgi_app),  # type: ignore[arg-type]  # the stubs type re_path for WSGI views only
            ]
        ),
        # Origin checked against ALLOWED_HOSTS: cookies ride along on cross-site WebSocket opens
        # (cross-site WebSocket hijacking).
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(
                URLRouter(
                    [
                        path("ws/jobs/", JobEventsConsumer.as_asgi()),
                    ]
                )
            )
        ),
    }
)
